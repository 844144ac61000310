// vitattn explain as a page: the worked examples, one step per frame, Q, K and V editable.
(() => {
  'use strict';
  const D = JSON.parse(document.getElementById('vitattn-explain-data').textContent);
  const $ = (id) => document.getElementById(id);
  const FRAMES = ['scores = Q·Kᵀ', 'scaled = scores ÷ √d_k', 'weights = softmax(scaled), row by row', 'output = weights·V'];

  // ---- the math, in double precision -----------------------------------------------------
  const matmulT = (a, b) => a.map((r) => b.map((c) => r.reduce((s, x, i) => s + x * c[i], 0)));  // a·bᵀ
  const matmul = (a, b) => a.map((r) => b[0].map((_, j) => r.reduce((s, x, i) => s + x * b[i][j], 0)));
  function softmaxRows(m, masked) {
    return m.map((row, i) => {
      const z = row.map((x, j) => (masked && j > i ? -Infinity : x));
      const top = Math.max(...z);
      if (top === -Infinity) return z.map(() => 0);
      const e = z.map((x) => Math.exp(x - top)), sum = e.reduce((s, x) => s + x, 0);
      return e.map((x) => x / sum);
    });
  }
  function compute(q, k, v, masked) {
    const scores = matmulT(q, k), dk = q[0].length, scaled = scores.map((r) => r.map((x) => x / Math.sqrt(dk)));
    const weights = softmaxRows(scaled, masked), unscaledWeights = softmaxRows(scores, masked);
    return { scores, scaled, weights, unscaledWeights, output: matmul(weights, v), unscaledOutput: matmul(unscaledWeights, v), dk };
  }

  // ---- state -----------------------------------------------------------------------------
  const clone = (m) => m.map((r) => r.slice());
  const examples = D.examples.map((e) => ({ ...e, cur: { q: clone(e.q), k: clone(e.k), v: clone(e.v) }, masked: e.masked, edited: false }));
  let ex = examples[0], frame = 0;
  const precision = (e, label, fallback) => (e.printed.find((p) => p.label === label) || { precision: fallback }).precision;
  // What the page shows: vitattn's own numbers while the example is as printed, else the page's.
  function shown(e) {
    const c = compute(e.cur.q, e.cur.k, e.cur.v, e.masked);
    if (!e.edited && e.masked === e.origMasked) {
      for (const p of e.printed) c[p.label.replace('masked ', '')] = p.values;
    }
    return c;
  }
  for (const e of examples) e.origMasked = e.masked;

  // ---- drawing ---------------------------------------------------------------------------
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function colour(t) {
    const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1), i = Math.min(VIRIDIS.length - 2, Math.floor(x)), f = x - i;
    return VIRIDIS[i].map((c, k) => Math.round(c + (VIRIDIS[i + 1][k] - c) * f));
  }
  // A matrix as a table with its rows labelled; heat: cells coloured by value in [0, 1].
  function table(caption, m, digits, { label, heat = false, editable = null } = {}) {
    const t = document.createElement('table');
    t.className = 'matrix';
    if (label) t.dataset.label = label;
    t.createCaption().textContent = `${caption}  (${m.length}×${m[0].length})`;
    const head = t.createTHead().insertRow();
    head.insertCell().outerHTML = '<th></th>';
    m[0].forEach((_, j) => { const th = document.createElement('th'); th.textContent = `${j}`; head.append(th); });
    const body = t.createTBody();
    m.forEach((row, i) => {
      const tr = body.insertRow(), th = document.createElement('th');
      th.textContent = m.length > 1 ? `token ${i}` : 'q₁';
      tr.append(th);
      row.forEach((x, j) => {
        const td = tr.insertCell();
        if (editable) {
          const input = document.createElement('input');
          input.type = 'number'; input.step = 'any'; input.value = String(x);
          input.addEventListener('input', () => { const v = Number(input.value); if (Number.isFinite(v)) editable(i, j, v); });
          td.append(input);
          return;
        }
        td.textContent = x.toFixed(digits);
        td.dataset.value = String(x);
        if (heat) {
          const [r, g, b] = colour(x);
          td.classList.add('heat');
          td.style.background = `rgb(${r},${g},${b})`;
          if (r * 0.3 + g * 0.59 + b * 0.11 < 128) td.classList.add('dark');
        }
      });
    });
    return t;
  }

  function drawInputs() {
    const box = $('inputs');
    box.replaceChildren();
    for (const [name, key] of [['Q', 'q'], ['K (one key per row)', 'k'], ['V (one value per row)', 'v']]) {
      box.append(table(name, ex.cur[key], 0, { label: `input ${key}`, editable: (i, j, v) => { ex.cur[key][i][j] = v; ex.edited = true; drawFrames(); } }));
    }
  }

  function drawFrames() {
    const c = shown(ex), box = $('frames');
    box.replaceChildren();
    const masked = ex.masked ? 'masked ' : '';
    const p = (label, fallback) => precision(ex, label, fallback);
    const frames = [
      [table('scores = Q·Kᵀ', c.scores, p('scores', 3), { label: 'scores' })],
      [table(`scaled = scores ÷ √${c.dk}`, c.scaled, p('scaled', 3), { label: 'scaled' })],
      [table(`${masked}weights = softmax(scores ÷ √d_k)`, c.weights, p(`${masked}weights`, 4), { label: `${masked}weights`, heat: true }),
        table(`${masked}weights without ÷√d_k`, c.unscaledWeights, p(`${masked}weights`, 4), { label: 'unscaled weights', heat: true })],
      [table(`${masked}output = weights·V`, c.output, p(`${masked}output`, 3), { label: `${masked}output` }),
        table('output without ÷√d_k', c.unscaledOutput, p(`${masked}output`, 3), { label: 'unscaled output' })],
    ];
    frames.forEach((tables, i) => {
      const div = document.createElement('div');
      div.className = 'frame matrices';
      div.dataset.frame = String(i);
      div.hidden = i !== frame;
      div.append(...tables);
      if (i === 2) {
        const sums = document.createElement('p');
        sums.textContent = `row sums: ${c.weights.map((r) => r.reduce((s, x) => s + x, 0).toFixed(6)).join(', ')}`;
        div.append(sums);
      }
      box.append(div);
    });
    $('frame-label').textContent = `step ${frame + 1} of ${FRAMES.length}: ${FRAMES[frame]}`;
    $('mask').checked = ex.masked;
    $('edited').textContent = ex.edited || ex.masked !== ex.origMasked ? 'recomputed in the page' : 'as vitattn explain prints it';
  }

  function choose(e) {
    ex = e;
    $('example-title').textContent = e.title;
    for (const b of $('examples').children) b.classList.toggle('active', b.dataset.id === e.id);
    drawInputs(); drawFrames();
  }

  function drawWhy() {
    const box = $('why');
    for (const key of ['small', 'large']) {
      const w = D.why_scale[key];
      const t = table(`softmax([${w.scores.join(', ')}])`, [w.weights], 10, { label: `softmax ${key}`, heat: true });
      for (const td of t.querySelectorAll('td')) td.textContent = Number(td.dataset.value).toPrecision(10);
      box.append(t);
    }
  }

  // (c)'s measured variances, as `vitattn explain` prints them (two decimals).
  function drawVariance() {
    const t = document.createElement('table');
    t.className = 'matrix';
    t.dataset.label = 'variance';
    t.createCaption().textContent = 'Var(q·k) grows with d_k; Var(q·k/√d_k) stays at 1';
    const head = t.createTHead().insertRow();
    for (const h of ['d_k', 'Var(q·k)', 'Var(q·k/√d_k)']) { const th = document.createElement('th'); th.textContent = h; head.append(th); }
    const body = t.createTBody();
    for (const r of D.variance) {
      const tr = body.insertRow(), th = document.createElement('th');
      th.textContent = String(r.d_k);
      tr.append(th);
      for (const x of [r.var, r.scaled_var]) { const td = tr.insertCell(); td.textContent = x.toFixed(2); td.dataset.value = String(x); }
    }
    $('variance').append(t);
  }

  for (const e of examples) {
    const b = document.createElement('button');
    b.type = 'button'; b.dataset.id = e.id; b.textContent = e.title.split(' ')[0];
    b.title = e.title;
    b.addEventListener('click', () => { frame = 0; choose(e); });
    $('examples').append(b);
  }
  $('prev').addEventListener('click', () => { frame = Math.max(0, frame - 1); drawFrames(); });
  $('next').addEventListener('click', () => { frame = Math.min(FRAMES.length - 1, frame + 1); drawFrames(); });
  $('mask').addEventListener('change', () => { ex.masked = $('mask').checked; drawFrames(); });
  $('reset').addEventListener('click', () => { ex.cur = { q: clone(ex.q), k: clone(ex.k), v: clone(ex.v) }; ex.edited = false; ex.masked = ex.origMasked; drawInputs(); drawFrames(); });
  drawWhy();
  drawVariance();
  choose(examples[0]);

  // For tests and scripts: the examples, their printed numbers, and the page's own recomputation.
  window.vitattnExplain = Object.freeze({
    examples: () => examples.map((e) => e.id),
    choose(id) { const e = examples.find((x) => x.id === id); if (!e) throw new Error(`no example ${id}`); frame = 0; choose(e); },
    frame(i) { frame = Math.max(0, Math.min(FRAMES.length - 1, i)); drawFrames(); return frame; },
    printed: (id) => examples.find((e) => e.id === id).printed,
    compute: (id) => { const e = examples.find((x) => x.id === id); return compute(e.cur.q, e.cur.k, e.cur.v, e.masked); },
  });
  document.body.dataset.ready = '1';
})();
