// The memory capability in the playground: its tab reads and edits the conversation's
// entries through the buddy's own /internal/v1/memory (there is no dev endpoint).
'use strict';
(() => {
  const { h, api, buddyApi, act, when } = window.playground;

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
    render(b, c, data) {
      if (!b.dev_token) return [h('p', { class: 'muted' }, 'The buddy is not registered yet.')];
      const entries = data.entries || [];
      const save = (key, text) => act(() => buddyApi('PUT', `/internal/v1/memory/${encodeURIComponent(key)}`, { text }));
      const out = [h('p', { class: 'note' }, 'The conversation\'s long-term notes, as the buddy reads them (memory.*). Edits are the buddy\'s own writes.')];
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
})();
