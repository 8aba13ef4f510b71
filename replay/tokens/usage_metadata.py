"""What readers record in ``runs.metadata`` for the prompt model, read back as numpy: recorded context events, item
sizes the log gives in the model's units, and the rounding of a recorded prompt."""

from __future__ import annotations

import json

import numpy as np

from replay.tokens.images import image_tokens


def metadata_dict(value: object) -> dict:
    """``runs.metadata`` as a dict (a JSON string parsed); empty when it is not one."""
    if isinstance(value, dict):
        return value
    try:
        out = json.loads(value) if isinstance(value, str) else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def context_drops(metadata: dict) -> list[tuple[int, np.ndarray]]:
    """(from step, dropped item seqs) of each recorded context event in ``runs.metadata.context_events``. Items an
    event rewrote into a short note (``cleared``: Claude Code's microcompact) count as dropped here: the note (some
    50 tokens each) is left to the fit."""
    out = []
    for ev in events_and_rewrites(metadata):
        if isinstance(ev, dict) and isinstance(ev.get("step"), int):
            seqs = [q for lo, hi in ev.get("drop") or [] for q in range(int(lo), int(hi))]
            seqs += [c[0] for c in ev.get("cleared") or [] if isinstance(c, list) and c and isinstance(c[0], int)]
            out.append((ev["step"], np.array(seqs, dtype=np.int64)))
    return out


def rollback_drops(metadata: dict) -> list[tuple[int, np.ndarray]]:
    """(from step, item seqs) of each rollback the log records (``runs.metadata.rollbacks``: Codex's thread
    rollback): the user undid those turns, so the harness no longer sends their items, whatever its context policy."""
    out = []
    for rb in metadata.get("rollbacks") or []:
        if isinstance(rb, dict) and isinstance(rb.get("step"), int):
            seqs = [q for lo, hi in rb.get("drop") or [] for q in range(int(lo), int(hi))]
            out.append((rb["step"], np.array(seqs, dtype=np.int64)))
    return out


def events_and_rewrites(metadata: dict) -> list:
    """The recorded context events and the rewrites a reader derived from the log (``context_rewrites``: a
    harness's pass that changes items without a trace of its own, such as Cline's duplicate-file-read pass); a
    rewrite is no event of its own for fidelity, but the prompt model and the recorded replay apply it."""
    events = metadata.get("context_events") or []
    rewrites = metadata.get("context_rewrites") or []
    return [*(events if isinstance(events, list) else []), *(rewrites if isinstance(rewrites, list) else [])]


def turn_attachments(metadata: dict) -> bool:
    """Whether the harness kept its attachments for their own user turn only (``runs.metadata.turn_attachments``:
    Claude Code's SDK loop up to 2.0.29, which the VS Code extension drives)."""
    return isinstance(metadata.get("turn_attachments"), dict)


def usage_only_steps(metadata: dict) -> set[int]:
    """Steps of the requests whose usage counts input their prompt did not carry (``unlogged`` notes with
    ``usage_only``: the results of a hosted web search Codex's server ran inside the response)."""
    return {
        n["step"]
        for n in metadata.get("unlogged") or []
        if isinstance(n, dict) and n.get("usage_only") is True and isinstance(n.get("step"), int)
    }


class ExactSizes(dict[int, int]):
    """Item seq -> tokens (``exact_sizes``), and which sized reasoning items the server keeps after their own turn
    (``kept``): Claude Code's thinking, which Claude Code sends back every turn (replay.readers.claude_code_thinking).
    Other sized reasoning counts within its own turn only."""

    kept: frozenset[int] = frozenset()


def exact_sizes(metadata: dict, reasoning_dropped: bool = False, model: str | None = None) -> ExactSizes:
    """Item seq -> tokens for items the log holds only as a size: reasoning in the model's units
    (runs.metadata.reasoning_tokens; Claude Code's thinking logged without its text, ``thinking_tokens``), a remote
    compaction's encrypted summary as the harness estimates it
    (``encrypted_summary_tokens``: codex-rs sizes it like encrypted reasoning; no other size is logged), and an image
    whose pixel size the log gives (``image_sizes``) at what ``model``'s provider counts for it (replay.tokens.images;
    none where that rule is not modelled).

    ``reasoning_dropped``: the prompt model leaves earlier reasoning out (calibration found the usage says so). Such
    an item then stays when the harness resends it (Codex's encrypted reasoning), but not when it stands for what
    the harness never resends and the server may or may not count in its place (``reasoning_by_signature``: Gemini
    CLI's thoughts, whose signatures the history keeps): none of the reasoning then."""
    keys = ["reasoning_tokens", "encrypted_summary_tokens", "thinking_tokens"]
    if reasoning_dropped and metadata.get("reasoning_by_signature") is True:
        keys.remove("reasoning_tokens")
    out = ExactSizes()
    for key in keys:
        for pair in metadata.get(key) or []:
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, int) for v in pair):
                out[pair[0]] = pair[1]
                if key == "thinking_tokens":
                    out.kept |= {pair[0]}
    for entry in metadata.get("image_sizes") or []:
        if isinstance(entry, list) and len(entry) == 3 and all(isinstance(v, int) for v in entry):
            if (tokens := image_tokens(model, entry[1], entry[2])) is not None:
                out[entry[0]] = tokens
    return out


def resolutions(metadata: dict, steps: np.ndarray) -> np.ndarray:
    """Per request step, how far the recorded prompt may be from the true count (``usage_resolution``)."""
    half = {
        int(p[0]): int(p[1])
        for p in metadata.get("usage_resolution") or []
        if isinstance(p, list) and len(p) == 2 and all(isinstance(v, int) for v in p)
    }
    return np.array([half.get(int(s), 0) for s in steps], dtype=np.float64)
