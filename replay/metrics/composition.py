"""Window composition by tool: tokens of call arguments and of results per tool, under the policy's view.

``window_composition`` (SPEC 4) by kind is the per-request ``tok_<kind>`` columns; this splits the tool part
by tool name. A result takes its call's tool name when it has none of its own; calls and results with no
name at all count under ``(unknown)``. Tokens are summed over a run's requests (what the policy sent, in the
form it sent it: a placeholder counts its own tokens), and ``share`` is of the run's prompt tokens over the
same requests, so the shares of a run sum to its tool part of the prompt.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from replay.policies.view import View
from replay.run_arrays import TOOL_CALL, TOOL_RESULT, RunArrays

PARTS = ("args", "result")
UNKNOWN = "(unknown)"
SCHEMA = {"run_id": pl.Utf8, "tool": pl.Utf8, "part": pl.Utf8, "tokens": pl.Int64, "share": pl.Float64}


def tool_codes(run: RunArrays) -> tuple[np.ndarray, tuple[str, ...]]:
    """Per item: ``tool * 2 + part`` (part 0 arguments, 1 result) for tool calls and results, else -1."""
    is_call, is_result = run.kind == TOOL_CALL, run.kind == TOOL_RESULT
    tool = run.tool.astype(np.int64)
    inherit = is_result & (tool < 0) & (run.pair >= 0)
    tool[inherit] = run.tool[run.pair[inherit]]
    names = list(run.tool_names)
    unknown = (is_call | is_result) & (tool < 0)
    if unknown.any():
        tool[unknown] = len(names)
        names.append(UNKNOWN)
    return np.where(is_call | is_result, tool * 2 + is_result, -1), tuple(names)


class ToolComposition:
    """Accumulates, request by request, the tokens each (tool, part) takes in the view: one bincount each."""

    def __init__(self, run: RunArrays) -> None:
        codes, self.names = tool_codes(run)
        self.run_id = run.run_id
        self.items = np.flatnonzero(codes >= 0)
        self.codes = codes[self.items]
        self.tokens = np.zeros(2 * len(self.names), dtype=np.float64)
        self.present = np.bincount(self.codes, minlength=len(self.tokens)) > 0
        self.prompt_tokens = 0

    def add(self, view: View, end: int, prompt_tokens: int) -> None:
        n = int(np.searchsorted(self.items, end))
        if n:
            self.tokens += np.bincount(
                self.codes[:n], weights=view.seg_tokens[self.items[:n]], minlength=len(self.tokens)
            )
        self.prompt_tokens += prompt_tokens

    def frame(self) -> pl.DataFrame:
        """Long format: run_id, tool, part, tokens, share (of the run's prompt tokens)."""
        codes = np.flatnonzero(self.present)
        tokens = np.rint(self.tokens[codes]).astype(np.int64)
        share = tokens / self.prompt_tokens if self.prompt_tokens else np.zeros(len(codes))
        return pl.DataFrame(
            {
                "run_id": [self.run_id] * len(codes),
                "tool": [self.names[c // 2] for c in codes],
                "part": [PARTS[c % 2] for c in codes],
                "tokens": tokens,
                "share": share,
            },
            schema=SCHEMA,
        )


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)
