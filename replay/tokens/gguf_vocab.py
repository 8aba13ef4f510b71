"""Read a GGUF file's vocabulary (with the `gguf` package) into a `tokenizers` BPE or Unigram."""

from __future__ import annotations

from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from replay.errors import ReplayError

# Pre-tokenizer regexes by `tokenizer.ggml.pre` (llama.cpp names); others fall back to GPT-2's.
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
         r"|\s*[\r\n]+|\s+(?!\S)|\s+")
PRE_PATTERNS = {"llama-bpe": LLAMA3, "llama3": LLAMA3, "smaug-bpe": LLAMA3, "dbrx": LLAMA3,
                "qwen2": QWEN2, "deepseek-r1-qwen": QWEN2}
CONTROL = 3  # llama.cpp token type for control tokens (never produced from text)


def _fields(path: Path) -> dict:
    import gguf

    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # gguf raises bare ValueError/struct errors on non-GGUF input
        raise ReplayError(f"{path}: not a readable GGUF file ({exc})") from exc
    wanted = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
              "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.unknown_token_id",
              "tokenizer.chat_template")
    return {k: reader.fields[k].contents() for k in wanted if k in reader.fields}


def _bpe(f: dict) -> Tokenizer:
    tokens = f["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ", 1)) for m in f.get("tokenizer.ggml.merges", [])]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, ignore_merges=True))
    pattern = PRE_PATTERNS.get(f.get("tokenizer.ggml.pre", "default"))
    if pattern:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
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
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    return tok


def load_gguf(path: Path) -> tuple[Tokenizer, str | None]:
    """The GGUF vocabulary at ``path`` as a tokenizer, plus its chat template if the file has one."""
    f = _fields(path)
    kind = f.get("tokenizer.ggml.model")
    if "tokenizer.ggml.tokens" not in f:
        raise ReplayError(f"{path}: GGUF file has no tokenizer.ggml.tokens; it holds no vocabulary")
    if kind == "gpt2":
        tok = _bpe(f)
    elif kind == "llama":
        tok = _unigram(f)
    else:
        raise ReplayError(f"{path}: GGUF tokenizer model {kind!r} is not supported (gpt2 BPE or llama SPM only)")
    return tok, f.get("tokenizer.chat_template")
