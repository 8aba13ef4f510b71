const D = JSON.parse(document.getElementById('data').textContent);
function cell(tr, text, cls) {
  const td = document.createElement('td'); td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
}
function show(k) {
  const box = document.getElementById('view'); box.replaceChildren();
  document.querySelectorAll('#requests tr.sel').forEach(r => r.classList.remove('sel'));
  const sel = document.querySelector('#requests tr[data-k="' + k + '"]');
  if (sel) sel.classList.add('sel');
  for (const p of D.policies) {
    const r = p.requests[k]; const h = document.createElement('h3');
    h.textContent = p.name + ' - request ' + k + ' (step ' + r.step + '): ' + r.prompt.toLocaleString() +
      ' tokens; cached ' + r.cached.toLocaleString() + ', written ' + r.written.toLocaleString() + ', uncached ' +
      r.uncached.toLocaleString() + (r.overflow ? ' - OVERFLOW' : '') + (r.summarised ? ' - summarised' : '');
    box.appendChild(h);
    const t = document.createElement('table'); t.className = 'segments';
    const head = document.createElement('tr');
    for (const c of ['pos', 'form', 'kind/tool', 'tokens', 'cache', 'text']) cell(head, c, 'th');
    t.appendChild(head);
    for (const s of r.rows) {
      const whole = s.length === 5;  // items sent as they are: one line each, from the item table
      const span = whole ? Array.from({length: s[1] - s[0] + 1}, (_, i) => s[0] + i) : [s[0]];
      for (const p of span) {
        const tr = document.createElement('tr'); tr.className = 'f-' + s[2];
        const it = D.items[String(p)];
        cell(tr, p < 0 ? '-' : (whole || s[0] === s[1] ? p : s[0] + '-' + s[1]));
        cell(tr, s[2]);
        cell(tr, whole ? it[0] + (it[1] ? '/' + it[1] : '') : s[5]);
        cell(tr, s[2] === 'dropped' ? '-' : (whole ? it[3] : s[3]).toLocaleString(), 'num');
        cell(tr, s[4], 'c-' + s[4]);
        cell(tr, whole ? it[2] : s[6]);
        t.appendChild(tr);
      }
    }
    box.appendChild(t);
  }
}
// a click on the chart: its x in the SVG's own units, mapped through the x axis the page was given
const chart = document.getElementById('chart');
const svg = chart.querySelector('svg');
const n = D.policies[0].requests.length;
svg.addEventListener('click', e => {
  const pt = svg.createSVGPoint(); pt.x = e.clientX; pt.y = e.clientY;
  const x = pt.matrixTransform(svg.getScreenCTM().inverse()).x;
  const a = chart.dataset;
  const k = Number(a.k0) + (x - Number(a.x0)) / (Number(a.x1) - Number(a.x0)) * (Number(a.k1) - Number(a.k0));
  show(Math.min(n - 1, Math.max(0, Math.round(k))));
});
document.querySelectorAll('#requests tr[data-k]').forEach(
  el => el.addEventListener('click', () => show(Number(el.dataset.k))));
show(n - 1);
