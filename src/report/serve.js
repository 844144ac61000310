// vitattn serve's drop page: an image (file input, drop or paste) is posted to
// /api/report with the chosen model, the number of classes the report holds maps of (a
// classifier's) and whether it holds the PCA picture; the answer names the page, which the frame then opens
// (GET /api/report/<id>: a navigation of its own, under the report's own CSP). Every other
// choice (layer, head, method, class, token) is the report's. Errors are the server's
// one-line messages. A model with a text tower also takes prompts, one per line (blank lines
// left out): they go as text= and become the classes, and the report opens on the server's
// method for texts (the CLI's default with --text) for the likeliest, with every prompt's maps and word bars in its Prompts panel. A token the page was opened with (?token=T) goes with every request.
(() => {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const token = new URLSearchParams(location.search).get('token');
  const auth = token ? { Authorization: 'Bearer ' + token } : {};
  const withToken = (path, extra) => {
    const q = new URLSearchParams(extra || {});
    if (token) q.set('token', token);
    const s = q.toString();
    return s ? path + '?' + s : path;
  };
  let upload = null;  // {bytes: ArrayBuffer, name}
  let current = null; // the answer of the last post: {id, name, bytes, cached}
  let models = [];     // GET /api/models

  function showError(text) {
    $('error').textContent = text;
    $('error').hidden = !text;
  }

  async function errorText(response) {
    try {
      return (await response.json()).error || response.statusText;
    } catch (e) {
      return response.status + ' ' + response.statusText;
    }
  }

  async function post() {
    if (!upload) return;
    showError('');
    $('status').textContent = 'computing ' + upload.name + '…';
    const query = new URLSearchParams({ model: $('model').value || '0', name: upload.name });
    if (!$('serve-top-label').hidden) query.set('top', $('serve-top').value);
    if ($('serve-pca').checked) query.set('pca', '1');
    const texts = prompts();
    if (texts.length) {
      query.set('text', texts.join('\n'));
      query.delete('top');
    }
    const response = await fetch('/api/report?' + query, { method: 'POST', headers: auth, body: upload.bytes });
    if (!response.ok) {
      $('status').textContent = '';
      showError(await errorText(response));
      return;
    }
    current = await response.json();
    $('status').textContent = upload.name + (current.cached ? ' (from the cache)' : '');
    $('report').src = withToken('/api/report/' + current.id);
    $('report').hidden = false;
    $('save').href = withToken('/api/report/' + current.id, { download: '1' });
    $('save').hidden = false;
  }

  async function take(file) {
    if (!file) return;
    const name = (file.name || 'pasted.png').replace(/[\u0000-\u001f\u007f/\\]/g, '_').slice(0, 255);
    upload = { bytes: await file.arrayBuffer(), name: name || 'upload' };
    await post();
  }

  // The page the save link names may have left the cache: post again first, then download.
  $('save').addEventListener('click', async (event) => {
    event.preventDefault();
    if (!current) return;
    const check = await fetch(withToken('/api/report/' + current.id), { headers: auth });
    if (check.status === 404) await post();
    const link = document.createElement('a');
    link.href = withToken('/api/report/' + current.id, { download: '1' });
    link.download = '';
    document.body.append(link);
    link.click();
    link.remove();
  });

  // The prompts typed, one per line, blank lines left out; none for a model without a text tower.
  function prompts() {
    if ($('serve-texts-label').hidden) return [];
    return $('serve-texts').value.split(/\r?\n/).filter((line) => line.trim() !== '');
  }

  $('file').addEventListener('change', () => take($('file').files[0]));
  // The classes field is for a model with a classifier, up to its number of classes.
  function fitClasses() {
    const m = models[Number($('model').value || 0)];
    const classes = m ? m.classes : 0;
    $('serve-top-label').hidden = classes === 0;
    $('serve-top').max = String(Math.max(1, classes));
    $('serve-top').value = String(Math.min(Math.max(1, Number($('serve-top').value) || 3), Math.max(1, classes)));
    const texts = !!(m && m.texts);
    $('serve-texts-label').hidden = !texts;
    $('serve-ask').hidden = !texts;
  }

  $('model').addEventListener('change', () => { fitClasses(); post(); });
  $('serve-top').addEventListener('change', () => { fitClasses(); post(); });
  $('serve-pca').addEventListener('change', post);
  $('serve-ask').addEventListener('click', post);
  const drop = $('drop');
  document.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  document.addEventListener('dragleave', () => drop.classList.remove('over'));
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    take(e.dataTransfer.files[0]);
  });
  document.addEventListener('paste', (e) => {
    const item = [...e.clipboardData.items].find((i) => i.kind === 'file');
    if (item) take(item.getAsFile());
  });

  fetch('/api/models', { headers: auth }).then(async (response) => {
    if (!response.ok) return showError(await errorText(response));
    models = await response.json();
    for (const m of models) {
      const option = document.createElement('option');
      option.value = m.index;
      option.textContent = m.name + ' (' + m.layers + ' layers, ' + m.heads + ' heads' +
        (m.classes > 0 ? ', ' + m.classes + ' classes' : '') + ')';
      $('model').append(option);
    }
    fitClasses();
  });

  // For scripts and tests: the answer of the last post (null before one).
  window.vitattnServe = Object.freeze({ current: () => current });
})();
