"""Terminal rendering of shown views (``replay show``): a header, one row per segment, totals; or a diff."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from replay.reports.show import DiffRow, Row, ShownView
from replay.untrusted import for_terminal


def _pos(r: Row) -> str:
    if r.first < 0:
        return "-"
    return str(r.first) if r.first == r.last else f"{r.first}-{r.last}"


def header(v: ShownView) -> Text:
    flags = [
        f
        for f, on in (
            ("OVERFLOW", v.overflow),
            ("summarised", v.summarised),
            ("emergency", v.emergency),
            ("rewrote the previous view", v.rewritten),
        )
        if on
    ]
    return Text(
        f"{for_terminal(v.run_id)}  request {v.k} of {v.requests} (step {v.step}, {v.items} items)  "
        f"policy {v.policy}\n"
        f"window {v.window:,}  reserve {v.reserve:,}  tokens {v.token_source}  prefix {v.prompt_source}  "
        f"cache {v.cache_model}" + (f"\n{', '.join(flags)}" if flags else "")
    )


def totals(v: ShownView) -> Text:
    sent = [r for r in v.rows if r.form != "dropped"]
    gone = [r for r in v.rows if r.form == "dropped"]
    dropped = sum(r.last - r.first + 1 for r in gone)
    return Text(
        f"prompt {v.prompt_tokens:,} tokens in {len(sent)} segments: cached {v.cached:,}, written "
        f"{v.written:,}, uncached {v.uncached:,}; {dropped} items not sent "
        f"({sum(r.full_tokens for r in gone):,} tokens in full); prompt + reserve "
        f"{v.prompt_tokens + v.reserve:,} of {v.window:,}"
    )


def view_table(v: ShownView, width: int, wide: bool = False) -> Table:
    """Segments in prompt order: position, form, kind/tool, tokens, cache status, text preview (cut to fit
    ``width`` columns unless ``wide``)."""
    cells = [
        (
            _pos(r),
            r.form,
            for_terminal(r.kind + (f"/{r.tool}" if r.tool else "")),
            f"{r.tokens:,}" if r.form != "dropped" else "-",
            r.cache,
            for_terminal(r.text),
        )
        for r in v.rows
    ]
    kind_w = min(max((len(c[2]) for c in cells), default=9), 9 if wide else 22)
    fixed = [
        max([len(h)] + [len(c[i]) for c in cells]) for i, h in ((0, "pos"), (1, "form"), (3, "tokens"), (4, "cache"))
    ]
    text_w = max(width - sum(fixed) - kind_w - 5, 12)
    table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    table.add_column("pos", justify="right", no_wrap=True, min_width=fixed[0])
    table.add_column("form", no_wrap=True, min_width=fixed[1])
    table.add_column("kind/tool", no_wrap=True, width=max(kind_w, 9), overflow="ellipsis")
    table.add_column("tokens", justify="right", no_wrap=True, min_width=fixed[2])
    table.add_column("cache", no_wrap=True, min_width=fixed[3])
    table.add_column("text", no_wrap=not wide, overflow="ellipsis" if not wide else "fold", max_width=text_w)
    for c in cells:
        table.add_row(c[0], c[1], Text(c[2]), c[3], c[4], Text(c[5]))
    return table


def diff_table(a: ShownView, b: ShownView, rows: list[DiffRow]) -> Group:
    """Only what differs between two views, then the token delta."""
    table = Table(box=None, pad_edge=False, show_edge=False)
    for name, just in (
        ("pos", "right"),
        ("kind/tool", "left"),
        (a.policy, "left"),
        ("tokens", "right"),
        (b.policy, "left"),
        ("tokens ", "right"),
        ("delta", "right"),
    ):
        table.add_column(name, justify=just, no_wrap=True)  # type: ignore[arg-type]  # "left"/"right" literals
    for r in rows:
        pos = "-" if r.first < 0 else str(r.first) if r.first == r.last else f"{r.first}-{r.last}"
        table.add_row(
            pos,
            Text(for_terminal(r.kind + (f"/{r.tool}" if r.tool else ""))),
            r.form_a,
            f"{r.tokens_a:,}",
            r.form_b,
            f"{r.tokens_b:,}",
            f"{r.delta:+,}",
        )
    line = Text(
        f"{a.policy} {a.prompt_tokens:,} -> {b.policy} {b.prompt_tokens:,} tokens "
        f"({b.prompt_tokens - a.prompt_tokens:+,}); {len(rows)} rows differ; cached "
        f"{a.cached:,} -> {b.cached:,}, uncached {a.uncached:,} -> {b.uncached:,}"
    )
    return Group(
        Text(f"difference at request {a.k}: {a.policy} vs {b.policy}"),
        table if rows else Text("(the two views are the same)"),
        line,
    )


def render(console: Console, views: list[ShownView], wide: bool = False) -> None:
    """The first view in full; with a second, its header, totals and what differs."""
    for i, v in enumerate(views):
        console.print(header(v), highlight=False)
        if i == 0:
            console.print(view_table(v, console.width, wide))
        console.print(totals(v), highlight=False)
    if len(views) == 2:
        from replay.reports.show import diff_views

        console.print()
        console.print(diff_table(views[0], views[1], diff_views(views[0], views[1])))
