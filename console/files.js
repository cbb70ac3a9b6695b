// The files of a running sandbox: one directory listed, each file downloadable, and an
// upload into that directory (the data plane's files routes, docs/api.md).
import { answer } from './api.js';
import { el } from './pages.js';

function join(dir, name) {
  return (dir.endsWith('/') ? dir : dir + '/') + name;
}

export function renderFiles(box, plane) {
  let dir = '/tmp';
  const pathInput = el('input', { id: 'files-path', type: 'text', value: dir, spellcheck: 'false' });
  const list = el('ul', { class: 'file-list', 'aria-label': 'Files in the directory' });
  const upload = el('input', { id: 'files-upload', type: 'file' });
  const error = el('p', { class: 'error', role: 'alert' });
  box.replaceChildren(
    el('h2', { text: 'Files' }),
    el('form', { class: 'bar', onsubmit: (ev) => { ev.preventDefault(); dir = pathInput.value || '/'; refresh(); } },
      el('label', { for: 'files-path', text: 'Directory' }), pathInput, el('button', { type: 'submit', text: 'List' })),
    list,
    el('label', { for: 'files-upload', text: 'Upload a file here' }),
    upload,
    error,
  );
  let closed = false;

  async function download(entry) {
    try {
      const r = await plane.raw('GET', '/files?path=' + encodeURIComponent(entry.path));
      if (!r.ok) await answer(r);
      const url = URL.createObjectURL(await r.blob());
      const a = el('a', { href: url, download: entry.name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (e) {
      error.textContent = 'Download: ' + e.message;
    }
  }

  async function refresh() {
    error.textContent = '';
    try {
      const r = await plane.call('GET', '/files/list?depth=1&path=' + encodeURIComponent(dir));
      if (closed) return;
      list.replaceChildren(
        ...r.entries.map((e) =>
          el(
            'li',
            { 'data-path': e.path },
            e.type === 'directory'
              ? el('button', { type: 'button', class: 'link', text: e.name + '/', 'aria-label': 'Open ' + e.name, onclick: () => { dir = e.path; pathInput.value = dir; refresh(); } })
              : el('span', { text: e.name }),
            el('span', { class: 'size', text: e.type === 'file' ? e.size + ' B' : e.type }),
            e.type === 'file' ? el('button', { type: 'button', text: 'Download', 'aria-label': 'Download ' + e.name, onclick: () => download(e) }) : null,
          ),
        ),
      );
      if (!r.entries.length) list.append(el('li', { text: '(empty)' }));
    } catch (e) {
      error.textContent = 'List: ' + e.message;
    }
  }

  upload.addEventListener('change', async () => {
    const f = upload.files[0];
    if (!f) return;
    try {
      const r = await plane.raw('PUT', '/files?path=' + encodeURIComponent(join(dir, f.name)), { body: f, headers: { 'Content-Type': 'application/octet-stream' } });
      await answer(r);
      upload.value = '';
      refresh();
    } catch (e) {
      error.textContent = 'Upload: ' + e.message;
    }
  });

  refresh();
  return {
    refresh,
    close() {
      closed = true;
    },
  };
}
