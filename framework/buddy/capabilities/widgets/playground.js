// The widgets capability in the playground: its tab (each widget of the conversation,
// rendered from its type's record schemas, and the cards sent) and its cards in the chat.
'use strict';
(() => {
  const { h, api, when, cell, setTab } = window.playground;

  window.playground.panel({
    name: 'widgets',
    title: 'Widgets',
    // Every poll: the timeline shows each widget card with its widget's title.
    poll: async ({ id }) => api('GET', `/dev/conversations/${id}/widgets`),
    key: (b) => b && b.widgets,
    timelineKey: (data) => data.cards,
    render(b, c, data) {
      const widgets = data.widgets || [];
      const cards = data.cards || [];
      const types = new Map((b.widgets || []).map((w) => [w.type, w]));
      const out = [];
      if (!widgets.length) out.push(h('p', { class: 'muted' }, 'No widgets in this conversation yet.'));
      for (const w of widgets) {
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
        cards.length ? h('table', {}, h('tbody', {}, cards.map((card) => h('tr', { class: 'sent-card', dataset: { widget: card.widget_id } },
          h('td', {}, when(card.sent_at)), h('td', {}, card.title || '(gone)'), h('td', {}, card.deleted ? 'deleted' : (card.presentation.summary || '')))))) : h('p', { class: 'muted' }, 'none')));
      return out;
    },
  });

  window.playground.card('widget', (m, who) => {
    const sent = window.playground.part('widgets').cards || [];
    const card = sent.find((x) => x.message_id === m.id) || {};
    return h('div', { class: `msg buddy card widget-card${card.deleted ? ' deleted' : ''}`, dataset: { id: m.id, widget: m.body.widget_id } }, who,
      h('div', { class: 'card-kind' }, 'widget card'),
      h('strong', {}, card.title || '(gone)'),
      card.presentation && card.presentation.summary ? h('div', {}, card.presentation.summary) : null,
      h('div', { class: 'note' }, card.deleted ? 'deleted' : h('a', { href: '#', onclick: (e) => { e.preventDefault(); setTab('widgets'); } }, `open ${m.body.widget_id}`)));
  });
})();
