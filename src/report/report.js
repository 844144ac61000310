// vitattn report page: every token's attention row (or column), every layer, every head, from
// the data vitattn wrote into this page. No network, no library: the page is one file.
// With a classifier, also the most likely classes and each one's relevance maps (chefer,
// grad-rollout, legrad, gradcam), one picked by the method and class pickers.
// With the token diagnostics, a Tokens panel: norms and artifacts, sinks, register share, the heads.
// A model that pools with a probe (SigLIP: no class token) also has the probe's attention over the
// last layer's output: the query "probe" of the last layer, where the page opens.
// Contract for scripts and tests: window.vitattn.select({layer, head, query, view, rollout, method, class}),
// .row(), .info(), .state(), .mapError(), .tokens({layer}), .headTable(), .texts(), .textAttention({prompt, layer, head}).
// A model asked in words (classes that are texts): a Prompts panel, each text's ranking, word
// bars and maps, and its text tower's attention token × token with the causal mask shown.
(() => {
  'use strict';
  const D = JSON.parse(document.getElementById('vitattn-data').textContent);
  const L = D.layers, H = D.heads, T = D.tokens, FP = D.first_patch;
  const [GH, GW] = D.grid, N = GH * GW;

  // ---- data: base64 → typed arrays -------------------------------------------------------
  function bytes(b64) {
    const bin = atob(b64), out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  // vitattn writes little-endian float32, which is what every browser's Float32Array reads.
  const floats = (b64) => { const b = bytes(b64); return new Float32Array(b.buffer, 0, b.length >> 2); };
  // IEEE half-precision bits → value: 1 sign, 5 exponent (bias 15), 10 fraction bits.
  function halfValue(bits) {
    const sign = bits & 0x8000 ? -1 : 1, e = (bits >> 10) & 0x1f, f = bits & 0x3ff;
    if (e === 0) return sign * f * 2 ** -24;  // subnormal: f · 2⁻¹⁴ · 2⁻¹⁰
    if (e === 31) return f ? NaN : sign * Infinity;
    return sign * (1 + f / 1024) * 2 ** (e - 15);
  }
  // f16 (H, rows, T) → float32, once, through a table of every half value.
  function halves(b64) {
    const b = bytes(b64), bits = new Uint16Array(b.buffer, 0, b.length >> 1), out = new Float32Array(bits.length);
    const table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) table[i] = halfValue(i);
    for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
    return out;
  }
  // layer l, rows = T or 1 (class token only). u8-row: q8 (H, rows, T), scale (H, rows), weight = q8 · scale / 255;
  // f16: w (H, rows, T), the weights themselves.
  const layers = D.attention.map((l) => (l.f16 !== undefined ? { rows: l.rows, w: halves(l.f16) }
    : { rows: l.rows, q8: bytes(l.q8), scale: floats(l.scale) }));
  // The probe's rows (H, 1, T), stored as a layer's class-token rows are; null without a probe.
  const probe = D.probe ? (D.probe.f16 !== undefined ? { rows: 1, w: halves(D.probe.f16) }
    : { rows: 1, q8: bytes(D.probe.q8), scale: floats(D.probe.scale) }) : null;
  const PROBE = 'probe';
  const isToken = (q) => Number.isInteger(q);
  const luts = {};
  for (const name of Object.keys(D.colormaps)) luts[name] = bytes(D.colormaps[name]);
  const qk = D.qk ? { dk: D.qk.d_k, scale: D.qk.scale, q: floats(D.qk.q), k: floats(D.qk.k) } : null;

  // The classes (most likely first) and their relevance maps, each over the N patches: u8, m = q8·s/255;
  // f16, m = half(m/s)·s. Keyed "method/class".
  const classes = D.classes || [];
  const relevance = new Map();
  for (const m of (D.relevance && D.relevance.maps) || []) {
    const unit = m.f16 !== undefined ? halves(m.f16) : Float32Array.from(bytes(m.q8), (q) => q / 255);
    relevance.set(`${m.method}/${m.class}`, { values: Float32Array.from(unit, (u) => u * m.scale), maxError: m.max_error });
  }
  const gradientMethods = [...new Set(((D.relevance && D.relevance.maps) || []).map((m) => m.method))];
  const methods = ['attention', 'rollout', ...gradientMethods];
  const hasMaps = (c) => classes.some((k) => k.index === c && k.maps);
  const isGradient = (m) => gradientMethods.includes(m);
  // A class as select() takes it: its index, or its label (any case).
  function classIndex(c) {
    if (typeof c === 'string' && !/^\d+$/.test(c)) {
      const k = classes.find((x) => x.label.toLowerCase() === c.toLowerCase());
      return k ? k.index : c;
    }
    return typeof c === 'string' ? Number(c) : c;
  }

  const isFull = (l) => layers[l].rows === T;
  // Leading tokens: the class token, distilled DeiT's distillation token (D.dist_token), the registers.
  const DT = D.dist_token ? 1 : 0;
  // A model with a probe has no class token: its leading tokens are registers only.
  const CT = probe ? 0 : 1;
  const leadingName = (t) => (CT && t === 0 ? 'class token' : DT && t === 1 ? 'distillation token' : `register ${t - CT - DT}`);
  const leadingShort = (t) => (CT && t === 0 ? 'cls' : DT && t === 1 ? 'dist' : `reg ${t - CT - DT}`);
  const tokenName = (t) => (t === PROBE ? 'probe' : t < FP ? leadingName(t)
    : `patch ${t - FP} (row ${Math.floor((t - FP) / GW)}, col ${(t - FP) % GW})`);

  // One head's row i of layer l (its weights over the T keys; i = PROBE: the probe's, after the
  // last layer), or column j (every query's weight on key j).
  function headRow(l, h, i, out) {
    const a = i === PROBE ? probe : layers[l], r = a.rows === T ? i : 0, base = (h * a.rows + r) * T;
    if (a.w) { for (let j = 0; j < T; j++) out[j] = a.w[base + j]; return; }
    const s = a.scale[h * a.rows + r] / 255;
    for (let j = 0; j < T; j++) out[j] = a.q8[base + j] * s;
  }
  function headCol(l, h, j, out) {
    const a = layers[l];
    if (a.w) { for (let i = 0; i < T; i++) out[i] = a.w[(h * T + i) * T + j]; return; }
    for (let i = 0; i < T; i++) out[i] = a.q8[(h * T + i) * T + j] * (a.scale[h * T + i] / 255);
  }
  const tmp = new Float64Array(T);
  // The heads of layer l fused as `head` asks (an index, mean, max or min), row or column.
  function fusedVector(l, head, token, view, out) {
    const get = view === 'key' ? headCol : headRow;
    if (typeof head === 'number') { get(l, head, token, out); return out; }
    get(l, 0, token, out);
    for (let h = 1; h < H; h++) {
      get(l, h, token, tmp);
      for (let j = 0; j < T; j++) {
        if (head === 'mean') out[j] += tmp[j];
        else if (head === 'max') out[j] = Math.max(out[j], tmp[j]);
        else out[j] = Math.min(out[j], tmp[j]);
      }
    }
    if (head === 'mean') for (let j = 0; j < T; j++) out[j] /= H;
    return out;
  }

  // ---- rollout (Abnar & Zuidema; as vitattn --rollout): Â = rownorm((discard(fuse(A)) + I) / 2),
  // R = Â_L ··· Â_0. One row of R is e_qᵀ·Â_L···Â_0, one column Â_L(···(Â_0·e_k)): vector products only.
  const rolloutCache = new Map();
  function rolloutMatrix(l, head, ratio) {
    const key = `${l}/${head}/${ratio}`;
    if (rolloutCache.has(key)) return rolloutCache.get(key);
    const m = new Float64Array(T * T), row = new Float64Array(T);
    for (let i = 0; i < T; i++) { fusedVector(l, head, i, 'query', row); m.set(row, i * T); }
    const drop = Math.floor(T * T * ratio);
    if (drop > 0) {  // the weakest links, ties by position; never the class token's link to itself
      const order = Array.from({ length: T * T }, (_, i) => i).sort((a, b) => m[a] - m[b] || a - b);
      for (let k = 0; k < drop; k++) if (order[k] !== 0) m[order[k]] = 0;
    }
    for (let i = 0; i < T; i++) {
      m[i * T + i] += 1;
      let sum = 0;
      for (let j = 0; j < T; j++) sum += m[i * T + j];
      for (let j = 0; j < T; j++) m[i * T + j] /= sum;  // (A + I)/2 renormalised = (A + I)/Σ(A + I)
    }
    rolloutCache.set(key, m);
    return m;
  }
  // The probe's row (as the CLI's --rollout on a SigLIP model): its heads fused as `head` asks,
  // then through every layer's Â down to layer 0.
  function rolloutVector(layer, head, token, view, out) {
    let v = new Float64Array(T), w = new Float64Array(T);
    if (token === PROBE) fusedVector(layer, head, PROBE, 'query', v);
    else v[token] = 1;
    if (view === 'query') {
      for (let l = layer; l >= 0; l--) {  // v ← v·Â_l
        const m = rolloutMatrix(l, head, state.discard);
        w.fill(0);
        for (let i = 0; i < T; i++) { const vi = v[i]; if (vi === 0) continue; for (let j = 0; j < T; j++) w[j] += vi * m[i * T + j]; }
        [v, w] = [w, v];
      }
    } else {
      for (let l = 0; l <= layer; l++) {  // v ← Â_l·v
        const m = rolloutMatrix(l, head, state.discard);
        for (let i = 0; i < T; i++) { let s = 0; for (let j = 0; j < T; j++) s += m[i * T + j] * v[j]; w[i] = s; }
        [v, w] = [w, v];
      }
    }
    for (let j = 0; j < T; j++) out[j] = v[j];
    return out;
  }

  // ---- state -----------------------------------------------------------------------------
  const S = D.start;
  const state = {
    layer: S.layer, head: /^\d+$/.test(S.head) ? Math.min(Number(S.head), H - 1) : S.head,
    query: probe ? PROBE : Number.isInteger(S.query) && S.query >= 0 && S.query < FP ? S.query : 0, view: 'query',
    rollout: !!S.rollout && layers.every((a) => a.rows === T), discard: S.discard_ratio || 0, alpha: S.alpha,
    colormap: luts[S.colormap] ? S.colormap : Object.keys(luts)[0], smooth: S.smooth, grid: false,
    threshold: S.threshold, stepKey: null,
    method: isGradient(S.method) ? S.method : 'attention',
    cls: hasMaps(S.class) ? S.class : (classes.find((k) => k.maps) || { index: null }).index,
  };
  let pinned = false;
  const current = new Float32Array(T);
  const rolloutAvailable = layers.every((a) => a.rows === T) && L > 1;

  function check(next) {
    const fail = (m) => { throw new Error(`vitattn.select: ${m}`); };
    if (!Number.isInteger(next.layer) || next.layer < 0 || next.layer >= L) fail(`layer must be 0…${L - 1}`);
    if (!(['mean', 'max', 'min'].includes(next.head) || (Number.isInteger(next.head) && next.head >= 0 && next.head < H)))
      fail(`head must be 0…${H - 1} or "mean", "max", "min"`);
    if (next.query === PROBE) {
      if (!probe) fail('this model has no probe (only a model that pools with one, SigLIP, has)');
      if (next.layer !== L - 1) fail(`the probe reads the last layer's output: layer ${L - 1} only`);
      if (next.view !== 'query') fail('the probe is a query, not a key: view must be "query"');
    } else if (!isToken(next.query) || next.query < 0 || next.query >= T)
      fail(`query must be a token index 0…${T - 1}${probe ? ' or "probe"' : ''}`);
    if (next.view !== 'query' && next.view !== 'key') fail('view must be "query" or "key"');
    if (!isFull(next.layer) && (next.query !== 0 || next.view !== 'query'))
      fail(`layer ${next.layer} keeps only the class token's rows in this page (see what was left out)`);
    if (next.rollout) for (let l = 0; l <= next.layer; l++) if (!isFull(l)) fail(`rollout needs the full matrices of layers 0…${next.layer}`);
    if (next.method !== 'attention' && !isGradient(next.method)) fail(`method must be one of ${methods.join(', ')}`);
    if (!classes.length && next.cls != null) fail('this page has no classes (the model has no classifier)');
    if (classes.length && !hasMaps(next.cls))
      fail(`class must be one of ${classes.filter((k) => k.maps).map((k) => `${k.index} (${k.label})`).join(', ')}: the classes whose maps this page holds`);
  }

  function compute() {
    if (isGradient(state.method)) { current.fill(0); current.set(relevance.get(`${state.method}/${state.cls}`).values, FP); return; }
    if (state.rollout) rolloutVector(state.layer, state.head, state.query, state.view, current);
    else fusedVector(state.layer, state.head, state.query, state.view, current);
  }

  // ---- drawing ---------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);
  const view = $('view'), ctx = view.getContext('2d');
  const heat = document.createElement('canvas');
  heat.width = GW; heat.height = GH;
  const heatCtx = heat.getContext('2d'), heatPixels = heatCtx.createImageData(GW, GH);
  const image = new Image();
  let imageReady = false;

  // The patches' values, min-max normalised as the PNG overlay does, through the colormap.
  function paintMap(vec, pixels) {
    let lo = Infinity, hi = -Infinity;
    for (let p = 0; p < N; p++) { const v = vec[FP + p]; if (v < lo) lo = v; if (v > hi) hi = v; }
    const lut = luts[state.colormap], span = hi > lo ? hi - lo : 1;
    for (let p = 0; p < N; p++) {
      const level = hi > lo ? Math.min(255, Math.max(0, Math.round(((vec[FP + p] - lo) / span) * 255))) : 0;
      pixels.data[p * 4] = lut[level * 3]; pixels.data[p * 4 + 1] = lut[level * 3 + 1];
      pixels.data[p * 4 + 2] = lut[level * 3 + 2]; pixels.data[p * 4 + 3] = 255;
    }
  }

  // DINO's mask: the fewest patches holding `fraction` of the map's mass, largest first.
  function massMask(vec, fraction) {
    const idx = Array.from({ length: N }, (_, p) => p).sort((a, b) => vec[FP + a] - vec[FP + b]);
    let total = 0;
    for (let p = 0; p < N; p++) total += Math.max(0, vec[FP + p]);
    const mask = new Uint8Array(N);
    let cum = 0;
    for (const p of idx) { cum += Math.max(0, vec[FP + p]) / (total || 1); if (cum > 1 - fraction) mask[p] = 1; }
    return mask;
  }

  function drawView() {
    const W = view.width, Hh = view.height, cw = W / GW, ch = Hh / GH;
    if (imageReady) ctx.drawImage(image, 0, 0, W, Hh); else { ctx.fillStyle = '#000'; ctx.fillRect(0, 0, W, Hh); }
    paintMap(current, heatPixels);
    heatCtx.putImageData(heatPixels, 0, 0);
    ctx.imageSmoothingEnabled = state.smooth;
    ctx.globalAlpha = state.alpha;  // (1 − α)·image + α·heatmap, as the overlay PNG
    ctx.drawImage(heat, 0, 0, W, Hh);
    ctx.globalAlpha = 1;
    if (state.grid) {
      ctx.strokeStyle = 'rgba(255,255,255,0.35)'; ctx.lineWidth = 1; ctx.beginPath();
      for (let x = 1; x < GW; x++) { ctx.moveTo(x * cw, 0); ctx.lineTo(x * cw, Hh); }
      for (let y = 1; y < GH; y++) { ctx.moveTo(0, y * ch); ctx.lineTo(W, y * ch); }
      ctx.stroke();
    }
    if (state.threshold != null) {
      const m = massMask(current, state.threshold), on = (x, y) => x >= 0 && y >= 0 && x < GW && y < GH && m[y * GW + x];
      ctx.strokeStyle = '#fff'; ctx.lineWidth = 2; ctx.beginPath();
      for (let y = 0; y < GH; y++) for (let x = 0; x < GW; x++) {
        if (!on(x, y)) continue;
        if (!on(x, y - 1)) { ctx.moveTo(x * cw, y * ch); ctx.lineTo((x + 1) * cw, y * ch); }
        if (!on(x, y + 1)) { ctx.moveTo(x * cw, (y + 1) * ch); ctx.lineTo((x + 1) * cw, (y + 1) * ch); }
        if (!on(x - 1, y)) { ctx.moveTo(x * cw, y * ch); ctx.lineTo(x * cw, (y + 1) * ch); }
        if (!on(x + 1, y)) { ctx.moveTo((x + 1) * cw, y * ch); ctx.lineTo((x + 1) * cw, (y + 1) * ch); }
      }
      ctx.stroke();
    }
    if (isToken(state.query) && state.query >= FP && !isGradient(state.method)) {  // the picked patch
      const p = state.query - FP;
      ctx.strokeStyle = '#ff2bd6'; ctx.lineWidth = 3; ctx.setLineDash(pinned ? [] : [5, 4]);
      ctx.strokeRect((p % GW) * cw + 1.5, Math.floor(p / GW) * ch + 1.5, cw - 3, ch - 3);
      ctx.setLineDash([]);
    }
  }

  const strip = $('strip'), stripButtons = [];
  function drawStrip() {
    const lut = luts[state.colormap];
    let hi = 0;
    for (let t = 0; t < T; t++) hi = Math.max(hi, current[t]);
    for (const b of stripButtons) {
      const t = b.token;
      if (t === PROBE) {  // the probe is a query, never a key: it has no weight in a row
        b.el.disabled = state.layer !== L - 1;
      } else {
        const level = hi > 0 ? Math.round((current[t] / hi) * 255) : 0;
        b.swatch.style.background = `rgb(${lut[level * 3]},${lut[level * 3 + 1]},${lut[level * 3 + 2]})`;
        b.value.textContent = current[t].toFixed(4);
      }
      b.el.classList.toggle('active', state.query === t && !isGradient(state.method));
    }
    strip.hidden = isGradient(state.method);  // a relevance map is the class's, of no token
  }

  const headsBox = $('heads'), headFigures = [];
  const headVec = new Float32Array(T);
  function drawHeads() {
    headFigures.forEach((f, h) => {
      fusedVector(state.layer, h, state.query, state.view, headVec);
      paintMap(headVec, f.pixels);
      f.ctx.putImageData(f.pixels, 0, 0);
      f.el.classList.toggle('active', state.head === h);
    });
  }

  const statsCanvas = $('stats'), sctx = statsCanvas.getContext('2d');
  const statsPanels = [{ key: 'entropy', title: 'entropy of the rows (nats)', x0: 50 }, { key: 'distance', title: 'mean attention distance (px)', x0: 410 }];
  const dots = [];
  function drawStats() {
    const w = 300, top = 24, h = 200, css = getComputedStyle(document.body);
    sctx.clearRect(0, 0, statsCanvas.width, statsCanvas.height);
    sctx.font = '12px system-ui, sans-serif'; sctx.fillStyle = css.color; sctx.strokeStyle = css.color;
    dots.length = 0;
    for (const panel of statsPanels) {
      const values = D[panel.key].flat();
      const lo = Math.min(0, ...values), hi = Math.max(...values) || 1;
      sctx.fillText(panel.title, panel.x0, 14);
      sctx.strokeRect(panel.x0, top, w, h);
      sctx.fillText(hi.toFixed(1), panel.x0 - 40, top + 10);
      sctx.fillText(lo.toFixed(1), panel.x0 - 40, top + h);
      sctx.fillText('layer 0', panel.x0, top + h + 16);
      sctx.fillText(`${L - 1}`, panel.x0 + w - 14, top + h + 16);
      for (let l = 0; l < L; l++) for (let hd = 0; hd < H; hd++) {
        const x = panel.x0 + (L > 1 ? (l / (L - 1)) * (w - 20) + 10 : w / 2);
        const y = top + h - ((D[panel.key][l][hd] - lo) / (hi - lo || 1)) * (h - 10) - 5;
        const active = l === state.layer && (state.head === hd || typeof state.head !== 'number');
        sctx.beginPath(); sctx.arc(x, y, active ? 5 : 3, 0, 2 * Math.PI);
        sctx.fillStyle = `hsl(${(hd * 360) / H}, 70%, ${active ? 45 : 60}%)`; sctx.fill();
        if (active && state.head === hd) { sctx.strokeStyle = '#ff2bd6'; sctx.lineWidth = 2; sctx.stroke(); sctx.lineWidth = 1; sctx.strokeStyle = css.color; }
        dots.push({ x, y, layer: l, head: hd });
      }
      sctx.fillStyle = css.color;
    }
  }

  function fmt(v) { return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-4) ? v.toExponential(4) : v.toFixed(6); }
  // The single head's softmax for one query/key pair, with and without 1/√d_k.
  function stepNumbers(query, key, scaled) {
    const dk = qk.dk, c = scaled ? 1 / Math.sqrt(dk) : 1, z = new Float64Array(T);
    for (let j = 0; j < T; j++) { let s = 0; for (let d = 0; d < dk; d++) s += qk.q[query * dk + d] * qk.k[j * dk + d]; z[j] = s * c; }
    let m = -Infinity;
    for (let j = 0; j < T; j++) m = Math.max(m, z[j]);
    let sum = 0;
    for (let j = 0; j < T; j++) sum += Math.exp(z[j] - m);
    let weights = 0;
    for (let j = 0; j < T; j++) weights += Math.exp(z[j] - m) / sum;
    const dot = z[key] / c;
    return { dot, z: z[key], e: Math.exp(z[key] - m), max: m, sum, weight: Math.exp(z[key] - m) / sum, rowSum: weights };
  }
  function drawSteps() {
    const panel = $('steps-panel');
    if (!qk || state.view !== 'query' || state.rollout || isGradient(state.method) || !isToken(state.query)) { panel.hidden = true; return; }
    panel.hidden = false;
    let key = state.stepKey;
    if (key == null) { key = 0; for (let j = 1; j < T; j++) if (current[j] > current[key]) key = j; }
    const a = stepNumbers(state.query, key, true), b = stepNumbers(state.query, key, false);
    const run = D.qk.scale ? 'scaled (this run)' : 'scaled';
    const rows = [
      ['q·k', a.dot, b.dot], [`z = q·k ÷ √d_k (√${qk.dk} = ${Math.sqrt(qk.dk).toFixed(4)}), or q·k`, a.z, b.z],
      ['largest z of the row (subtracted before eᶻ, as vitattn does)', a.max, b.max],
      ['e^(z − max)', a.e, b.e], ['row sum Σ e^(z − max)', a.sum, b.sum],
      ['weight = e^(z − max) / Σ', a.weight, b.weight], ['the row\'s weights sum to', a.rowSum, b.rowSum],
    ];
    $('steps').replaceChildren();
    const cap = document.createElement('p');
    cap.textContent = `query ${tokenName(state.query)} · key ${tokenName(key)} (shift-click a patch for another key). ` +
      `The page's map is the ${D.qk.scale ? 'scaled' : 'unscaled (--no-scale)'} column; its weight there: ${current[key].toFixed(6)} (${D.quantisation === 'f16' ? 'fp16' : '8-bit'}).`;
    const table = document.createElement('table');
    table.className = 'steps';
    table.innerHTML = '<thead><tr><th>step</th><th></th><th></th></tr></thead>';
    table.tHead.rows[0].cells[1].textContent = run;
    table.tHead.rows[0].cells[2].textContent = D.qk.scale ? 'without ÷√d_k' : 'without ÷√d_k (this run)';
    const body = table.createTBody();
    for (const [label, x, y] of rows) {
      const tr = body.insertRow();
      tr.insertCell().textContent = label; tr.insertCell().textContent = fmt(x); tr.insertCell().textContent = fmt(y);
    }
    $('steps').append(cap, table);
    stepView = { query: state.query, key, scaled: a, unscaled: b };
  }
  let stepView = null;

  const className = (c) => { const k = classes.find((x) => x.index === c); return k ? `${k.label} (class ${c}, p ${(k.probability * 100).toFixed(2)} %)` : `class ${c}`; };
  function drawStatus() {
    $('layer-out').textContent = `${state.layer} / ${L - 1}${isFull(state.layer) ? '' : ' (class token only)'}`;
    if (isGradient(state.method)) {
      let hi = 0;
      for (let p = 0; p < N; p++) hi = Math.max(hi, current[FP + p]);
      $('status').textContent = `${state.method} · ${className(state.cls)} · largest ${hi.toPrecision(4)}`;
      return;
    }
    let sum = 0;
    for (let j = 0; j < T; j++) sum += current[j];
    const what = state.rollout ? 'rollout' : typeof state.head === 'number' ? `head ${state.head}` : `${state.head} of ${H} heads`;
    $('status').textContent = `layer ${state.layer} · ${what} · ${state.view === 'query' ? 'query' : 'key'} ${tokenName(state.query)}` +
      ` · ${state.view === 'query' ? 'row' : 'column'} sum ${sum.toFixed(4)}`;
  }

  function syncControls() {
    $('layer').value = state.layer;
    $('head').value = String(state.head);
    for (const r of document.querySelectorAll('input[name=view]')) r.checked = r.value === state.view;
    $('rollout').checked = state.rollout;
    const gradient = isGradient(state.method);
    $('layer').disabled = L === 1 || gradient; $('head').disabled = gradient; $('rollout').disabled = !rolloutAvailable || gradient;
    for (const r of document.querySelectorAll('input[name=view]')) r.disabled = gradient;
    if (classes.length) {
      $('method').value = gradient ? state.method : state.rollout ? 'rollout' : 'attention';
      if (state.cls != null) $('class').value = String(state.cls);
      $('class').disabled = !gradient;
      for (const li of $('predictions').children) li.classList.toggle('active', gradient && Number(li.dataset.index) === state.cls);
    }
    $('alpha').value = state.alpha; $('alpha-out').textContent = Number(state.alpha).toFixed(2);
    $('colormap').value = state.colormap;
    $('smooth').checked = state.smooth; $('grid').checked = state.grid;
    $('use-threshold').checked = state.threshold != null;
    if (state.threshold != null) $('threshold').value = state.threshold;
    $('threshold-out').textContent = state.threshold != null ? `${Math.round(state.threshold * 100)} %` : 'off';
  }

  function writeHash() {
    const h = `#layer=${state.layer}&head=${state.head}&query=${state.query}&view=${state.view}${state.rollout ? '&rollout=1' : ''}` +
      (isGradient(state.method) ? `&method=${state.method}&class=${state.cls}` : '');
    if (location.hash === h) return;
    try { history.replaceState(null, '', h); } catch (e) { location.hash = h; }
  }

  // ---- the Tokens panel (core/token_diagnostics.hpp): for the layer of the layer picker, every
  // token's norm after the block with the artifacts flagged (norm > ratio × the median patch
  // norm), the sink scores (attention received: the mean over heads and query rows of a column),
  // the register share per layer, the per-head table, the PCA picture when the page holds one.
  const TP = D.tokens_panel || null;
  const tok = TP && TP.norms !== undefined ? {
    norms: floats(TP.norms), sinks: floats(TP.sinks),  // (L, T) each
    median: TP.median, flagged: TP.flagged, ratio: TP.ratio, registerShare: TP.register_share,
    heads: TP.heads, clean: TP.clean, maskThreshold: TP.mask_threshold,
  } : null;
  const pca = TP && TP.pca ? bytes(TP.pca) : null;  // (GH, GW, 3) RGB
  const layerOf = (arr, l) => arr.subarray(l * T, (l + 1) * T);
  function tokensOf(l) {
    return { layer: l, norms: Array.from(layerOf(tok.norms, l)), flagged: tok.flagged[l].slice(),
      sinks: Array.from(layerOf(tok.sinks, l)), median: tok.median[l], ratio: tok.ratio,
      threshold: tok.ratio * tok.median[l], register_share: tok.registerShare ? tok.registerShare[l] : null,
      left_out_by_clean: tok.clean && tok.clean.layer === l ? tok.clean.left_out : null };
  }
  const tokenHeat = document.createElement('canvas');
  tokenHeat.width = GW; tokenHeat.height = GH;
  const tokenHeatCtx = tokenHeat.getContext('2d'), tokenPixels = tokenHeatCtx.createImageData(GW, GH);
  const shown = (v) => String(Number(v.toPrecision(6)));  // a float32 setting as it was typed: 1.2, not 1.2000000476837158
  const num = (v) => (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : v.toPrecision(4));

  // The image with the layer's norms (or sinks) over the patches, min-max through the colormap
  // on the patch grid; each flagged token outlined.
  function drawTokenMap() {
    const c = $('token-map'), g = c.getContext('2d'), W = c.width, Hh = c.height, cw = W / GW, ch = Hh / GH;
    const l = state.layer, sinks = $('token-show').value === 'sinks';
    const vec = layerOf(sinks ? tok.sinks : tok.norms, l);
    if (imageReady) g.drawImage(image, 0, 0, W, Hh); else { g.fillStyle = '#000'; g.fillRect(0, 0, W, Hh); }
    paintMap(vec, tokenPixels);
    tokenHeatCtx.putImageData(tokenPixels, 0, 0);
    g.imageSmoothingEnabled = false;
    g.globalAlpha = state.alpha;
    g.drawImage(tokenHeat, 0, 0, W, Hh);
    g.globalAlpha = 1;
    for (const t of tok.flagged[l]) {
      const p = t - FP, x = (p % GW) * cw, y = Math.floor(p / GW) * ch;
      g.lineWidth = 4; g.strokeStyle = '#fff'; g.strokeRect(x + 2, y + 2, cw - 4, ch - 4);
      g.lineWidth = 2; g.strokeStyle = '#ff2bd6'; g.strokeRect(x + 2, y + 2, cw - 4, ch - 4);
    }
    const others = Array.from({ length: FP }, (_, t) => `${leadingName(t)} ${num(vec[t])}`);
    $('token-map-note').textContent = `${sinks ? 'sink scores' : 'norms'} of the non-patch tokens: ${others.join(', ')}.`;
  }

  // A histogram of the patch tokens' norms on a log₁₀ axis, the threshold and the median marked.
  function drawHistogram() {
    const c = $('token-hist'), g = c.getContext('2d'), css = getComputedStyle(document.body);
    const l = state.layer, norms = layerOf(tok.norms, l).subarray(FP), median = tok.median[l], limit = tok.ratio * median;
    const lg = (v) => Math.log10(Math.max(v, 1e-30));
    let lo = Math.min(lg(median), lg(limit)), hi = Math.max(lg(median), lg(limit));
    for (const v of norms) { lo = Math.min(lo, lg(v)); hi = Math.max(hi, lg(v)); }
    const pad = (hi - lo) * 0.05 || 0.1;
    lo -= pad; hi += pad;
    const bins = 30, counts = new Array(bins).fill(0);
    for (const v of norms) counts[Math.min(bins - 1, Math.floor(((lg(v) - lo) / (hi - lo)) * bins))]++;
    const x0 = 40, y0 = 10, w = c.width - 50, h = c.height - 40, top = Math.max(...counts, 1);
    const xOf = (v) => x0 + ((lg(v) - lo) / (hi - lo)) * w;
    g.clearRect(0, 0, c.width, c.height);
    g.font = '11px system-ui, sans-serif'; g.fillStyle = css.color; g.strokeStyle = css.color; g.lineWidth = 1;
    g.strokeRect(x0, y0, w, h);
    g.fillText(String(top), 4, y0 + 10); g.fillText('0', 4, y0 + h);
    for (let k = Math.ceil(lo); k <= Math.floor(hi); k++) {  // a tick at each power of ten
      const x = x0 + ((k - lo) / (hi - lo)) * w;
      g.beginPath(); g.moveTo(x, y0 + h); g.lineTo(x, y0 + h + 4); g.stroke();
      g.fillText(`1e${k}`, x - 10, y0 + h + 26);
    }
    g.fillText(num(10 ** lo), x0, y0 + h + 13);  // the axis' ends
    g.fillText(num(10 ** hi), x0 + w - 30, y0 + h + 13);
    g.fillStyle = 'hsl(210, 60%, 55%)';
    counts.forEach((n, b) => { if (n) { const bh = (n / top) * (h - 4); g.fillRect(x0 + (b / bins) * w + 1, y0 + h - bh, w / bins - 2, bh); } });
    g.setLineDash([4, 3]); g.strokeStyle = css.color;
    g.beginPath(); g.moveTo(xOf(median), y0); g.lineTo(xOf(median), y0 + h); g.stroke();
    g.setLineDash([]); g.strokeStyle = '#e03131'; g.lineWidth = 2;
    g.beginPath(); g.moveTo(xOf(limit), y0); g.lineTo(xOf(limit), y0 + h); g.stroke();
    g.fillStyle = css.color;
    g.fillText('norm', x0 + w / 2 - 12, y0 + h + 13);
    $('token-hist-note').textContent = `Median ${num(median)}; threshold ${shown(tok.ratio)} × median = ${num(limit)}; ` +
      `${tok.flagged[l].length} of ${N} patches flagged.`;
  }

  // The register share of every layer, the layer shown marked.
  function drawRegisterShare() {
    if (!tok.registerShare) return;
    const c = $('register-share'), g = c.getContext('2d'), css = getComputedStyle(document.body);
    const x0 = 40, y0 = 10, w = c.width - 50, h = c.height - 40, share = tok.registerShare;
    const hi = Math.max(...share, 1e-9) > 0.5 ? 1 : Math.max(...share) * 1.1 || 1;
    const xOf = (l) => x0 + (L > 1 ? (l / (L - 1)) * w : w / 2), yOf = (v) => y0 + h - (v / hi) * h;
    g.clearRect(0, 0, c.width, c.height);
    g.font = '11px system-ui, sans-serif'; g.fillStyle = css.color; g.strokeStyle = css.color; g.lineWidth = 1;
    g.strokeRect(x0, y0, w, h);
    g.fillText(hi.toFixed(2), 4, y0 + 10); g.fillText('0', 4, y0 + h);
    g.fillText('layer 0', x0, y0 + h + 15); g.fillText(`${L - 1}`, x0 + w - 10, y0 + h + 15);
    g.strokeStyle = 'hsl(210, 60%, 55%)'; g.lineWidth = 2; g.beginPath();
    share.forEach((v, l) => (l ? g.lineTo(xOf(l), yOf(v)) : g.moveTo(xOf(l), yOf(v))));
    g.stroke();
    share.forEach((v, l) => {
      g.beginPath(); g.arc(xOf(l), yOf(v), l === state.layer ? 5 : 3, 0, 2 * Math.PI);
      g.fillStyle = l === state.layer ? '#ff2bd6' : 'hsl(210, 60%, 55%)'; g.fill();
    });
    g.fillStyle = css.color;
    g.fillText(`layer ${state.layer}: ${(share[state.layer] * 100).toFixed(2)} % to ${FP - CT - DT} registers`, x0 + 60, c.height - 6);
  }

  // The layer's five strongest sinks, against the 1/T of a uniform layer.
  function drawSinks() {
    const l = state.layer, s = layerOf(tok.sinks, l), flagged = new Set(tok.flagged[l]);
    const order = Array.from({ length: T }, (_, t) => t).sort((a, b) => s[b] - s[a] || a - b).slice(0, 5);
    $('sinks').replaceChildren(...order.map((t) => {
      const li = document.createElement('li');
      li.textContent = `${tokenName(t)}: ${num(s[t])} (${(s[t] * T).toFixed(1)} × the uniform 1/T)${flagged.has(t) ? ' · flagged' : ''}`;
      return li;
    }));
  }

  // The head table: one row a (layer, head), sorted by the clicked column (again: the other way).
  const headColumns = ['layer', 'head', 'entropy', 'distance', 'mask', 'flagged'];
  const headRows = [];
  const headSort = { key: null, dir: 1 };
  function headValue(r, key) { return key === 'layer' ? r.layer : key === 'head' ? r.head : tok.heads[key][r.layer][r.head]; }
  function sortHeads(key) {
    headSort.dir = headSort.key === key ? -headSort.dir : 1;
    headSort.key = key;
    headRows.sort((a, b) => (headValue(a, key) - headValue(b, key)) * headSort.dir || a.layer - b.layer || a.head - b.head);
    const body = $('head-table').tBodies[0];
    for (const r of headRows) body.append(r.el);
    for (const th of $('head-table').tHead.rows[0].cells) {
      th.classList.toggle('sorted-asc', th.dataset.key === key && headSort.dir > 0);
      th.classList.toggle('sorted-desc', th.dataset.key === key && headSort.dir < 0);
    }
  }
  function setupTokens() {
    if (!tok && !pca) return;
    $('tokens-panel').hidden = false;
    if (pca) {
      $('pca-figure').hidden = false;
      const c = $('pca'), g = c.getContext('2d'), px = g.createImageData(GW, GH);
      c.width = GW; c.height = GH;
      for (let p = 0; p < N; p++) {
        px.data[p * 4] = pca[p * 3]; px.data[p * 4 + 1] = pca[p * 3 + 1]; px.data[p * 4 + 2] = pca[p * 3 + 2]; px.data[p * 4 + 3] = 255;
      }
      g.putImageData(px, 0, 0);
    }
    if (!tok) { for (const id of ['token-map', 'token-hist', 'sinks', 'head-table']) $(id).hidden = true; return; }
    const [iw, ih] = D.image_size, f = 448 / Math.max(iw, ih);  // larger or smaller: a panel-sized picture
    $('token-map').width = Math.max(1, Math.round(iw * f)); $('token-map').height = Math.max(1, Math.round(ih * f));
    $('tokens-about').textContent = `A patch token is flagged as an artifact at a layer when its norm is above ${shown(tok.ratio)} × ` +
      'the median patch norm of that layer (--artifact-ratio): trained ViTs reuse a few low-information patches as scratch ' +
      'space, with large norms that soak up attention. The head table\'s mask share is DINO\'s mass mask of the class ' +
      `token's row at ${shown(tok.maskThreshold)}; flagged share: the class token's attention on the layer's flagged tokens.`;
    if (tok.clean) {
      $('tokens-clean').hidden = false;
      $('tokens-clean').textContent = `--clean left ${tok.clean.left_out} token${tok.clean.left_out === 1 ? '' : 's'} out of the ` +
        `drawn map (those flagged at layer ${tok.clean.layer}); the attention in this page is as the model computed it.`;
    }
    $('register-figure').hidden = !tok.registerShare;
    $('token-show').addEventListener('change', drawTokens);
    const body = $('head-table').tBodies[0];
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
      const tr = body.insertRow();
      tr.dataset.layer = String(l); tr.dataset.head = String(h);
      tr.insertCell().textContent = String(l); tr.insertCell().textContent = String(h);
      tr.insertCell().textContent = tok.heads.entropy[l][h].toFixed(4);
      tr.insertCell().textContent = tok.heads.distance[l][h].toFixed(2);
      tr.insertCell().textContent = tok.heads.mask[l][h].toFixed(4);
      tr.insertCell().textContent = tok.heads.flagged[l][h].toFixed(4);
      tr.addEventListener('click', () => {
        const c = { layer: l, head: h, rollout: false };
        queryAtLayer(l, c);
        apply(c);
      });
      headRows.push({ layer: l, head: h, el: tr });
    }
    for (const th of $('head-table').tHead.rows[0].cells) th.addEventListener('click', () => sortHeads(th.dataset.key));
  }
  function drawTokens() {
    if (!tok) return;
    $('tokens-layer').textContent = String(state.layer);
    drawTokenMap(); drawHistogram(); drawRegisterShare(); drawSinks();
    for (const r of headRows) r.el.classList.toggle('current', r.layer === state.layer && r.head === state.head);
  }

  let lastRedrawMs = 0;
  function redraw() {
    const t0 = performance.now();
    compute();
    drawView(); drawStrip(); drawHeads(); drawStatus(); drawStats(); drawSteps(); drawTokens(); drawPrompts(); syncControls(); writeHash();
    lastRedrawMs = performance.now() - t0;
  }

  // Moving to layer l keeps the query where it can be shown there: a layer with the class token's
  // rows only shows token 0's row; the probe reads the last layer only (elsewhere: the first patch).
  function queryAtLayer(l, c) {
    if (!isFull(l)) { c.query = 0; c.view = 'query'; } else if (state.query === PROBE && l !== L - 1) c.query = FP;
  }

  // Applies a partial state after checking the whole of it; throws Error and changes nothing when invalid.
  function apply(changes) {
    const next = { ...state, ...changes };
    check(next);
    Object.assign(state, next);
    redraw();
  }

  // select()'s method and class as state: 'rollout' is attention with rollout on.
  function methodChanges(opts, c) {
    if (opts.method === 'rollout') { c.method = 'attention'; c.rollout = true; }
    else if (opts.method === 'attention') { c.method = 'attention'; if (opts.rollout === undefined) c.rollout = false; }
    else if (opts.method !== undefined) c.method = opts.method;
    if (opts.class !== undefined) c.cls = classIndex(opts.class);
  }

  // ---- the Prompts panel (a model asked in words: its classes are texts) ----------------------
  // Each text's probability, its word bars (words.csv's relevance, a bar per token) and buttons
  // for its map under each class-specific method (the class picker's path, the text the class);
  // and the text tower's attention of a prompt, layer and head as a token × token table, the
  // cells the causal mask hides shown as masked (never as a zero weight).
  const TX = D.texts || null;
  const textPrompts = TX ? TX.prompts.map((p) => ({ ...p, attention: floats(p.attention) })) : [];
  const textView = { prompt: 0, layer: TX ? TX.layers - 1 : 0, head: 0 };
  const promptButtons = [];
  const isMasked = (i, j) => !!TX && TX.causal && j > i;
  // [query][key] of the prompt, layer and head: the weight, or null where the mask hides the key.
  function textMatrix(v) {
    const p = textPrompts[v.prompt], n = p.tokens.length, base = (v.layer * TX.heads + v.head) * n * n;
    return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (isMasked(i, j) ? null : p.attention[base + i * n + j])));
  }
  function checkTextView(v) {
    const bad = (x, n) => !Number.isInteger(x) || x < 0 || x >= n;
    if (!TX) throw new Error('this page has no texts');
    if (bad(v.prompt, textPrompts.length)) throw new Error(`textAttention: prompt must be 0…${textPrompts.length - 1}`);
    if (bad(v.layer, TX.layers)) throw new Error(`textAttention: layer must be 0…${TX.layers - 1}`);
    if (bad(v.head, TX.heads)) throw new Error(`textAttention: head must be 0…${TX.heads - 1}`);
  }
  function drawTextAttention() {
    if (!TX) return;
    const p = textPrompts[textView.prompt], m = textMatrix(textView), table = $('text-attention');
    table.replaceChildren();
    const caption = document.createElement('caption');
    caption.textContent = `“${p.text}”, text layer ${textView.layer}, head ${textView.head}: row = query, column = key`;
    const head = document.createElement('tr');
    head.append(document.createElement('th'));
    for (const t of p.tokens) { const th = document.createElement('th'); th.scope = 'col'; th.textContent = t; head.append(th); }
    table.append(caption, head);
    m.forEach((row, i) => {
      const tr = document.createElement('tr'), th = document.createElement('th');
      th.scope = 'row'; th.textContent = p.tokens[i];
      tr.append(th);
      row.forEach((w, j) => {
        const td = document.createElement('td');
        if (w === null) {
          td.className = 'masked'; td.dataset.masked = '1'; td.textContent = '·';
          td.title = `masked: ${JSON.stringify(p.tokens[i])} cannot see ${JSON.stringify(p.tokens[j])}, a later token`;
        } else {
          td.className = 'heat' + (w > 0.55 ? ' dark' : ''); td.dataset.value = String(w); td.textContent = w.toFixed(3);
          td.style.background = `rgba(214, 51, 108, ${Math.min(1, Math.max(0, w)).toFixed(3)})`;
        }
        tr.append(td);
      });
      table.append(tr);
    });
    for (const [id, key] of [['text-prompt', 'prompt'], ['text-layer', 'layer'], ['text-head', 'head']]) $(id).value = String(textView[key]);
  }
  function setupTexts() {
    if (!TX) return;
    $('prompts-panel').hidden = false;
    $('prompts-about').textContent = `Ranked by ${TX.probability === 'sigmoid' ? 'the sigmoid of each text\'s logit (SigLIP: each on its own)' : 'the softmax over the texts (CLIP)'}` +
      `. The bars: each word's relevance to this image's logit (words.csv's; the text tower's layers ${TX.relevance_from}…${TX.layers - 1}).`;
    const order = textPrompts.map((p, i) => i).sort((a, b) => textPrompts[b].probability - textPrompts[a].probability || a - b);
    for (const i of order) {
      const p = textPrompts[i], li = document.createElement('li'), title = document.createElement('div');
      li.dataset.index = String(i);
      title.className = 'prompt-title';
      title.textContent = `“${p.text}” (text ${i}): ${(p.probability * 100).toFixed(2)} %`;
      const maps = document.createElement('div');
      maps.className = 'prompt-maps';
      for (const m of gradientMethods) {
        const b = document.createElement('button');
        b.type = 'button'; b.textContent = `${m} map`; b.dataset.method = m;
        b.disabled = !hasMaps(i);
        b.addEventListener('click', () => apply({ cls: i, method: m, rollout: false }));
        maps.append(b);
        promptButtons.push({ el: b, cls: i, method: m });
      }
      const words = document.createElement('div');
      words.className = 'words';
      const top = Math.max(0, ...p.relevance);
      p.words.forEach((w, k) => {
        const token = document.createElement('span'), bar = document.createElement('span'), fill = document.createElement('span'), value = document.createElement('span');
        token.className = 'token'; token.textContent = w;
        bar.className = 'bar'; bar.dataset.token = w; bar.dataset.relevance = String(p.relevance[k]); bar.dataset.position = String(p.first_word + k);
        fill.style.width = `${top > 0 ? Math.max(0, p.relevance[k] / top) * 100 : 0}%`;
        bar.append(fill);
        value.className = 'value'; value.textContent = p.relevance[k].toPrecision(4);
        words.append(token, bar, value);
      });
      li.append(title, maps, words);
      $('prompts').append(li);
      const o = document.createElement('option'); o.value = String(i); o.textContent = p.text; $('text-prompt').append(o);
    }
    for (let l = 0; l < TX.layers; l++) { const o = document.createElement('option'); o.value = o.textContent = String(l); $('text-layer').append(o); }
    for (let h = 0; h < TX.heads; h++) { const o = document.createElement('option'); o.value = o.textContent = String(h); $('text-head').append(o); }
    $('text-mask').textContent = TX.causal
      ? 'CLIP\'s causal mask: a token attends to itself and the tokens before it; the cells above the diagonal are masked (hatched), not zero weights. The tokens shown: the start token, the words, the end token (whose row is the text\'s embedding).'
      : 'No mask: SigLIP\'s text tower lets every token attend to every other, padding included (rows here are cropped to the words and the first </s>, so they sum to less than 1).';
    for (const [id, key] of [['text-prompt', 'prompt'], ['text-layer', 'layer'], ['text-head', 'head']])
      $(id).addEventListener('change', () => { textView[key] = Number($(id).value); drawTextAttention(); });
    drawTextAttention();
  }
  function drawPrompts() {
    for (const b of promptButtons) b.el.classList.toggle('active', isGradient(state.method) && state.method === b.method && state.cls === b.cls);
  }

  // ---- contract --------------------------------------------------------------------------
  window.vitattn = Object.freeze({
    // method: attention | rollout | chefer | grad-rollout | legrad | gradcam (those the page holds);
    // class: a class index or label among info().classes with maps.
    select(opts = {}) {
      const c = {};
      for (const k of ['layer', 'head', 'query', 'view', 'rollout']) if (opts[k] !== undefined) c[k] = opts[k];
      if (typeof c.head === 'string' && /^\d+$/.test(c.head)) c.head = Number(c.head);
      methodChanges(opts, c);
      apply(c);
      return this.state();
    },
    // Attention and rollout: the shown row or column over the T tokens. A relevance method: its
    // map over the N patches, row-major on the grid.
    row() { return isGradient(state.method) ? Float32Array.from(current.subarray(FP)) : Float32Array.from(current); },
    // The bound on |row() − vitattn's float32 value| of what is shown.
    mapError() { return isGradient(state.method) ? relevance.get(`${state.method}/${state.cls}`).maxError : D.max_error; },
    info() {
      return { layers: L, heads: H, tokens: T, grid: [GH, GW], quantisation: D.quantisation, max_error: D.max_error,
        first_patch: FP, class_token: !!CT, probe: !!probe, full_layers: layers.map((a, l) => (a.rows === T ? l : -1)).filter((l) => l >= 0),
        methods: classes.length ? methods : ['attention', 'rollout'], classes: classes.map((k) => ({ ...k })) };
    },
    state() {
      return { layer: state.layer, head: state.head, query: state.query, view: state.view, rollout: state.rollout, pinned,
        method: isGradient(state.method) ? state.method : state.rollout ? 'rollout' : 'attention', class: state.cls };
    },
    stats() { return { entropy: D.entropy, distance: D.distance }; },
    // The Tokens panel's numbers of a layer (default: the one shown): norms and sinks over the T
    // tokens, the flagged token indices, the median patch norm, the ratio and threshold, the
    // register share (null without registers), how many tokens --clean left out there (null
    // when it did not run, or at another layer). null when the page has no token diagnostics.
    tokens(opts = {}) {
      if (!tok) return null;
      const l = opts.layer === undefined ? state.layer : opts.layer;
      if (!Number.isInteger(l) || l < 0 || l >= L) throw new Error(`vitattn.tokens: layer must be 0…${L - 1}`);
      return tokensOf(l);
    },
    // The head table as shown, top to bottom: [{layer, head}].
    headTable() { return headRows.map((r) => ({ layer: r.layer, head: r.head })); },
    steps() { return stepView; },
    // The texts (a model asked in words; null otherwise): the mask, the probability rule, each
    // prompt's text, probability, words, relevances and view tokens, in the order given.
    texts() {
      return TX ? { causal: TX.causal, probability: TX.probability, layers: TX.layers, heads: TX.heads,
        prompts: textPrompts.map((p) => ({ text: p.text, probability: p.probability, words: [...p.words], relevance: [...p.relevance], tokens: [...p.tokens] })) } : null;
    },
    // Shows a prompt's text attention at a layer and head; returns {tokens, matrix} with null
    // for each masked cell.
    textAttention(opts = {}) {
      const v = { ...textView, ...opts };
      checkTextView(v);
      Object.assign(textView, v);
      drawTextAttention();
      return { tokens: [...textPrompts[v.prompt].tokens], matrix: textMatrix(v) };
    },
    lastRedrawMs() { return lastRedrawMs; },
  });

  // ---- controls --------------------------------------------------------------------------
  function tokenAt(ev) {
    const r = view.getBoundingClientRect();
    const x = Math.floor(((ev.clientX - r.left) / r.width) * GW), y = Math.floor(((ev.clientY - r.top) / r.height) * GH);
    return x >= 0 && y >= 0 && x < GW && y < GH ? FP + y * GW + x : null;
  }
  // A token picked in the page: on a layer with class-token rows only, it cannot be shown.
  function pick(token) {
    if (token == null || token === state.query || isGradient(state.method)) return;
    if (!isFull(state.layer) && token !== 0) { $('status').textContent = `layer ${state.layer} keeps only the class token's rows`; return; }
    if (token === PROBE && state.layer !== L - 1) { $('status').textContent = `the probe reads layer ${L - 1}'s output only`; return; }
    apply({ query: token });
  }
  view.addEventListener('mousemove', (ev) => { if (!pinned) pick(tokenAt(ev)); });
  view.addEventListener('click', (ev) => {
    const t = tokenAt(ev);
    if (t == null) return;
    if (ev.shiftKey) { state.stepKey = t; redraw(); return; }
    pinned = !(pinned && t === state.query);
    pick(t);
    redraw();
  });
  document.addEventListener('keydown', (ev) => {
    const move = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[ev.key];
    if (!move || ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT') return;
    ev.preventDefault();
    if (!isToken(state.query) || state.query < FP) { pick(FP); return; }
    const p = state.query - FP, x = Math.min(GW - 1, Math.max(0, (p % GW) + move[0])), y = Math.min(GH - 1, Math.max(0, Math.floor(p / GW) + move[1]));
    pinned = true;
    pick(FP + y * GW + x);
  });

  function setup() {
    document.title = `${D.name} — vitattn report`;
    $('title').textContent = D.name;
    const leading = [CT ? 'class token' : 'no class token (a probe pools the image)', ...(DT ? ['distillation token'] : []),
      ...(FP - CT - DT > 0 ? [`${FP - CT - DT} registers`] : [])];
    $('model').textContent = `${D.model} · ${T} tokens (${leading.join(', ')}, ${GH}×${GW} patches of ${D.patch_size} px, input ${D.input[0]}×${D.input[1]})`;
    $('quant').textContent = (D.quantisation === 'f16' ? 'Weights stored as fp16 (half precision, 11 significant bits): '
      : 'Weights stored with 8 bits and a per-row scale (w = q·s/255, s the row\'s largest weight): ') +
      `each shown weight is within ${D.max_error.toExponential(2)} of vitattn's float32 value.` +
      (relevance.size ? ` The relevance maps are stored the same way with one scale a map (its largest value), each value within ${D.quantisation === 'f16' ? '2⁻¹¹' : '1/510'} of that scale.` : '');
    for (const line of D.left_out) { const li = document.createElement('li'); li.textContent = line; $('left-out').append(li); }
    const layer = $('layer');
    layer.max = L - 1; layer.disabled = L === 1;
    layer.addEventListener('input', () => {
      const l = Number(layer.value), c = { layer: l };
      queryAtLayer(l, c);
      if (!isFull(l)) c.rollout = false;
      if (state.rollout) for (let k = 0; k <= l; k++) if (!isFull(k)) c.rollout = false;
      apply(c);
    });
    const head = $('head');
    for (const v of ['mean', 'max', 'min', ...Array.from({ length: H }, (_, h) => String(h))]) {
      const o = document.createElement('option'); o.value = v; o.textContent = /^\d/.test(v) ? `head ${v}` : `${v} of heads`; head.append(o);
    }
    head.addEventListener('change', () => apply({ head: /^\d+$/.test(head.value) ? Number(head.value) : head.value }));
    for (const r of document.querySelectorAll('input[name=view]'))
      r.addEventListener('change', () => { try { apply({ view: r.value }); } catch (e) { syncControls(); $('status').textContent = e.message; } });
    $('rollout').disabled = !rolloutAvailable;
    $('rollout').addEventListener('change', () => { try { apply({ rollout: $('rollout').checked }); } catch (e) { syncControls(); $('status').textContent = e.message; } });
    $('alpha').addEventListener('input', () => { state.alpha = Number($('alpha').value); redraw(); });
    if (classes.length) setupPicker();
    const cm = $('colormap');
    for (const name of Object.keys(luts)) { const o = document.createElement('option'); o.value = o.textContent = name; cm.append(o); }
    cm.addEventListener('change', () => { state.colormap = cm.value; redraw(); });
    $('smooth').addEventListener('change', () => { state.smooth = $('smooth').checked; redraw(); });
    $('grid').addEventListener('change', () => { state.grid = $('grid').checked; redraw(); });
    const thresholdChanged = () => { state.threshold = $('use-threshold').checked ? Number($('threshold').value) : null; redraw(); };
    $('use-threshold').addEventListener('change', thresholdChanged);
    $('threshold').addEventListener('input', () => { $('use-threshold').checked = true; thresholdChanged(); });
    // The strip: the probe (a SigLIP model's), then the leading tokens, each with its weight in the shown row.
    for (const t of [...(probe ? [PROBE] : []), ...Array.from({ length: FP }, (_, k) => k)]) {
      const el = document.createElement('button'), swatch = document.createElement('span'), value = document.createElement('span');
      swatch.className = 'swatch';
      el.append(swatch, `${t === PROBE ? 'probe' : leadingShort(t)} `, value);
      el.title = t === PROBE ? `the probe (attention pooling) over layer ${L - 1}'s output` : tokenName(t);
      el.addEventListener('click', () => { pinned = true; pick(t); redraw(); });
      strip.append(el);
      stripButtons.push({ el, swatch, value, token: t });
    }
    for (let h = 0; h < H; h++) {
      const el = document.createElement('figure'), c = document.createElement('canvas'), cap = document.createElement('figcaption');
      c.width = GW; c.height = GH; cap.textContent = `head ${h}`;
      el.append(c, cap);
      el.addEventListener('click', () => apply({ head: h, rollout: false }));
      headsBox.append(el);
      headFigures.push({ el, ctx: c.getContext('2d'), pixels: c.getContext('2d').createImageData(GW, GH) });
    }
    statsCanvas.addEventListener('click', (ev) => {
      const r = statsCanvas.getBoundingClientRect(), x = ((ev.clientX - r.left) / r.width) * statsCanvas.width, y = ((ev.clientY - r.top) / r.height) * statsCanvas.height;
      let best = null, bestD = 12 * 12;
      for (const d of dots) { const dd = (d.x - x) ** 2 + (d.y - y) ** 2; if (dd < bestD) { best = d; bestD = dd; } }
      if (!best) return;
      const c = { layer: best.layer, head: best.head, rollout: false };
      queryAtLayer(best.layer, c);
      apply(c);
    });
  }

  // The method and class pickers and the predictions, for a model with a classifier.
  function setupPicker() {
    $('picker').hidden = false;
    const label = { attention: 'attention (layer, head, token above)', rollout: 'attention rollout up to the layer' };
    for (const m of methods) { const o = document.createElement('option'); o.value = m; o.textContent = label[m] || `${m} (class-specific)`; $('method').append(o); }
    $('method').addEventListener('change', () => {
      try { apply(pickedMethod($('method').value)); } catch (e) { syncControls(); $('status').textContent = e.message; }
    });
    for (const k of classes) {
      const o = document.createElement('option');
      o.value = String(k.index); o.disabled = !k.maps;
      o.textContent = `${k.label} — ${(k.probability * 100).toFixed(2)} %${k.maps ? '' : ' (map left out)'}`;
      $('class').append(o);
      const li = document.createElement('li');
      li.dataset.index = String(k.index);
      li.textContent = `${k.label} (class ${k.index}): ${(k.probability * 100).toFixed(2)} %${k.maps ? '' : ' · map left out'}`;
      if (k.maps) li.addEventListener('click', () => apply({ cls: k.index, method: isGradient(state.method) ? state.method : gradientMethods[0] }));
      $('predictions').append(li);
    }
    $('class').addEventListener('change', () => apply({ cls: Number($('class').value) }));
    $('relevance-about').textContent = D.relevance.about;
  }
  function pickedMethod(m) { const c = {}; methodChanges({ method: m }, c); return c; }

  // The view a link carries: #layer=…&head=…&query=…&view=…; a bad fragment is ignored.
  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1)), c = {};
    if (p.has('layer')) c.layer = Number(p.get('layer'));
    if (p.has('head')) c.head = /^\d+$/.test(p.get('head')) ? Number(p.get('head')) : p.get('head');
    if (p.has('query')) c.query = p.get('query') === PROBE ? PROBE : Number(p.get('query'));
    if (p.has('view')) c.view = p.get('view');
    if (p.has('rollout')) c.rollout = p.get('rollout') === '1';
    if (p.has('method')) c.method = p.get('method');
    if (p.has('class')) c.cls = Number(p.get('class'));
    if (c.query !== undefined) pinned = true;
    try { check({ ...state, ...c }); Object.assign(state, c); } catch (e) { pinned = false; }
  }

  const [iw, ih] = D.image_size, f = Math.min(1, 1024 / Math.max(iw, ih));
  view.width = Math.max(1, Math.round(iw * f)); view.height = Math.max(1, Math.round(ih * f));
  setup();
  setupTokens();
  setupTexts();
  readHash();
  redraw();
  image.addEventListener('load', () => { imageReady = true; redraw(); document.body.dataset.ready = '1'; });
  image.addEventListener('error', () => { document.body.dataset.ready = '1'; });
  image.src = D.image;
})();
