"""Synthetic corpora at scale that keep a real corpus's statistics (docs/scale.md).

`learn` reads an ingested store (donor shapes, token density per kind), `generate` writes N runs as Claude Code
and Codex rollout logs, `compare` sets the statistics of two stores side by side.
"""

from replay.synth.generate import Recipe, generate, learn

__all__ = ["Recipe", "generate", "learn"]
