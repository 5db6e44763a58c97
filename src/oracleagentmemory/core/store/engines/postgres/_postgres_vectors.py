"""pgvector values on the wire: query vectors sent in pgvector's binary format, and stored
vectors read back from its text format."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray


class PgVector:
    """A vector parameter, sent in pgvector's binary format (no text to format or parse):
    the statement names its type (``?::vector``, or a vector column it is assigned to)."""

    __slots__ = ("data",)

    def __init__(self, vector: NDArray[np.float32]) -> None:
        head = struct.pack(">HH", vector.shape[0], 0)
        self.data = head + np.ascontiguousarray(vector, dtype=">f4").tobytes()

    def __str__(self) -> str:
        values = np.frombuffer(self.data, dtype=">f4", offset=4)
        return "[" + ",".join(map(str, values.tolist())) + "]"


class _PgVectorDumper(psycopg.adapt.Dumper):
    format = psycopg.pq.Format.BINARY

    def dump(self, obj: Any) -> bytes:
        return bytes(obj.data)


psycopg.adapters.register_dumper(PgVector, _PgVectorDumper)


def vectors_from_text(values: Sequence[Any], dim: int) -> NDArray[np.float32]:
    """Rows of pgvector's text form, ``'[x,y,...]'``, as one matrix: one parse of every
    row's numbers at once."""
    text = ",".join(str(v).strip("[]") for v in values)
    flat = np.fromstring(text, dtype=np.float32, sep=",") if text else np.empty(0, np.float32)
    return flat.reshape(len(values), dim)


def vectors_from_send(values: Sequence[Any], dim: int) -> NDArray[np.float32]:
    """Rows of ``vector_send``'s bytea (int16 dimensions, int16 unused, then big-endian
    float4s) as one matrix."""
    width = 4 + 4 * dim
    buf = b"".join(bytes(v) for v in values)
    if len(buf) != width * len(values):
        raise ValueError(f"stored vectors do not have {dim} dimensions")
    rows = np.frombuffer(buf, dtype=">f4").reshape(len(values), dim + 1)
    return rows[:, 1:].astype(np.float32)
