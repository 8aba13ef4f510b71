"""Tool definitions as OpenAI's models see them, for counting.

OpenAI does not put a request's ``tools`` JSON in the prompt: its chat format declares the functions as a
TypeScript namespace inside the system (developer) message, one ``// description`` comment and one
``type name = (_: {...}) => any;`` line group per function, each parameter preceded by its own description
comment. The format is public in OpenAI's harmony specification and the gpt-oss chat template; counting the JSON
instead over-counts every request by the schema's quoting and keywords (~20% of the definitions).
"""

from __future__ import annotations

import json
from typing import Any

from replay.readers.json_fields import sub_dict, sub_list

PRIMITIVE = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}


def _ts(spec: Any) -> str:
    """A JSON schema as a TypeScript type."""
    if not isinstance(spec, dict):
        return "any"
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in spec["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(spec.get(key), list) and spec[key]:
            return " | ".join(_ts(s) for s in spec[key])
    kind = spec.get("type")
    if isinstance(kind, list):
        return " | ".join(PRIMITIVE.get(k, "any") if isinstance(k, str) else "any" for k in kind) or "any"
    if kind == "array":
        inner = _ts(spec.get("items"))
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if kind == "object":
        props = spec.get("properties")
        if not isinstance(props, dict) or not props:
            return "object"
        required = sub_list(spec, "required")
        return "{" + ", ".join(f"{k}{'' if k in required else '?'}: {_ts(v)}" for k, v in props.items()) + "}"
    return PRIMITIVE.get(kind, "any") if isinstance(kind, str) else "any"


def _function(tool: Any) -> dict | None:
    """A function definition from either shape: ``{"type": "function", "function": {...}}`` or ``{name, ...}``."""
    if not isinstance(tool, dict):
        return None
    inner = tool["function"] if isinstance(tool.get("function"), dict) else tool
    return inner if isinstance(inner.get("name"), str) else None


def render_functions(tools: Any) -> str | None:
    """The functions of ``tools`` as OpenAI's chat format declares them; None when ``tools`` holds no function
    definition (the caller keeps the JSON)."""
    functions = [f for f in (_function(t) for t in tools) if f] if isinstance(tools, list) else []
    if not functions:
        return None
    out = ["# Tools", "", "## functions", "", "namespace functions {", ""]
    for fn in functions:
        if fn.get("description"):
            out.append(f"// {fn['description']}")
        params = sub_dict(fn, "parameters")
        props = sub_dict(params, "properties")
        if not props:
            out += [f"type {fn['name']} = () => any;", ""]
            continue
        required = sub_list(params, "required")
        out.append(f"type {fn['name']} = (_: {{")
        for name, spec in props.items():
            if isinstance(spec, dict) and spec.get("description"):
                out.append(f"// {spec['description']}")
            default = (
                f" // default: {json.dumps(spec['default'], ensure_ascii=False)}"
                if isinstance(spec, dict) and "default" in spec
                else ""
            )
            out.append(f"{name}{'' if name in required else '?'}: {_ts(spec)},{default}")
        out += ["}) => any;", ""]
    out.append("} // namespace functions")
    return "\n".join(out)
