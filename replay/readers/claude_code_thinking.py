"""Thinking Claude Code logs without its text: its size from the response's output count.

Claude Code 2.1.x (2.1.114 to 2.1.150 in the logs read) writes each thinking block with an empty ``thinking`` and its
``signature`` (the encrypted thinking) only. Claude Code sends the blocks back, and the server counts the thinking
in every later prompt, later turns included (``usage_metadata.ExactSizes.kept``): Eduardodmb/ClaudeWork 64dd3afc
(claude-sonnet-4-6, 2.1.123) grew by 14,963 tokens at request 4, 13,631 of them the output of a response whose
thinking the log leaves empty, and its prompt never fell at a later turn. Dropping earlier turns' thinking at a new
turn, as the Responses API drops reasoning, lowered the simulated cache share of 14 of that source's Sonnet 4.5
sessions by 4-12 points (their recorded shares did not fall) and raised their prompt errors; kept, none moved so.

A response's output tokens are its thinking, text and tool calls. The thinking is the output less its visible
blocks' characters / 4 (the log has no split), at most a third of its signatures' characters, and shared among the
response's empty thinking blocks by their signatures' lengths. A signature grows with the thinking it encrypts:
3.2 to 4.5 characters per token on the responses whose output is mostly thinking (145,084 characters for 31,999
tokens, 55,228 for about 12,600; corpus ccl-worktrees-ef958aa1-main 8,392 for about 2,150), about 350 for a few
tokens. The cap keeps a response of long tool calls, whose visible part characters / 4 undercounts, from taking a
thinking it never had (ccl-worktrees line 43: 3,639 output tokens, 8,724 characters of calls, a 376-character
signature). A response with no visible block (cut at ``max_tokens`` in its thinking: Claude Code asks again and the
next request holds no part of it) gets no size. Sizes go to ``runs.metadata.thinking_tokens`` ([[seq, tokens]]).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.model import Request
from replay.readers.builder import RunBuilder

SIGNATURE_CHARS = 3  # fewest signature characters per token of thinking (see the module docstring)


@dataclass
class _Response:
    blocks: list[tuple[int, int]] = field(default_factory=list)  # (seq, signature characters)
    visible_chars: int = 0
    stop_reason: str | None = None


class HiddenThinking:
    """The empty thinking blocks of each response, sized once its usage settled (``sized``)."""

    def __init__(self) -> None:
        self.responses: dict[str, _Response] = {}

    def thinking(self, key: str | None, seq: int, block: dict) -> None:
        """A thinking block of response ``key``: noted when its text is empty and it carries a signature."""
        signature = block.get("signature")
        if key and not block.get("thinking") and isinstance(signature, str) and signature:
            self.responses.setdefault(key, _Response()).blocks.append((seq, len(signature)))

    def visible(self, key: str | None, chars: int) -> None:
        """A text or tool-call block of response ``key``: its characters (a call's: its name and arguments)."""
        if key:
            self.responses.setdefault(key, _Response()).visible_chars += chars

    def stopped(self, key: str | None, reason: object) -> None:
        if key and isinstance(reason, str):
            self.responses.setdefault(key, _Response()).stop_reason = reason

    def sized(self, requests: dict[str | None, tuple[RunBuilder, int]]) -> None:
        """Write each response's thinking sizes into the metadata of the run that holds its request (``requests``:
        response key -> that run's builder and the index of the request record)."""
        for key, response in self.responses.items():
            cut = response.stop_reason == "max_tokens"
            if not response.blocks or not response.visible_chars or cut or key not in requests:
                continue
            b, index = requests[key]
            record = b.records[index]
            output = record.output_tokens if isinstance(record, Request) else None
            if not isinstance(output, int) or output <= 0:
                continue
            weight = sum(chars for _, chars in response.blocks)
            thinking = max(min(output - -(-response.visible_chars // 4), weight // SIGNATURE_CHARS), 0)
            sizes = b.run.metadata.setdefault("thinking_tokens", [])
            for seq, chars in response.blocks:
                sizes.append([seq, round(thinking * chars / weight)])
