"""Per-message chat-template overhead: measured from a sandboxed chat template, else a documented constant."""

from __future__ import annotations

from dataclasses import dataclass

from replay.errors import ReplayError
from replay.tokens.template_limits import BrokenTemplateError, LimitedEnvironment, Limits
from replay.tokens.tokenizer import CountingTokenizer

# Default when no template is given: ~4 tokens of role/separator markup per message (the figure OpenAI documents
# for its chat format: <|start|>role<|message|>...<|end|>) and 3 tokens priming the reply.
DEFAULT_PER_MESSAGE = 4
DEFAULT_FIXED = 3
ROLES = ("system", "user", "assistant", "tool")
_PROBE = "xq"  # content whose own tokens are subtracted from the rendering


@dataclass(frozen=True)
class Overhead:
    """Template tokens added around content: ``fixed`` once per prompt, ``per_message[role]`` per message."""

    per_message: dict[str, int]
    fixed: int
    source: str  # "template" or "default"

    def for_role(self, role: str | None) -> int:
        return self.per_message.get(role or "user", self.per_message.get("user", DEFAULT_PER_MESSAGE))


DEFAULT_OVERHEAD = Overhead(dict.fromkeys(ROLES, DEFAULT_PER_MESSAGE), DEFAULT_FIXED, "default")


class ChatTemplate(str):
    """A chat template's text that remembers where it was read (``source``), for error messages."""

    source: str

    def __new__(cls, text: str, source: str) -> ChatTemplate:
        self = super().__new__(cls, text)
        self.source = source
        return self


def render(template: str, messages: list[dict], limits: Limits | None = None, **variables: object) -> str:
    """Render a chat template in a sandbox with limits (no attribute escapes, no file access, bounded loops,
    recursion, output and time); any failure is a ReplayError naming the template's file."""
    from jinja2.exceptions import TemplateError

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env = LimitedEnvironment(limits or Limits.from_env(), getattr(template, "source", "chat template"))
    env.globals["raise_exception"] = raise_exception
    return env.render_limited(str(template), {"messages": messages, "add_generation_prompt": True, **variables})


def _conversation(roles: list[str]) -> list[dict]:
    return [{"role": r, "content": _PROBE} for r in roles]


def template_overhead(tok: CountingTokenizer, template: str | None = None) -> Overhead:
    """Measure per-role message overhead and the fixed prompt overhead from ``template`` (or the tokenizer's)."""
    template = template or tok.chat_template
    if not template:
        return DEFAULT_OVERHEAD
    probe = tok.count(_PROBE)

    def size(roles: list[str]) -> int | None:
        try:
            return tok.count_rendered(render(template, _conversation(roles), **tok.template_vars))
        except BrokenTemplateError:
            raise  # a template that renders nothing (syntax, limits), not one rejecting this role order
        except ReplayError:
            return None  # templates often reject some role orders (e.g. no system role)

    base = size(["user"])
    if base is None:
        return DEFAULT_OVERHEAD
    per_message: dict[str, int] = {}
    for role, prefix, full in (
        ("user", ["user", "assistant"], ["user", "assistant", "user"]),
        ("assistant", ["user"], ["user", "assistant"]),
        ("system", ["user"], ["system", "user"]),
        ("tool", ["user"], ["user", "tool"]),
    ):
        before, after = size(prefix), size(full)
        if before is not None and after is not None:
            per_message[role] = max(0, after - before - probe)
    user = per_message.get("user", max(0, base - probe))
    for role in ROLES:
        per_message.setdefault(role, user)
    return Overhead(per_message, max(0, base - probe - user), "template")
