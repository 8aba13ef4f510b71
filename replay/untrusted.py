"""Log content is data: the one place where text from a log becomes each kind of output.

A log holds other people's sessions and tool outputs. Its text must never act on a terminal (escape sequences,
cursor moves, clipboard writes through OSC 52), reorder what is shown (bidirectional overrides), become markup in
markdown or HTML (raw HTML, links, images, headings), or break a machine-read file (XML, TOML, CSV formulas).
Each function takes any string and returns one that is only text in its output format.
"""

from __future__ import annotations

import html
import json
import os
import re

# C0 and C1 controls (ESC among them), DEL, line and paragraph separators, bidirectional embeddings and isolates, and
# lone surrogates (a file name's bytes that are not UTF-8, as Python keeps them; no terminal or file can encode them)
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# characters XML 1.0 cannot hold at all, even escaped
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
# markdown punctuation that can start or end markup anywhere in a line (inline, in table cells, in list items)
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!|~<>&]|:(?=//))")  # ...and '://', which GFM would autolink
_BLOCK_START = re.compile(r"^(\d*)([-.)])")  # a list marker or thematic break when the text starts a block
_CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): shown as that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def path_text(path: object) -> str:
    """A file path as text any output or the store can hold: bytes of the name that are not UTF-8 written as
    ``\\xNN`` (Python keeps them as lone surrogates, which cannot be encoded)."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def for_terminal(text: str) -> str:
    """Every control character and direction override shown as a visible escape (``\\x1b``)."""
    return _UNSAFE.sub(_visible, text)


def for_markdown(text: str) -> str:
    """Plain text in markdown, table cells included: on one line, every character that could open markup
    (HTML tags, links, images, emphasis, code, headings, pipes) escaped, controls made visible."""
    return _BLOCK_START.sub(r"\1\\\2", _MARKDOWN.sub(r"\\\1", for_terminal(text)))


def for_html(text: str) -> str:
    """Text for an HTML element or quoted attribute (comment and script openers included), controls visible."""
    return html.escape(for_terminal(text), quote=True)


def for_html_block(text: str) -> str:
    """Multi-line text for a ``<pre>`` element: line breaks and tabs kept, everything else as :func:`for_html`."""
    return "\n".join("\t".join(for_html(part) for part in line.split("\t")) for line in text.split("\n"))


def script_json(value: object) -> str:
    """JSON to embed in an HTML ``<script>`` element: ``<``, ``>`` and ``&`` as JSON escapes, so no ``</script>``
    or ``<!--`` from the data can end or re-open the element (the parsed value is unchanged)."""
    return (
        json.dumps(value, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )


def json_text(document: str) -> str:
    """A JSON document as text safe on a terminal: the characters JSON may hold raw in a string but a terminal acts
    on (C1 controls, DEL, direction overrides, line separators; JSON already escapes C0) written as ``\\uNNNN``
    escapes. Outside strings a valid document holds none of them, so the parsed value is unchanged."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def for_xml(text: str) -> str:
    """Text an XML 1.0 document can hold (the serializer escapes ``<``, ``&`` and quotes): the characters XML
    forbids shown as visible escapes, other controls too."""
    return for_terminal(_NOT_XML.sub(_visible, text))


def toml_string(text: str) -> str:
    """A TOML basic string (quoted) holding ``text`` exactly: backslash, quote and controls escaped."""
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + _UNSAFE.sub(_toml_escape, out) + '"'


def _toml_escape(match: re.Match[str]) -> str:
    """A TOML escape for one unsafe character; a lone surrogate (no Unicode scalar value, so no TOML escape) as the
    visible text ``\\xNN``/``\\uNNNN``."""
    code = ord(match.group())
    return "\\" + _visible(match) if 0xD800 <= code <= 0xDFFF else f"\\u{code:04x}"


def toml_comment(text: str) -> str:
    """One line of a TOML comment: controls (which a comment may not hold) made visible."""
    return "# " + for_terminal(text)


def for_chart(text: str) -> str:
    """Text for a matplotlib label: controls visible, ``$`` escaped so it never starts mathtext."""
    return for_terminal(text).replace("$", r"\$")


def for_csv(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: controls removed, a leading formula character neutralised."""
    text = _UNSAFE.sub("", text)
    return "'" + text if text.startswith(_CSV_FORMULA) else text
