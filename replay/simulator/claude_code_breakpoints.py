"""Where Claude Code puts its message cache breakpoints, by version.

Claude Code marks the system prompt and messages with ``cache_control``. From 1.0.15 (the oldest cli.js read) to
2.1.58, and again in 2.1.62 to 2.1.68, each of the **last two** messages gets one on its last block (a thinking block
excepted): a message whose index is past ``length - 3`` (cli.js 1.0.15, 1.0.17, 1.0.44, 1.0.89, 2.0.2, 2.0.42,
2.1.21, 2.1.41, 2.1.58, 2.1.62, 2.1.63, 2.1.68). In 2.1.59 and 2.1.61 (2.1.60 was not published) and from 2.1.69
(2.1.69 to 2.1.110 read) only the last message does (``index === length - 1``, or ``length - 2`` when the request
skips its cache write). The second-to-last message is the assistant's last response, so with two breakpoints a
request whose tool round added more blocks than Anthropic's cache looks back from the end
(``replay.simulator.caches.Anthropic.lookback``) still reads the previous prompt through the breakpoint that ends
the response: corpus cc-jason-webtech-48244adb (2.1.19) request 5 added 25 items, 5 of them the response, and read
all 40,571 tokens held.
"""

from __future__ import annotations

from replay.readers.base import version_tuple

ONE_FROM = (2, 1, 69)  # the first version that marks the last message only, for good
ONE_BETWEEN = ((2, 1, 59), (2, 1, 61))  # the versions before it that marked the last message only


def marks_last_two(metadata: dict) -> bool:
    """Whether the Claude Code version that wrote the run (``runs.metadata.cc_version``) marks the last two messages
    with a cache breakpoint; False for a log that names no version."""
    version = version_tuple(metadata.get("cc_version"))
    if version is None:
        return False
    return version < ONE_FROM and not ONE_BETWEEN[0] <= version <= ONE_BETWEEN[1]
