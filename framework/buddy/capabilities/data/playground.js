// The user-data capability in the playground: its tab (grants, the group switches, each
// member's data), its consent cards in the chat, how a consent result and a turn that
// read data read.
'use strict';
(() => {
  const { h, api, act, select, cell } = window.playground;
  const view = { member: '', dataset: '' };  // what this tab shows
  const groupOff = {};                        // member|dataset -> disabled (what this page set)

  function chosenMember(c) {
    return c.members.some((m) => m.member_id === view.member) ? view.member : c.members[0].member_id;
  }

  function itemsTable(items) {
    const cols = [...new Set(items.flatMap((i) => Object.keys(i)))];
    const short = (v) => (typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) ? v.slice(5, 16).replace('T', ' ') : cell(v));
    return h('div', { class: 'scroll' }, h('table', { class: 'items' },
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', {}, c)))),
      h('tbody', {}, items.map((i) => h('tr', {}, cols.map((c) => h('td', {}, short(i[c]))))))));
  }

  window.playground.panel({
    name: 'data',
    title: 'Data',
    async load({ c, who }) {
      const m = encodeURIComponent(chosenMember(c));
      const out = { grants: await api('GET', `/dev/grants?identity=${who}&member_id=${m}`) };
      if (view.dataset) {
        out.result = await api('GET', `/dev/data?member_id=${m}&dataset=${encodeURIComponent(view.dataset)}`);
        out.dataset = view.dataset;
      }
      return out;
    },
    key: () => [view, groupOff],
    turnTags: (turn) => (turn.data_read ? [h('span', { class: 'tag data' }, 'read user data')] : []),
    render(b, c, data) {
      const m = chosenMember(c);
      const grants = data.grants || [];
      const out = [];
      const pick = h('select', { id: 'data-member', onchange: (e) => { view.member = e.target.value; select({}); } },
        c.members.map((x) => h('option', { value: x.member_id, selected: x.member_id === m }, x.name)));
      out.push(h('div', { class: 'row' }, 'member', pick));
      const declared = grants.filter((g) => g.declared);
      out.push(h('section', {}, h('h3', {}, 'Grants'),
        declared.length ? h('table', { id: 'grants' }, h('tbody', {}, declared.map((g) => h('tr', { dataset: { dataset: g.dataset, granted: g.granted } },
          h('td', {}, h('strong', {}, g.dataset), h('div', { class: 'muted' }, g.purpose)),
          h('td', {}, g.granted ? 'granted' : g.granted_version ? 'purpose changed' : 'not granted'),
          h('td', {}, h('button', { class: 'grant-toggle', onclick: () => act(() => api('PUT', '/dev/grants', { identity: b.identity, member_id: m, dataset: g.dataset, granted: !g.granted })) }, g.granted ? 'Revoke' : 'Grant'))))))
          : h('p', { class: 'muted' }, 'This buddy declares no user data.')));
      if (c.kind === 'group' && declared.length) {
        out.push(h('section', {}, h('h3', {}, 'Off in this group'), declared.map((g) => {
          const k = `${m}|${g.dataset}`;
          const box = h('input', { type: 'checkbox', checked: groupOff[k] ? true : null, onchange: (e) => act(async () => {
            await api('PUT', '/dev/group-settings', { conversation_id: c.id, member_id: m, dataset: g.dataset, disabled: e.target.checked });
            groupOff[k] = e.target.checked;
          }) });
          return h('label', { class: 'row' }, box, `${g.dataset} disabled for this member here`);
        })));
      }
      const ds = h('select', { id: 'data-dataset', onchange: (e) => { view.dataset = e.target.value; select({}); } },
        h('option', { value: '' }, '(pick a dataset)'), (b.catalogue || []).map((d) => h('option', { value: d.id, selected: d.id === view.dataset }, `${d.id} ${d.title}`)));
      const r = view.dataset && data.dataset === view.dataset ? data.result : null;
      out.push(h('section', {}, h('h3', {}, 'Member data'), h('div', { class: 'row' }, ds,
        view.dataset ? [
          h('button', { onclick: () => act(() => api('PUT', '/dev/data', { member_id: m, dataset: view.dataset, items: null })) }, 'No data'),
          h('button', { onclick: () => act(() => api('DELETE', `/dev/data?member_id=${encodeURIComponent(m)}&dataset=${encodeURIComponent(view.dataset)}`)) }, 'Simulated'),
        ] : null),
      r ? h('div', {}, h('div', { class: 'note' }, `${r.source}${r.items ? `, ${r.items.length} items` : ', no data'}`), r.items ? itemsTable(r.items) : null) : null));
      return out;
    },
  });

  window.playground.card('consent', (m, who) => {
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
  });

  const what = (ev) => `consent ${ev.payload.granted ? 'granted' : 'denied'} · ${ev.payload.kind}`;
  window.playground.event('consent_result', {
    what,
    head: (turn, ev) => [h('span', { class: 'what' }, ev ? what(ev) : 'turn')],
  });
})();
