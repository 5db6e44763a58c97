"""What a write becomes before any I/O: planned records and their retrieval rows.

The value types write planning (``_planning``) produces and the store's writers consume, and
the chunker that cuts store-owned retrieval text; no validation of caller arguments lives here
but the few rules of retrieval rows themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.records import RecordStatus
from oracleagentmemory.apis.ttl import TimeToLiveAnchor
from oracleagentmemory.core.retention import MemoryRetentionConfig
from oracleagentmemory.core.store._limits import MAX_CALLER_CHUNK_CHARS, check_text, dumps_checked

Vector = NDArray[np.float32]


def dumps_json(value: Any, name: str) -> str:
    """Compact JSON text of a value that passes the JSON limits (see ``_limits``)."""
    return dumps_checked(value, name)


# ---------------------------------------------------------------------------- chunking


CHUNK_CHARS_PER_WORD = 16
"""A store-owned chunk holds at most this many characters per word of its window."""


@dataclass(frozen=True)
class Chunker:
    """Word-window chunking of store-owned retrieval text (caller lists are never split).

    A chunk holds at most ``max_words`` words and ``max_chars`` characters; a "word" longer
    than ``max_chars`` (text without whitespace) is cut into pieces of ``max_chars``. Both
    bounds keep every chunk inside the embedding model's window and every engine's
    full-text limits.
    """

    max_words: int = 192
    overlap: int = 24
    max_chars: int = 192 * CHUNK_CHARS_PER_WORD

    @classmethod
    def for_tokens(cls, max_input_tokens: int | None) -> Chunker:
        # About 0.75 words per WordPiece token keeps a chunk inside the model's window.
        words = 192 if not max_input_tokens else max(16, int(max_input_tokens * 0.75))
        return cls(
            max_words=words,
            overlap=max(0, min(words // 8, 32)),
            max_chars=words * CHUNK_CHARS_PER_WORD,
        )

    def split(self, text: str) -> list[str]:
        words = text.split()
        if len(words) <= self.max_words and len(text) <= self.max_chars:
            return [text] if words else []
        limit = self.max_chars
        pieces: list[str] = []
        for word in words:
            if len(word) <= limit:
                pieces.append(word)
            else:
                pieces.extend(word[i : i + limit] for i in range(0, len(word), limit))
        out = []
        start = 0
        while True:
            end, size = start, -1
            while (
                end < len(pieces)
                and end - start < self.max_words
                and size + 1 + len(pieces[end]) <= limit
            ):
                size += 1 + len(pieces[end])
                end += 1
            out.append(" ".join(pieces[start:end]))
            if end >= len(pieces):
                return out
            start = max(start + 1, end - self.overlap)


# ---------------------------------------------------------------------------- rows


@dataclass
class ChunkRow:
    text: str | None
    vector: Vector | None = None


KEYWORD_ROW_INDEX = (1 << 24) - 1
"""The ``chunk_index`` of a record's keyword-only row (see :attr:`RetrievalPlan.keyword_text`):
after every real chunk, inside every engine's chunk-position range."""


@dataclass
class RetrievalPlan:
    """The retrieval rows of one record; ``embed`` lists rows whose vector is still missing."""

    rows: list[ChunkRow] = field(default_factory=list)
    needs_vectors: bool = False
    keyword_text: str | None = None
    """Text for keyword search only, written as one more chunk row (``KEYWORD_ROW_INDEX``,
    never a vector): a message with the two messages before it. Embedding, re-embedding and
    exports see only :attr:`rows`."""

    @property
    def row_count(self) -> int:
        """How many chunk rows :meth:`stored` gives."""
        return len(self.rows) + (self.keyword_text is not None)

    def stored(self) -> list[tuple[int, str | None, Vector | None]]:
        """``(chunk_index, text, vector)`` of each chunk row written for this plan:
        :attr:`rows` in order, then the keyword-only row."""
        out = [(i, row.text, row.vector) for i, row in enumerate(self.rows)]
        if self.keyword_text is not None:
            out.append((KEYWORD_ROW_INDEX, self.keyword_text, None))
        return out


def plan_retrieval(
    *,
    source: str | None,
    caller_chunks: list[str] | None,
    vectors: tuple[str, list[Vector]] | None,
    chunker: Chunker,
    has_vectors: bool,
    explicit_none: bool = False,
    name: str = "embeddings",
) -> RetrievalPlan:
    """Align retrieval text and vectors for one record, following page 000's table.

    ``source`` is store-owned text (chunked when its vectors are derived); ``caller_chunks``
    are caller-owned chunks; ``vectors`` is an explicit payload (None = derive);
    ``explicit_none`` stores rows without vectors. One explicit vector gives one row holding
    the whole text, unless the text is longer than ``MAX_CALLER_CHUNK_CHARS``: then each
    chunk holds that vector.
    """
    if caller_chunks is not None:
        texts = caller_chunks
        whole: str | None = caller_chunks[0] if len(caller_chunks) == 1 else None
    else:
        texts = chunker.split(source) if source else []
        whole = source if source else None
    if vectors is None:
        rows = [ChunkRow(t) for t in texts]
        return RetrievalPlan(rows, needs_vectors=has_vectors and not explicit_none and bool(rows))
    kind, vecs = vectors
    if kind == "empty":
        if texts:
            raise ValueError(
                f"{name}: an empty vector payload is allowed only for a record without "
                "retrieval text"
            )
        return RetrievalPlan([])
    if kind == "multi" and len(vecs) == 1 and caller_chunks is None:
        kind = "single"
    if kind == "single":
        if caller_chunks is not None and len(caller_chunks) > 1:
            raise ValueError(
                f"{name}: one vector was given for {len(caller_chunks)} caller-owned chunks; "
                "give one vector per chunk"
            )
        if caller_chunks is None and len(texts) > 1 and len(source or "") > MAX_CALLER_CHUNK_CHARS:
            # Longer than any row the store writes uncut (a PostgreSQL tsvector holds under
            # 1 MiB of words): every chunk carries the record's one vector.
            return RetrievalPlan([ChunkRow(t, vecs[0]) for t in texts])
        # One vector stands for the whole retrieval text: one row, the text not cut.
        return RetrievalPlan([ChunkRow(whole, vecs[0])])
    if caller_chunks is None:
        raise ValueError(
            f"{name}: {len(vecs)} vectors need a matching list of index text chunks "
            "(a string is chunked by the store, so its boundaries are not explicit)"
        )
    if len(vecs) != len(caller_chunks):
        raise ValueError(
            f"{name}: {len(vecs)} vectors for {len(caller_chunks)} non-empty caller chunks; "
            "the counts must match"
        )
    return RetrievalPlan([ChunkRow(t, v) for t, v in zip(caller_chunks, vecs, strict=True)])


def caller_chunk_list(value: list[Any], name: str) -> list[str]:
    """Caller-owned chunks: strings of at most ``MAX_CALLER_CHUNK_CHARS``; empty ones dropped."""
    checked = (check_chunk_text(part, f"{name}[{i}]") for i, part in enumerate(value))
    return [part for part in checked if part]


def check_chunk_text(part: Any, name: str) -> str:
    """One retrieval row's text the store does not cut: a string of at most
    ``MAX_CALLER_CHUNK_CHARS`` (see ``check_text``)."""
    if not isinstance(part, str):
        raise TypeError(f"{name} must be a string, got {type(part).__name__}")
    if len(part) > MAX_CALLER_CHUNK_CHARS:
        raise ValueError(
            f"{name} is {len(part)} characters long; a caller-owned chunk has at most "
            f"{MAX_CALLER_CHUNK_CHARS} (give a string to let the store chunk it)"
        )
    return check_text(part, name)


@dataclass
class PlannedRecord:
    """One logical record ready to be written (ids, scope, payload, retrieval rows)."""

    family: str
    record_type: str
    id: str
    content: str | None
    role: str | None
    thread_id: str | None
    user_id: str | None
    agent_id: str | None
    event_ts: str | None
    metadata_json: str | None
    status: RecordStatus
    ttl_days: int | None
    ttl_anchor: TimeToLiveAnchor
    retrieval: RetrievalPlan
    extra_json: str | None = None
    generated_id: bool = False
    blob: bytes | None = None
    """Bytes written to the blob table with the record (images)."""
    attachments: list[PlannedRecord] = field(default_factory=list)
    """Records written right after this one, in the same transaction (a message's images)."""
    actor: str | None = None
    """(Memories) Who writes it, for its history (``schema/_history``)."""
    sources: tuple[str, ...] = ()
    """(Extracted memories) The messages it came from, for its history."""


@dataclass
class WriteContext:
    """What planning needs to know about the store."""

    vector_dim: int | None
    has_vectors: bool
    chunker: Chunker
    retention: MemoryRetentionConfig
