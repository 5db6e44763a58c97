"""From a transformer's token states to one vector per text: pooling and L2 normalisation.

Shared by the ONNX Runtime embedders (``LocalEmbedder`` and ``OnnxDirectoryEmbedder``), so a
model run by either gives the same vector.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

POOLINGS = ("mean", "cls", "last", "max")
"""How token states become one vector: the mean of the real tokens, the first token's state
(BERT's ``[CLS]``), the last real token's (decoder embedding models, padded on the right), or
the element-wise maximum over the real tokens."""


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
