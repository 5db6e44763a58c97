"""An on-disk cache of model files derived at first use (the int8 ONNX graph and its tables).

Where: ``$OAM_CACHE_DIR``, else ``$XDG_CACHE_HOME/recallwell``, else ``~/.cache/recallwell``;
``OAM_NO_CACHE=1`` turns the cache off. An entry is one file: a magic, the sha256 of the rest,
a JSON header (metadata and the arrays' dtype, shape and place), the arrays' bytes and one
trailing blob. It is written to a temporary file in the same folder and renamed over the entry
(``os.replace``), so a reader sees a whole entry or none; it is read back only when the sha256
matches, so a truncated or altered file is a miss (removed, then rebuilt), never an error. A
folder that cannot be written leaves the caller building in memory, as without a cache. The
name of an entry says what it derives from (the source's hash, the builder's version): a
changed source or builder reads another name. Only plain arrays are stored (no pickle). The
sha256 guards against damage, not against whoever can write the folder: it is created private
(mode 0700), and a folder named by ``OAM_CACHE_DIR`` must be as private as the user's own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

log = logging.getLogger(__name__)

_MAGIC = b"OAMCACH1"
_DIGEST = 32
_ALIGN = 64
_SUFFIX = ".bin"


def cache_dir() -> Path | None:
    """The cache folder, or None when ``OAM_NO_CACHE`` is set (to anything but ``0`` / empty)."""
    if os.environ.get("OAM_NO_CACHE", "").strip() not in ("", "0"):
        return None
    explicit = os.environ.get("OAM_CACHE_DIR", "").strip()
    if explicit:
        return Path(explicit)
    root = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(Path.home(), ".cache")
    return Path(root) / "recallwell"


@dataclass
class Entry:
    """What a cache file holds: JSON-ready ``meta``, named ``arrays`` and one ``blob``."""

    meta: dict[str, Any]
    arrays: dict[str, NDArray[Any]]
    blob: bytes


def _check_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "-_." for c in name) or name.startswith("."):
        raise ValueError(f"name must be letters, digits, '-', '_' or '.', got {name!r}")


def save(name: str, entry: Entry) -> Path | None:
    """Write ``entry`` as ``name``; the path, or None when there is no cache or its folder
    cannot be written (logged at debug level)."""
    _check_name(name)
    folder = cache_dir()
    if folder is None:
        return None
    layout: dict[str, Any] = {}
    offset = 0
    for key, array in entry.arrays.items():
        arr = np.ascontiguousarray(array)
        layout[key] = [arr.dtype.str, list(arr.shape), offset, arr.nbytes]
        offset += -(-arr.nbytes // _ALIGN) * _ALIGN
    header = json.dumps({"meta": entry.meta, "arrays": layout, "blob": len(entry.blob)}).encode()
    head = len(header).to_bytes(8, "little") + header
    head += b"\0" * (-len(head) % _ALIGN)
    digest = hashlib.sha256(head)
    for array in entry.arrays.values():
        raw = np.ascontiguousarray(array).tobytes()
        digest.update(raw + b"\0" * (-len(raw) % _ALIGN))
    digest.update(entry.blob)
    tmp: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(_MAGIC + digest.digest() + head)
            for array in entry.arrays.values():
                raw = np.ascontiguousarray(array).tobytes()
                fh.write(raw + b"\0" * (-len(raw) % _ALIGN))
            fh.write(entry.blob)
            fh.flush()
            os.fsync(fh.fileno())
        target = folder / (name + _SUFFIX)
        os.replace(tmp, target)
        tmp = None
        return target
    except OSError as exc:
        log.debug("model cache %s not written: %s", folder, exc)
        return None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def load(name: str) -> Entry | None:
    """The entry ``name`` when present and whole (its sha256 matches), else None; a damaged
    file is removed so the next writer replaces it."""
    _check_name(name)
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / (name + _SUFFIX)
    try:
        fh = path.open("rb")
    except OSError:
        return None
    try:
        with fh:
            return _read(fh)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        log.warning("model cache entry %s is damaged (%s): rebuilding it", path, exc)
        with contextlib.suppress(OSError):
            path.unlink()
        return None


def _read(fh: Any) -> Entry:
    """Parse an open entry: the arrays are views of one buffer, the blob another (so a caller
    can let the blob go once used)."""
    lead = fh.read(len(_MAGIC) + _DIGEST + 8)
    if len(lead) != len(_MAGIC) + _DIGEST + 8 or lead[: len(_MAGIC)] != _MAGIC:
        raise ValueError("not a cache file")
    expected = lead[len(_MAGIC) : len(_MAGIC) + _DIGEST]
    size = int.from_bytes(lead[-8:], "little")
    head = fh.read(size + (-(8 + size) % _ALIGN))
    if len(head) < size:
        raise ValueError("truncated header")
    header = json.loads(head[:size])
    arrays_end = 0
    for _dtype, _shape, offset, nbytes in header["arrays"].values():
        arrays_end = max(arrays_end, int(offset) + -(-int(nbytes) // _ALIGN) * _ALIGN)
    body = fh.read(arrays_end)
    blob = fh.read()
    digest = hashlib.sha256(lead[-8:])
    digest.update(head)
    digest.update(body)
    digest.update(blob)
    if digest.digest() != expected:
        raise ValueError("sha256 mismatch")
    if len(body) != arrays_end or len(blob) != int(header["blob"]):
        raise ValueError("length mismatch")
    arrays: dict[str, NDArray[Any]] = {}
    for key, (dtype, shape, offset, nbytes) in header["arrays"].items():
        dt = np.dtype(dtype)
        if dt.hasobject:
            raise ValueError("object arrays are not stored")
        count = int(np.prod(shape, dtype=np.int64))
        if count * dt.itemsize != nbytes:
            raise ValueError(f"array {key} does not match its shape")
        arrays[key] = np.frombuffer(body, dt, count, int(offset)).reshape(shape)
    return Entry(header["meta"], arrays, blob)
