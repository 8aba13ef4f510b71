"""One self-contained HTML page per run: prompt size over requests for each policy (inline SVG) with summaries,
rewrites and overflows marked, and each request's view on click (embedded JSON, a small script, no network)."""

from __future__ import annotations

import html
from pathlib import Path

from replay.reports.show import ShownView
from replay.untrusted import script_json

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
W, H, LEFT, RIGHT, TOP, BOTTOM = 900, 320, 70, 20, 20, 40


def page_data(series: list[list[ShownView]]) -> dict:
    """The page's JSON: each item's kind, tool, text and tokens once; per policy and request the segments
    (first and last position, form, tokens, cache status; a run of neighbouring items sent whole with one cache
    status is one row; kind and text only where the form replaces the item's own)."""
    first = series[0][-1]
    items: dict[int, list] = {}
    policies = []
    for views in series:
        reqs = []
        for v in views:
            rows: list[list] = []
            for r in v.rows:
                if r.form in ("original", "prefix") and r.first >= 0:
                    items.setdefault(r.first, [r.kind, r.tool, r.text[:100], r.tokens])
                    last = rows[-1] if rows else None
                    if (
                        r.form == "original"
                        and last is not None
                        and last[2] == "original"
                        and last[4] == r.cache
                        and last[1] == r.first - 1
                    ):
                        last[1], last[3] = r.first, last[3] + r.tokens
                    else:
                        rows.append([r.first, r.last, r.form, r.tokens, r.cache])
                else:
                    rows.append([r.first, r.last, r.form, r.tokens, r.cache, r.kind, r.text[:100]])
            reqs.append(
                {
                    "k": v.k,
                    "step": v.step,
                    "prompt": v.prompt_tokens,
                    "cached": v.cached,
                    "written": v.written,
                    "uncached": v.uncached,
                    "overflow": v.overflow,
                    "summarised": v.summarised,
                    "rewritten": v.rewritten,
                    "emergency": v.emergency,
                    "rows": rows,
                }
            )
        policies.append({"name": views[0].policy, "requests": reqs})
    return {
        "run_id": first.run_id,
        "window": first.window,
        "reserve": first.reserve,
        "token_source": first.token_source,
        "prompt_source": first.prompt_source,
        "cache_model": first.cache_model,
        "items": {str(p): v for p, v in items.items()},
        "policies": policies,
    }


def chart_svg(series: list[list[ShownView]]) -> str:
    """Prompt tokens per request, one line per policy; window and window - reserve as dashed lines; triangles
    mark summaries, ticks rewrites, red crosses overflows; a transparent column per request is clickable."""
    first = series[0][0]
    m = len(series[0])
    top = max([first.window] + [v.prompt_tokens for views in series for v in views]) * 1.05
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(k: float) -> float:
        return LEFT + pw * (k + 0.5) / max(m, 1)

    def y(t: float) -> float:
        return TOP + ph * (1 - t / top)

    out = [
        f"<svg id='chart' xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}' viewBox='0 0 {W} {H}' "
        "font-family='sans-serif' font-size='11'>",
        f"<rect x='{LEFT}' y='{TOP}' width='{pw}' height='{ph}' fill='#fafafa' stroke='#ccc'/>",
    ]
    for i in range(6):
        t = top * i / 5
        out.append(f"<text x='{LEFT - 6}' y='{y(t) + 4:.1f}' text-anchor='end'>{t / 1000:,.0f}k</text>")
    for label, t in (("window", first.window), ("window - reserve", first.window - first.reserve)):
        if first.reserve or label == "window":
            out.append(
                f"<line x1='{LEFT}' x2='{LEFT + pw}' y1='{y(t):.1f}' y2='{y(t):.1f}' stroke='#888' "
                f"stroke-dasharray='4 3'/><text x='{LEFT + 4}' y='{y(t) - 4:.1f}' text-anchor='start' "
                f"fill='#666'>{label} {t:,}</text>"
            )
    out.append(f"<text x='{LEFT + pw / 2}' y='{H - 6}' text-anchor='middle'>request</text>")
    out.append(
        f"<text x='14' y='{TOP + ph / 2}' transform='rotate(-90 14 {TOP + ph / 2})' text-anchor='middle'>"
        f"prompt tokens ({html.escape(first.token_source)})</text>"
    )
    for i, views in enumerate(series):
        c = COLORS[i % len(COLORS)]
        pts = " ".join(f"{x(v.k):.1f},{y(v.prompt_tokens):.1f}" for v in views)
        out.append(
            f"<polyline class='series' data-policy='{html.escape(views[0].policy)}' fill='none' "
            f"stroke='{c}' stroke-width='1.5' points='{pts}'/>"
        )
        for v in views:
            px, py = x(v.k), y(v.prompt_tokens)
            if v.summarised:
                out.append(
                    f"<path class='mark summary' d='M{px:.1f},{py - 7:.1f} l5,8 h-10 z' fill='{c}'>"
                    f"<title>{html.escape(v.policy)}: summary at request {v.k}</title></path>"
                )
            elif v.rewritten:
                out.append(
                    f"<line class='mark rewrite' x1='{px:.1f}' x2='{px:.1f}' y1='{py - 5:.1f}' "
                    f"y2='{py + 5:.1f}' stroke='{c}' stroke-width='2'><title>{html.escape(v.policy)}: "
                    f"rewrite (trim, placeholders) at request {v.k}</title></line>"
                )
            if v.overflow:
                out.append(
                    f"<path class='mark overflow' d='M{px - 4:.1f},{py - 4:.1f} l8,8 m0,-8 l-8,8' "
                    f"stroke='#d00' stroke-width='2'><title>{html.escape(v.policy)}: overflow at request "
                    f"{v.k}</title></path>"
                )
    step = pw / max(m, 1)
    for k in range(m):
        out.append(
            f"<rect class='hit' data-k='{k}' x='{LEFT + step * k:.1f}' y='{TOP}' width='{step:.1f}' "
            f"height='{ph}' fill='transparent'/>"
        )
    out.append("</svg>")
    return "".join(out)


SCRIPT = """
const D = JSON.parse(document.getElementById('data').textContent);
function cell(tr, text, cls) { const td = document.createElement('td'); td.textContent = text;
  if (cls) td.className = cls; tr.appendChild(td); }
function show(k) {
  const box = document.getElementById('view'); box.replaceChildren();
  document.querySelectorAll('#requests tr.sel').forEach(r => r.classList.remove('sel'));
  const sel = document.querySelector('#requests tr[data-k="' + k + '"]'); if (sel) sel.classList.add('sel');
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
document.querySelectorAll('#chart rect.hit, #requests tr[data-k]').forEach(
  el => el.addEventListener('click', () => show(Number(el.dataset.k))));
show(D.policies[0].requests.length - 1);
"""

STYLE = """body{font-family:sans-serif;max-width:75em;margin:1em auto;font-size:14px}
table{border-collapse:collapse}td,th{padding:1px 6px;text-align:left;white-space:nowrap}
td.num{text-align:right}#requests{max-height:16em;overflow:auto;display:block}
#requests tr{cursor:pointer}#requests tr.sel{background:#ffe9a8}tr.f-dropped{color:#999}
tr.f-summary{background:#e8f4e8}tr.f-placeholder,tr.f-shrunk,tr.f-omitted,tr.f-spilled{background:#fff4e0}
td.c-cached{color:#2a7}td.c-written{color:#c80}td.c-uncached{color:#c33}.segments td:last-child{
white-space:normal;max-width:40em;font-family:monospace;font-size:12px}.legend span{margin-right:1.5em}"""


def request_table(series: list[list[ShownView]]) -> str:
    """One clickable row per request: each policy's prompt and what it did."""
    names = [views[0].policy for views in series]
    head = "<tr><th>k</th>" + "".join(f"<th>{html.escape(n)}</th><th></th>" for n in names) + "</tr>"
    rows = []
    for k in range(len(series[0])):
        cells = []
        for views in series:
            v = views[k]
            flags = " ".join(
                f
                for f, on in (
                    ("summary", v.summarised),
                    ("rewrite", v.rewritten and not v.summarised),
                    ("OVERFLOW", v.overflow),
                )
                if on
            )
            cells.append(f"<td class='num'>{v.prompt_tokens:,}</td><td>{flags}</td>")
        rows.append(f"<tr data-k='{k}'><td>{k}</td>{''.join(cells)}</tr>")
    return f"<table id='requests'>{head}{''.join(rows)}</table>"


def render_page(series: list[list[ShownView]]) -> str:
    """The whole page as a string (no external resources)."""
    if not series or not series[0]:
        raise ValueError("render_page needs at least one policy's views of at least one request")
    d = page_data(series)
    legend = "".join(
        f"<span style='color:{COLORS[i % len(COLORS)]}'>&#9644; {html.escape(views[0].policy)}</span>"
        for i, views in enumerate(series)
    )
    totals = ", ".join(
        f"{html.escape(v[0].policy)}: {sum(x.overflow for x in v)} overflows, "
        f"{sum(x.summarised for x in v)} summaries, {sum(x.rewritten and not x.summarised for x in v)}"
        " rewrites"
        for v in series
    )
    data = script_json(d)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>replay show {html.escape(d['run_id'])}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(d['run_id'])}</h1><p>window {d['window']:,}, reserve {d['reserve']:,}; token source "
        f"{html.escape(d['token_source'])}; harness prefix {html.escape(d['prompt_source'])}; cache model "
        f"{html.escape(d['cache_model'])}. {totals}.</p>"
        f"<p class='legend'>{legend}<span>&#9650; summary</span><span>| rewrite</span>"
        "<span style='color:#d00'>&#10005; overflow</span> Click a request to see its view.</p>"
        f"{chart_svg(series)}<h2>Requests</h2>{request_table(series)}<h2>View</h2><div id='view'></div>"
        f"<script type='application/json' id='data'>{data}</script><script>{SCRIPT}</script></body></html>"
    )


def write_page(path: Path, series: list[list[ShownView]]) -> Path:
    """Write the run's page to ``path`` (folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_page(series), encoding="utf-8")
    return path
