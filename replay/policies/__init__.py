"""Registered policies by name, harness presets by name (replay.policies.presets); user policies load by import path
'pkg.module:Class'."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any, cast

from replay.errors import ReplayError
from replay.policies.base import AnyPolicy, Budget, CompiledPolicy, Policy, PolicyBase
from replay.policies.config import PolicyConfig, parse_sets
from replay.policies.presets import PRESETS, Preset

# The one place a built-in policy is registered: its module (holding POLICIES, its classes). The order gives the codes
# the compiled driver dispatches on; after a change run `python -m replay.policies.generate`.
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
    "cline_sdk",
    "trim_messages",
]


# Descriptive names for the seed policies: accepted wherever a policy name is (simulate, sweep and policy files,
# tune, check, show, warm); stored results, sweep ids and policy files keep the one canonical (registered) name,
# so results written before the names existed still match.
ALIASES = {
    "tiered_summary": "seed_a",
    "tiered_summary_before": "seed_a_before",
    "sectioned_budget": "seed_b",
    "spill_and_mark": "seed_c",
}


def canonical(name: str) -> str:
    """The registered name a policy name stands for (a descriptive alias becomes its seed name; others as given)."""
    return ALIASES.get(name, name)


def aliases_of(name: str) -> list[str]:
    """The descriptive names of registered policy ``name``."""
    return [a for a, n in ALIASES.items() if n == name]


@cache
def registry() -> dict[str, type[PolicyBase]]:
    """name -> Policy class, from every module in POLICY_MODULES (a missing module is an error), in order; each
    compiled class gets its code, its place in that order."""
    out: dict[str, type[PolicyBase]] = {}
    for mod in POLICY_MODULES:
        module = importlib.import_module(mod if "." in mod else f"replay.policies.{mod}")
        classes = getattr(module, "POLICIES", None)
        if not classes:
            raise ReplayError(f"policy module {module.__name__} ({module.__file__}) has no POLICIES list; add one")
        for cls in classes:
            if cls.name in out:
                raise ReplayError(f"policy name {cls.name!r} is registered twice ({out[cls.name]} and {cls})")
            out[cls.name] = cls
    for code, cls in enumerate(out.values()):
        if issubclass(cls, CompiledPolicy):
            cls.code = code
    return out


def tunable() -> list[str]:
    """Names of the registered policies with a tuning space."""
    return [name for name, cls in registry().items() if cls.space]


def policy_class(name: str) -> type[PolicyBase]:
    """A registered name or its alias (ALIASES), a preset name (its policy's class), or 'pkg.module:Class' for a
    user policy."""
    name = canonical(name)
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
            f"--policy {name}: unknown; choose one of {', '.join(sorted([*reg, *ALIASES]))}, a preset "
            f"({', '.join(PRESETS)}) or pkg.module:Class"
        )
    return reg[name]


def make_policy(name: str, params: dict[str, Any] | None = None) -> AnyPolicy:
    """Build a policy with validated parameters; a preset's knobs come first, ``params`` override them."""
    name = canonical(name)
    cls = policy_class(name)
    base = PRESETS[name].params if name in PRESETS else {}
    # policy_class admits Policy subclasses and registered (compiled) classes only
    return cast(AnyPolicy, cls(cls.Config.from_params({**base, **(params or {})})))


def make_compiled(name: str, params: dict[str, Any] | None = None) -> CompiledPolicy:
    """:func:`make_policy` for a caller that runs the compiled loop itself (a built-in or a preset)."""
    policy = make_policy(name, params)
    if not isinstance(policy, CompiledPolicy):
        raise ReplayError(f"--policy {name}: a policy written in Python; this step needs a compiled built-in")
    return policy


__all__ = [
    "ALIASES",
    "PRESETS",
    "AnyPolicy",
    "Budget",
    "CompiledPolicy",
    "Policy",
    "PolicyBase",
    "PolicyConfig",
    "Preset",
    "aliases_of",
    "canonical",
    "make_compiled",
    "make_policy",
    "parse_sets",
    "policy_class",
    "registry",
    "tunable",
]
