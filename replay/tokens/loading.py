"""`load_tokenizer(spec)`: a tokenizer.json, a model directory, a GGUF file or a built-in name."""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer

from replay.errors import ReplayError
from replay.tokens.tekken import file_digest, load_tekken, tekken_files
from replay.tokens.tokenizer import CountingTokenizer

CLAUDE_HINT = "pip install 'replay[claude-legacy]'"


def builtin_names() -> list[str]:
    """Built-in tokenizer names (all shipped inside PyPI packages, no hub download)."""
    return ["tekken", *sorted(tekken_files()), "claude-legacy"]


def _claude_legacy() -> CountingTokenizer:
    try:
        import anthropic
    except ImportError as exc:
        raise ReplayError(f"tokenizer 'claude-legacy' needs the anthropic 0.34.2 wheel: {CLAUDE_HINT}") from exc
    path = Path(anthropic.__file__).parent / "tokenizer.json"
    if not path.exists():
        raise ReplayError(f"anthropic {anthropic.__version__} no longer ships tokenizer.json; {CLAUDE_HINT}")
    return CountingTokenizer("claude-legacy", f"claude-legacy:{file_digest(path)}", Tokenizer.from_file(str(path)))


def _builtin(name: str) -> CountingTokenizer:
    if name == "claude-legacy":
        return _claude_legacy()
    files = tekken_files()
    stem = sorted(files)[-1] if name == "tekken" else name
    if stem not in files:
        raise ReplayError(f"no built-in tokenizer {name!r}; choose one of {', '.join(builtin_names())}, "
                          "or pass a tokenizer.json, model directory or .gguf file")
    path = files[stem]
    return CountingTokenizer(stem, f"{stem}:{file_digest(path)}", load_tekken(path))


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


def _from_json(path: Path, name: str) -> CountingTokenizer:
    try:
        hf = Tokenizer.from_file(str(path))
    except Exception as exc:
        raise ReplayError(f"{path}: not a Hugging Face tokenizer.json ({exc})") from exc
    template, tvars = _chat_template(path.parent / "tokenizer_config.json")
    return CountingTokenizer(name, f"{name}:{file_digest(path)}", hf, template, tvars)


def _magic(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(4)


def load_tokenizer(spec: str | Path) -> CountingTokenizer:
    """Load a tokenizer from a path (tokenizer.json, directory holding one, .gguf) or a built-in name."""
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "tokenizer.json").exists():
            raise ReplayError(f"{path}: directory has no tokenizer.json")
        return _from_json(path / "tokenizer.json", path.name)
    if path.is_file():
        if path.suffix == ".gguf" or _magic(path) == b"GGUF":
            from replay.tokens.gguf_vocab import load_gguf

            hf, template = load_gguf(path)
            return CountingTokenizer(path.stem, f"{path.stem}:{file_digest(path)}", hf, template)
        return _from_json(path, path.stem)
    if str(spec) in builtin_names():
        return _builtin(str(spec))
    raise ReplayError(f"--tokenizer {spec!r}: no such file or built-in; built-ins: {', '.join(builtin_names())}")
