"""Every code example of spec page 000 (the store API), run against the bundled model.

Each example is an executable contract: the value the page prints must be the value we get.
The page shows two groups of examples: the abstract ``OracleMemoryStore`` section and the
``OracleDBMemoryStore`` section. The docs run each group in one session, so besides one test per
example (fresh store each) there is one test per group that replays the group in page order on a
single store; every printed value must hold in both settings.

Page-order note: the metadata-filter examples appear in both groups with the same record ids, so
the two groups never share a store.
"""

from __future__ import annotations

from typing import Any

from oracleagentmemory.apis import PendingRecordBatch
from oracleagentmemory.apis.ttl import TimeToLiveAnchor

# --------------------------------------------------------------------------------------------
# Shared example blocks (each asserts exactly what the page prints)
# --------------------------------------------------------------------------------------------


def _example_add_batches(store: Any) -> None:
    assert store.add_batches(
        [
            PendingRecordBatch(
                texts=["pizza batch"],
                record_type="memory",
                record_ids="mem-batch-docs",
            )
        ]
    ) == ["mem-batch-docs"]


def _example_abstract_search(store: Any) -> None:
    assert store.add(
        ["Searchable abstract memory"],
        record_type="memory",
        record_ids="mem-search-abstract-docs",
    ) == ["mem-search-abstract-docs"]
    assert (
        store.search("Searchable", 1, record_types={"memory"})[0][0].id
        == "mem-search-abstract-docs"
    )


def _example_metadata_filters(store: Any) -> None:
    # Scalar metadata value.
    assert store.add(
        ["pizza release"],
        record_type="memory",
        record_ids="mem-search-meta-source-docs",
        metadata={"source": "slack"},
    ) == ["mem-search-meta-source-docs"]
    assert (
        any(
            record.id == "mem-search-meta-source-docs"
            for record, _ in store.search(
                "pizza",
                k=3,
                metadata_filter={"source": "slack"},
            )
        )
        is True
    )

    # Nested metadata.
    assert store.add(
        ["pizza review"],
        record_type="memory",
        record_ids="mem-search-meta-review-docs",
        metadata={"review": {"status": "open"}},
    ) == ["mem-search-meta-review-docs"]
    assert (
        any(
            record.id == "mem-search-meta-review-docs"
            for record, _ in store.search(
                "pizza",
                k=3,
                metadata_filter={"review": {"status": "open"}},
            )
        )
        is True
    )

    # Exact list value, order included.
    assert store.add(
        ["pizza tags"],
        record_type="memory",
        record_ids="mem-search-meta-tags-docs",
        metadata={"tags": ["prod", "urgent"]},
    ) == ["mem-search-meta-tags-docs"]
    assert (
        any(
            record.id == "mem-search-meta-tags-docs"
            for record, _ in store.search(
                "pizza",
                k=3,
                metadata_filter={"tags": ["prod", "urgent"]},
            )
        )
        is True
    )

    # Array membership.
    assert (
        any(
            record.id == "mem-search-meta-tags-docs"
            for record, _ in store.search(
                "pizza",
                k=3,
                metadata_filter={"tags": {"$array_contains": "prod"}},
            )
        )
        is True
    )

    # Several conditions: a record must satisfy every key.
    assert store.add(
        ["pizza rollout"],
        record_type="memory",
        record_ids="mem-search-meta-combined-docs",
        metadata={
            "source": "slack",
            "review": {"status": "open"},
            "tags": ["prod", "urgent"],
        },
    ) == ["mem-search-meta-combined-docs"]
    assert (
        any(
            record.id == "mem-search-meta-combined-docs"
            for record, _ in store.search(
                "pizza",
                k=5,
                metadata_filter={
                    "source": "slack",
                    "review": {"status": "open"},
                    "tags": ["prod", "urgent"],
                },
            )
        )
        is True
    )


def _example_db_add(store: Any) -> None:
    assert store.add(
        ["Index this stored text"],
        record_type="memory",
        record_ids="mem-db-add-docs",
    ) == ["mem-db-add-docs"]
    assert store.add(
        ["Stored text"],
        record_type="memory",
        index_texts=["Search this text"],
        record_ids="mem-db-index-text-docs",
    ) == ["mem-db-index-text-docs"]
    assert store.add(
        ["Short-lived event"],
        record_type="memory",
        record_ids="mem-db-ttl-docs",
        timestamps="2026-01-01T12:00:00+00:00",
        ttl_days=7,
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
    ) == ["mem-db-ttl-docs"]


def _example_add_agent(store: Any) -> None:
    assert store.add_agent("a-docs-agent", "Support assistant") == "a-docs-agent"


def _example_add_user(store: Any) -> None:
    assert store.add_user("u-docs-profile", "Prefers concise answers.") == "u-docs-profile"


def _example_delete(store: Any) -> None:
    assert store.add(["Delete me"], record_type="memory", record_ids="mem-delete-docs") == [
        "mem-delete-docs"
    ]
    assert store.delete("memory", "mem-delete-docs") == 1


def _example_delete_thread(store: Any) -> None:
    assert store.delete_thread("c1") == 0


def _example_get(store: Any) -> None:
    assert store.add(["Remember this"], record_type="memory", record_ids="mem-get-docs") == [
        "mem-get-docs"
    ]
    assert store.get("memory", "mem-get-docs").id == "mem-get-docs"


def _example_list(store: Any) -> None:
    assert store.add(
        ["First listed", "Second listed"],
        record_type="memory",
        record_ids=["mem-list-docs-1", "mem-list-docs-2"],
    ) == ["mem-list-docs-1", "mem-list-docs-2"]
    assert [record.id for record in store.list("memory", limit=2)] == [
        "mem-list-docs-1",
        "mem-list-docs-2",
    ]
    assert store.add_user("u-list-docs", "Prefers concise answers.") == "u-list-docs"
    assert (
        any(
            record.id == "u-list-docs"
            for record in store.list("user_profile", user_id=None, limit=10)
        )
        is True
    )


def _example_list_thread_messages(store: Any) -> None:
    assert store.list_thread_messages("c1") == []


def _example_db_search(store: Any) -> None:
    assert store.add(
        ["pizza preference"],
        record_type="memory",
        record_ids="mem-search-docs",
        thread_ids="c-search-docs",
    ) == ["mem-search-docs"]
    results = store.search(
        "pizza",
        1,
        thread_id="c-search-docs",
        exact_thread_match=True,
        record_types={"memory"},
    )
    assert results[0][0].id == "mem-search-docs"


def _example_update(store: Any) -> None:
    assert store.add(["Original note"], record_type="memory", record_ids="mem-update-docs") == [
        "mem-update-docs"
    ]
    assert store.update("memory", "mem-update-docs", text="Updated note") == 1
    assert store.get("memory", "mem-update-docs").content == "Updated note"


# --------------------------------------------------------------------------------------------
# One test per example (fresh store each)
# --------------------------------------------------------------------------------------------


def test_add_batches_example(spec_store: Any) -> None:
    _example_add_batches(spec_store)


def test_abstract_search_example(spec_store: Any) -> None:
    _example_abstract_search(spec_store)


def test_search_metadata_filter_examples(spec_store: Any) -> None:
    _example_metadata_filters(spec_store)


def test_db_add_examples(spec_store: Any) -> None:
    _example_db_add(spec_store)


def test_add_agent_example(spec_store: Any) -> None:
    _example_add_agent(spec_store)


def test_add_user_example(spec_store: Any) -> None:
    _example_add_user(spec_store)


def test_delete_example(spec_store: Any) -> None:
    _example_delete(spec_store)


def test_delete_thread_example(spec_store: Any) -> None:
    _example_delete_thread(spec_store)


def test_get_example(spec_store: Any) -> None:
    _example_get(spec_store)


def test_list_example(spec_store: Any) -> None:
    _example_list(spec_store)


def test_list_thread_messages_example(spec_store: Any) -> None:
    _example_list_thread_messages(spec_store)


def test_db_search_example(spec_store: Any) -> None:
    _example_db_search(spec_store)


def test_update_example(spec_store: Any) -> None:
    _example_update(spec_store)


# --------------------------------------------------------------------------------------------
# Each group replayed in page order on one store (the docs' single session)
# --------------------------------------------------------------------------------------------


def test_abstract_store_examples_in_page_order(spec_store: Any) -> None:
    _example_add_batches(spec_store)
    _example_abstract_search(spec_store)
    _example_metadata_filters(spec_store)


def test_db_store_examples_in_page_order(spec_store: Any) -> None:
    _example_db_add(spec_store)
    _example_add_agent(spec_store)
    _example_add_batches(spec_store)
    _example_add_user(spec_store)
    _example_delete(spec_store)
    _example_delete_thread(spec_store)
    _example_get(spec_store)
    # list(limit=2) returns the two NEWEST memories: the two just added, even though the
    # session already holds other memories.
    _example_list(spec_store)
    _example_list_thread_messages(spec_store)
    _example_db_search(spec_store)
    _example_metadata_filters(spec_store)
    _example_update(spec_store)


# --------------------------------------------------------------------------------------------
# Async twins: same arguments, same printed values
# --------------------------------------------------------------------------------------------


async def test_add_async_example(spec_store: Any) -> None:
    assert await spec_store.add_async(
        ["Index this stored text"],
        record_type="memory",
        record_ids="mem-db-add-docs",
    ) == ["mem-db-add-docs"]
    assert await spec_store.add_async(
        ["Stored text"],
        record_type="memory",
        index_texts=["Search this text"],
        record_ids="mem-db-index-text-docs",
    ) == ["mem-db-index-text-docs"]
    assert await spec_store.add_async(
        ["Short-lived event"],
        record_type="memory",
        record_ids="mem-db-ttl-docs",
        timestamps="2026-01-01T12:00:00+00:00",
        ttl_days=7,
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
    ) == ["mem-db-ttl-docs"]
    assert spec_store.get("memory", "mem-db-add-docs").content == "Index this stored text"
    assert spec_store.get("memory", "mem-db-index-text-docs").content == "Stored text"


async def test_add_batches_async_example(spec_store: Any) -> None:
    assert await spec_store.add_batches_async(
        [
            PendingRecordBatch(
                texts=["pizza batch"],
                record_type="memory",
                record_ids="mem-batch-docs",
            )
        ]
    ) == ["mem-batch-docs"]
    assert spec_store.get("memory", "mem-batch-docs").content == "pizza batch"


async def test_search_async_example(spec_store: Any) -> None:
    assert await spec_store.add_async(
        ["Searchable abstract memory"],
        record_type="memory",
        record_ids="mem-search-abstract-docs",
    ) == ["mem-search-abstract-docs"]
    results = await spec_store.search_async("Searchable", 1, record_types={"memory"})
    assert results[0][0].id == "mem-search-abstract-docs"

    assert await spec_store.add_async(
        ["pizza preference"],
        record_type="memory",
        record_ids="mem-search-docs",
        thread_ids="c-search-docs",
    ) == ["mem-search-docs"]
    results = await spec_store.search_async(
        "pizza",
        1,
        thread_id="c-search-docs",
        exact_thread_match=True,
        record_types={"memory"},
    )
    assert results[0][0].id == "mem-search-docs"

    assert await spec_store.add_async(
        ["pizza tags"],
        record_type="memory",
        record_ids="mem-search-meta-tags-docs",
        metadata={"tags": ["prod", "urgent"]},
    ) == ["mem-search-meta-tags-docs"]
    results = await spec_store.search_async(
        "pizza", k=3, metadata_filter={"tags": {"$array_contains": "prod"}}
    )
    assert any(record.id == "mem-search-meta-tags-docs" for record, _ in results) is True


async def test_add_user_async_example(spec_store: Any) -> None:
    assert (
        await spec_store.add_user_async("u-docs-profile", "Prefers concise answers.")
        == "u-docs-profile"
    )
    assert spec_store.get("user_profile", "u-docs-profile").content == "Prefers concise answers."


async def test_add_agent_async_example(spec_store: Any) -> None:
    assert await spec_store.add_agent_async("a-docs-agent", "Support assistant") == "a-docs-agent"
    assert spec_store.get("agent_profile", "a-docs-agent").content == "Support assistant"


async def test_get_async_example(spec_store: Any) -> None:
    assert await spec_store.add_async(
        ["Remember this"], record_type="memory", record_ids="mem-get-docs"
    ) == ["mem-get-docs"]
    record = await spec_store.get_async("memory", "mem-get-docs")
    assert record.id == "mem-get-docs"
    assert await spec_store.get_async("memory", "mem-get-docs-missing") is None


async def test_list_async_example(spec_store: Any) -> None:
    assert await spec_store.add_async(
        ["First listed", "Second listed"],
        record_type="memory",
        record_ids=["mem-list-docs-1", "mem-list-docs-2"],
    ) == ["mem-list-docs-1", "mem-list-docs-2"]
    records = await spec_store.list_async("memory", limit=2)
    assert [record.id for record in records] == ["mem-list-docs-1", "mem-list-docs-2"]
    assert await spec_store.add_user_async("u-list-docs", "Prefers concise answers.") == (
        "u-list-docs"
    )
    profiles = await spec_store.list_async("user_profile", user_id=None, limit=10)
    assert any(record.id == "u-list-docs" for record in profiles) is True


async def test_update_async_example(spec_store: Any) -> None:
    assert await spec_store.add_async(
        ["Original note"], record_type="memory", record_ids="mem-update-docs"
    ) == ["mem-update-docs"]
    assert await spec_store.update_async("memory", "mem-update-docs", text="Updated note") == 1
    record = await spec_store.get_async("memory", "mem-update-docs")
    assert record.content == "Updated note"


async def test_delete_async_example(spec_store: Any) -> None:
    assert await spec_store.add_async(
        ["Delete me"], record_type="memory", record_ids="mem-delete-docs"
    ) == ["mem-delete-docs"]
    assert await spec_store.delete_async("memory", "mem-delete-docs") == 1
    assert spec_store.get("memory", "mem-delete-docs") is None


async def test_delete_thread_async_example(spec_store: Any) -> None:
    assert await spec_store.delete_thread_async("c1") == 0


async def test_list_thread_messages_async_example(spec_store: Any) -> None:
    assert await spec_store.list_thread_messages_async("c1") == []
