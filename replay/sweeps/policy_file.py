"""Policy files (TOML): a named policy, its parameters, the budget and cache model. `tune` writes them.

[policy]
name = "seed_a"          # registered name or pkg.module:Class
cache = "auto"
runs = "%"               # optional LIKE pattern of runs to evaluate on
tokenizer = "o200k"      # optional: built-in name, tokenizer path (relative to this file) or stored id

[params]                 # window, reserve, cache_<k> and the policy's own knobs
window = 130000
reserve = 24576
protect_fraction = 0.3333 # a fraction of the window (protect = TOKENS instead: a fixed range)

[tolerances]             # optional, for `replay check` (metric = allowed worsening)
repeat_evicted = 0.05
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay.config_text import read_config_text
from replay.errors import ReplayError
from replay.policies import canonical
from replay.untrusted import toml_comment, toml_string


@dataclass(frozen=True)
class PolicyFile:
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    cache: str = "auto"
    runs: str | None = None
    tokenizer: str | None = None
    tolerances: dict[str, float] = field(default_factory=dict)
    path: str = ""


def load_policy_file(path: Path) -> PolicyFile:
    """Parse and validate a policy file (the policy's config checks the parameters)."""
    try:
        doc = tomllib.loads(read_config_text(path, "policy file"))
    except tomllib.TOMLDecodeError as exc:
        raise ReplayError(f"{path}: not valid TOML: {exc}") from None
    pol = doc.get("policy")
    if not isinstance(pol, dict) or "name" not in pol:
        raise ReplayError(f'{path}: needs a [policy] table with name = "seed_a" (or pkg.module:Class)')
    extra = set(doc) - {"policy", "params", "tolerances"}
    if extra:
        raise ReplayError(f"{path}: unknown tables {sorted(extra)}; use [policy], [params], [tolerances]")
    pf = PolicyFile(
        name=canonical(str(pol["name"])),  # a descriptive alias is kept under its seed name
        params=dict(doc.get("params", {})),
        cache=str(pol.get("cache", "auto")),
        runs=pol.get("runs") or None,
        tokenizer=pol.get("tokenizer") or None,
        tolerances={k: tolerance(k, v, f"{path}: [tolerances]") for k, v in doc.get("tolerances", {}).items()},
        path=str(path),
    )
    from dataclasses import replace

    from replay.tokens.resolve import beside

    pf = replace(pf, tokenizer=beside(pf.tokenizer, Path(path).parent))
    from replay.sweeps.adapter import effective_config

    try:
        effective_config(pf.name, pf.params, pf.cache)
    except ReplayError as exc:
        raise ReplayError(f"{path}: {exc}") from None
    return pf


def tolerance(metric: str, value: Any, where: str) -> float:
    """A tolerance as a finite number >= 0 (NaN would pass every comparison as 'not regressed')."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ReplayError(f"{where} {metric}={value!r}: expected a number") from None
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        raise ReplayError(f"{where} {metric}={value!r}: expected a finite number >= 0 (the allowed worsening)")
    return number


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return toml_string(str(v))


def dump_policy_file(pf: PolicyFile, comment: str = "") -> str:
    lines = [toml_comment(line) for line in comment.splitlines()] + [
        "[policy]",
        f"name = {_toml_value(pf.name)}",
        f"cache = {_toml_value(pf.cache)}",
    ]
    if pf.runs:
        lines.append(f"runs = {_toml_value(pf.runs)}")
    if pf.tokenizer:
        lines.append(f"tokenizer = {_toml_value(pf.tokenizer)}")
    lines += ["", "[params]"] + [f"{k} = {_toml_value(v)}" for k, v in sorted(pf.params.items())]
    if pf.tolerances:
        lines += ["", "[tolerances]"] + [f"{k} = {_toml_value(v)}" for k, v in sorted(pf.tolerances.items())]
    return "\n".join(lines) + "\n"


def simulate_settings(pf: PolicyFile) -> tuple[str, dict[str, Any], dict[str, int], dict[str, Any]]:
    """(policy name, its knobs, budget {window, reserve} present in the file, cache_<k> parameters): what
    `replay simulate --policy-file` takes from a policy file."""
    from replay.sweeps.adapter import policy_fields, split_params

    budget, cache, knobs = split_params(pf.params, policy_fields(pf.name))
    return pf.name, knobs, budget, cache


def sweep_document(pf: PolicyFile) -> dict[str, Any]:
    """A policy file as a one-point sweep document (`replay sweep recommended.toml`): its knobs fixed, no grid."""
    return {
        "sweep": {
            "policy": pf.name,
            "name": Path(pf.path).stem if pf.path else pf.name,
            "mode": "grid",
            "runs": pf.runs or "",
            "tokenizer": pf.tokenizer or "",
            "cache": pf.cache,
        },
        "fixed": dict(pf.params),
        "grid": {},
    }
