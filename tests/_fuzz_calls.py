"""The fuzz suite's catalogue: every public store, client and thread method, with hypothesis
strategies that mix plausible arguments with hostile ones (NUL, lone surrogates, huge
integers, non-finite floats, deep or cyclic metadata, wrong types, case-variant ids)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis.batch import PendingRecordBatch
from oracleagentmemory.core.store._extraction import SummaryWrite

from ._embedders import HashingEmbedder

OMIT: Any = object()
"""Marks an argument the call leaves out."""

DIM = 16

# ---------------------------------------------------------------------------- values

IDS = ["a", "b", "A", "m1", "u1", "u2", "a1", "t1", "t2", "img"]
MEMORY_IDS = st.sampled_from(["m1", "a", "b", "tm"])
"""Memories every program starts with (see test_fuzz.py), so links can succeed and fail."""
TYPES = [
    "memory",
    "fact",
    "preference",
    "guideline",
    "message",
    "user_profile",
    "agent_profile",
    "thread",
    "image",
    "thread_summary",
    "bogus",
    "MEMORY",
]


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def _cyclic() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


def mostly(good: Any, bad: Any) -> Any:
    """``good`` four times out of five, else ``bad``: deep paths stay reachable."""
    return st.integers(0, 9).flatmap(lambda i: good if i < 8 else bad)


RECORD_TYPE = mostly(
    st.sampled_from(["memory", "fact", "preference", "guideline", "message"]),
    st.sampled_from(TYPES),
)
MEMORY_TYPE = mostly(
    st.sampled_from(["memory", "fact", "preference", "guideline"]), st.sampled_from(TYPES)
)

HOSTILE_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",
        "x\udfff",
        "é漢字🙂",
        "x" * 300,
        "DROP TABLE x;--",
        "' OR 1=1 --",
        '"quoted"',
        "\\",
        "%s",
        "?",
    ]
)
TEXT = mostly(
    st.one_of(
        st.sampled_from(["pizza", "tea and toast", "user likes green tea", "moved to Paris"]),
        st.text(max_size=40),
    ),
    HOSTILE_TEXT,
)
LONG = st.sampled_from(["w" * 40_000, ",".join(f"t{i}" for i in range(8_000))])
ID = mostly(st.sampled_from(IDS), st.one_of(HOSTILE_TEXT, st.text(max_size=8)))
HOSTILE_INT = st.sampled_from([0, -1, 2**31, 2**63, 2**64, 10**30, -(2**63) - 1, True, False])
INT = mostly(st.integers(0, 12), HOSTILE_INT)
FLOAT = st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, 1e-320, 0.5, -0.0])
JUNK = st.one_of(
    st.none(),
    FLOAT,
    st.just(b"bytes"),
    st.just(object()),
    st.just({1, 2}),
    st.just((1, 2)),
    st.just([]),
    st.just({}),
)

SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), TEXT, HOSTILE_INT, FLOAT)
METADATA = mostly(
    st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(["tag", "n", "x", "k"]), SCALAR, max_size=3),
        st.dictionaries(
            st.sampled_from(["tags"]),
            st.lists(st.sampled_from(["a", "b"]), max_size=3),
            max_size=1,
        ),
    ),
    st.one_of(
        st.sampled_from(
            [
                _deep(33),
                _deep(3),
                {1: "non-str key"},
                {"blob": "x" * 300_000},
                {"n": 2**64},
                {"\x00": 1},
                {"s": {1, 2}},
                {"v": float("nan")},
            ]
        ),
        st.builds(_cyclic),
        JUNK,
    ),
)
FILTER = mostly(
    st.one_of(
        st.none(),
        st.dictionaries(st.sampled_from(["tag", "n", "tags"]), SCALAR, max_size=2),
        st.sampled_from([{"tags": {"$array_contains": "a"}}, {"n": {"$not": 1}}]),
    ),
    st.one_of(
        st.sampled_from(
            [{"$bad": 1}, {"tags": {"$array_contains_any": []}}, {"x": "\x00"}, _deep(40), "s"]
        ),
        JUNK,
    ),
)
TIMESTAMP = mostly(
    st.one_of(st.none(), st.sampled_from(["2024-01-01T00:00:00", "2024-01-01T00:00:00+02:00"])),
    st.one_of(
        st.sampled_from(
            [
                "9999-12-31T23:59:59",
                "0001-01-01T00:00:00+05:00",
                "not a date",
                "2024-13-01",
                "\x00",
            ]
        ),
        JUNK,
    ),
)
TTL = mostly(
    st.one_of(st.none(), st.integers(1, 40)), st.one_of(HOSTILE_INT, st.just(36_500), JUNK)
)
ANCHOR = mostly(
    st.sampled_from(["created_at", "timestamp", "CREATED_AT"]), st.one_of(st.just("x"), JUNK)
)
STATUS = mostly(st.sampled_from(["valid", "invalid"]), st.one_of(st.just("nope"), JUNK))


@st.composite
def vector(draw: Any) -> Any:
    kind = draw(
        mostly(
            st.just("ok"),
            st.sampled_from(["zero", "nan", "huge", "tiny", "short", "nested", "empty", "junk"]),
        )
    )
    base = draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=DIM, max_size=DIM))
    if kind == "ok":
        return base if any(base) else [1.0] * DIM
    return {
        "zero": [0.0] * DIM,
        "nan": [float("nan")] * DIM,
        "huge": [1e20] * DIM,
        "tiny": [1e-30] * DIM,
        "short": [1.0] * (DIM - 1),
        "nested": [[1.0] * DIM],
        "empty": [],
        "junk": "vector",
    }[kind]


def listish(inner: Any) -> Any:
    return st.one_of(inner, st.lists(inner, max_size=3))


# ---------------------------------------------------------------------------- calls


@dataclass(frozen=True, repr=False)
class Method:
    target: str  # "store", "client" or "thread"
    name: str
    args: dict[str, Any]
    raises: tuple[type[BaseException], ...] = ()
    """Documented exceptions beyond ValueError / TypeError."""

    def __repr__(self) -> str:
        return f"{self.target}.{self.name}"


@st.composite
def batches(draw: Any) -> Any:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        out.append(
            PendingRecordBatch(
                contents=draw(st.lists(st.one_of(TEXT, st.none()), max_size=3)),
                record_type=draw(st.sampled_from(TYPES)),
                record_ids=draw(st.one_of(st.just(NOT_SET_MARKER), listish(ID))),
                user_ids=draw(st.one_of(st.none(), ID)),
                thread_ids=draw(st.one_of(st.none(), ID)),
                metadata=draw(METADATA),
            )
        )
    return draw(mostly(st.just(out), JUNK))


RELATION = st.fixed_dictionaries(
    {
        "source_record_ids": ID,
        "source_record_types": st.sampled_from(TYPES),
        "target_record_ids": ID,
        "target_record_types": st.sampled_from(TYPES),
        "relation_types": st.one_of(st.sampled_from(["supports", "supersedes", "custom"]), TEXT),
    },
    optional={"allow_cross_user": mostly(st.booleans(), JUNK), "metadata": METADATA},
)

IMAGE = mostly(
    st.sampled_from([b"\x89PNG\r\n\x1a\n" + b"0" * 32, b"\xff\xd8\xff" + b"1" * 32]),
    st.one_of(st.sampled_from([b"", b"x" * 40]), JUNK),
)
MIME = mostly(
    st.sampled_from(["image/png", "image/jpeg"]),
    st.one_of(st.sampled_from(["text/plain", "\x00"]), JUNK),
)

S = "store"
C = "client"
T = "thread"
KEY = (KeyError,)

METHODS: list[Method] = [
    # ------------------------------------------------------------------ store
    Method(
        S,
        "add",
        {
            "contents": mostly(st.lists(st.one_of(TEXT, st.none(), LONG), max_size=3), JUNK),
            "record_type": RECORD_TYPE,
            "record_ids": listish(st.one_of(ID, st.none())),
            "user_ids": listish(st.one_of(ID, st.none())),
            "agent_ids": st.one_of(ID, st.none()),
            "thread_ids": st.one_of(ID, st.none()),
            "roles": listish(st.one_of(st.sampled_from(["user", "assistant"]), HOSTILE_TEXT)),
            "index_texts": st.one_of(
                st.lists(st.one_of(TEXT, st.lists(TEXT, max_size=3), st.none()), max_size=3), JUNK
            ),
            "embeddings": mostly(st.lists(st.one_of(vector(), st.none()), max_size=3), JUNK),
            "metadata": st.one_of(METADATA, st.lists(METADATA, max_size=3)),
            "timestamps": listish(TIMESTAMP),
            "ttl_days": listish(TTL),
            "ttl_anchor": ANCHOR,
            "statuses": listish(STATUS),
            "batch_size": INT,
        },
    ),
    Method(S, "add_batches", {"batches": batches()}),
    Method(
        S,
        "add_with_relations",
        {"batches": batches(), "relations": mostly(st.lists(RELATION, max_size=2), JUNK)},
        KEY,
    ),
    Method(S, "add_user", {"user_id": ID, "information": TEXT, "metadata": METADATA}),
    Method(S, "add_agent", {"agent_id": ID, "information": TEXT, "metadata": METADATA}),
    Method(S, "get", {"record_type": RECORD_TYPE, "record_id": ID}),
    Method(
        S,
        "list",
        {
            "record_type": RECORD_TYPE,
            "limit": st.one_of(INT, st.none()),
            "user_id": st.one_of(ID, st.none()),
            "thread_id": st.one_of(ID, st.none()),
            "metadata_filter": FILTER,
            "record_id": ID,
        },
    ),
    Method(
        S,
        "list_records",
        {
            "record_types": mostly(st.lists(st.sampled_from(TYPES), max_size=3), JUNK),
            "limit": INT,
            "agent_id": st.one_of(ID, st.none()),
        },
    ),
    Method(
        S,
        "list_thread_messages",
        {
            "thread_id": ID,
            "last_n": st.one_of(INT, st.none()),
            "range_start_seq_no": st.one_of(INT, st.none()),
            "range_end_seq_no": st.one_of(INT, st.none()),
        },
    ),
    Method(
        S,
        "search",
        {
            "query": st.one_of(TEXT, st.none()),
            "k": INT,
            "query_vector": st.one_of(st.none(), vector()),
            "user_id": st.one_of(ID, st.none()),
            "thread_id": st.one_of(ID, st.none()),
            "exact_user_match": mostly(st.booleans(), JUNK),
            "exact_thread_match": st.booleans(),
            "record_types": mostly(
                st.one_of(st.none(), st.sets(st.sampled_from(TYPES), max_size=3)), JUNK
            ),
            "metadata_filter": FILTER,
            "num_hops": INT,
            "max_linked_results": INT,
            "include_invalid_results": mostly(st.booleans(), JUNK),
        },
    ),
    Method(
        S,
        "update",
        {
            "record_type": RECORD_TYPE,
            "record_id": ID,
            "text": st.one_of(TEXT, st.none(), LONG),
            "index_text": st.one_of(TEXT, st.none(), st.lists(TEXT, max_size=2)),
            "embedding": st.one_of(st.none(), vector()),
            "metadata": METADATA,
            "timestamp": TIMESTAMP,
            "ttl_days": TTL,
            "ttl_anchor": ANCHOR,
            "status": STATUS,
        },
    ),
    Method(
        S,
        "delete",
        {
            "record_type": RECORD_TYPE,
            "record_id": ID,
            "cascade": mostly(st.booleans(), JUNK),
        },
    ),
    Method(S, "delete_thread", {"thread_id": ID}),
    Method(S, "purge_expired", {}),
    Method(S, "sync_search_index", {}),
    Method(
        S,
        "add_relations",
        {
            "source_record_ids": listish(ID),
            "source_record_types": listish(st.sampled_from(TYPES)),
            "target_record_ids": listish(ID),
            "target_record_types": listish(st.sampled_from(TYPES)),
            "relation_types": listish(st.one_of(st.sampled_from(["supports", "custom"]), TEXT)),
            "relation_ids": listish(st.one_of(ID, st.none())),
            "metadata": METADATA,
            "timestamps": TIMESTAMP,
            "allow_cross_user": mostly(st.booleans(), JUNK),
        },
    ),
    Method(S, "get_relation", {"relation_id": ID, "source_record_id": ID}),
    Method(
        S,
        "list_relations",
        {
            "relation_type": TEXT,
            "source_record_id": ID,
            "limit": st.one_of(INT, st.none()),
            "metadata_filter": FILTER,
        },
    ),
    Method(
        S,
        "update_relations",
        {
            "relation_ids": listish(ID),
            "relation_types": TEXT,
            "metadata": METADATA,
            "timestamps": TIMESTAMP,
        },
    ),
    Method(S, "delete_relations", {"relation_ids": listish(ID)}),
    Method(
        S,
        "create_thread_record",
        {
            "thread_id": ID,
            "user_id": st.one_of(ID, st.none()),
            "agent_id": st.one_of(ID, st.none()),
            "metadata": METADATA,
            "runtime_config": METADATA,
        },
    ),
    Method(
        S,
        "update_thread_record",
        {
            "thread_id": ID,
            "metadata": METADATA,
            "runtime_config": METADATA,
            "runtime_state": METADATA,
        },
    ),
    Method(
        S,
        "add_image",
        {
            "image": IMAGE,
            "mime_type": MIME,
            "description": TEXT,
            "image_id": st.one_of(ID, st.none()),
            "thread_id": st.one_of(ID, st.none()),
            "metadata": METADATA,
            "require_thread": st.one_of(ID, st.none()),
        },
        KEY,
    ),
    Method(S, "update_image_payload", {"image_id": ID, "image": IMAGE, "mime_type": MIME}),
    # The extraction bookkeeping the background worker drives (public store methods too).
    Method(
        S,
        "add_messages_with_work",
        {
            "batch": st.builds(
                PendingRecordBatch,
                contents=st.lists(TEXT, min_size=1, max_size=2),
                record_type=st.just("message"),
                thread_ids=st.just("t1"),
                roles=st.just("user"),
            ),
            "thread_id": ID,
            "extract_every": st.one_of(st.none(), INT),
            "summarize_every": st.one_of(st.none(), INT),
            "payload": METADATA,
            "owner": ID,
        },
        KEY,
    ),
    Method(
        S,
        "commit_extraction",
        {
            "batches": batches(),
            "thread_id": st.one_of(st.none(), ID),
            "done_work_id": st.one_of(st.none(), ID),
            "merged_sources": st.one_of(st.none(), st.dictionaries(MEMORY_IDS, st.lists(ID))),
        },
    ),
    Method(
        S,
        "save_thread_summary",
        {
            "summary": st.builds(
                SummaryWrite,
                thread_id=ID,
                user_id=st.one_of(st.none(), ID),
                agent_id=st.one_of(st.none(), ID),
                summary=TEXT,
                topics=st.tuples(TEXT),
                covered_through_seq_no=INT,
            )
        },
    ),
    Method(S, "memory_sources", {"memory_ids": mostly(st.lists(MEMORY_IDS), JUNK)}),
    Method(S, "delete_message_cascade", {"thread_id": ID, "message_id": ID}),
    Method(S, "list_pending_work", {}),
    Method(
        S,
        "claim_pending_work",
        {"work_id": ID, "expected_owner": st.one_of(st.none(), ID), "owner": ID},
    ),
    Method(S, "retry_pending_work", {"work_id": ID}),
    Method(S, "finish_pending_work", {"work_id": ID}),
    Method(
        S,
        "reembed",
        {
            "embedder": mostly(st.builds(HashingEmbedder, st.sampled_from([8, 16])), JUNK),
            "batch_size": INT,
        },
    ),
    Method(
        S,
        "expand_links",
        {
            "records": st.just([]),
            "num_hops": INT,
            "max_linked_results": INT,
            "include_invalid": st.booleans(),
        },
    ),
    # ------------------------------------------------------------------ client
    Method(C, "add_user", {"user_id": ID, "information": TEXT, "metadata": METADATA}),
    Method(C, "add_agent", {"agent_id": ID, "information": TEXT, "metadata": METADATA}),
    Method(C, "list_users", {"metadata_filter": FILTER, "limit": st.one_of(INT, st.none())}),
    Method(C, "list_agents", {"metadata_filter": FILTER, "limit": st.one_of(INT, st.none())}),
    Method(C, "delete_user", {"user_id": ID, "cascade": mostly(st.booleans(), JUNK)}),
    Method(C, "delete_agent", {"agent_id": ID}),
    Method(
        C,
        "add_memory",
        {
            "content": mostly(TEXT, st.one_of(LONG, JUNK)),
            "memory_type": MEMORY_TYPE,
            "user_id": st.one_of(ID, st.none()),
            "thread_id": st.one_of(ID, st.none()),
            "memory_id": ID,
            "metadata": METADATA,
            "timestamp": TIMESTAMP,
            "ttl_days": TTL,
            "ttl_anchor": ANCHOR,
            "status": STATUS,
            "memory_id_to_link": mostly(MEMORY_IDS, ID),
            "link_type": mostly(st.sampled_from(["supports", "supersedes"]), TEXT),
            "link_id": ID,
            "link_metadata": METADATA,
            "autonomous_linking": mostly(st.just(False), st.just(True)),
            "allow_cross_user": mostly(st.booleans(), JUNK),
        },
        (NotImplementedError,),
    ),
    Method(
        C,
        "update_memory",
        {
            "memory_id": ID,
            "content": TEXT,
            "metadata": METADATA,
            "timestamp": TIMESTAMP,
            "ttl_days": TTL,
            "ttl_anchor": ANCHOR,
            "status": STATUS,
        },
        KEY,
    ),
    Method(C, "delete_memory", {"memory_id": ID}),
    Method(
        C,
        "list_memories",
        {
            "user_id": st.one_of(ID, st.none()),
            "metadata_filter": FILTER,
            "limit": st.one_of(INT, st.none()),
        },
    ),
    Method(
        C,
        "list_messages",
        {"thread_id": st.one_of(ID, st.none()), "limit": st.one_of(INT, st.none())},
    ),
    Method(
        C,
        "create_thread",
        {
            "thread_id": ID,
            "user_id": st.one_of(ID, st.none()),
            "agent_id": st.one_of(ID, st.none()),
            "metadata": METADATA,
            "context_card_token_limit": INT,
        },
    ),
    Method(C, "get_thread", {"thread_id": ID}, KEY),
    Method(
        C,
        "update_thread",
        {"thread_id": ID, "metadata": METADATA, "memory_extraction_custom_instructions": TEXT},
        KEY,
    ),
    Method(
        C,
        "list_threads",
        {
            "user_id": st.one_of(ID, st.none()),
            "metadata_filter": FILTER,
            "limit": st.one_of(INT, st.none()),
        },
    ),
    Method(C, "delete_thread", {"thread_id": ID}),
    Method(
        C,
        "search",
        {
            "query": mostly(TEXT, st.one_of(LONG, JUNK)),
            "user_id": st.one_of(ID, st.none()),
            "thread_id": st.one_of(ID, st.none()),
            "exact_user_match": st.booleans(),
            "max_results": INT,
            "token_budget": INT,
            "soft_token_budget": INT,
            "record_types": mostly(st.lists(st.sampled_from(TYPES), max_size=2), JUNK),
            "metadata_filter": FILTER,
            "num_hops": INT,
            "max_linked_results": INT,
            "include_invalid_results": st.booleans(),
        },
    ),
    Method(
        C,
        "link_records",
        {
            "source_record_id": ID,
            "source_record_type": st.sampled_from(TYPES),
            "target_record_id": ID,
            "target_record_type": st.sampled_from(TYPES),
            "relation_type": mostly(st.sampled_from(["supports", "custom"]), mostly(TEXT, JUNK)),
            "relation_id": mostly(ID, JUNK),
            "metadata": METADATA,
            "timestamp": TIMESTAMP,
            "allow_cross_user": mostly(st.booleans(), JUNK),
        },
    ),
    Method(
        C,
        "update_record_link",
        {
            "relation_id": mostly(ID, JUNK),
            "relation_type": TEXT,
            "metadata": METADATA,
            "timestamp": TIMESTAMP,
        },
    ),
    Method(C, "delete_record_link", {"relation_id": mostly(ID, JUNK), "source_record_id": ID}),
    Method(
        C,
        "add_image",
        {
            "image": IMAGE,
            "description": st.one_of(TEXT, st.none()),
            "mime_type": MIME,
            "image_id": ID,
            "user_id": st.one_of(ID, st.none()),
            "metadata": METADATA,
            "ttl_days": TTL,
        },
    ),
    Method(
        C,
        "list_images",
        {
            "image_id": ID,
            "include_bytes": mostly(st.booleans(), JUNK),
            "limit": st.one_of(INT, st.none()),
        },
    ),
    Method(
        C,
        "update_image",
        {
            "image_id": ID,
            "image": IMAGE,
            "description": st.one_of(TEXT, st.none()),
            "mime_type": MIME,
            "metadata": METADATA,
        },
        (KeyError, NotImplementedError),
    ),
    Method(C, "delete_image", {"image_id": ID}),
    Method(C, "wait_for_memory_extraction", {"timeout": st.one_of(st.none(), FLOAT, INT, JUNK)}),
    Method(C, "get_memory_extraction_stats", {}),
    # ------------------------------------------------------------------ thread
    Method(
        T,
        "add_messages",
        {
            "messages": st.one_of(
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "role": st.one_of(st.sampled_from(["user", "assistant"]), HOSTILE_TEXT),
                            "content": mostly(TEXT, st.one_of(LONG, JUNK)),
                        },
                        optional={"id": ID, "metadata": METADATA, "timestamp": TIMESTAMP},
                    ),
                    max_size=3,
                ),
                JUNK,
            ),
            "metadata": METADATA,
            "ttl_days": TTL,
            "ttl_anchor": ANCHOR,
        },
        KEY,
    ),
    Method(
        T, "get_messages", {"start": st.one_of(INT, st.none()), "end": st.one_of(INT, st.none())}
    ),
    Method(T, "get_message", {"message_id": ID}, KEY),
    Method(T, "delete_message", {"message_id": ID}),
    Method(
        T,
        "add_memory",
        {
            "content": mostly(TEXT, JUNK),
            "memory_type": MEMORY_TYPE,
            "memory_id": ID,
            "metadata": METADATA,
            "ttl_days": TTL,
            "memory_id_to_link": mostly(MEMORY_IDS, ID),
            "link_type": st.sampled_from(["supports", "nope"]),
        },
        (KeyError, NotImplementedError),
    ),
    Method(
        T,
        "update_memory",
        {"memory_id": ID, "content": TEXT, "metadata": METADATA, "ttl_anchor": ANCHOR},
        KEY,
    ),
    Method(
        T,
        "update_message",
        {"message_id": ID, "content": mostly(TEXT, JUNK), "metadata": METADATA, "ttl_days": TTL},
        KEY,
    ),
    Method(T, "delete_memory", {"memory_id": ID}),
    Method(
        T,
        "add_image",
        {
            "image": IMAGE,
            "description": st.one_of(TEXT, st.none()),
            "mime_type": MIME,
            "metadata": METADATA,
        },
        KEY,
    ),
    Method(T, "list_images", {"image_id": ID, "limit": st.one_of(INT, st.none())}),
    Method(
        T,
        "update_image",
        {"image_id": ID, "description": TEXT, "metadata": METADATA},
        (KeyError, NotImplementedError),
    ),
    Method(T, "delete_image", {"image_id": ID}),
    Method(
        T,
        "link_records",
        {
            "source_record_id": ID,
            "source_record_type": st.sampled_from(TYPES),
            "target_record_id": ID,
            "target_record_type": st.sampled_from(TYPES),
            "relation_type": st.sampled_from(["supports", "refines"]),
        },
    ),
    Method(T, "update_record_link", {"relation_id": ID, "metadata": METADATA}),
    Method(T, "delete_record_link", {"relation_id": ID}),
    Method(
        T,
        "search",
        {
            "query": mostly(TEXT, JUNK),
            "max_results": INT,
            "num_hops": INT,
            "metadata_filter": FILTER,
            "thread_id": st.one_of(ID, st.none()),
            "exact_thread_match": st.booleans(),
            "token_budget": INT,
        },
    ),
    Method(
        T,
        "get_context_card",
        {
            "fallback_message_count": INT,
            "max_relevant_results": INT,
            "max_recent_messages": INT,
            "except_last_messages": INT,
            "token_budget": st.one_of(INT, st.none()),
            "metadata_filter": FILTER,
        },
    ),
    Method(T, "get_summary", {"except_last": INT, "token_budget": INT}),
    Method(T, "setting", {"name": mostly(st.sampled_from(["search_config", "llm"]), TEXT)}),
    Method(T, "wait_for_memory_extraction", {"timeout": st.one_of(st.none(), FLOAT, JUNK)}),
]


def _required(method: Method) -> frozenset[str]:
    from oracleagentmemory.core import OracleAgentMemory
    from oracleagentmemory.core.store._sql_store import SQLMemoryStore
    from oracleagentmemory.core.thread import OracleThread

    cls = {"store": SQLMemoryStore, "client": OracleAgentMemory, "thread": OracleThread}
    params = inspect.signature(getattr(cls[method.target], method.name)).parameters.values()
    return frozenset(
        p.name
        for p in params
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name != "self"
    )


REQUIRED = {(m.target, m.name): _required(m) for m in METHODS}


@st.composite
def calls(draw: Any) -> tuple[Method, dict[str, Any]]:
    """One method and the keyword arguments to call it with: required ones nearly always
    given, optional ones given three times out of five."""
    method = draw(st.sampled_from(METHODS))
    kwargs = {}
    for name, strategy in method.args.items():
        keep = 39 if name in REQUIRED[method.target, method.name] else 24
        if draw(st.integers(0, 39)) < keep:
            kwargs[name] = draw(strategy)
    return method, kwargs
