"""Hostile chat templates stop at a limit with one error naming the template and the variable that raises the
limit; real templates render exactly as in Jinja's plain sandbox."""

from __future__ import annotations

import functools
import itertools

import pytest
from jinja2 import Template
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from replay.errors import ReplayError
from replay.tokens import load_tokenizer, template_overhead
from replay.tokens.template import ChatTemplate, render
from replay.tokens.template_limits import BrokenTemplateError, Limits, TemplateLimitError

SOURCE = "/models/evil/tokenizer_config.json (chat_template)"
LOOPS = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"

HOSTILE = {  # name: (template, what the message says, the variable named)
    "range": ("{% for i in range(10**9) %}{% endfor %}", "range of 1,000,000,000 items", "MAX_RANGE"),
    "range-list": ("{{ range(10**9)|list|length }}", "range of 1,000,000,000 items", "MAX_RANGE"),
    "recursive-macro": ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nested over", "MAX_DEPTH"),
    "recursive-loop": ("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", "nested over", "MAX_DEPTH"),
    "nested-loops": (LOOPS, "rendering took over", "SECONDS"),
    "huge-string": ("{{ 'x' * 6000000000 }}", "the * operator would make 6,000,000,000", "MAX_CHARS"),
    "huge-list": ("{{ ([1] * 10**8)|length }}", "the * operator", "MAX_CHARS"),
    "written-in-macro": (
        "{% macro m() %}{% for a in range(100000) %}{% for b in range(100000) %}{{ 'x' * 10000 }}"
        "{% endfor %}{% endfor %}{% endmacro %}{{ m() }}",
        "wrote over 1,000,000",
        "MAX_CHARS",
    ),
    "output": ("{% for a in range(100000) %}" + "x" * 10000 + "{% endfor %}", "the output would make", "MAX_CHARS"),
    "accumulate": (
        "{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s + 'x' * 99999 %}{% endfor %}",
        "the + operator",
        "MAX_CHARS",
    ),
    "replace-filter": ("{{ ('x' * 100000)|replace('x', 'y' * 100000) }}", "the replace filter", "MAX_CHARS"),
    "join-filter": ("{{ range(100000)|join('x' * 100000) }}", "the join filter", "MAX_CHARS"),
    "center-filter": ("{{ 'a'|center(10**9) }}", "the center filter", "MAX_CHARS"),
    "indent-filter": ("{{ ('a\n' * 100000)|indent(100000) }}", "the indent filter", "MAX_CHARS"),
    "ljust-method": ("{{ 'a'.ljust(10**9) }}", "ljust()", "MAX_CHARS"),
    "percent-format": ("{{ '%0999999999d' % 1 }}", "the % operator", "MAX_CHARS"),
    "str-format": ("{{ '{:>999999999}'.format(1) }}", "format()", "MAX_CHARS"),
    "batch-fill": ("{{ [1]|batch(10**9, 0)|list }}", "the batch filter", "MAX_CHARS"),
    "slice-count": ("{{ [1]|slice(10**9)|list }}", "the slice filter", "MAX_CHARS"),
    "translate": ("{{ ('a' * 100000).translate({97: 'b' * 100000}) }}", "translate()", "MAX_CHARS"),
    "lipsum": ("{{ lipsum(10**7) }}", "lipsum()", "MAX_CHARS"),
    "power": ("{{ 2 ** 100000000 }}", "a number of about 100,000,000 bits, over the limit of 10,000", None),
    "square-loop": (
        "{% set ns = namespace(x=3) %}{% for i in range(100) %}{% set ns.x = ns.x * ns.x %}{% endfor %}",
        "a number of about",
        None,
    ),
    "deep-nesting": ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "recursion limit", None),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_template_stops_with_a_clear_error(name):
    template, says, variable = HOSTILE[name]
    # the time limit is short only where it is the limit expected: elsewhere a loaded machine must not let it fire
    # before the limit the case is about (a recursion reaching MAX_DEPTH took over 0.5 s once)
    seconds = 0.5 if variable == "SECONDS" else 30.0
    with pytest.raises(TemplateLimitError) as err:
        render(ChatTemplate(template, SOURCE), [{"role": "user", "content": "hi"}], limits=Limits(seconds=seconds))
    message = str(err.value)
    assert message.startswith(SOURCE) and says in message and "\n" not in message
    if variable:
        assert f"REPLAY_TEMPLATE_{variable}=" in message


def test_limits_are_raised_by_environment_variables(monkeypatch):
    monkeypatch.setenv("REPLAY_TEMPLATE_MAX_RANGE", "10")
    with pytest.raises(TemplateLimitError, match="range of 11 items is over the limit of 10"):
        render("{% for i in range(11) %}{% endfor %}", [])
    assert render("{% for i in range(10) %}{{ i }}{% endfor %}", []) == "0123456789"
    monkeypatch.setenv("REPLAY_TEMPLATE_SECONDS", "soon")
    with pytest.raises(ReplayError, match="REPLAY_TEMPLATE_SECONDS='soon': want a positive number"):
        render("x", [])


def test_broken_templates_are_errors_naming_the_template():
    with pytest.raises(BrokenTemplateError, match=r"^/m/x\.gguf \(tokenizer\.chat_template\): .*does not compile"):
        render(ChatTemplate("{% for %}", "/m/x.gguf (tokenizer.chat_template)"), [])
    with pytest.raises(BrokenTemplateError, match="blocked by the sandbox"):
        render("{{ ''.__class__.__mro__ }}", [])
    with pytest.raises(ReplayError, match="ZeroDivisionError"):
        render("{{ 1 / 0 }}", [])


def test_overhead_reports_a_hostile_template_instead_of_the_default():
    tok = load_tokenizer("tekken")
    with pytest.raises(TemplateLimitError, match="range of"):
        template_overhead(tok, ChatTemplate("{% for i in range(10**9) %}{% endfor %}", SOURCE))
    with pytest.raises(BrokenTemplateError, match="does not compile"):
        template_overhead(tok, "{% if %}")


# -- real templates: the limits change nothing --------------------------------------------------------------------
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}},
        },
    }
]
CONVERSATIONS = [
    [{"role": "user", "content": "hi"}],
    [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "again"},
    ],
    [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "abcdefghi",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "sunny"},
    ],
]
# Constructs real templates use: loop.last/length, namespace, macros, tojson, filters over messages.
OWN = (
    "{%- set ns = namespace(sys='') -%}{%- for m in messages if m.role == 'system' -%}{% set ns.sys = m.content %}"
    "{%- endfor -%}{%- macro block(role, text) -%}<|{{ role }}|>{{ text | trim }}{{ '\n' if not loop_last }}"
    "{%- endmacro -%}{{ bos_token }}{% if ns.sys %}{{ block('system', ns.sys) }}{% endif %}"
    "{%- if tools %}<tools>{{ tools | tojson(indent=2) }}</tools>{% endif -%}"
    "{%- for m in messages | rejectattr('role', 'equalto', 'system') -%}{% set loop_last = loop.last %}"
    "{{ block(m.role, m.content ~ (' [' ~ loop.index ~ '/' ~ loop.length ~ ']')) }}"
    "{%- for c in m.tool_calls or [] %}{{ c.function.name }}({{ c.function.arguments | tojson }}){% endfor -%}"
    "{%- endfor -%}{% if add_generation_prompt %}<|assistant|>{% endif %}{{ eos_token }}"
)

# Every filter and method the limits look into, used as a template would.
FILTERS = (
    "{{ messages | map(attribute='role') | join(', ') }}|{{ (messages | first).content | replace('h', 'H') | "
    "center(20) | indent(2, true) }}|{{ messages | batch(2, {}) | list | length }}|"
    "{{ messages | slice(2) | list | length }}|{{ '%s-%05d' | format('a', 3) }}|{{ '%-6s|' % 'ab' }}|"
    "{{ 'x{:>4}'.format(1) }}|{{ 'ab'.ljust(5) }}|{{ 'a b c' | wordwrap(3) }}|{{ 'a\tb'.expandtabs(4) }}|"
    "{{ ', '.join(['a', 'b']) }}|{{ 'abc'.translate({97: 'xy'}) }}|{{ 2 ** 10 }}|{{ 'ab' * 3 }}|"
    "{{ [1] + [2] }}|{% for i in range(3) %}{{ loop.revindex }}{% endfor %}"
)


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


@functools.cache
def _plain_template(template: str) -> Template | None:
    """``template`` compiled once in Jinja's own sandbox (the renderer before the limits), None if it does not
    compile (a Jinja template renders any number of times)."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise_exception
    try:
        return env.from_string(template)
    except Exception:  # noqa: BLE001 - as a render that fails
        return None


def _plain_render(template: str, messages: list[dict], **variables: object) -> str:
    """What Jinja's own sandbox renders (the renderer before the limits), or the error's type."""
    compiled = _plain_template(template)
    if compiled is None:
        return "error"
    try:
        return compiled.render(messages=messages, add_generation_prompt=True, **variables)
    except Exception:  # noqa: BLE001 - the template rejects the conversation
        return "error"


def _limited_render(template: str, messages: list[dict], **variables: object) -> str:
    try:
        return render(template, messages, **variables)
    except ReplayError:
        return "error"


def _mistral_templates() -> list[str]:
    """The chat templates mistral-common generates for Mistral's tokenizer versions (what their model repos ship)."""
    from mistral_common.integrations.chat_templates.chat_templates import generate_chat_template
    from mistral_common.tokens.tokenizers.base import TokenizerVersion

    out = set()
    for version, spm, thinking in itertools.product(list(TokenizerVersion), (True, False), (False, True)):
        try:
            out.add(generate_chat_template(spm, version, False, False, thinking, None, False, True, None, None, None))
        except ValueError:
            continue  # a combination that version does not support
    return sorted(out)


def test_real_templates_render_exactly_as_before():
    templates = [*_mistral_templates(), OWN, FILTERS]
    assert len(templates) >= 5
    rendered = 0
    for template, messages, tools in itertools.product(templates, CONVERSATIONS, (None, TOOLS)):
        variables = {"bos_token": "<s>", "eos_token": "</s>", "tools": tools}
        expected = _plain_render(template, messages, **variables)
        assert _limited_render(template, messages, **variables) == expected
        rendered += expected != "error"
    assert rendered >= len(templates) * 3  # most conversations render (the comparison is not of errors only)
