// The proactive capability in the playground: its tab (the clock, firing a trigger, the
// conversation's subscriptions and runs), its runs in the timeline, and how a proactive
// turn reads.
'use strict';
(() => {
  const { h, api, act, toast, when, shanghai, compact, fmtSpan } = window.playground;
  const TRIGGERS = ['workout.completed', 'sleep.ready', 'data.updated'];
  const EVENTS = { 'workout.completed': 'when a workout is finished', 'sleep.ready': 'when a night\'s sleep is ready' };

  // A repeat interval in words: 90 → "1 h 30 min", 1440 → "1 day".
  function every(minutes) {
    const days = Math.floor(minutes / 1440), hours = Math.floor((minutes % 1440) / 60), mins = minutes % 60;
    return [days ? `${days} day${days > 1 ? 's' : ''}` : '', hours ? `${hours} h` : '', mins ? `${mins} min` : ''].filter(Boolean).join(' ');
  }

  // A trigger as a sentence, whether the platform gives it (`{type, at, interval_minutes,
  // dataset}`) or the manifest's name (`workout.completed`).
  function sentence(trigger) {
    const t = typeof trigger === 'string' ? { type: trigger } : (trigger || {});
    if (EVENTS[t.type]) return EVENTS[t.type];
    if (t.type === 'data.updated') return t.dataset ? `when new ${t.dataset} data arrives` : 'when new data arrives';
    if (t.type === 'schedule' && t.at) {
      const first = shanghai(Date.parse(t.at) / 1000);
      return t.interval_minutes ? `from ${first}, every ${every(t.interval_minutes)}` : `once, at ${first}`;
    }
    return compact(trigger);
  }

  // What firing a trigger did: the turns it started, and why the other runs started none.
  function outcome(trigger, member, c, runs, subs) {
    if (!runs.length) return `${trigger}: no turn — no active subscription of ${member} matches`;
    const clause = (r) => {
      const s = subs.find((x) => x.conversation_id === r.conversation_id && x.key === r.subscription_key) || {};
      const where = r.conversation_id === c.id ? '' : ` (in ${r.conversation_id})`;
      const key = r.subscription_key;
      if (r.status === 'fired') return `${key} started a proactive turn${where}`;
      const q = s.quiet_hours;
      const why = r.gate === 'cooldown' ? `is cooling down${s.cooldown_minutes ? ` (${s.cooldown_minutes} min)` : ''}`
        : r.gate === 'quiet_hours' ? `is in its quiet hours${q ? ` (${q.start}–${q.end} ${q.timezone})` : ''}`
          : r.gate === 'daily_limit' ? `reached its daily limit${s.daily_limit ? ` (${s.daily_limit}/day)` : ''}`
            : `stopped: ${r.reason || r.status}`;
      return `${key} ${why}${where}`;
    };
    const started = runs.filter((r) => r.status === 'fired').map(clause);
    const stopped = runs.filter((r) => r.status !== 'fired').map(clause);
    if (!started.length) return `${trigger}: no turn — ${stopped.join('; ')}`;
    return `${trigger}: ${started.join('; ')}${stopped.length ? ` · no turn — ${stopped.join('; ')}` : ''}`;
  }

  window.playground.panel({
    name: 'proactive',
    title: 'Proactive',
    // Every poll: the timeline shows the runs that did not fire.
    poll: async ({ who, id }) => ({
      runs: (await api('GET', `/dev/proactive/runs?identity=${who}&conversation_id=${id}`)).runs,
    }),
    async load({ who, c }) {
      const all = await api('GET', `/dev/proactive/subscriptions?identity=${who}`);
      return { subs: all.subscriptions.filter((s) => s.conversation_id === c.id) };
    },
    key: (b, c) => [(window.playground.clock() || {}).offset, b && b.subscriptions, c && c.kind],
    timelineKey: (data) => data.runs,
    timeline: (data) => (data.runs || []).filter((r) => r.status !== 'fired').map((r) => ({
      t: r.created_at,
      render: () => h('div', { class: `run-line ${r.status}`, dataset: { run: r.id } },
        `proactive ${r.subscription_key} (${r.trigger_type}) ${r.status}: ${r.reason || r.gate || ''}`),
    })),
    render(b, c, data) {
      const subs = data.subs || [];
      const runs = data.runs || [];
      const out = [];
      const clock = window.playground.clock();
      const advance = (seconds) => act(async () => {
        await api('POST', '/dev/clock', { advance_seconds: seconds });
        toast(`clock +${fmtSpan(seconds)}`);
      });
      const minutes = h('input', { id: 'clock-minutes', type: 'number', min: '1', value: '30', 'aria-label': 'minutes' });
      out.push(h('section', {}, h('h3', {}, 'Clock'),
        h('div', { id: 'clock-now' }, clock ? `${shanghai(clock.time)} (Asia/Shanghai)${clock.offset ? ` — ${fmtSpan(clock.offset)} ahead of real time` : ''}` : ''),
        h('div', { class: 'row clock-row', id: 'clock-controls' },
          [[3600, '+1 h'], [6 * 3600, '+6 h'], [86400, '+1 day'], [7 * 86400, '+7 days']].map(([s, label]) =>
            h('button', { class: 'clock-advance', dataset: { seconds: s }, onclick: () => advance(s) }, label)),
          minutes, h('button', { id: 'clock-advance-minutes', onclick: () => advance(Number(minutes.value) * 60) }, 'min →')),
        h('p', { class: 'note' }, 'Advancing fires every schedule that became due; quiet hours, cooldown and daily limits use this clock.')));

      const type = h('select', { id: 'trigger-type' }, TRIGGERS.map((t) => h('option', { value: t }, t)));
      const dataset = h('select', { id: 'trigger-dataset' }, h('option', { value: '' }, '(any dataset)'),
        (b.catalogue || []).map((d) => h('option', { value: d.id }, `${d.id} ${d.title}`)));
      const who = h('select', { id: 'trigger-member' }, c.members.map((m) => h('option', { value: m.member_id }, m.name)));
      const fire = () => act(async () => {
        const body = { identity: b.identity, member_id: who.value, type: type.value };
        if (type.value === 'data.updated' && dataset.value) body.dataset = dataset.value;
        const res = await api('POST', '/dev/triggers', body);
        const all = res.runs.length ? (await api('GET', `/dev/proactive/subscriptions?identity=${encodeURIComponent(b.identity)}`)).subscriptions : [];
        const name = (c.members.find((m) => m.member_id === who.value) || {}).name || who.value;
        toast(outcome(type.value, name, c, res.runs, all), 6000);
      });
      out.push(h('section', {}, h('h3', {}, 'Fire a trigger'),
        h('div', { class: 'row' }, type, dataset), h('div', { class: 'row' }, 'for', who, h('button', { id: 'trigger-fire', class: 'primary', onclick: fire }, 'Fire')),
        h('p', { class: 'note' }, 'Fires every matching active subscription of this member\'s private conversations with the buddy.')));

      const active = new Set(subs.map((s) => s.key));
      out.push(h('section', {}, h('h3', {}, 'Subscriptions of this conversation'),
        c.kind === 'group' ? h('p', { class: 'note' }, 'Proactive subscriptions exist in private conversations only.') : null,
        subs.length ? h('div', { id: 'subs' }, subs.map((s) => h('div', { class: `sub ${s.status}`, dataset: { key: s.key, status: s.status } },
          h('div', { class: 'row' }, h('strong', {}, s.key), h('span', {}, s.title), h('span', { class: `tag ${s.status}` }, s.status)),
          h('div', { class: 'note' }, [
            sentence(s.trigger),
            s.quiet_hours ? `quiet ${s.quiet_hours.start}–${s.quiet_hours.end} ${s.quiet_hours.timezone}` : '',
            `cooldown ${s.cooldown_minutes} min`, `${s.daily_limit}/day`,
            s.next_run_at ? `next ${shanghai(s.next_run_at)}` : '',
          ].filter(Boolean).join(' · '))))) : h('p', { class: 'muted' }, 'None yet (declared on_first_message ones start with the first message).'),
        (b.subscriptions || []).filter((s) => !active.has(s.key)).map((s) => h('div', { class: 'note' }, `declared: ${s.key} (${s.title}) — ${sentence({ type: s.trigger, dataset: s.dataset, at: s.at, interval_minutes: s.interval_minutes })}, activate ${s.activate}`))));

      out.push(h('section', {}, h('h3', {}, 'Runs'),
        runs.length ? h('div', { id: 'runs' }, [...runs].reverse().map((r) => h('div', { class: `run ${r.status}`, dataset: { status: r.status, key: r.subscription_key } },
          h('div', { class: 'row' }, h('span', { class: 'muted' }, when(r.created_at)), h('strong', {}, r.subscription_key),
            h('span', {}, r.trigger_type), h('span', { class: 'status' }, r.status)),
          r.reason ? h('div', { class: 'note' }, r.reason) : null))) : h('p', { class: 'muted' }, 'No runs yet.')));
      return out;
    },
  });

  window.playground.event('proactive', {
    what: (ev) => `proactive · ${ev.payload.title}`,
    turnClass: 'proactive',
    head(turn, ev) {
      const head = [h('span', { class: 'tag proactive' }, 'proactive'),
        h('span', { class: 'what' }, ev ? `${ev.payload.title} — ${ev.payload.reason}` : 'proactive turn'),
        ev ? h('span', {}, sentence(ev.payload.trigger)) : null];
      if (turn.reply === null && !turn.question) head.push(h('span', { class: 'tag skip' }, 'said nothing (skip)'));
      return head;
    },
  });
})();
