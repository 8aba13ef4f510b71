"""A Jinja sandbox with limits, for chat templates read from model files: loop range, call depth, characters
written (by any expression, and in any string or list made) and wall time. Each limit stops the rendering with
one TemplateLimitError naming the template and the environment variable that raises the limit."""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass, fields
from typing import Any, cast

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from replay.errors import ReplayError

MAX_NUMBER_BITS = 10_000  # an integer made by * or ** (about 3,000 digits); no option: templates do no big maths
_ENV = {
    "max_range": "REPLAY_TEMPLATE_MAX_RANGE",
    "max_depth": "REPLAY_TEMPLATE_MAX_DEPTH",
    "max_chars": "REPLAY_TEMPLATE_MAX_CHARS",
    "seconds": "REPLAY_TEMPLATE_SECONDS",
}
_WIDTHS = re.compile(r"\d+")


class BrokenTemplateError(ReplayError):
    """A chat template that cannot render any conversation (a syntax error or a limit), unlike one that rejects a
    particular conversation (``raise_exception``)."""


class TemplateLimitError(BrokenTemplateError):
    """A chat template went over a rendering limit."""


@dataclass(frozen=True)
class Limits:
    """Rendering limits; far above what a real chat template needs for a conversation."""

    max_range: int = 100_000  # items in one range()
    max_depth: int = 60  # nested calls (macros, recursive loops, methods)
    max_chars: int = 1_000_000  # characters in the output, in all expression output, and in any one value
    seconds: float = 5.0  # wall time of one rendering

    @classmethod
    def from_env(cls) -> Limits:
        """Defaults, each overridden by its REPLAY_TEMPLATE_* variable (a positive number)."""
        values: dict[str, Any] = {}  # int or float, as the field's type says
        for f in fields(cls):
            raw = os.environ.get(_ENV[f.name])
            if raw is None or not raw.strip():
                continue
            try:
                value = float(raw) if f.type == "float" else int(raw)
            except ValueError:
                value = -1
            if not (value > 0 and math.isfinite(value)):
                kind = "number" if f.type == "float" else "integer"
                raise ReplayError(f"{_ENV[f.name]}={raw!r}: want a positive {kind} (default {getattr(cls, f.name)})")
            values[f.name] = value
        return cls(**values)


class _Guarded:
    """An iterable that checks the deadline before each item (and keeps ``len`` for ``loop.length``)."""

    __slots__ = ("_inner", "_tick")

    def __init__(self, inner: Iterable, tick: Callable[[], None]) -> None:
        self._inner, self._tick = inner, tick

    def __iter__(self) -> Iterator:
        tick = self._tick
        for item in self._inner:
            tick()
            yield item

    def __len__(self) -> int:
        if not isinstance(self._inner, Sized):  # Jinja's loop.length then counts the items itself
            raise TypeError(f"{type(self._inner).__name__} has no len()")
        return len(self._inner)


class _GuardedLoops(CodeGenerator):
    """Compiles every ``{% for %}`` to iterate through ``environment.guard_loop`` (a deadline check per item)."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:  # noqa: N802 - jinja's visitor naming
        guard = nodes.EnvironmentAttribute("guard_loop", lineno=node.lineno)
        node.iter = nodes.Call(guard, [node.iter], [], None, None, lineno=node.lineno)
        super().visit_For(node, frame)


def _size(value: object) -> int:
    return len(value) if isinstance(value, (str, list, tuple)) else len(str(value))


def _replace_bound(s: object, old: object, new: object, count: object = -1) -> int:
    s, old, new = str(s), str(old), str(new)
    hits = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(s) + hits * max(0, len(new) - len(old))


def _format_bound(fmt: object, args: object, kwargs: dict | None = None) -> int:
    """Upper bound of a %-format or str.format result: the string, its arguments and every width written in it
    (and the integer arguments, when widths may come from them: ``%*d``, ``{:{}}``)."""
    fmt = str(fmt)
    values = [*(args if isinstance(args, (tuple, list)) else [args]), *(kwargs or {}).values()]
    bound = len(fmt) + sum(_size(v) for v in values) + sum(int(w) for w in _WIDTHS.findall(fmt))
    if "*" in fmt or ":{" in fmt:
        bound += sum(v for v in values if isinstance(v, int))
    return bound


def _join_bound(sep: object, items: list) -> int:
    return sum(_size(x) for x in items) + len(str(sep)) * max(0, len(items) - 1)


def _wrap_bound(s: object, width: object, wrapstring: object) -> int:
    s = str(s)
    breaks = len(s) // max(1, width if isinstance(width, int) else 1) + s.count(" ") + s.count("\n") + 1
    return len(s) + breaks * len(str(wrapstring or "\n"))


def _json_bound(value: object, indent: object) -> int:
    try:
        compact = len(json.dumps(value, default=str))
    except (TypeError, ValueError, RecursionError):
        return 0  # the filter itself will fail
    return compact * (2 + (indent if isinstance(indent, int) else len(str(indent or ""))))


# Upper bounds of the output size of the filters that can make a value much larger than their input.
_FILTER_BOUNDS: dict[str, Callable[[dict], int]] = {
    "center": lambda a: max(_size(a["value"]), a["width"] if isinstance(a["width"], int) else 0),
    "indent": lambda a: (
        _size(a["s"])
        + sum(1 for line in str(a["s"]).splitlines() if line or a["blank"])
        * (a["width"] if isinstance(a["width"], int) else len(str(a["width"])))
    ),
    "replace": lambda a: _replace_bound(a["s"], a["old"], a["new"], a["count"] if a["count"] is not None else -1),
    "join": lambda a: _join_bound(a["d"], a["value"]) if a["attribute"] is None else 0,
    "format": lambda a: _format_bound(a["value"], a["args"], a["kwargs"]),
    "wordwrap": lambda a: _wrap_bound(a["s"], a["width"], a["wrapstring"]),
    "tojson": lambda a: _json_bound(a["value"], a["indent"]),
    "batch": lambda a: _int(a["linecount"]) if a["fill_with"] is not None else 0,  # one padded batch
    "slice": lambda a: _int(a["slices"]),  # the lists made, one Python step each
}


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _method_bound(obj: object, args: tuple, kwargs: dict) -> int:
    """Upper bound of the size of what a str method that can grow its string returns (0 for anything else)."""
    method = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format
    s, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
    if not isinstance(s, str):
        return 0
    first = args[0] if args else None
    if name in ("center", "ljust", "rjust", "zfill"):
        return max(len(s), first if isinstance(first, int) else 0)
    if name == "expandtabs":
        size = first if args else kwargs.get("tabsize", 8)
        return len(s) + s.count("\t") * (size if isinstance(size, int) else 0)
    if name == "replace" and len(args) >= 2:
        return _replace_bound(s, *args[:3])
    if name == "join" and isinstance(first, list):
        return _join_bound(s, first)
    if name == "translate" and isinstance(first, dict):
        return len(s) * max([1, *(len(v) for v in first.values() if isinstance(v, str))])
    if name in ("format", "format_map"):
        return _format_bound(s, args, kwargs if name == "format" else (first if isinstance(first, dict) else {}))
    return 0


class LimitedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox chat templates render in; ``source`` names the template in every error."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _GuardedLoops

    def __init__(self, limits: Limits, source: str) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True, finalize=self._count_written)
        self.limits, self.source = limits, source
        self._deadline = math.inf
        self._depth = 0
        self._written = 0
        self.globals["range"] = self._range
        self.globals["lipsum"] = self._lipsum
        self.filters = {name: self._guard_filter(name, f) for name, f in self.filters.items()}

    # -- the limits -------------------------------------------------------------------------------------------
    def stop(self, what: str, limit: str | None = None) -> None:
        raise TemplateLimitError(self.limit_message(what, limit))

    def limit_message(self, what: str, limit: str | None = None) -> str:
        hint = f"; raise the limit with {_ENV[limit]}=N" if limit else ""
        return f"{self.source}: chat template stopped: {what}{hint}"

    def start(self) -> None:
        self._deadline = time.monotonic() + self.limits.seconds
        self._depth = self._written = 0

    def tick(self) -> None:
        if time.monotonic() > self._deadline:
            self.stop(f"rendering took over {self.limits.seconds:g} s", "seconds")

    def check_size(self, size: int, what: str) -> None:
        if size > self.limits.max_chars:
            self.stop(
                f"{what} would make {size:,} characters or items, over the limit of {self.limits.max_chars:,}",
                "max_chars",
            )

    def checked(self, value: object, what: str) -> object:
        if isinstance(value, (str, list, tuple)):
            self.check_size(len(value), what)
        return value

    def _count_written(self, value: object) -> object:
        text = value if isinstance(value, str) else str(value)
        self._written += len(text)
        if self._written > self.limits.max_chars:
            self.stop(f"the template wrote over {self.limits.max_chars:,} characters", "max_chars")
        return value

    # -- the hooks --------------------------------------------------------------------------------------------
    def guard_loop(self, iterable: Iterable) -> _Guarded:
        return _Guarded(iterable, self.tick)

    def _range(self, *args: int) -> range:
        rng = range(*args)
        if len(rng) > self.limits.max_range:
            self.stop(f"range of {len(rng):,} items is over the limit of {self.limits.max_range:,}", "max_range")
        return rng

    def _lipsum(self, n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002
        from jinja2.utils import generate_lorem_ipsum

        self.check_size(n * max * 16 if isinstance(n, int) and isinstance(max, int) else 0, "lipsum()")
        return generate_lorem_ipsum(n, html, min, max)

    def _guard_filter(self, name: str, func: Callable) -> Callable:
        bound_of = _FILTER_BOUNDS.get(name)
        signature = inspect.signature(func) if bound_of else None
        # Jinja passes a context first to a filter marked for it; an async-variant filter's signature (the
        # wrapped sync function's) may not name that argument.
        named = signature is not None and next(iter(signature.parameters)) in ("eval_ctx", "environment", "context")
        skip = 1 if getattr(func, "jinja_pass_arg", None) is not None and not named else 0

        @functools.wraps(func)
        def guarded(*args: object, **kwargs: object) -> object:
            self.tick()
            if signature is not None and bound_of is not None:  # both set or neither
                bound = signature.bind(*args[skip:], **kwargs)
                bound.apply_defaults()
                if name == "join":  # measure the items once, then join the same list
                    bound.arguments["value"] = list(self.guard_loop(bound.arguments["value"]))
                self.check_size(bound_of(bound.arguments), f"the {name} filter")
                args, kwargs = (*args[:skip], *bound.args), bound.kwargs
            return self.checked(func(*args, **kwargs), f"the {name} filter")

        return guarded

    def call(self, context: Context, obj: object, /, *args: object, **kwargs: object) -> object:
        self.tick()
        if getattr(obj, "__name__", "") == "join" and args and not isinstance(args[0], list):
            args = (list(self.guard_loop(cast(Iterable, args[0]))), *args[1:])  # not iterable: fails as join would
        self.check_size(_method_bound(obj, args, kwargs), f"{getattr(obj, '__name__', 'a call')}()")
        if self._depth >= self.limits.max_depth:
            self.stop(f"calls nested over {self.limits.max_depth} deep (a recursive macro?)", "max_depth")
        self._depth += 1
        try:
            result = super().call(context, obj, *args, **kwargs)
        finally:
            self._depth -= 1
        return self.checked(result, f"{getattr(obj, '__name__', 'a call')}()")

    def call_binop(self, context: Context, operator: str, left: object, right: object) -> object:
        self.tick()
        seqs = (str, list, tuple)
        if operator == "*":
            if isinstance(left, seqs) and isinstance(right, int):
                self.check_size(len(left) * right, "the * operator")
            elif isinstance(right, seqs) and isinstance(left, int):
                self.check_size(len(right) * left, "the * operator")
            elif isinstance(left, int) and isinstance(right, int):
                self._check_bits(left.bit_length() + right.bit_length(), "*")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0:
            self._check_bits(right if right > MAX_NUMBER_BITS else math.ceil(math.log2(abs(left)) * right), "**")
        elif operator == "+" and isinstance(left, seqs) and isinstance(right, seqs):
            self.check_size(len(left) + len(right), "the + operator")
        elif operator == "%" and isinstance(left, str):
            self.check_size(_format_bound(left, right), "the % operator")
        return self.checked(super().call_binop(context, operator, left, right), f"the {operator} operator")

    def _check_bits(self, bits: int, operator: str) -> None:
        if bits > MAX_NUMBER_BITS:
            self.stop(
                f"the {operator} operator would make a number of about {bits:,} bits, over the limit of "
                f"{MAX_NUMBER_BITS:,}"
            )

    # -- rendering --------------------------------------------------------------------------------------------
    def render_limited(self, template: str, variables: dict) -> str:
        """Render ``template`` in streamed chunks, stopping at the first limit; errors name ``source``."""
        from jinja2.exceptions import SecurityError, TemplateError, TemplateSyntaxError

        self.start()
        out: list[str] = []
        size = 0
        try:
            for chunk in self.from_string(template).generate(**variables):
                size += len(chunk)
                self.check_size(size, "the output")
                self.tick()
                out.append(chunk)
        except TemplateLimitError:
            raise
        except RecursionError:
            raise TemplateLimitError(
                self.limit_message("it nests too deep for Python's recursion limit; simplify the template")
            ) from None
        except TemplateSyntaxError as exc:
            raise BrokenTemplateError(
                f"{self.source}: chat template does not compile: {_one_line(exc)} (line "
                f"{exc.lineno}); fix the template or remove it"
            ) from None
        except SecurityError as exc:
            raise BrokenTemplateError(
                f"{self.source}: chat template blocked by the sandbox: {_one_line(exc)}; "
                "a chat template has no need of this: fix the template or remove it"
            ) from None
        except TemplateError as exc:
            raise ReplayError(f"{self.source}: chat template failed to render: {_one_line(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - any failure of untrusted template code is bad input
            raise ReplayError(
                f"{self.source}: chat template failed to render: {type(exc).__name__}: {_one_line(exc)}"
            ) from None
        return "".join(out)


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."
