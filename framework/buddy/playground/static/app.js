// The buddy playground: a page over the dev platform's /dev endpoints (docs/protocol.md)
// and the endpoints of buddy.playground.app. Plain JavaScript, no dependencies.
//
// This is the shell: buddies, conversations, the timeline of messages and turns, the
// composer, the tabs. Each platform capability adds its part — a tab, the cards it sends,
// how its events and turns read, what it adds to the timeline — in its own
// capabilities/<name>/playground.js, loaded before the page starts and registered
// through window.playground (below).
'use strict';

const DENIED = '调用被拒绝：';
const HOOK_FAILED = '调用前的检查出错';
const POLL_MS = 1000;
const FAST_MS = 250;

const S = {
  token: '',
  state: null,         // /playground/api/state
  buddyKey: null,
  convId: null,
  tab: '',
  convs: [],
  messages: [], turns: [], events: [], clock: null,
  parts: {},           // capability name -> what its poll and panel loaded
  live: {},            // conversation id -> {text, tools: [{id, name, done, error}]}
  rendered: {},        // section -> JSON of what it last rendered
  generations: {},     // buddy key -> generation seen
  fastUntil: 0,
  busy: false,
  again: false,
  epoch: 0,
  streaming: false,
};

// ---------------------------------------------------------------- helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}
const $ = (sel) => document.querySelector(sel);
const json = (v) => {
  if (typeof v === 'string') return v;
  const line = JSON.stringify(v);
  return line.length <= 100 ? line : JSON.stringify(v, null, 1);
};
const compact = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every time is shown in Asia/Shanghai: the zone of the dev platform's simulated data
// and of the quiet hours the examples use.
function when(t) {
  if (!t) return '';
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-GB', {
    timeZone: 'Asia/Shanghai', month: '2-digit', day: '2-digit', hour: '2-digit',
    minute: '2-digit', second: '2-digit', hour12: false,
  }).formatToParts(new Date(t * 1000)).map((x) => [x.type, x.value]));
  return `${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}
function shanghai(t) {
  return new Intl.DateTimeFormat('zh-CN', {
    timeZone: 'Asia/Shanghai', year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', weekday: 'short', hour12: false,
  }).format(new Date(t * 1000));
}

async function api(method, path, body, extraHeaders) {
  const headers = { Authorization: `Bearer ${S.token}`, ...(extraHeaders || {}) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) {
    const err = new Error((data && data.reason) || `${res.status}`);
    err.status = res.status;
    err.code = data && data.code;
    throw err;
  }
  return data;
}
const buddyApi = (method, path, body) => {
  const b = buddy();
  return api(method, path, body, {
    Authorization: `Bearer ${b.dev_token}`, 'X-Conversation-Id': S.convId,
  });
};

function toast(text, ms = 3500) {
  const el = h('div', { class: 'toast' }, text);
  $('#toasts').append(el);
  setTimeout(() => el.remove(), ms);
}
async function act(fn) {
  try {
    await fn();
  } catch (e) {
    toast(`⚠ ${e.message}`, 6000);
  }
  hurry();
}
function hurry() {
  S.fastUntil = Date.now() + 6000;
  tick();
}

const buddy = () => (S.state ? S.state.buddies.find((b) => b.key === S.buddyKey) : null) || null;
const conv = () => S.convs.find((c) => c.id === S.convId) || null;
const toolInfo = (name) => ((buddy() || {}).tools || []).find((t) => t.name === name) || null;
const member = (id) => ((conv() || {}).members || []).find((m) => m.member_id === id) || null;

function changed(section, value) {
  const text = JSON.stringify(value);
  if (S.rendered[section] === text) return false;
  S.rendered[section] = text;
  return true;
}

function saveHash() {
  const p = new URLSearchParams();
  if (S.buddyKey) p.set('buddy', S.buddyKey);
  if (S.convId) p.set('c', S.convId);
  p.set('tab', S.tab);
  history.replaceState(null, '', `#${p}`);
}

// ---------------------------------------------------------------- data

// One poll: everything the page shows, for the selection as it was when the poll began.
// A poll that a selection change overtook is thrown away and done again, so the page
// never mixes one buddy's conversations with another's.
async function load(sel) {
  const out = { messages: [], turns: [], events: [], parts: {} };
  out.state = await api('GET', '/playground/api/state');
  const buddies = out.state.buddies;
  const b = buddies.find((x) => x.key === sel.buddyKey) || buddies.find((x) => x.identity) || buddies[0] || null;
  out.buddyKey = b ? b.key : null;
  out.convs = b && b.identity ? await api('GET', `/dev/conversations?identity=${encodeURIComponent(b.identity)}`) : [];
  let convId = sel.convId;
  if (convId && !out.convs.some((c) => c.id === convId)) convId = null;
  if (!convId && out.convs.length) convId = out.convs[out.convs.length - 1].id;
  out.convId = convId;
  const c = out.convs.find((x) => x.id === convId) || null;
  out.clock = await api('GET', '/dev/clock');
  if (!b || !c) return out;
  const id = encodeURIComponent(c.id);
  const who = encodeURIComponent(b.identity);
  const ctx = { b, c, id, who };
  const [messages, turns, events, ...parts] = await Promise.all([
    api('GET', `/dev/conversations/${id}/messages`),
    api('GET', `/dev/conversations/${id}/turns`),
    api('GET', `/dev/events?identity=${who}`),
    ...PARTS.panels.map(async (p) => ({
      ...(p.poll ? await p.poll(ctx) : {}),
      ...(p.load && sel.tab === p.name ? await p.load(ctx) : {}),
    })),
  ]);
  Object.assign(out, { messages, turns });
  PARTS.panels.forEach((p, i) => { out.parts[p.name] = parts[i]; });
  out.events = events.filter((e) => e.conversation_id === c.id);
  return out;
}

function commit(out) {
  for (const b of out.state.buddies) {
    const seen = S.generations[b.key];
    if (seen !== undefined && b.generation > seen) {
      toast(`${b.title} reloaded (version ${b.generation})${b.changed.length ? ': ' + b.changed.join(', ') : ''}`);
    }
    S.generations[b.key] = b.generation;
  }
  Object.assign(S, out);
}

function select(change) {
  Object.assign(S, change);
  S.epoch += 1;
  S.rendered = {};
  hurry();
}

async function tick() {
  if (!S.token) return;
  if (S.busy) { S.again = true; return; }
  S.busy = true;
  try {
    do {
      S.again = false;
      const epoch = S.epoch;
      const out = await load({ buddyKey: S.buddyKey, convId: S.convId, tab: S.tab });
      if (epoch !== S.epoch) { S.again = true; continue; }
      commit(out);
      render();
    } while (S.again);
  } catch (e) {
    if (e.status !== 404) console.warn(e);
  } finally {
    S.busy = false;
  }
}

async function loop() {
  for (;;) {
    await tick();
    await sleep(Date.now() < S.fastUntil ? FAST_MS : POLL_MS);
  }
}

// A server-sent-events stream (read with fetch, so it can carry the token) of the agent
// loop's events: text as it streams and tools as they run.
async function stream() {
  for (;;) {
    try {
      const res = await fetch('/playground/api/events', { headers: { Authorization: `Bearer ${S.token}` } });
      if (!res.ok) throw new Error(String(res.status));
      S.streaming = true;
      $('#live').classList.add('on');
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const chunk = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          for (const line of chunk.split('\n')) {
            if (line.startsWith('data: ')) onLive(JSON.parse(line.slice(6)));
          }
        }
      }
    } catch (e) {
      /* the session stopped or restarted: try again */
    }
    S.streaming = false;
    $('#live').classList.remove('on');
    await sleep(1500);
  }
}

function onLive(ev) {
  if (ev.kind === 'state') { hurry(); return; }
  if (ev.kind !== 'agent') return;
  const live = (S.live[ev.conversation_id] ||= { text: '', tools: [] });
  const d = ev.data || {};
  if (ev.type === 'agent_start') { live.text = ''; live.tools = []; live.active = true; }
  else if (ev.type === 'message_start') live.text = '';
  else if (ev.type === 'message_update' && d.text) live.text += d.text;
  else if (ev.type === 'tool_execution_start') live.tools.push({ id: d.id, name: d.name, done: false });
  else if (ev.type === 'tool_execution_end') {
    const t = live.tools.find((x) => x.id === d.id);
    if (t) { t.done = true; t.error = d.is_error; }
  } else if (ev.type === 'agent_end') { live.active = false; hurry(); setTimeout(tick, 150); }
  if (ev.conversation_id === S.convId) renderLive();
}

// ---------------------------------------------------------------- rendering

function render() {
  renderHeader();
  renderProblems();
  renderConversations();
  renderTimeline();
  renderComposer();
  renderPanel();
  saveHash();
}

function renderHeader() {
  const st = S.state;
  if (changed('select', st.buddies.map((b) => [b.key, b.title, b.status]))) {
    const sel = $('#buddy-select');
    sel.replaceChildren(...st.buddies.map((b) => h('option', { value: b.key }, `${b.title}${b.status === 'error' ? ' ⚠' : ''}`)));
  }
  $('#buddy-select').value = S.buddyKey || '';
  const b = buddy();
  $('#buddy-title').textContent = b ? b.title : '';
  const pill = $('#buddy-status');
  if (b) {
    const text = b.status === 'running' ? `running · v${b.generation}`
      : b.status === 'error' ? (b.running ? `error · running v${b.generation}` : 'error · not running')
        : 'stopped';
    pill.textContent = text;
    pill.className = `pill ${b.status}`;
    pill.dataset.status = b.status;
    pill.dataset.generation = b.generation;
    $('#buddy-model').textContent = b.identity ? `${b.identity} · ${b.model}` : '';
  }
  if (S.clock) $('#clock').textContent = `platform time ${shanghai(S.clock.time)}${S.clock.offset ? ` (+${fmtSpan(S.clock.offset)})` : ''}`;
}

function fmtSpan(seconds) {
  const d = Math.floor(seconds / 86400);
  const hh = Math.floor((seconds % 86400) / 3600);
  const mm = Math.floor((seconds % 3600) / 60);
  return [d && `${d} d`, hh && `${hh} h`, mm && `${mm} min`].filter(Boolean).join(' ') || `${Math.round(seconds)} s`;
}

function renderProblems() {
  const b = buddy();
  const box = $('#problems');
  const problems = b ? b.problems : [];
  const error = b ? b.error : '';
  if (!changed('problems', [S.buddyKey, problems, error, b && b.running, b && b.generation])) return;
  if (!problems.length && !error) { box.hidden = true; box.replaceChildren(); return; }
  const keep = b.running ? `still running the last good version (v${b.generation})` : 'nothing is running yet';
  const n = problems.length;
  box.replaceChildren(
    h('h4', {}, n ? `${b.manifest}: ${n} problem${n === 1 ? '' : 's'} — ${keep}` : `${b.key}: ${error} — ${keep}`),
    ...problems.map((p) => h('div', { class: 'problem' },
      h('span', { class: 'where' }, p.line ? `${p.file}:${p.line}:${p.column}` : p.file), ': ',
      p.message, p.path ? ` [${p.path}]` : '', h('span', { class: 'muted' }, ` (${p.code})`),
      p.hint ? h('div', { class: 'hint' }, `hint: ${p.hint}`) : null)),
  );
  box.hidden = false;
}

function convName(c) {
  return c.members.map((m) => m.name).join('、');
}

function renderConversations() {
  if (!changed('convs', [S.convs, S.convId])) return;
  $('#conversations').replaceChildren(...S.convs.map((c) => h('li', {
    class: c.id === S.convId ? 'active' : '', dataset: { id: c.id, kind: c.kind },
    onclick: () => select({ convId: c.id }),
  }, h('div', {}, convName(c)), h('div', { class: 'kind' }, h('span', { class: 'k' }, c.kind), ` · ${c.id}`))));
  if (!S.convs.length) $('#conversations').append(h('li', { class: 'muted' }, 'none yet — create one below'));
}

function renderComposer() {
  const c = conv();
  const b = buddy();
  if (!changed('composer', [c && c.id, c && c.members, b && b.tools])) return;
  const sender = $('#composer-sender');
  sender.replaceChildren(...(c ? c.members : []).map((m) => h('option', { value: m.member_id }, m.name)));
  sender.hidden = !c || c.kind !== 'group';
  const call = $('#composer-call');
  call.replaceChildren(h('option', { value: '' }, '/call …'),
    ...((b && b.tools) || []).map((t) => h('option', { value: t.name }, t.name)));
  $('#composer-text').disabled = !c;
  $('#composer-send').disabled = !c;
  const head = $('#chat-head');
  head.replaceChildren(...(c ? [
    h('strong', {}, convName(c)), h('span', { class: 'tag' }, c.kind), h('code', { class: 'muted' }, c.id),
    h('span', { class: 'spacer' }),
    h('code', { id: 'saved-scenario', class: 'muted' }),
    h('button', { id: 'save-scenario', title: "write this conversation into the buddy's tests/ as a scenario file", onclick: () => act(() => saveScenario(b, c)) }, 'Save as scenario'),
    h('button', { class: 'danger', onclick: () => { if (confirm('Delete this conversation and everything stored for it?')) act(async () => { await api('DELETE', `/dev/conversations/${c.id}`); select({ convId: null }); }); } }, 'Delete'),
  ] : [h('span', { class: 'muted' }, b && b.identity ? 'Create a conversation to start.' : 'This buddy is not running.')]));
}

// "Save as scenario": the conversation into the buddy's tests/ (docs/playground.md); a
// file of that name is overwritten only when the person says so.
async function saveScenario(b, c, overwrite = false) {
  const shown = $('#saved-scenario');
  shown.textContent = 'recording…';
  try {
    const saved = await api('POST', '/playground/api/record', { buddy: b.key, conversation: c.id, overwrite });
    shown.textContent = saved.path;
    toast(`saved as ${saved.path}${saved.notes.length ? ` (${saved.notes.length} note(s))` : ''}`, 6000);
  } catch (e) {
    shown.textContent = '';
    if (e.status === 409 && confirm(`${e.message}\nOverwrite it?`)) return saveScenario(b, c, true);
    throw e;
  }
}

function skeleton(tool) {
  const params = tool.parameters || {};
  const props = params.properties || {};
  const args = {};
  for (const name of params.required || []) {
    const p = props[name] || {};
    args[name] = p.enum ? p.enum[0] : p.type === 'integer' || p.type === 'number' ? 1
      : p.type === 'array' ? [] : p.type === 'object' ? {} : p.type === 'boolean' ? false : '';
  }
  return `/call ${tool.name} ${JSON.stringify(args)}`;
}

// --- the timeline: what the users saw, with each turn's steps at the event it answers

function timeline() {
  const events = new Map(S.events.map((e) => [e.id, e]));
  const answered = new Set(S.turns.map((t) => t.event_id));
  const items = [];
  for (const m of S.messages) items.push({ t: m.created_at, r: m.sender === 'user' ? 0 : 2, kind: 'msg', m });
  for (const turn of S.turns) {
    const ev = events.get(turn.event_id);
    items.push({ t: ev ? ev.created_at : turn.created_at, r: 1, kind: 'turn', turn, ev });
  }
  for (const ev of S.events) {
    if (!answered.has(ev.id) && ev.acked_at === null) items.push({ t: ev.created_at, r: 1, kind: 'pending', ev });
  }
  for (const p of PARTS.panels) {
    if (p.timeline) items.push(...p.timeline(part(p.name)).map((x) => ({ r: 1, ...x, kind: 'part' })));
  }
  items.sort((a, b) => a.t - b.t || a.r - b.r);
  return items;
}

function renderTimeline() {
  const box = $('#timeline');
  const c = conv();
  const parts = PARTS.panels.map((p) => (p.timelineKey ? p.timelineKey(part(p.name)) : null));
  if (!changed('timeline', [S.convId, S.messages, S.turns, S.events.map((e) => [e.id, e.acked_at]), parts, (buddy() || {}).tools])) return;
  if (!c) { box.replaceChildren(h('div', { class: 'empty' }, 'No conversation selected.')); return; }
  const nodes = timeline().map(renderItem).filter(Boolean);
  box.replaceChildren(...(nodes.length ? nodes : [h('div', { class: 'empty' }, 'Say something to start.')]));
  renderLive();
  box.scrollTop = box.scrollHeight;
}

function renderItem(item) {
  if (item.kind === 'msg') return renderMessage(item.m);
  if (item.kind === 'turn') return renderTurn(item.turn, item.ev);
  if (item.kind === 'pending') return h('div', { class: 'turn pending', dataset: { event: item.ev.id } },
    h('div', { class: 'turn-head' }, h('span', { class: 'what' }, `${eventWhat(item.ev)} · working…`)),
    h('div', { class: 'live-slot', dataset: { conversation: item.ev.conversation_id } }));
  if (item.kind === 'part') return item.render();
  return null;
}

function eventWhat(ev) {
  if (!ev) return 'turn';
  const kind = PARTS.events[ev.type];
  return kind && kind.what ? kind.what(ev) : 'message';
}

function renderMessage(m) {
  const b = buddy();
  const title = b ? b.title : 'buddy';
  if (m.sender === 'user') {
    const who = member(m.member_id);
    return h('div', { class: 'msg user', dataset: { id: m.id } },
      h('div', { class: 'who' }, who ? who.name : 'user', m.body.option_of ? h('span', { class: 'badge' }, 'clicked an option') : null),
      m.body.text);
  }
  const who = h('div', { class: 'who' }, title);
  if (m.kind === 'text') return h('div', { class: 'msg buddy', dataset: { id: m.id } }, who, m.body.text);
  if (m.kind === 'question') {
    const chosen = S.messages.find((x) => x.sender === 'user' && x.body.option_of === m.id);
    return h('div', { class: 'msg buddy card question', dataset: { id: m.id } }, who,
      h('div', { class: 'card-kind' }, 'question'), h('div', {}, m.body.question),
      h('div', { class: 'options' }, m.body.options.map((o) => h('button', {
        class: `option${chosen && chosen.body.text === o ? ' chosen' : ''}`,
        disabled: chosen ? true : null,
        onclick: () => act(() => api('POST', `/dev/conversations/${S.convId}/options`, {
          message_id: m.id, option: o, ...(conv().kind === 'group' ? { member_id: $('#composer-sender').value } : {}),
        })),
      }, o))));
  }
  const card = PARTS.cards[m.kind];
  if (card) return card(m, who);
  return h('div', { class: 'msg buddy', dataset: { id: m.id } }, who, h('pre', {}, json(m.body)));
}

function renderTurn(turn, ev) {
  const steps = turn.steps;
  const results = new Map(steps.filter((s) => s.type === 'tool_result').map((s) => [s.call_id, s]));
  const rows = [];
  steps.forEach((s, i) => {
    if (s.type === 'tool_call') rows.push(renderStep(s, results.get(s.call_id)));
    else if (s.type === 'text') {
      const last = i === steps.length - 1 || !steps.slice(i + 1).some((x) => x.type !== 'reasoning');
      if (s.redacted) rows.push(h('div', { class: 'step note' }, h('span', { class: 'redacted' }, 'text redacted (the turn had read user data)')));
      else if (!(last && s.content === turn.reply)) rows.push(h('div', { class: 'step note' }, h('span', { class: 'k' }, 'text '), s.content));
    } else if (s.type === 'reasoning') {
      rows.push(h('details', { class: 'step note' }, h('summary', {}, 'reasoning'),
        s.redacted ? h('span', { class: 'redacted' }, 'redacted') : h('pre', {}, s.content)));
    }
  });
  const kind = PARTS.events[turn.event_type] || {};
  const head = kind.head ? kind.head(turn, ev) : [];
  for (const p of PARTS.panels) if (p.turnTags) head.push(...p.turnTags(turn));
  if (!rows.length && !head.length) return null;
  return h('div', { class: `turn${kind.turnClass ? ` ${kind.turnClass}` : ''}`, dataset: { event: turn.event_id } },
    head.length ? h('div', { class: 'turn-head' }, head) : null, rows);
}

function renderStep(call, result) {
  const info = toolInfo(call.tool);
  const resultText = result ? (typeof result.content === 'string' ? result.content : '') : '';
  const denied = result && result.is_error && resultText.startsWith(DENIED);
  const hookFailed = result && result.is_error && resultText.startsWith(HOOK_FAILED);
  let cls = 'step';
  if (denied || hookFailed) cls += ' denied';
  else if (result && result.is_error) cls += ' error';
  if (call.redacted || (result && result.redacted)) cls += ' redacted-step';
  const args = call.redacted
    ? h('span', { class: 'redacted' }, 'redacted — the turn had read user data before this call')
    : h('pre', {}, json(call.content));
  let out;
  if (!result) out = h('span', { class: 'muted' }, '(no result)');
  else if (result.redacted) out = h('span', { class: 'redacted' }, 'redacted — the turn had read user data');
  else if (info && info.reads_data && typeof result.content !== 'string') {
    out = h('span', { class: 'statuses' }, compact(result.content), ' ', h('span', { class: 'tag data' }, 'only dataset statuses kept'));
  } else out = h('pre', {}, json(result.content));
  return h('div', { class: cls, dataset: { tool: call.tool, call: call.call_id } },
    h('div', { class: 'head' },
      h('span', { class: 'label' }, (info && info.label) || call.tool),
      h('code', { class: 'tool' }, call.tool),
      denied ? h('span', { class: 'verdict' }, 'denied by a hook') : null,
      hookFailed ? h('span', { class: 'verdict' }, 'hook failed') : null,
      result && result.is_error && !denied && !hookFailed ? h('span', { class: 'verdict' }, 'error') : null),
    h('div', { class: 'io' }, h('span', { class: 'k' }, 'args'), args, h('span', { class: 'k' }, 'result'), out));
}

function renderLive() {
  for (const slot of document.querySelectorAll('.live-slot')) {
    const live = S.live[slot.dataset.conversation];
    if (!live) { slot.replaceChildren(); continue; }
    slot.replaceChildren(
      ...live.tools.map((t) => {
        const info = toolInfo(t.name);
        return h('div', { class: `step${t.done ? (t.error ? ' error' : '') : ' running'}` },
          h('span', { class: 'label' }, (info && info.label) || t.name), ' ', h('code', { class: 'tool' }, t.name),
          t.done ? (t.error ? ' ✗' : ' ✓') : ' …');
      }),
      ...(live.text ? [h('div', { class: 'live-text' }, live.text)] : []));
  }
}

// --- the side panel

function setTab(tab) {
  for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.tab === tab);
  select({ tab });
}

function renderPanel() {
  for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.tab === S.tab);
  const panel = $('#panel');
  const b = buddy();
  const c = conv();
  const p = PARTS.panels.find((x) => x.name === S.tab);
  const key = p ? [part(p.name), p.key ? p.key(b, c) : b] : [b, promptKind()];
  if (panel.contains(document.activeElement) && document.activeElement.matches('textarea, input')) return;
  if (!changed('panel', [S.tab, S.convId, S.buddyKey, key])) return;
  if (!p) { panel.replaceChildren(...buddyPanel(b)); return; }
  if (!b || !c) { panel.replaceChildren(h('p', { class: 'muted' }, 'Pick a conversation.')); return; }
  panel.replaceChildren(...p.render(b, c, part(p.name)));
}

function cell(value, schema) {
  if (value === undefined) return '';
  if (typeof value === 'boolean' || (schema && schema.type === 'boolean')) return value ? '✓' : '✗';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function buddyPanel(b) {
  if (!b) return [h('p', { class: 'muted' }, 'No buddy.')];
  return [
    h('section', {}, h('h3', {}, b.title), b.description ? h('p', {}, b.description) : null,
      h('table', {}, h('tbody', {},
        [['manifest', b.manifest], ['identity', b.identity || '—'], ['model', b.model || '—'], ['status', b.status],
          ['version', b.generation], ['loaded', when(b.loaded_at)], ['last change', b.changed.join(', ') || '—']]
          .map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, String(v))))))),
    h('section', {}, h('h3', {}, 'Tools'), h('table', {}, h('tbody', {}, (b.tools || []).map((t) => h('tr', {},
      h('td', {}, h('code', {}, t.name)), h('td', {}, t.label), h('td', { class: 'muted' }, t.kind)))))),
    ...compiledSections(b.compiled),
    h('section', {}, h('h3', {}, 'Watched files'), h('pre', {}, (b.files || []).join('\n'))),
  ];
}

// The compiled view of the running version (what `buddy render` shows): the system prompt
// of either conversation kind, the hooks, the proactive prompt and subscriptions.
function promptKind() {
  return S.promptKind || ((conv() || {}).kind === 'group' ? 'group' : 'private');
}

function compiledSections(v) {
  if (!v) return [];
  if (v.error) return [h('section', {}, h('h3', {}, 'System prompt'), h('p', { class: 'note' }, v.error))];
  const kind = promptKind();
  const prompt = h('section', { id: 'buddy-prompt' }, h('h3', {}, 'System prompt'),
    h('div', { class: 'row' },
      ['private', 'group'].map((k) => h('button', {
        class: `prompt-kind${k === kind ? ' active' : ''}`, dataset: { kind: k },
        onclick: () => { S.promptKind = k; renderPanel(); },
      }, k)),
      h('span', { class: 'note' }, `a ${kind} conversation, now = ${v.now} (as buddy render shows it)`)),
    h('pre', { class: 'prompt', dataset: { kind } }, v.system_prompt[kind]));
  const hook = (when, x) => h('div', { class: 'hook', dataset: { hook: when } },
    h('div', {}, h('span', { class: 'tag' }, when), ' ', ...(x.deny
      ? ['deny ', h('code', {}, x.deny.join(', ')), x.when ? ` when ${x.when}` : '']
      : [h('code', {}, x.handler.reference), x.tools.length ? ` on ${x.tools.join(', ')}` : ' on every tool'])),
    h('div', { class: 'note' }, x.deny ? x.reason : x.handler.file));
  const all = [...v.hooks.before_tool_call.map((x) => hook('before_tool_call', x)),
    ...v.hooks.after_tool_call.map((x) => hook('after_tool_call', x))];
  const hooks = h('section', { id: 'buddy-hooks' }, h('h3', {}, 'Hooks'),
    all.length ? all : h('p', { class: 'muted' }, 'No hooks.'));
  const pro = v.proactive;
  const proactive = pro ? h('section', { id: 'buddy-proactive' }, h('h3', {}, 'Proactive'),
    pro.subscriptions.length ? h('table', {}, h('tbody', {}, pro.subscriptions.map((x) => h('tr', { dataset: { key: x.key } },
      h('td', {}, h('code', {}, x.key), h('div', {}, x.title)),
      h('td', {}, [x.trigger.type, x.trigger.dataset, x.trigger.at && `at ${x.trigger.at}`,
        x.trigger.interval_minutes && `every ${fmtSpan(x.trigger.interval_minutes * 60)}`].filter(Boolean).join(' · '),
      h('div', { class: 'note' }, `quiet ${x.quiet_hours.start}–${x.quiet_hours.end} · cooldown ${x.cooldown_minutes} min · ${x.daily_limit}/day · activate ${x.activate}`))))))
      : h('p', { class: 'muted' }, 'No declared subscriptions.'),
    h('details', {}, h('summary', {}, 'the prompt of a proactive turn'), h('pre', { class: 'prompt' }, pro.prompt))) : null;
  return [prompt, hooks, proactive];
}

// ---------------------------------------------------------------- the capabilities' parts

// What the capabilities' scripts registered: panels (a tab each, in registry order), the
// cards they send (by message kind) and their event types (how an event and its turn read).
const PARTS = { panels: [], cards: {}, events: {} };
const part = (name) => S.parts[name] || {};

window.playground = {
  // the shell's helpers
  h, $, api, buddyApi, act, toast, when, shanghai, json, compact, cell, fmtSpan, select, setTab,
  buddy, conv, member, toolInfo, part, state: () => S.state, clock: () => S.clock,
  // panel({name, title, poll?, load?, render, key?, timeline?, timelineKey?, turnTags?}):
  //   poll(ctx) and load(ctx) (only while its tab is open) answer its data each poll,
  //   ctx = {b, c, id, who}; render(b, c, data) its tab's nodes; key(b, c) what else its
  //   rendering depends on; timeline(data) -> [{t, render}] extra timeline lines;
  //   turnTags(turn) -> nodes in a turn's head.
  panel(spec) { PARTS.panels.push(spec); },
  // card(kind, (message, who) => node): how a message of this kind is shown.
  card(kind, render) { PARTS.cards[kind] = render; },
  // event(type, {what(ev), head(turn, ev), turnClass}): how an event type reads.
  event(type, spec) { PARTS.events[type] = spec; },
};

async function loadParts(scripts) {
  for (const src of scripts) {
    await new Promise((resolve, reject) => {
      const el = h('script', { src });
      el.onload = resolve;
      el.onerror = () => reject(new Error(`cannot load ${src}`));
      document.head.append(el);
    });
  }
  $('#tabs').replaceChildren(
    ...PARTS.panels.map((p) => h('button', { class: 'tab', dataset: { tab: p.name } }, p.title)),
    h('button', { class: 'tab', dataset: { tab: 'buddy' } }, 'Buddy'));
}

// ---------------------------------------------------------------- wiring

function wire() {
  $('#buddy-select').addEventListener('change', (e) => select({ buddyKey: e.target.value, convId: null }));
  $('#tabs').addEventListener('click', (e) => { const t = e.target.closest('.tab'); if (t) setTab(t.dataset.tab); });
  for (const r of document.querySelectorAll('#new-conv input[name=kind]')) {
    r.addEventListener('change', () => {
      const input = $('#new-members');
      if (r.checked) input.value = r.value === 'group' ? '小李, 小王' : '小王';
    });
  }
  $('#new-conv').addEventListener('submit', (e) => {
    e.preventDefault();
    const b = buddy();
    if (!b || !b.identity) return;
    const kind = document.querySelector('#new-conv input[name=kind]:checked').value;
    const names = $('#new-members').value.split(/[,，、]/).map((s) => s.trim()).filter(Boolean);
    act(async () => {
      const created = await api('POST', '/dev/conversations', { identity: b.identity, kind, members: names.map((name) => ({ name })) });
      select({ convId: created.id });
    });
  });
  const text = $('#composer-text');
  const send = () => {
    const c = conv();
    const value = text.value.trim();
    if (!c || !value) return;
    text.value = '';
    const body = { text: value };
    if (c.kind === 'group') body.member_id = $('#composer-sender').value;
    act(() => api('POST', `/dev/conversations/${c.id}/messages`, body));
  };
  $('#composer').addEventListener('submit', (e) => { e.preventDefault(); send(); });
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  $('#composer-call').addEventListener('change', (e) => {
    const tool = toolInfo(e.target.value);
    e.target.value = '';
    if (tool) { text.value = skeleton(tool); text.focus(); }
  });
}

async function start() {
  const params = new URLSearchParams(location.hash.slice(1));
  S.buddyKey = params.get('buddy');
  S.convId = params.get('c');
  wire();
  try {
    const res = await fetch('/playground/api/config', { cache: 'no-store' });
    if (!res.ok) throw new Error((await res.json()).reason);
    const config = await res.json();
    S.token = config.admin_token;
    await loadParts(config.parts);
  } catch (e) {
    document.body.replaceChildren(h('p', { class: 'empty' }, `The playground cannot start: ${e.message}`));
    return;
  }
  S.tab = params.get('tab') || (PARTS.panels[0] || { name: 'buddy' }).name;
  stream();
  loop();
}

start();
