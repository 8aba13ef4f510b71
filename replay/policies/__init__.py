"""Registered policies by name, harness presets by name (replay.policies.presets); user policies load by import path
'pkg.module:Class'."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from replay.errors import ReplayError
from replay.policies.base import Budget, CompiledPolicy, Policy, PolicyBase
from replay.policies.config import PolicyConfig, parse_sets
from replay.policies.presets import PRESETS, Preset

POLICY_MODULES = [
    "baselines",
    "oracle",
    "seed_a",
    "masking",
    "clear_tool_uses",
    "auto_compact",
    "seed_c",
    "seed_b",
    "openhands",
    "cline",
    "recorded",
]


@cache
def registry() -> dict[str, type[PolicyBase]]:
    """name -> Policy class, from every module in POLICY_MODULES (a missing module is an error)."""
    out: dict[str, type[PolicyBase]] = {}
    for mod in POLICY_MODULES:
        module = importlib.import_module(f"replay.policies.{mod}")
        for cls in getattr(module, "POLICIES", ()):
            out[cls.name] = cls
    return out


def policy_class(name: str) -> type[PolicyBase]:
    """A registered name, a preset name (its policy's class), or 'pkg.module:Class' for a user policy."""
    if name in PRESETS:
        return registry()[PRESETS[name].policy]
    if ":" in name:
        mod, _, attr = name.partition(":")
        try:
            cls = getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as exc:
            raise ReplayError(f"--policy {name}: cannot import ({exc}); is the module on PYTHONPATH?") from exc
        except SyntaxError as exc:
            raise ReplayError(
                f"--policy {name}: module {mod} has a syntax error at {exc.filename}:{exc.lineno}: {exc.msg}"
            ) from None
        except SystemExit as exc:
            raise ReplayError(
                f"--policy {name}: importing module {mod} called sys.exit({exc.code!r}); a policy module must not exit"
            ) from None
        except Exception as exc:  # noqa: BLE001 - any failure of user code at import, named with its module
            raise ReplayError(f"--policy {name}: importing module {mod} raised {type(exc).__name__}: {exc}") from exc
        if not (isinstance(cls, type) and (issubclass(cls, Policy) or cls in registry().values())):
            raise ReplayError(
                f"--policy {name}: not a replay.policies.Policy subclass (a policy written in Python) "
                "nor a built-in policy"
            )
        return cls
    reg = registry()
    if name not in reg:
        raise ReplayError(
            f"--policy {name}: unknown; choose one of {', '.join(sorted(reg))}, a preset "
            f"({', '.join(PRESETS)}) or pkg.module:Class"
        )
    return reg[name]


def make_policy(name: str, params: dict[str, Any] | None = None) -> PolicyBase:
    """Build a policy with validated parameters; a preset's knobs come first, ``params`` override them."""
    cls = policy_class(name)
    base = PRESETS[name].params if name in PRESETS else {}
    return cls(cls.Config.from_params({**base, **(params or {})}))


__all__ = [
    "PRESETS",
    "Budget",
    "CompiledPolicy",
    "Policy",
    "PolicyBase",
    "PolicyConfig",
    "Preset",
    "make_policy",
    "parse_sets",
    "policy_class",
    "registry",
]
