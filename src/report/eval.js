'use strict';
// The page of `vitattn eval`: one table per metric, the methods ranked best first (the data says
// which way is better), each value the CSV's own text; one chart per curve, a line per method.
(function () {
  const D = JSON.parse(document.getElementById('vitattn-eval-data').textContent);
  const SVG = 'http://www.w3.org/2000/svg';

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function metricTable(metric) {
    const rows = D.rows.filter(r => r.metric === metric.name);
    rows.sort((a, b) => (metric.lower_is_better ? 1 : -1) * (Number(a.value) - Number(b.value)) ||
      a.order - b.order);
    const table = el('table', {'data-metric': metric.name});
    table.appendChild(el('caption', {}, `${metric.name} (${metric.lower_is_better ? 'lower' : 'higher'} is better)`));
    const head = table.createTHead().insertRow();
    for (const h of ['rank', 'method', 'value', 'images']) head.appendChild(el('th', {}, h));
    const body = table.createTBody();
    rows.forEach((r, i) => {
      const tr = body.insertRow();
      tr.appendChild(el('td', {}, String(i + 1)));
      tr.appendChild(el('td', {class: 'method'}, r.method));
      tr.appendChild(el('td', {class: 'value', 'data-method': r.method, 'data-metric': r.metric}, r.value));
      tr.appendChild(el('td', {class: 'images'}, String(r.images)));
    });
    return table;
  }

  function chart(curve) {
    const points = D.curves.filter(p => p.curve === curve);
    const methods = [...new Set(points.map(p => p.method))];
    const xs = points.map(p => p.x), ys = points.map(p => p.value);
    const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(0, ...ys), y1 = Math.max(1, ...ys);
    const W = 420, H = 220, M = 30;
    const sx = x => M + (x1 > x0 ? (x - x0) / (x1 - x0) : 0) * (W - 2 * M);
    const sy = y => H - M - (y - y0) / (y1 - y0) * (H - 2 * M);
    const figure = el('figure', {'data-curve': curve});
    figure.appendChild(el('figcaption', {}, curve));
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    svg.setAttribute('width', W);
    svg.setAttribute('height', H);
    const axis = document.createElementNS(SVG, 'polyline');
    axis.setAttribute('points', `${M},${M} ${M},${H - M} ${W - M},${H - M}`);
    axis.setAttribute('fill', 'none');
    axis.setAttribute('stroke', 'currentColor');
    svg.appendChild(axis);
    methods.forEach((m, i) => {
      const line = document.createElementNS(SVG, 'polyline');
      line.setAttribute('points', points.filter(p => p.method === m).map(p => `${sx(p.x)},${sy(p.value)}`).join(' '));
      line.setAttribute('fill', 'none');
      line.setAttribute('stroke', `hsl(${(i * 360) / methods.length}, 70%, 45%)`);
      line.setAttribute('data-method', m);
      const title = document.createElementNS(SVG, 'title');
      title.textContent = m;
      line.appendChild(title);
      svg.appendChild(line);
    });
    figure.appendChild(svg);
    const legend = el('p', {class: 'muted'});
    methods.forEach((m, i) => {
      const s = el('span', {}, `■ ${m}  `);
      s.style.color = `hsl(${(i * 360) / methods.length}, 70%, 45%)`;
      legend.appendChild(s);
    });
    figure.appendChild(legend);
    return figure;
  }

  const metrics = document.getElementById('metrics');
  for (const m of D.metrics) if (D.rows.some(r => r.metric === m.name)) metrics.appendChild(metricTable(m));
  const curves = document.getElementById('curves');
  for (const c of [...new Set(D.curves.map(p => p.curve))]) curves.appendChild(chart(c));
  document.body.dataset.ready = '1';
})();
