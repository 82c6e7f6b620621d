// The memory capability in the playground: its tab reads and edits the conversation's
// entries through the buddy's own /internal/v1/memory (there is no dev endpoint); the
// Companion tab shows the companion layer's own entries (auto: keys) as what they are:
// facts, the character's state over time, and what went into each turn's prompt.
'use strict';
(() => {
  const { h, api, buddyApi, act, toast, when } = window.playground;
  const AUTO = 'auto:'; // memory/limits.py AUTO_KEY_PREFIX: the layer's keys
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

  // The layer's entries (auto: keys) by what they are: the facts its ledger lists, its
  // state (auto:state), lore's counters (auto:lore) and any other auto: entry (not one of
  // the layer's: it leaves it alone). The Memory tab and the ledger count them alike.
  function autoEntries(entries) {
    const auto = entries.filter((e) => e.key.startsWith(AUTO));
    const facts = auto.filter((e) => layerFact(e.key, e.text));
    const state = auto.some((e) => e.key === `${AUTO}state`);
    const lore = auto.some((e) => e.key === `${AUTO}lore`);
    return { total: auto.length, facts, state, lore, other: auto.length - facts.length - state - lore };
  }

  function autoSaid(a) {
    const what = [plural(a.facts.length, 'fact', 'facts')];
    if (a.state) what.push('the layer\'s state (auto:state)');
    if (a.lore) what.push('lore\'s counters (auto:lore)');
    if (a.other) what.push(`${plural(a.other, 'other entry', 'other entries')} the layer leaves alone`);
    return `${plural(a.total, 'automatic entry', 'automatic entries')}: ${what.join(', ')}`;
  }

  window.playground.panel({
    name: 'memory',
    title: 'Memory',
    async load({ b, c }) {
      if (!b.dev_token) return { entries: [] };
      const memory = await api('GET', '/internal/v1/memory', undefined, {
        Authorization: `Bearer ${b.dev_token}`, 'X-Conversation-Id': c.id,
      });
      return { entries: memory.entries };
    },
    // The layer's entries are shown in the Companion tab, not here.
    render(b, c, data) {
      if (!b.dev_token) return [h('p', { class: 'muted' }, 'The buddy is not registered yet.')];
      const all = data.entries || [];
      const entries = all.filter((e) => !e.key.startsWith(AUTO));
      const auto = autoEntries(all);
      const save = (key, text) => act(() => buddyApi('PUT', `/internal/v1/memory/${encodeURIComponent(key)}`, { text }));
      const out = [h('p', { class: 'note' }, 'The conversation\'s long-term notes, as the buddy reads them (memory.*). Edits are the buddy\'s own writes.')];
      if (auto.total) out.push(h('p', { class: 'note mem-auto' }, `${autoSaid(auto)} — see Companion`));
      if (!entries.length) out.push(h('p', { class: 'muted' }, 'Empty.'));
      for (const e of entries) {
        const area = h('textarea', { 'aria-label': e.key }, e.text);
        out.push(h('div', { class: 'mem-entry', dataset: { key: e.key } },
          h('div', { class: 'row' }, h('span', { class: 'key' }, e.key), h('span', { class: 'muted' }, when(e.updated_at))),
          area,
          h('div', { class: 'row' },
            h('button', { class: 'mem-save', onclick: () => { area.blur(); save(e.key, area.value); } }, 'Save'),
            h('button', { class: 'mem-delete danger', onclick: () => act(() => buddyApi('DELETE', `/internal/v1/memory/${encodeURIComponent(e.key)}`)) }, 'Delete'))));
      }
      const key = h('input', { id: 'mem-key', placeholder: 'key' });
      const text = h('textarea', { id: 'mem-text', placeholder: 'text' });
      out.push(h('section', {}, h('h3', {}, 'Add an entry'), key, text,
        h('button', { id: 'mem-add', onclick: () => { const k = key.value.trim(); const t = text.value; key.value = ''; text.value = ''; key.blur(); text.blur(); if (k) save(k, t); } }, 'Add')));
      return out;
    },
  });

  // ---------------------------------------------------------------- the companion layer

  // The companion layer (automatic memory, character state, lore: companion/engine.py) keeps
  // its own entries under auto: keys; this tab reads them, the per-turn context reports
  // (/playground/api/layers) and the conversation's messages (to name where a fact came
  // from). b.companion is what memory/playground.py says of the buddy's layer.
  const DAY = 86400;
  const TURNS = 5;     // context reports shown, newest first
  const OUTCOMES = 8;  // extraction outcomes and drops shown
  const SERIES = [['anger', 'anger'], ['sadness', 'sadness'], ['trust', 'trust']];
  const SVG = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === 'dataset') Object.entries(v).forEach(([dk, dv]) => el.setAttribute(`data-${dk}`, dv));
      else el.setAttribute(k, v);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const parse = (text) => { try { const v = JSON.parse(text); return v && typeof v === 'object' ? v : null; } catch (e) { return null; } };
  const shown = (v) => (v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const fmt = (v) => Number(v).toFixed(2);

  // A mood at `t`: anger and sadness halve every half-life (layer.py's decayed); trust stays.
  function decay(point, spec, t) {
    const dt = Math.max(0, t - point.at);
    return {
      at: t,
      anger: point.anger * 0.5 ** (dt / (spec.anger_half_life_days * DAY)),
      sadness: point.sadness * 0.5 ** (dt / (spec.sadness_half_life_days * DAY)),
      trust: point.trust,
    };
  }

  function layerFact(key, text) {
    if (!key.startsWith(AUTO) || key === `${AUTO}state` || key === `${AUTO}lore`) return null;
    const fact = parse(text);
    return fact && fact.relation ? fact : null;
  }

  const layerState = (data) => parse(((data.entries || []).find((e) => e.key === `${AUTO}state`) || {}).text) || {};

  // In a group the layer keeps each member's facts and mood apart (companion/mind.py):
  // auto:state's `members` are [id, latest name] pairs, the one who spoke last at the end.
  // Here: id → name, the one who spoke last first (as the card lists them).
  function members(state) {
    const pairs = Array.isArray(state.members) ? state.members.filter((p) => Array.isArray(p) && p.length === 2) : [];
    return new Map(pairs.slice().reverse());
  }

  // Whose a group's fact is: the member id in one of its party slots (null: a private
  // chat's fact, whose party slots say `user`, or one about no member).
  function memberOf(spec, fact) {
    for (const name of spec.parties || []) {
      const v = (fact.slots || {})[name];
      if (typeof v === 'string' && v !== 'user' && v !== 'buddy') return v;
    }
    return null;
  }

  const memberName = (names, id) => (names.get(id) ? `${names.get(id)} #${id}` : `#${id}`);

  // --- the ledger: one row per fact

  function ledger(b, data) {
    const relations = b.companion.relations || {};
    const names = members(layerState(data));
    const auto = autoEntries(data.entries || []);
    const facts = auto.facts.map((e) => ({ key: e.key, fact: layerFact(e.key, e.text) }));
    facts.sort((x, y) => (y.fact.updated || 0) - (x.fact.updated || 0));
    const said = data.said || {};
    const quote = (id) => (said[id] !== undefined ? h('span', { title: id }, `「${said[id]}」`) : h('code', {}, id));
    const whose = [];
    const rows = facts.map(({ key, fact }) => {
      const spec = relations[fact.relation] || { title: fact.relation, value: null, slots: {} };
      const member = memberOf(spec, fact);
      whose.push(member);
      const party = (name, v) => ((spec.parties || []).includes(name) && names.has(v) ? names.get(v) : shown(v));
      const slots = Object.entries(fact.slots || {}).filter(([name]) => name !== spec.value)
        .map(([name, v]) => `${(spec.slots || {})[name] || name} ${party(name, v)}`);
      const valueTitle = (spec.slots || {})[spec.value] || spec.value || 'value';
      const value = h('span', { class: 'fact-value' }, shown(fact.value));
      const what = [h('span', { class: 'k' }, `${valueTitle} `), value];
      if (fact.status === 'disputed') what.push(h('span', { class: 'fact-claims' }, ` · also said: ${(fact.claims || []).map(shown).join(', ') || '—'}`));
      const pending = fact.proposed !== null && fact.proposed !== undefined;
      if (fact.status === 'proposed' || pending) {
        what.push(h('span', { class: 'fact-proposed' }, ` · awaiting confirmation: ${shown(fact.proposed)}`));
      }
      // Confirmed by the last message applied (the card's answer, or the proposal said
      // again: ledger.py's Entry.confirmed), it was said in the one before.
      const messages = fact.messages || [];
      const last = messages[messages.length - 1];
      const confirming = Boolean(last) && fact.confirmed === last;
      const origin = confirming ? messages[messages.length - 2] : last;
      const from = h('span', { class: 'fact-from' }, 'from ', origin ? quote(origin) : '—',
        confirming ? [' · confirmed by ', quote(last)] : null);
      const row = h('div', { class: `fact ${fact.status}`, dataset: { key, relation: fact.relation, status: fact.status, ...(member ? { member } : {}) } },
        h('div', { class: 'row' },
          h('strong', { class: 'fact-relation' }, spec.title), h('code', { class: 'muted' }, fact.relation),
          h('span', { class: 'spacer' }), h('span', { class: `tag fact-status ${fact.status}` }, fact.status)),
        slots.length ? h('div', { class: 'note fact-slots' }, slots.join(' · ')) : null,
        h('div', { class: 'fact-what' }, what),
        h('div', { class: 'note' }, `said ${when(fact.updated)}`, fact.expires ? ` · expires ${when(fact.expires)}` : '', ' · ', from));
      const actions = h('div', { class: 'row' });
      if (fact.status === 'kept') {
        actions.append(h('button', { class: 'fact-edit', onclick: () => edit(row, key, fact, value) }, 'Edit'));
      }
      actions.append(h('button', { class: 'fact-forget danger', onclick: () => act(() => buddyApi('DELETE', `/internal/v1/memory/${encodeURIComponent(key)}`)) }, 'Forget'));
      row.append(actions);
      return row;
    });
    const out = [h('h3', {}, `Memory ledger (${plural(facts.length, 'fact', 'facts')})`),
      h('p', { class: 'note' }, 'The facts the layer took from the user\'s messages, newest first, each from the message that said it. Forget and Edit are the buddy\'s own writes; the layer reads them back before the next message.')];
    if (auto.total) out.push(h('p', { class: 'note ledger-count' }, `Of ${autoSaid(auto)}.`));
    if (!rows.length) out.push(h('p', { class: 'muted' }, 'No facts yet.'));
    else if (!whose.some((m) => m)) out.push(rows);
    else {
      // A group: facts about no member first, then each member's, who spoke last first.
      out.push(h('p', { class: 'note' }, 'In a group each member\'s facts are their own, under the name the platform gave them last.'));
      out.push(rows.filter((_, i) => !whose[i]));
      const order = [...names.keys(), ...whose.filter((m) => m && !names.has(m))];
      for (const id of new Set(order)) {
        const theirs = rows.filter((_, i) => whose[i] === id);
        if (theirs.length) {
          out.push(h('div', { class: 'member-facts', dataset: { member: id } },
            h('h4', { class: 'member-name' }, memberName(names, id)), theirs));
        }
      }
    }
    return h('section', { id: 'ledger' }, out);
  }

  // Edit a kept fact's value in place: the entry goes back with only `value` changed (a
  // number stays a number). Enter saves, Escape cancels.
  function edit(row, key, fact, value) {
    if (row.querySelector('.fact-value-input')) return;
    const input = h('input', { class: 'fact-value-input', value: shown(fact.value), 'aria-label': `value of ${key}` });
    const save = () => {
      const raw = input.value.trim();
      const next = typeof fact.value === 'number' ? Number(raw) : raw;
      input.blur();
      if (typeof next === 'number' && (!raw || Number.isNaN(next))) { toast(`⚠ ${fact.relation}: a number is needed`); return; }
      act(() => buddyApi('PUT', `/internal/v1/memory/${encodeURIComponent(key)}`, { text: JSON.stringify({ ...fact, value: next }) }));
    };
    const form = h('form', { class: 'fact-edit-form row', onsubmit: (e) => { e.preventDefault(); save(); } },
      input, h('button', { type: 'submit', class: 'fact-save primary' }, 'Save'),
      h('button', { type: 'button', onclick: () => { form.replaceWith(value); input.blur(); } }, 'Cancel'));
    input.addEventListener('keydown', (e) => { if (e.key === 'Escape') { form.replaceWith(value); input.blur(); } });
    value.replaceWith(form);
    input.focus();
    input.select();
  }

  // --- the character's state over the conversation's time

  // One person's state: `mood` as stored (null: nothing felt yet) and its history points.
  function moodView(spec, mood, points) {
    const clock = window.playground.clock();
    const history = (points || []).filter((p) => Array.isArray(p) && p.length === 4)
      .map(([at, anger, sadness, trust]) => ({ at, anger, sadness, trust }));
    mood = mood || history[history.length - 1] || null;
    const last = history[history.length - 1];
    const now = Math.max(clock ? clock.time : 0, last ? last.at : 0);
    const current = mood ? decay(mood, spec, now) : { anger: 0, sadness: 0, trust: spec.trust_start };
    const out = [
      h('div', { class: 'mood-now' }, SERIES.map(([name]) => h('span', { class: `mood-value ${name}`, dataset: { series: name } }, `${name} ${fmt(current[name])}`)),
        h('span', { class: 'muted' }, ` · quarrel at anger ≥ ${fmt(spec.quarrel)}`),
        current.anger >= spec.quarrel ? h('span', { class: 'tag quarrel' }, 'quarrel') : null)];
    if (!history.length) {
      out.push(h('p', { class: 'muted' }, `No message felt yet (trust starts at ${fmt(spec.trust_start)}).`));
      return out;
    }
    const W = 380; const H = 150; const L = 26; const R = 6; const T = 8; const B = 20;
    const t0 = history[0].at;
    const t1 = Math.max(now, t0 + 60);
    const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
    const y = (v) => T + (1 - Math.min(1, Math.max(0, v))) * (H - T - B);
    // Each point's value, then its decay until the next message (or now), sampled.
    const paths = SERIES.map(([name]) => {
      const d = [];
      history.forEach((p, i) => {
        const end = i + 1 < history.length ? history[i + 1].at : t1;
        d.push(`${d.length ? 'L' : 'M'}${x(p.at).toFixed(1)},${y(p[name]).toFixed(1)}`);
        const steps = name === 'trust' ? 1 : 24;
        for (let s = 1; s <= steps; s += 1) {
          const t = p.at + ((end - p.at) * s) / steps;
          d.push(`L${x(t).toFixed(1)},${y(decay(p, spec, t)[name]).toFixed(1)}`);
        }
      });
      return svg('path', { d: d.join(' '), class: `series ${name}`, dataset: { series: name }, fill: 'none' });
    });
    const grid = [0, 0.5, 1].map((v) => [
      svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }),
      svg('text', { x: L - 4, y: y(v) + 3, 'text-anchor': 'end', class: 'axis' }, v.toFixed(1))]);
    const ticks = [t0, t1].map((t, i) => svg('text', { x: x(t), y: H - 5, 'text-anchor': i ? 'end' : 'start', class: 'axis' }, when(t)));
    const marks = history.map((p) => svg('line', { x1: x(p.at), x2: x(p.at), y1: H - B, y2: H - B + 4, class: 'mark' }));
    // The quarrel line last, over the series: trust starts at 0.5, on the line itself.
    const quarrel = [
      svg('line', { x1: L, x2: W - R, y1: y(spec.quarrel), y2: y(spec.quarrel), class: 'quarrel' }),
      svg('text', { x: W - R - 2, y: y(spec.quarrel) - 3, 'text-anchor': 'end', class: 'quarrel-label' }, `quarrel ≥ ${fmt(spec.quarrel)}`)];
    out.push(svg('svg', { class: 'mood-plot', viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': 'anger, sadness and trust over time' },
      grid, ticks, marks, paths, quarrel));
    out.push(h('div', { class: 'legend' },
      SERIES.map(([name, label]) => h('span', { class: `key ${name}` }, h('i', {}), label)),
      h('span', { class: 'key quarrel' }, h('i', {}), `quarrel (anger ≥ ${fmt(spec.quarrel)})`),
      h('span', { class: 'muted' }, `· ${history.length} message${history.length === 1 ? '' : 's'} felt; anger halves every ${spec.anger_half_life_days} d, sadness every ${spec.sadness_half_life_days} d`)));
    return out;
  }

  // The character's state: in a private chat the one state; in a group one per member
  // (who spoke last first) — the turn's prompt has the state toward who is talking.
  function plot(b, data) {
    const spec = b.companion.character;
    const state = layerState(data);
    const moods = state.moods && typeof state.moods === 'object' ? state.moods : null;
    const out = [h('h3', {}, 'Character state')];
    if (!moods && !Array.isArray(state.members)) {
      out.push(moodView(spec, state.mood, state.history));
    } else {
      const names = members(state);
      const histories = state.histories && typeof state.histories === 'object' ? state.histories : {};
      out.push(h('p', { class: 'note' }, 'In a group the state is kept toward each member; a turn\'s prompt has the state toward the member talking.'));
      const ids = new Set([...names.keys(), ...Object.keys(moods || {})]);
      for (const id of ids) {
        out.push(h('div', { class: 'mood-member', dataset: { member: id } },
          h('h4', { class: 'member-name' }, memberName(names, id)),
          moodView(spec, (moods || {})[id] || null, histories[id])));
      }
    }
    if (state.reconcile) out.push(h('p', { class: 'note' }, `reconcile: ${state.reconcile}`));
    return h('section', { id: 'mood' }, out);
  }

  // --- what went into each turn's prompt

  // Where a reported part landed in the system prompt: its section's landing
  // (compile/placement.py) — the layer's request (ask, reconcile) is no section: it
  // always goes at the end, after the template and the summary.
  const SECTIONS = { 'memory.card': 'memory', character: 'character' };
  function landing(name, sent, text) {
    if (!sent) return null;
    // A lore entry at a depth is a message of the turn's history, not in the system prompt.
    const message = name.startsWith('lore:') && text ? (sent.injected || []).find((m) => m.text.includes(text)) : null;
    if (message) return { where: 'message', said: `a ${message.role} message ${message.depth} from the end of the history` };
    const key = SECTIONS[name] || (name.startsWith('lore:') ? 'lore' : null);
    if (!key) return { where: 'end', said: 'at the end of the prompt (the layer\'s request)' };
    const l = (sent.parts || []).find((x) => x.part === key);
    if (!l) return null;
    if (l.where === 'template') return { where: l.where, said: 'placed by the template' };
    if (l.where === 'nowhere') return { where: l.where, said: 'nowhere: the template does not read it and it has no default place' };
    return {
      where: l.where,
      said: l.text ? `added after the template's text (${key} there: ${l.text.length} chars, heading included)` : 'not placed by the template; nothing added while it is empty',
    };
  }

  // The turns whose whole prompt is open stay open when the tab is drawn again.
  const opened = new Set();

  function inspector(b, data) {
    const out = [h('h3', {}, 'Context of the last turns')];
    if (data.layers === null || data.layers === undefined) {
      out.push(h('p', { class: 'muted' }, 'The buddy is not running.'));
      return h('section', { id: 'inspector' }, out);
    }
    const said = data.said || {};
    const layers = data.layers || [];
    for (const layer of layers) {
      const n = layer.counters || {};
      out.push(h('div', { class: 'note layer-counters' },
        `this process: ${n.messages || 0} messages extracted · ${n.calls || 0} extractor calls · ${n.dropped || 0} items dropped · ${n.failures || 0} failures`));
    }
    const reports = layers.flatMap((l) => l.reports || []).sort((x, y) => y.at - x.at).slice(0, TURNS);
    // The system prompt each turn sent (runtime/turn.py's TurnRunner.sent), by its event.
    const prompts = new Map((data.prompts || []).map((p) => [p.event, p]));
    if (!reports.length) out.push(h('p', { class: 'muted' }, 'No turn since the buddy started.'));
    for (const r of reports) {
      const used = r.parts.reduce((sum, p) => sum + p.chars, 0);
      const share = (chars) => `${Math.min(100, (100 * chars) / Math.max(1, r.budget)).toFixed(1)}%`;
      const sent = prompts.get(r.event);
      const texts = r.texts || {};
      const empty = r.empty || {};
      out.push(h('div', { class: 'turn-report', dataset: { event: r.event, settled: String(r.settled) } },
        h('div', { class: 'row' },
          h('span', { class: 'muted' }, when(r.at)),
          said[r.event] !== undefined ? h('span', { class: 'said' }, `「${said[r.event]}」`) : h('code', {}, r.event),
          h('span', { class: 'spacer' }),
          h('span', { class: `tag ${r.settled ? 'settled' : 'late'}`, title: r.settled ? 'the message\'s extraction was done before the prompt was built' : 'the extraction took longer than memory.wait_ms: this turn had the facts from before the message' },
            r.settled ? 'facts in time' : 'facts late')),
        h('div', { class: 'budget-line note' }, `${used} / ${r.budget} chars`),
        r.parts.map((p) => {
          const land = landing(p.name, sent, texts[p.name]);
          return [
            h('div', { class: 'part', dataset: { part: p.name, chars: p.chars, where: land ? land.where : '' } },
              h('span', { class: 'part-name' }, p.name),
              h('span', { class: 'bar' }, h('span', { style: `width:${share(p.chars)}` })),
              h('span', { class: 'part-chars' }, `${p.chars}`)),
            h('div', { class: 'part-detail', dataset: { part: p.name } },
              land ? h('span', { class: `tag where ${land.where}` }, land.said) : null,
              p.chars === 0 && empty[p.name] ? h('div', { class: 'note part-empty' }, `size 0: ${empty[p.name]}`) : null,
              texts[p.name] ? h('pre', { class: 'part-text' }, texts[p.name]) : null)];
        }),
        r.left_out.map((p) => h('div', { class: 'left-out', dataset: { part: p.name } }, `left out: ${p.name} — ${p.reason}`)),
        sent ? h('details', { class: 'system-prompt', open: opened.has(r.event), ontoggle: (e) => { if (e.target.open) opened.add(r.event); else opened.delete(r.event); } },
          h('summary', {}, `The whole system prompt (${sent.system.length} chars)`), h('pre', { class: 'prompt' }, sent.system))
          : h('p', { class: 'note muted' }, 'The system prompt of this turn is no longer kept (the running buddy keeps its last five).'),
        sent && (sent.injected || []).length ? h('details', { class: 'injected' },
          h('summary', {}, `Messages put into this turn's history (${sent.injected.length})`),
          sent.injected.map((m) => h('div', { class: 'injected-message', dataset: { depth: m.depth, role: m.role } },
            h('span', { class: 'tag' }, `${m.role} · ${m.depth} from the end`), h('pre', { class: 'part-text' }, m.text))))
          : null));
    }
    const outcomes = layers.flatMap((l) => l.outcomes || []).slice(-OUTCOMES).reverse();
    const dropped = layers.flatMap((l) => l.dropped || []).slice(-OUTCOMES).reverse();
    if (outcomes.length || dropped.length) {
      out.push(h('details', { class: 'extractions' }, h('summary', {}, 'What the last extractions did'),
        outcomes.map((o) => h('div', { class: 'note outcome' }, `${o.kind} ${o.key}${o.reason ? ` — ${o.reason}` : ''}`)),
        dropped.map((d) => h('div', { class: 'note dropped' }, `dropped: ${d}`))));
    }
    return h('section', { id: 'inspector' }, out);
  }

  window.playground.panel({
    name: 'companion',
    title: 'Companion',
    async load({ b, c, id, who }) {
      if (!b.companion || !b.dev_token) return {};
      const [memory, inspected, events] = await Promise.all([
        api('GET', '/internal/v1/memory', undefined, { Authorization: `Bearer ${b.dev_token}`, 'X-Conversation-Id': c.id }),
        // 404: the buddy is not running (an invalid start); the tab says so.
        api('GET', `/playground/api/layers?buddy=${encodeURIComponent(b.key)}&conversation=${id}`)
          .catch((e) => { if (e.status === 404) return null; throw e; }),
        api('GET', `/dev/events?identity=${who}`),
      ]);
      const said = {};
      for (const e of events) if (e.conversation_id === c.id && e.type === 'message') said[e.id] = e.payload.text || '';
      return {
        entries: memory.entries.filter((e) => e.key.startsWith(AUTO)),
        layers: inspected ? inspected.layers : null,
        prompts: inspected ? inspected.prompts || [] : [],
        said,
      };
    },
    // The plot decays to the platform's now: drawn again each minute and when the clock moves.
    key: (b) => {
      const clock = window.playground.clock() || {};
      return [b && b.companion, clock.offset, Math.floor((clock.time || 0) / 60)];
    },
    render(b, c, data) {
      if (!b.companion) return [h('p', { class: 'muted' }, 'This buddy has no companion layer (memory: auto, character: or lore:).')];
      if (!b.dev_token) return [h('p', { class: 'muted' }, 'The buddy is not registered yet.')];
      const out = [];
      if (Object.keys(b.companion.relations || {}).length) out.push(ledger(b, data));
      if (b.companion.character) out.push(plot(b, data));
      out.push(inspector(b, data));
      return out;
    },
  });
})();
