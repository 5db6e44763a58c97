"""A minimal writer of ONNX model files (the protobuf wire format, by hand).

Enough of ``onnx.proto`` to describe a graph of nodes with tensor initializers, so a model can
be built in memory from weights the package already ships, without the ``onnx`` package.
Field numbers are those of the ONNX IR (ModelProto, GraphProto, NodeProto, TensorProto,
AttributeProto, ValueInfoProto).
"""

from __future__ import annotations

import struct

import numpy as np
from numpy.typing import NDArray

_DTYPES = {
    np.dtype(np.float32): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int8): 3,
    np.dtype(np.int32): 6,
    np.dtype(np.int64): 7,
}
FLOAT, INT32 = 1, 6


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return _varint((field << 3) | 2) + _varint(len(raw)) + raw


def tensor(name: str, array: NDArray[np.generic]) -> bytes:
    """A TensorProto holding ``array`` (raw little-endian data)."""
    arr = np.ascontiguousarray(array)
    dims = b"".join(_int(1, d) for d in arr.shape)
    return dims + _int(2, _DTYPES[arr.dtype]) + _bytes(8, name) + _bytes(9, arr.tobytes())


def _attribute(name: str, value: object) -> bytes:
    if isinstance(value, bool | int):
        return _bytes(1, name) + _int(3, int(value)) + _int(20, 2)
    if isinstance(value, float):
        return _bytes(1, name) + _varint((2 << 3) | 5) + struct.pack("<f", value) + _int(20, 1)
    if isinstance(value, list):
        return _bytes(1, name) + b"".join(_int(8, int(v)) for v in value) + _int(20, 7)
    if isinstance(value, np.ndarray):
        return _bytes(1, name) + _bytes(5, tensor("value", value)) + _int(20, 4)
    raise TypeError(f"unsupported attribute {name}={value!r}")


def node(
    op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: object
) -> bytes:
    """A NodeProto."""
    out = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    out += _bytes(4, op)
    if domain:
        out += _bytes(7, domain)
    return out + b"".join(_bytes(5, _attribute(k, v)) for k, v in attrs.items())


def value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    """A ValueInfoProto of a tensor (a str dimension is symbolic)."""
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, elem_type) + _bytes(2, shape)))


def model(
    nodes: list[bytes],
    initializers: list[bytes],
    inputs: list[bytes],
    outputs: list[bytes],
    opsets: dict[str, int],
) -> bytes:
    """A serialised ModelProto (IR version 8) of one graph."""
    graph = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, "graph")
    graph += b"".join(_bytes(5, t) for t in initializers)
    graph += b"".join(_bytes(11, v) for v in inputs) + b"".join(_bytes(12, v) for v in outputs)
    imports = b"".join(
        _bytes(8, (_bytes(1, domain) if domain else b"") + _int(2, version))
        for domain, version in opsets.items()
    )
    return _int(1, 8) + imports + _bytes(2, "oracleagentmemory") + _bytes(7, graph)
