"""Snapshots of the in-process vector index: the arrays (and the HNSW graph) saved beside the
database, tagged with the database state they reflect, and read back with the big matrix
memory-mapped. A fresh process then catches up on later writes from the change log instead
of reading every vector from SQL.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Self

import numpy as np

from oracleagentmemory.core.store._files import (
    PRIVATE_FILE,
    create_file,
    folder_mode,
    make_folders,
)
from oracleagentmemory.core.store.vectors._vector_rows import (
    COLUMNS,
    DIMENSIONS,
    UNKNOWN_SEQ,
    IndexRows,
)


class IndexSnapshots(IndexRows):
    """Saving and loading the index's rows (see :meth:`save`)."""

    def save(
        self, directory: Path, stamp: str, mode: int = PRIVATE_FILE, with_graph: bool = True
    ) -> None:
        """Write the index next to its database, tagged with the database state it reflects.

        A fresh process then maps the matrix instead of reading every vector from SQL, and
        catches up on later writes from the change log. Arrays go to files named by a fresh
        token and ``index.json`` (which names the token) is replaced atomically last, so a
        reader never pairs one save's description with another's arrays. Files are created
        with ``mode`` and missing folders with its folder mode (``_files``), whatever the umask.
        Only live rows and the scope values they use are saved; ``with_graph=False`` leaves
        the HNSW graph out (it keeps the vectors of rows deleted since it was built).
        """
        # A saved graph not read yet is read now (this save replaces its file); hnswlib saves
        # only a graph no thread is inserting into.
        self.ann_load_saved()
        if self._ann_loader is not None:
            self._ann_install_loaded(self._ann_loader)
        self.ann_close()
        self.cluster()
        n = self._n
        make_folders(directory, folder_mode(mode))
        token = f"{os.getpid()}-{os.urandom(6).hex()}"

        def write_array(path: Path, array: Any) -> None:
            with os.fdopen(create_file(path, mode), "wb") as fh:
                np.save(fh, array, allow_pickle=False)

        for name in COLUMNS:
            write_array(directory / f"{name}-{token}.npy", getattr(self, name)[:n])
        info: dict[str, Any] = {
            "stamp": stamp,
            "dim": self.dim,
            "n": n,
            "codes": {
                dim: {v: c for v, c in table.items() if c in used}
                for dim, table in self._codes.items()
                for used in [set(np.unique(self.scope[:n, DIMENSIONS.index(dim)]).tolist())]
            },
            "code_next": self._code_next,
            "token": token,
            "next_label": self._next_label,
        }
        graph = self._ann if with_graph else None
        if graph is not None:
            in_graph = np.flatnonzero(self._in_graph).astype(np.int64)
            write_array(directory / f"ann_labels-{token}.npy", in_graph)
            os.close(create_file(directory / f"ann-{token}.bin", mode))  # hnswlib truncates it
            graph.save(directory / f"ann-{token}.bin")
            info["ann"] = {"deleted": graph.deleted}
        self.ann_unsaved = False
        try:
            previous = json.loads((directory / "index.json").read_text()).get("token")
        except (OSError, ValueError, AttributeError):
            previous = None
        tmp = directory / f"index.json.{token}"
        with os.fdopen(create_file(tmp, mode), "w", encoding="utf-8") as fh:
            fh.write(json.dumps(info))
        os.replace(tmp, directory / "index.json")
        # The save this one replaced goes (maps already open stay valid), with files of the
        # format before tokens.
        for name in COLUMNS:
            (directory / f"{name}.npy").unlink(missing_ok=True)
            if previous and previous != token:
                (directory / f"{name}-{previous}.npy").unlink(missing_ok=True)
        if previous and previous != token:
            (directory / f"ann_labels-{previous}.npy").unlink(missing_ok=True)
            (directory / f"ann-{previous}.bin").unlink(missing_ok=True)

    @classmethod
    def load(cls, directory: Path, dim: int) -> tuple[Self, str] | None:
        """The saved index and the state stamp it reflects, or None (absent or unreadable)."""
        try:
            info = json.loads((directory / "index.json").read_text())
            if info["dim"] != dim:
                return None
            token = info["token"]
            index = cls(dim)
            arrays = {
                # The big matrix is memory-mapped; it is copied only when the index grows.
                name: np.load(
                    directory / f"{name}-{token}.npy", mmap_mode="r" if name == "vecs" else None
                )
                for name in COLUMNS
                if (name != "label" or "next_label" in info)
                and (name != "seq" or (directory / f"seq-{token}.npy").exists())
            }
        except (OSError, ValueError, KeyError, TypeError):
            return None
        n = int(info["n"])
        if "label" not in arrays:  # a snapshot saved before labels: number the rows afresh
            arrays["label"] = np.arange(n, dtype=np.int64)
        if "seq" not in arrays:  # saved before thread positions: read when a search needs them
            arrays["seq"] = np.full(n, UNKNOWN_SEQ, dtype=np.int64)
        index._next_label = int(info.get("next_label", n))
        ann = info.get("ann")
        graph_file = directory / f"ann-{token}.bin"
        if isinstance(ann, dict) and graph_file.exists():
            index._ann_saved = (
                graph_file,
                directory / f"ann_labels-{token}.npy",
                int(ann.get("deleted", 0)),
            )
        for name, arr in arrays.items():
            if arr.shape[0] != n:
                return None
            setattr(index, name, arr)
        index._n = index._cap = index._clustered = n
        index._codes = info["codes"]
        index._code_next = {
            dim: max(
                int((info.get("code_next") or {}).get(dim, 0)),
                max(table.values(), default=-1) + 1,
            )
            for dim, table in index._codes.items()
        }
        index._invalid = int(np.count_nonzero(~index.valid))
        index._expiring = int(np.count_nonzero(np.isfinite(index.expires)))
        index._types_present = set(np.unique(index.type).tolist())
        index._by_rid = None
        index._max_rid = int(index.rid.max()) if n else 0
        return index, str(info["stamp"])
