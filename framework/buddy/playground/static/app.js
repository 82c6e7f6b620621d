// The buddy playground: a page over the dev platform's /dev endpoints (docs/protocol.md)
// and the three endpoints of buddy.playground.app. Plain JavaScript, no dependencies.
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
  tab: 'widgets',
  convs: [],
  messages: [], turns: [], events: [], runs: [], widgets: { widgets: [], cards: [] },
  memory: [], subs: [], clock: null, grants: [],
  dataView: { dataset: '', result: null },
  groupOff: {},        // member|dataset -> disabled (what this page set)
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
  const out = { messages: [], turns: [], events: [], runs: [], widgets: { widgets: [], cards: [] } };
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
  const [messages, turns, events, runs, widgets] = await Promise.all([
    api('GET', `/dev/conversations/${id}/messages`),
    api('GET', `/dev/conversations/${id}/turns`),
    api('GET', `/dev/events?identity=${who}`),
    api('GET', `/dev/proactive/runs?identity=${who}&conversation_id=${id}`),
    api('GET', `/dev/conversations/${id}/widgets`),
  ]);
  Object.assign(out, { messages, turns, runs: runs.runs, widgets });
  out.events = events.filter((e) => e.conversation_id === c.id);
  if (sel.tab === 'memory' && b.dev_token) {
    const memory = await api('GET', '/internal/v1/memory', undefined, {
      Authorization: `Bearer ${b.dev_token}`, 'X-Conversation-Id': c.id,
    });
    out.memory = memory.entries;
  } else if (sel.tab === 'proactive') {
    const all = await api('GET', `/dev/proactive/subscriptions?identity=${who}`);
    out.subs = all.subscriptions.filter((s) => s.conversation_id === c.id);
  } else if (sel.tab === 'data') {
    const m = c.members.some((x) => x.member_id === S.dataView.member) ? S.dataView.member : c.members[0].member_id;
    out.grants = await api('GET', `/dev/grants?identity=${who}&member_id=${encodeURIComponent(m)}`);
    if (S.dataView.dataset) {
      out.dataResult = await api('GET', `/dev/data?member_id=${encodeURIComponent(m)}&dataset=${encodeURIComponent(S.dataView.dataset)}`);
    }
  }
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
  if ('dataResult' in out) { S.dataView.result = out.dataResult; delete out.dataResult; }
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
    h('button', { class: 'danger', onclick: () => { if (confirm('Delete this conversation and everything stored for it?')) act(async () => { await api('DELETE', `/dev/conversations/${c.id}`); select({ convId: null }); }); } }, 'Delete'),
  ] : [h('span', { class: 'muted' }, b && b.identity ? 'Create a conversation to start.' : 'This buddy is not running.')]));
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
  for (const run of S.runs) {
    if (run.status !== 'fired') items.push({ t: run.created_at, r: 1, kind: 'run', run });
  }
  items.sort((a, b) => a.t - b.t || a.r - b.r);
  return items;
}

function renderTimeline() {
  const box = $('#timeline');
  const c = conv();
  if (!changed('timeline', [S.convId, S.messages, S.turns, S.events.map((e) => [e.id, e.acked_at]), S.runs, S.widgets.cards, (buddy() || {}).tools])) return;
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
  if (item.kind === 'run') {
    const r = item.run;
    return h('div', { class: `run-line ${r.status}`, dataset: { run: r.id } },
      `proactive ${r.subscription_key} (${r.trigger_type}) ${r.status}: ${r.reason || r.gate || ''}`);
  }
  return null;
}

function eventWhat(ev) {
  if (!ev) return 'turn';
  if (ev.type === 'proactive') return `proactive · ${ev.payload.title}`;
  if (ev.type === 'consent_result') return `consent ${ev.payload.granted ? 'granted' : 'denied'} · ${ev.payload.kind}`;
  return 'message';
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
  if (m.kind === 'consent') return renderConsent(m, who);
  if (m.kind === 'widget') {
    const card = S.widgets.cards.find((x) => x.message_id === m.id) || {};
    return h('div', { class: `msg buddy card widget-card${card.deleted ? ' deleted' : ''}`, dataset: { id: m.id, widget: m.body.widget_id } }, who,
      h('div', { class: 'card-kind' }, 'widget card'),
      h('strong', {}, card.title || '(gone)'),
      card.presentation && card.presentation.summary ? h('div', {}, card.presentation.summary) : null,
      h('div', { class: 'note' }, card.deleted ? 'deleted' : h('a', { href: '#', onclick: (e) => { e.preventDefault(); setTab('widgets'); } }, `open ${m.body.widget_id}`)));
  }
  return h('div', { class: 'msg buddy', dataset: { id: m.id } }, who, h('pre', {}, json(m.body)));
}

function renderConsent(m, who) {
  const body = m.body;
  const answer = (granted) => act(() => api('POST', `/dev/data-access/requests/${body.request_id}/answer`, { granted }));
  const labels = {
    healthkit: ['Grant', 'Deny'],
    location: ['Share location', "Don't share"],
    calendar: [`Share ${body.calendar_days || 7} days of calendar`, "Don't share"],
  }[body.kind] || ['Grant', 'Deny'];
  return h('div', { class: 'msg buddy card consent', dataset: { id: m.id, request: body.request_id, status: body.status } }, who,
    h('div', { class: 'card-kind' }, `data access · ${body.kind}`),
    h('div', {}, body.reason),
    body.datasets ? h('ul', {}, body.datasets.map((d) => h('li', {}, h('strong', {}, d.title), ` (${d.id}) — ${d.purpose}`))) : null,
    body.status === 'pending'
      ? h('div', { class: 'actions' },
        h('button', { class: 'primary grant', onclick: () => answer(true) }, labels[0]),
        h('button', { class: 'deny', onclick: () => answer(false) }, labels[1]))
      : h('div', { class: `status ${body.status}` }, body.status));
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
  const proactive = turn.proactive;
  const head = [];
  if (proactive) {
    head.push(h('span', { class: 'tag proactive' }, 'proactive'),
      h('span', { class: 'what' }, ev ? `${ev.payload.title} — ${ev.payload.reason}` : 'proactive turn'),
      ev ? h('span', {}, `trigger ${compact(ev.payload.trigger)}`) : null);
    if (turn.reply === null && !turn.question) head.push(h('span', { class: 'tag skip' }, 'said nothing (skip)'));
  } else if (turn.event_type === 'consent_result') {
    head.push(h('span', { class: 'what' }, eventWhat(ev)));
  }
  if (turn.data_read) head.push(h('span', { class: 'tag data' }, 'read user data'));
  if (!rows.length && !head.length) return null;
  return h('div', { class: `turn${proactive ? ' proactive' : ''}`, dataset: { event: turn.event_id } },
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
  const key = { widgets: [S.widgets, b && b.widgets], memory: S.memory, proactive: [S.subs, S.runs, S.clock && S.clock.offset, b && b.subscriptions, c && c.kind], data: [S.grants, S.dataView, S.groupOff], buddy: b }[S.tab];
  if (panel.contains(document.activeElement) && document.activeElement.matches('textarea, input')) return;
  if (!changed('panel', [S.tab, S.convId, S.buddyKey, key])) return;
  if (S.tab === 'buddy') { panel.replaceChildren(...buddyPanel(b)); return; }
  if (!b || !c) { panel.replaceChildren(h('p', { class: 'muted' }, 'Pick a conversation.')); return; }
  panel.replaceChildren(...{ widgets: widgetsPanel, memory: memoryPanel, proactive: proactivePanel, data: dataPanel }[S.tab](b, c));
}

function cell(value, schema) {
  if (value === undefined) return '';
  if (typeof value === 'boolean' || (schema && schema.type === 'boolean')) return value ? '✓' : '✗';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function widgetsPanel(b) {
  const types = new Map((b.widgets || []).map((w) => [w.type, w]));
  const out = [];
  if (!S.widgets.widgets.length) out.push(h('p', { class: 'muted' }, 'No widgets in this conversation yet.'));
  for (const w of S.widgets.widgets) {
    const type = types.get(w.type);
    const modules = type ? type.modules : Object.keys(w.modules).map((name) => ({ name, title: name, record: {} }));
    out.push(h('div', { class: 'widget', dataset: { id: w.id } },
      h('h4', {}, w.title, ' ', h('small', { class: 'muted' }, `${type ? type.title : w.type} · ${w.id}${w.can_edit ? '' : ' · read-only'}`)),
      w.presentation && w.presentation.summary ? h('div', { class: 'note' }, w.presentation.summary) : null,
      modules.map((mod) => {
        const records = (w.modules[mod.name] || { records: [] }).records;
        const props = (mod.record && mod.record.properties) || {};
        const cols = Object.keys(props).length ? Object.keys(props) : [...new Set(records.flatMap((r) => Object.keys(r.data)))];
        const required = new Set((mod.record && mod.record.required) || []);
        return h('div', { class: 'module', dataset: { module: mod.name } },
          h('h5', {}, mod.title, ' ', h('small', { class: 'muted' }, `(${mod.name}) · ${records.length} record${records.length === 1 ? '' : 's'}`)),
          h('table', {},
            h('thead', {}, h('tr', {}, h('th', {}, 'id'), cols.map((col) => h('th', { title: (props[col] || {}).description || '' }, col + (required.has(col) ? '*' : ''))), h('th', {}, 'rev'))),
            h('tbody', {}, records.length ? records.map((r) => h('tr', { dataset: { record: r.record_id } },
              h('td', {}, r.record_id), cols.map((col) => h('td', {}, cell(r.data[col], props[col]))), h('td', {}, r.revision)))
              : h('tr', {}, h('td', { colspan: cols.length + 2, class: 'muted' }, 'no records')))));
      })));
  }
  out.push(h('section', {}, h('h3', {}, 'Cards sent'),
    S.widgets.cards.length ? h('table', {}, h('tbody', {}, S.widgets.cards.map((card) => h('tr', { class: 'sent-card', dataset: { widget: card.widget_id } },
      h('td', {}, when(card.sent_at)), h('td', {}, card.title || '(gone)'), h('td', {}, card.deleted ? 'deleted' : (card.presentation.summary || '')))))) : h('p', { class: 'muted' }, 'none')));
  return out;
}

function memoryPanel() {
  const b = buddy();
  if (!b.dev_token) return [h('p', { class: 'muted' }, 'The buddy is not registered yet.')];
  const save = (key, text) => act(() => buddyApi('PUT', `/internal/v1/memory/${encodeURIComponent(key)}`, { text }));
  const out = [h('p', { class: 'note' }, 'The conversation\'s long-term notes, as the buddy reads them (memory.*). Edits are the buddy\'s own writes.')];
  if (!S.memory.length) out.push(h('p', { class: 'muted' }, 'Empty.'));
  for (const e of S.memory) {
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
}

const TRIGGERS = ['workout.completed', 'sleep.ready', 'data.updated'];

function proactivePanel(b, c) {
  const out = [];
  const clock = S.clock;
  const advance = (seconds) => act(async () => {
    S.clock = await api('POST', '/dev/clock', { advance_seconds: seconds });
    toast(`clock +${fmtSpan(seconds)}`);
  });
  const minutes = h('input', { id: 'clock-minutes', type: 'number', min: '1', value: '30', style: 'width:70px' });
  out.push(h('section', {}, h('h3', {}, 'Clock'),
    h('div', { id: 'clock-now' }, clock ? `${shanghai(clock.time)} (Asia/Shanghai)${clock.offset ? ` — ${fmtSpan(clock.offset)} ahead of real time` : ''}` : ''),
    h('div', { class: 'row' },
      [[3600, '+1 h'], [6 * 3600, '+6 h'], [86400, '+1 day'], [7 * 86400, '+7 days']].map(([s, label]) =>
        h('button', { class: 'clock-advance', dataset: { seconds: s }, onclick: () => advance(s) }, label)),
      minutes, h('button', { onclick: () => advance(Number(minutes.value) * 60) }, 'min →')),
    h('p', { class: 'note' }, 'Advancing fires every schedule that became due; quiet hours, cooldown and daily limits use this clock.')));

  const type = h('select', { id: 'trigger-type' }, TRIGGERS.map((t) => h('option', { value: t }, t)));
  const dataset = h('select', { id: 'trigger-dataset' }, h('option', { value: '' }, '(any dataset)'),
    S.state.catalogue.map((d) => h('option', { value: d.id }, `${d.id} ${d.title}`)));
  const who = h('select', { id: 'trigger-member' }, c.members.map((m) => h('option', { value: m.member_id }, m.name)));
  const fire = () => act(async () => {
    const body = { identity: b.identity, member_id: who.value, type: type.value };
    if (type.value === 'data.updated' && dataset.value) body.dataset = dataset.value;
    const res = await api('POST', '/dev/triggers', body);
    const counts = res.runs.map((r) => `${r.subscription_key}: ${r.status}${r.reason ? ` (${r.reason})` : ''}`);
    toast(counts.length ? `fired — ${counts.join('; ')}` : 'no active subscription matches');
  });
  out.push(h('section', {}, h('h3', {}, 'Fire a trigger'),
    h('div', { class: 'row' }, type, dataset), h('div', { class: 'row' }, 'for', who, h('button', { id: 'trigger-fire', class: 'primary', onclick: fire }, 'Fire')),
    h('p', { class: 'note' }, 'Fires every matching active subscription of this member\'s private conversations with the buddy.')));

  const active = new Set(S.subs.map((s) => s.key));
  out.push(h('section', {}, h('h3', {}, 'Subscriptions of this conversation'),
    c.kind === 'group' ? h('p', { class: 'note' }, 'Proactive subscriptions exist in private conversations only.') : null,
    S.subs.length ? h('div', { id: 'subs' }, S.subs.map((s) => h('div', { class: `sub ${s.status}`, dataset: { key: s.key, status: s.status } },
      h('div', { class: 'row' }, h('strong', {}, s.key), h('span', {}, s.title), h('span', { class: `tag ${s.status}` }, s.status)),
      h('div', { class: 'note' }, [
        `trigger ${compact(s.trigger)}`,
        s.quiet_hours ? `quiet ${s.quiet_hours.start}–${s.quiet_hours.end} ${s.quiet_hours.timezone}` : '',
        `cooldown ${s.cooldown_minutes} min`, `${s.daily_limit}/day`,
        s.next_run_at ? `next ${shanghai(s.next_run_at)}` : '',
      ].filter(Boolean).join(' · '))))) : h('p', { class: 'muted' }, 'None yet (declared on_first_message ones start with the first message).'),
    (b.subscriptions || []).filter((s) => !active.has(s.key)).map((s) => h('div', { class: 'note' }, `declared: ${s.key} (${s.title}) — ${s.trigger}, activate ${s.activate}`))));

  out.push(h('section', {}, h('h3', {}, 'Runs'),
    S.runs.length ? h('div', { id: 'runs' }, [...S.runs].reverse().map((r) => h('div', { class: `run ${r.status}`, dataset: { status: r.status, key: r.subscription_key } },
      h('div', { class: 'row' }, h('span', { class: 'muted' }, when(r.created_at)), h('strong', {}, r.subscription_key),
        h('span', {}, r.trigger_type), h('span', { class: 'status' }, r.status)),
      r.reason ? h('div', { class: 'note' }, r.reason) : null))) : h('p', { class: 'muted' }, 'No runs yet.')));
  return out;
}

function dataMember() {
  const c = conv();
  if (!c) return null;
  const chosen = S.dataView.member;
  return c.members.some((m) => m.member_id === chosen) ? chosen : c.members[0].member_id;
}

function dataPanel(b, c) {
  const m = dataMember();
  const out = [];
  const pick = h('select', { id: 'data-member', onchange: (e) => { S.dataView.member = e.target.value; select({}); } },
    c.members.map((x) => h('option', { value: x.member_id, selected: x.member_id === m }, x.name)));
  out.push(h('div', { class: 'row' }, 'member', pick));
  const declared = S.grants.filter((g) => g.declared);
  out.push(h('section', {}, h('h3', {}, 'Grants'),
    declared.length ? h('table', { id: 'grants' }, h('tbody', {}, declared.map((g) => h('tr', { dataset: { dataset: g.dataset, granted: g.granted } },
      h('td', {}, h('strong', {}, g.dataset), h('div', { class: 'muted' }, g.purpose)),
      h('td', {}, g.granted ? 'granted' : g.granted_version ? 'purpose changed' : 'not granted'),
      h('td', {}, h('button', { class: 'grant-toggle', onclick: () => act(() => api('PUT', '/dev/grants', { identity: b.identity, member_id: m, dataset: g.dataset, granted: !g.granted })) }, g.granted ? 'Revoke' : 'Grant'))))))
      : h('p', { class: 'muted' }, 'This buddy declares no user data.')));
  if (c.kind === 'group' && declared.length) {
    out.push(h('section', {}, h('h3', {}, 'Off in this group'), declared.map((g) => {
      const k = `${m}|${g.dataset}`;
      const box = h('input', { type: 'checkbox', checked: S.groupOff[k] ? true : null, onchange: (e) => act(async () => {
        await api('PUT', '/dev/group-settings', { conversation_id: c.id, member_id: m, dataset: g.dataset, disabled: e.target.checked });
        S.groupOff[k] = e.target.checked;
      }) });
      return h('label', { class: 'row' }, box, `${g.dataset} disabled for this member here`);
    })));
  }
  const ds = h('select', { id: 'data-dataset', onchange: (e) => { S.dataView.dataset = e.target.value; S.dataView.result = null; select({}); } },
    h('option', { value: '' }, '(pick a dataset)'), S.state.catalogue.map((d) => h('option', { value: d.id, selected: d.id === S.dataView.dataset }, `${d.id} ${d.title}`)));
  const r = S.dataView.result;
  out.push(h('section', {}, h('h3', {}, 'Member data'), h('div', { class: 'row' }, ds,
    S.dataView.dataset ? [
      h('button', { onclick: () => act(() => api('PUT', '/dev/data', { member_id: m, dataset: S.dataView.dataset, items: null })) }, 'No data'),
      h('button', { onclick: () => act(() => api('DELETE', `/dev/data?member_id=${encodeURIComponent(m)}&dataset=${encodeURIComponent(S.dataView.dataset)}`)) }, 'Simulated'),
    ] : null),
  r ? h('div', {}, h('div', { class: 'note' }, `${r.source}${r.items ? `, ${r.items.length} items` : ', no data'}`), r.items ? itemsTable(r.items) : null) : null));
  return out;
}

function itemsTable(items) {
  const cols = [...new Set(items.flatMap((i) => Object.keys(i)))];
  const short = (v) => (typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) ? v.slice(5, 16).replace('T', ' ') : cell(v));
  return h('div', { class: 'scroll' }, h('table', { class: 'items' },
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', {}, c)))),
    h('tbody', {}, items.map((i) => h('tr', {}, cols.map((c) => h('td', {}, short(i[c]))))))));
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
    h('section', {}, h('h3', {}, 'Watched files'), h('pre', {}, (b.files || []).join('\n'))),
  ];
}

// ---------------------------------------------------------------- wiring

function wire() {
  $('#buddy-select').addEventListener('change', (e) => select({ buddyKey: e.target.value, convId: null }));
  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => setTab(b.dataset.tab));
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
  S.tab = params.get('tab') || 'widgets';
  wire();
  try {
    const res = await fetch('/playground/api/config', { cache: 'no-store' });
    if (!res.ok) throw new Error((await res.json()).reason);
    S.token = (await res.json()).admin_token;
  } catch (e) {
    document.body.replaceChildren(h('p', { class: 'empty' }, `The playground cannot start: ${e.message}`));
    return;
  }
  stream();
  loop();
}

start();
