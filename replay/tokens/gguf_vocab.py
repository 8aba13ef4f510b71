"""Read a GGUF file's vocabulary (with the `gguf` package) into a `tokenizers` BPE or Unigram."""

from __future__ import annotations

from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from replay.errors import ReplayError
from replay.tokens.template import ChatTemplate
from replay.tokens.vocab_files import want

# Pre-tokenizer regexes by `tokenizer.ggml.pre` (llama.cpp names); others fall back to GPT-2's.
LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
PRE_PATTERNS = {
    "llama-bpe": LLAMA3,
    "llama3": LLAMA3,
    "smaug-bpe": LLAMA3,
    "dbrx": LLAMA3,
    "qwen2": QWEN2,
    "deepseek-r1-qwen": QWEN2,
}
CONTROL = 3  # llama.cpp token type for control tokens (never produced from text)


FIX = "pass a GGUF file written by llama.cpp's converter (or the model's tokenizer.json)"


def _fields(path: Path) -> dict:
    import gguf

    try:  # gguf memory-maps the file: counts and lengths past its end fail here, nothing is allocated for them
        reader = gguf.GGUFReader(str(path))
        wanted = (
            "tokenizer.ggml.model",
            "tokenizer.ggml.pre",
            "tokenizer.ggml.tokens",
            "tokenizer.ggml.scores",
            "tokenizer.ggml.token_type",
            "tokenizer.ggml.merges",
            "tokenizer.ggml.unknown_token_id",
            "tokenizer.chat_template",
        )
        return {k: reader.fields[k].contents() for k in wanted if k in reader.fields}
    except OSError:
        raise  # load_tokenizer names the file and the OS error
    except Exception as exc:  # noqa: BLE001 - gguf raises bare ValueError/IndexError/struct errors on bad input
        detail = " ".join(str(exc).split())[:200]
        raise ReplayError(f"{path}: not a readable GGUF file (damaged or truncated: {detail}); {FIX}") from None


def _check(path: Path, f: dict) -> None:
    """Each field the vocabulary needs has the type and length llama.cpp writes."""
    tokens = f.get("tokenizer.ggml.tokens")
    if tokens is None:
        raise ReplayError(f"{path}: GGUF file has no tokenizer.ggml.tokens; it holds no vocabulary; {FIX}")
    want(path, "tokenizer.ggml.tokens", tokens, list, "an array of strings", FIX)
    if not tokens or not all(isinstance(t, str) for t in tokens):
        raise ReplayError(f"{path}: tokenizer.ggml.tokens is empty or holds non-strings; {FIX}")
    for key, kinds, what in (
        ("tokenizer.ggml.model", str, "a string"),
        ("tokenizer.ggml.pre", str, "a string"),
        ("tokenizer.chat_template", str, "a string"),
        ("tokenizer.ggml.unknown_token_id", int, "an integer"),
    ):
        if key in f:
            want(path, key, f[key], kinds, what, FIX)
    kind: type | tuple[type, ...]
    for key, kind, what in (
        ("tokenizer.ggml.scores", (int, float), "numbers"),
        ("tokenizer.ggml.token_type", int, "integers"),
    ):
        values = f.get(key)
        if values is None:
            continue
        if not isinstance(values, list) or len(values) != len(tokens) or not all(isinstance(v, kind) for v in values):
            raise ReplayError(f"{path}: {key} must be an array of {len(tokens):,} {what} (one per token); {FIX}")
    merges = f.get("tokenizer.ggml.merges", [])
    if not isinstance(merges, list) or not all(isinstance(m, str) and " " in m for m in merges):
        raise ReplayError(f'{path}: tokenizer.ggml.merges must be an array of "left right" strings; {FIX}')
    unk = f.get("tokenizer.ggml.unknown_token_id", 0)
    if not 0 <= unk < len(tokens):
        raise ReplayError(
            f"{path}: tokenizer.ggml.unknown_token_id {unk} is not a token id (0 to {len(tokens) - 1:,}); {FIX}"
        )


def _bpe(f: dict) -> Tokenizer:
    tokens = f["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ", 1)) for m in f.get("tokenizer.ggml.merges", [])]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, ignore_merges=True))
    pattern = PRE_PATTERNS.get(f.get("tokenizer.ggml.pre", "default"))
    if pattern:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    return tok


def _unigram(f: dict) -> Tokenizer:
    tokens = f["tokenizer.ggml.tokens"]
    scores = f.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
    types = f.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = [(t, -1e9 if ty == CONTROL else float(s)) for t, s, ty in zip(tokens, scores, types, strict=True)]
    unk = int(f.get("tokenizer.ggml.unknown_token_id", 0))
    tok = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=any(t.startswith("<0x") for t in tokens)))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    return tok


def load_gguf(path: Path) -> tuple[Tokenizer, str | None]:
    """The GGUF vocabulary at ``path`` as a tokenizer, plus its chat template if the file has one."""
    f = _fields(path)
    _check(path, f)
    kind = f.get("tokenizer.ggml.model")
    if kind not in ("gpt2", "llama"):
        raise ReplayError(
            f"{path}: GGUF tokenizer model {kind!r} is not supported (gpt2 BPE or llama SPM only); "
            "pass the model's tokenizer.json instead"
        )
    try:
        tok = _bpe(f) if kind == "gpt2" else _unigram(f)
    except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception (e.g. a merge of unknown tokens)
        raise ReplayError(
            f"{path}: the GGUF vocabulary is inconsistent ({' '.join(str(exc).split())[:200]}); {FIX}"
        ) from None
    template = f.get("tokenizer.chat_template")
    return tok, ChatTemplate(template, f"{path} (tokenizer.chat_template)") if template else None
