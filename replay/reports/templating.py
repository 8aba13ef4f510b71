"""The jinja2 environment every HTML page is rendered with: autoescape on, undefined names an error, and filters
that turn untrusted log text and numbers into page text (``replay.untrusted`` does the escaping)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import jinja2
from markupsafe import Markup

from replay.untrusted import for_html, for_html_block

TEMPLATES = Path(__file__).resolve().parent / "templates"


def usd(x: float | None) -> str:
    """A cost as a page shows it: cents and fractions to 4 decimals, a small cost to 4 significant digits; "unknown"
    where there is none (no price for its model, or no usage to price)."""
    if x is None:
        return "unknown"
    return f"${x:,.4f}" if x >= 0.01 or x == 0 else f"${x:.4g}"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["untrusted"] = lambda value: Markup(for_html(str(value)))
    env.filters["untrusted_block"] = lambda value: Markup(for_html_block(str(value)))
    env.filters["tokens"] = lambda n: f"{n:,}"
    env.filters["usd"] = usd
    return env


def inline_script(name: str) -> tuple[Markup, str]:
    """A script from the templates folder and its CSP source (``sha256-...``), so a page's policy allows exactly it."""
    script = (TEMPLATES / name).read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return Markup(script), f"sha256-{digest}"
