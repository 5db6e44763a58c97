"""Writing images: a record whose description is its retrieval text, bytes in the blob table.

The record and its bytes land in one transaction; bytes are read back only on request
(``_reads.attach_bytes``). A message's inline images are planned with the message instead
(``_message_parts``) and written by the same insert.
"""

from __future__ import annotations

from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.core.store._jsontext import load_json_column as _json
from oracleagentmemory.core.store._limits import check_text
from oracleagentmemory.core.store._store_core import StoreCore, check_lookup
from oracleagentmemory.core.store.schema._planning import plan_batch
from oracleagentmemory.core.store.schema._rows import dumps_json
from oracleagentmemory.core.store.vectors._index_keeper import IndexKeeper
from oracleagentmemory.core.store.writes._writes import Writer


def _check_image(image: Any) -> None:
    if not isinstance(image, bytes | bytearray | memoryview):
        raise TypeError("image must be bytes")
    if not image:
        raise ValueError("image must not be empty")


class ImageWriter:
    """The images part: add an image, replace its bytes or MIME type."""

    def __init__(self, core: StoreCore, keeper: IndexKeeper, writer: Writer) -> None:
        self._core = core
        self._keeper = keeper
        self._writer = writer

    def add_image(
        self,
        image: bytes,
        *,
        mime_type: str,
        description: str | None,
        image_id: str | None,
        user_id: str | None,
        agent_id: str | None,
        thread_id: str | None,
        message_id: str | None,
        metadata: Any,
        timestamp: str | None,
        ttl_days: Any,
        ttl_anchor: Any,
        require_thread: str | None,
    ) -> str:
        _check_image(image)
        if not isinstance(mime_type, str):
            raise TypeError("mime_type must be a string")
        if message_id is not None and not isinstance(message_id, str):
            raise TypeError("message_id must be a string or None")
        if require_thread is not None:
            check_lookup(require_thread, "require_thread")
        batch = PendingRecordBatch(
            contents=[description],
            record_type="image",
            record_ids=image_id,
            thread_ids=thread_id,
            user_ids=user_id,
            agent_ids=agent_id,
            timestamps=timestamp,
            metadata=metadata,
            ttl_days=ttl_days,
            ttl_anchor=ttl_anchor,
        )
        core = self._core
        planned = plan_batch(batch, core.write_context(), set(), internal=True)
        planned[0].extra_json = dumps_json(
            {"mime_type": mime_type, "message_id": message_id}, "mime_type"
        )
        core.fill_vectors(p.retrieval for p in planned)
        d = core.dialect
        with core.lock:
            core.check_open()
            with self._keeper.write(shared=True):  # an insert: the UNIQUE key, the owners
                self._writer.require_thread(require_thread)
                index_rows = self._writer.insert(planned, 1)
                rid = int(
                    d.execute(
                        f"SELECT rid FROM {d.tables.records} WHERE family = 'image' AND id = ?",
                        [planned[0].id],
                    )[0][0]
                )
                _insert_blob(d, rid, image)
            self._keeper.add(index_rows)
        return planned[0].id

    def update_image_payload(self, image_id: str, image: Any, mime_type: Any) -> int:
        check_lookup(image_id, "image_id")
        if image is not NOT_SET_MARKER:
            _check_image(image)
        if mime_type is not NOT_SET_MARKER:
            if not isinstance(mime_type, str):
                raise TypeError("mime_type must be a string")
            check_text(mime_type, "mime_type")
        core = self._core
        d = core.dialect
        with core.lock:
            core.check_open()
            # The image's row locked to the commit (FOR_WRITE), not the store: other users'
            # writes run beside it, and a delete of this image waits for it.
            with self._keeper.write(shared=True):
                where, params = d.locked_where(
                    d.tables.records, "r", "family = 'image' AND id = ?", [image_id]
                )
                rows = d.execute(
                    f"SELECT rid, {d.json_as_text('extra')} FROM {d.tables.records} r"
                    f" WHERE {where}{d.FOR_WRITE}",
                    params,
                )
                if not rows:
                    return 0
                rid, extra = int(rows[0][0]), _json(rows[0][1]) or {}
                if image is not NOT_SET_MARKER:
                    d.execute(f"DELETE FROM {d.tables.blobs} WHERE rid = ?", [rid])
                    _insert_blob(d, rid, image)
                if mime_type is not NOT_SET_MARKER:
                    extra["mime_type"] = mime_type
                    d.execute(
                        f"UPDATE {d.tables.records} SET extra = ? WHERE rid = ?",
                        [dumps_json(extra, "mime_type"), rid],
                    )
        return 1


def _insert_blob(d: Any, rid: int, image: Any) -> None:
    """Inside a write: the bytes of image record ``rid`` (on its user's shard when
    distributed)."""
    columns, [row], _ = d.placed("rid, data", [(rid, bytes(image))], rid_at=0)
    d.execute(f"INSERT INTO {d.tables.blobs} ({columns}) VALUES ({','.join('?' * len(row))})", row)
