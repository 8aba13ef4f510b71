"""Which compiled policy a parameter vector names: each built-in policy's ``setup`` and ``decide`` by its code
(``replay.policies.kernel.CODES``). The full-history baseline has neither: it sends everything."""

from __future__ import annotations

from replay.jit import compiled
from replay.policies import (
    auto_compact,
    baselines,
    clear_tool_uses,
    cline,
    masking,
    openhands,
    oracle,
    recorded,
    seed_a,
    seed_b,
    seed_c,
)
from replay.policies.kernel import CODES

SEED_A = CODES["seed_a"]
AUTO_COMPACT = CODES["auto_compact"]
OPENHANDS = (CODES["openhands"], CODES["openhands_tokens"], CODES["openhands_recent"])
SEED_B = CODES["seed_b"]
SEED_C = CODES["seed_c"]
DROP_OLDEST = CODES["drop_oldest"]
MASKING = (CODES["masking"], CODES["last_n"])
CLEAR_TOOL_USES = CODES["clear_tool_uses"]
ORACLE = CODES["oracle"]
RECORDED = CODES["recorded"]
CLINE = CODES["cline"]


@compiled(borrowed=True)
def setup(code, p, r, st):
    if code == SEED_A:
        seed_a.setup(p, r, st)
    elif code == AUTO_COMPACT:
        auto_compact.setup(p, r, st)
    elif code in OPENHANDS:
        openhands.setup(p, r, st)
    elif code == SEED_B:
        seed_b.setup(p, r, st)
    elif code == SEED_C:
        seed_c.setup(p, r, st)
    elif code in MASKING:
        masking.setup(p, r, st)
    elif code == CLEAR_TOOL_USES:
        clear_tool_uses.setup(p, r, st)
    elif code == ORACLE:
        oracle.setup(p, r, st)
    elif code == RECORDED:
        recorded.setup(p, r, st)
    elif code == CLINE:
        cline.setup(p, r, st)


@compiled(borrowed=True)
def decide(code, p, r, st):
    if code == SEED_A:
        seed_a.decide(p, r, st)
    elif code == AUTO_COMPACT:
        auto_compact.decide(p, r, st)
    elif code in OPENHANDS:
        openhands.decide(p, r, st)
    elif code == SEED_B:
        seed_b.decide(p, r, st)
    elif code == SEED_C:
        seed_c.decide(p, r, st)
    elif code == DROP_OLDEST:
        baselines.decide(p, r, st)
    elif code in MASKING:
        masking.decide(p, r, st)
    elif code == CLEAR_TOOL_USES:
        clear_tool_uses.decide(p, r, st)
    elif code == ORACLE:
        oracle.decide(p, r, st)
    elif code == RECORDED:
        recorded.decide(p, r, st)
    elif code == CLINE:
        cline.decide(p, r, st)
