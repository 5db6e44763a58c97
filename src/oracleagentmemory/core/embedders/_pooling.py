"""A tokenizer's encodings into a transformer's inputs, and its token states into one vector
per text: length-sorted batches, padding, pooling and L2 normalisation.

Shared by the ONNX Runtime embedders (``LocalEmbedder`` and ``OnnxDirectoryEmbedder``), so a
model run by either gives the same vector.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

POOLINGS = ("mean", "cls", "last", "max")
"""How token states become one vector: the mean of the real tokens, the first token's state
(BERT's ``[CLS]``), the last real token's (decoder embedding models, padded on the right), or
the element-wise maximum over the real tokens."""


def length_batches(encodings: Sequence[Any], batch_size: int) -> Iterator[list[int]]:
    """The rows of ``encodings`` in batches of ``batch_size``, shortest first: similar lengths
    share a batch, so little compute is spent on padding."""
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def padded(
    encodings: Sequence[Any], pad_id: int = 0
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """``input_ids`` (padded with ``pad_id``), ``attention_mask`` and ``token_type_ids`` of
    ``encodings``, right-padded to the longest."""
    width = max(1, *(len(enc.ids) for enc in encodings))
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        ids[row, :n] = enc.ids
        mask[row, :n] = enc.attention_mask
        types[row, :n] = enc.type_ids
    return ids, mask, types


def pool(states: Any, attention_mask: Any, how: str = "mean") -> NDArray[np.float32]:
    """``states`` [batch, tokens, hidden] pooled over the tokens whose ``attention_mask`` is 1."""
    hidden = np.asarray(states, dtype=np.float32)
    mask = np.asarray(attention_mask)[:, :, None].astype(np.float32)
    if how == "mean":
        summed = (hidden * mask).sum(axis=1)
        out: NDArray[np.float32] = summed / np.maximum(mask.sum(axis=1), 1e-9)
        return out
    if how == "cls":
        out = hidden[:, 0, :]
        return out
    if how == "last":
        last = np.maximum(mask[:, :, 0].sum(axis=1).astype(np.int64) - 1, 0)
        out = hidden[np.arange(hidden.shape[0]), last, :]
        return out
    if how == "max":
        out = np.where(mask > 0, hidden, -np.inf).max(axis=1).astype(np.float32)
        return out
    raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {how!r}")


def l2_normalise(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row scaled to length 1 (a zero row stays zero), so a dot product is the cosine."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return out
