"""What real programs written for the reference do, on every engine (issue 23): long time to
live, any store id the rule accepts, values printed as the reference prints them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from oracleagentmemory.apis import TimeToLiveAnchor
from oracleagentmemory.core import MemoryRetentionConfig


def test_any_ttl_whose_expiry_is_a_date_is_accepted(store: Any) -> None:
    store.add(["kept for centuries"], record_type="memory", record_ids="long", ttl_days=100_000)
    store.add(
        ["near the end of time"],
        record_type="memory",
        record_ids="edge",
        timestamps="9990-01-01T00:00:00+00:00",
        ttl_days=3000,
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
    )
    assert store.get("memory", "long") is not None and store.get("memory", "edge") is not None
    for days, ts in ((3_000_000, None), (4000, "9990-01-01T00:00:00+00:00"), (10**9, None)):
        kwargs: dict[str, Any] = {"ttl_days": days}
        if ts:
            kwargs.update(timestamps=ts, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)
        with pytest.raises(ValueError, match="ttl_days"):
            store.add(["too long"], record_type="memory", **kwargs)
    assert MemoryRetentionConfig(default_ttl_days=100_000).default_ttl_days == 100_000


def test_a_client_accepts_the_notebooks_ttl(make_client: Any) -> None:
    client = make_client()
    mid = client.add_memory("Renewal notes", user_id="u1", ttl_days=100_000)
    assert client.store.get("memory", mid) is not None
    year = datetime.now(UTC).year
    expires = client.store._dialect.execute(  # the stored expiry is about 274 years ahead
        f"SELECT expires_at FROM {client.store._dialect.tables.records} WHERE id = ?", [mid]
    )[0][0]
    assert (
        datetime.fromtimestamp(float(expires), UTC).year == year + 273
        or datetime.fromtimestamp(float(expires), UTC).year == year + 274
    )


@pytest.mark.parametrize("store_id", ["pg_class", "order", "user", "select", "Group_2", "a" * 16])
def test_every_store_id_the_rule_accepts_works(make_store: Any, store_id: str) -> None:
    store = make_store(memory_store_id=store_id)
    store.add(["hello"], record_type="memory", record_ids="m")
    assert store.search("hello", 1)[0][0].id == "m"


@pytest.mark.parametrize("store_id", ["sqlite_master", "SQLITE_temp", "sqlite_x"])
def test_reserved_store_ids_are_a_value_error(make_store: Any, store_id: str) -> None:
    with pytest.raises(ValueError, match=r"memory_store_id .* SQLite reserves"):
        make_store(memory_store_id=store_id)


def test_times_the_store_writes_print_as_the_reference_prints_them(client: Any) -> None:
    import re

    mid = client.add_memory("Alice likes tea", user_id="u")
    other = client.add_memory("Alice likes green tea", user_id="u")
    thread = client.create_thread(user_id="u")
    thread.add_messages([{"role": "user", "content": "hi"}])
    rel = client.link_records(mid, "memory", other, "memory", "refines")
    naive = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?$")  # UTC, no offset
    stamps = [
        client.store.get("memory", mid).timestamp,
        client.store.get("thread", thread.thread_id).timestamp,
        thread.get_messages()[0].timestamp,
        client.store.get_relation(relation_id=rel).created_at,
    ]
    for stamp in stamps:
        assert naive.match(stamp), stamp
    card = thread.get_context_card().content
    assert "+00:00" not in card
    given = client.add_memory("dated", user_id="u", timestamp="2026-01-01T12:00:00+00:00")
    assert client.store.get("memory", given).timestamp == "2026-01-01T12:00:00+00:00"


NORTHSTAR = [  # Oracle's hybrid-search notebook (oracle-ai-developer-hub), its five memories
    (
        "renewal_blocker",
        "Northstar Renewals cannot proceed with its renewal because invoice "
        "INV-48291 failed reconciliation after ORA-27102 during month-end processing. Finance must "
        "rerun the reconciliation job before the renewal can continue.",
    ),
    (
        "similar_invoice",
        "Northstar Renewals also has invoice INV-48290 marked as paid. No "
        "finance follow-up is required for that invoice.",
    ),
    (
        "milan_renewal",
        "Milan Office Supplies experienced a renewal delay because its approval "
        "workflow was waiting for a regional manager. No reconciliation error was reported.",
    ),
    (
        "error_reference",
        "ORA-27102 can indicate memory allocation pressure. Database memory "
        "settings should be checked before rerunning affected batch processing.",
    ),
    (
        "customer_alias",
        "Northstar Renewals maps to the enterprise account Northstar Renewal "
        "Services Ltd. Finance operations owns escalations for that account.",
    ),
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("INV-48291", "renewal_blocker"),
        ("ORA-27102", "error_reference"),
        ("What blocked the Northstar renewal?", "renewal_blocker"),
        ("Which issue delayed the Milan customer renewal?", "milan_renewal"),
        ("Which invoice failed reconciliation for Northstar?", "renewal_blocker"),
    ],
)
def test_the_hybrid_notebooks_cases_rank_first(
    make_client: Any, local_embedder: Any, query: str, expected: str
) -> None:
    from oracleagentmemory.apis.searchscope import SearchScope
    from oracleagentmemory.core import SearchStrategy

    client = make_client(
        embedder=local_embedder,
        search_strategy=SearchStrategy.HYBRID,
        memory_store_id="hybrid_blog",
    )
    client.add_user(user_id="finance", information="Finance user with access to renewal data.")
    client.add_agent(
        agent_id="support",
        information="Support-finance agent for invoices, "
        "reconciliation failures, and renewal blockers.",
    )
    for label, content in NORTHSTAR:
        client.add_memory(
            content,
            user_id="finance",
            agent_id="support",
            metadata={"label": label, "demo": "hybrid-search"},
        )
    results = client.search(
        query,
        scope=SearchScope(user_id="finance", agent_id="support"),
        max_results=5,
        record_types=["memory"],
    )
    assert results[0].metadata["label"] == expected, [r.metadata["label"] for r in results]
