"""End-to-end tour of the embedded store: two users, three search strategies, scoping, filters.

Runs fully offline on a SQLite file with the bundled default embedding model.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from oracleagentmemory.core import (
    OracleAgentMemory,
    SchemaPolicy,
    SearchStrategy,
    SQLiteMemoryStore,
)
from oracleagentmemory.core.embedders import default_embedder


def show(title: str, results: list) -> None:  # type: ignore[type-arg]
    print(f"\n{title}")
    if not results:
        print("   (no results)")
    for record, distance in results:
        if record.record_type.endswith("_profile"):
            scope = f"profile of {record.id}"
        else:
            scope = f"user={getattr(record, 'user_id', None)}"
        print(f"   {distance:6.3f}  [{record.record_type:<12}] {record.content!r:<48} {scope}")


def main() -> None:
    path = Path(tempfile.mkdtemp(prefix="oam-demo-")) / "memory.db"
    embedder = default_embedder()
    print(f"Embedded store: {path}")
    print(f"Embedder: {embedder.model_identity} ({embedder.embedding_dimension} dims, offline)")

    # A hybrid schema holds both vectors and the keyword index, so the same file can be
    # opened with any of the three strategies.
    store = SQLiteMemoryStore(
        embedder,
        str(path),
        schema_policy=SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy=SearchStrategy.HYBRID,
    )
    store.add_user("alice", "Alice is a vegetarian software engineer in Lisbon.")
    store.add_user("bob", "Bob is a marathon runner who works as a nurse.")
    store.add(
        [
            "Alice prefers window seats on flights.",
            "Alice is allergic to peanuts.",
            "Alice's order ZX-4411 ships on Friday.",
        ],
        record_type="fact",
        user_ids="alice",
        metadata=[{"source": "chat"}, {"source": "crm", "tags": ["health"]}, {"source": "crm"}],
    )
    store.add(
        ["Bob prefers aisle seats.", "Bob trains for the Berlin marathon in September."],
        record_type="preference",
        user_ids="bob",
        metadata={"source": "chat"},
    )
    ids = store.add(
        ["Can you book me a flight to Madrid?", "Sure, window seat as usual?"],
        record_type="message",
        thread_ids="alice-trip",
        user_ids="alice",
        roles=["user", "assistant"],
    )
    messages = store.list_thread_messages("alice-trip")
    print(f"\nThread alice-trip holds {len(messages)} messages:")
    for m in messages:
        print(f"   #{m.seq_no} {m.role:>9}: {m.content}  ({m.id == ids[m.seq_no - 1]})")

    query = "Which seat does the user like on a plane?"
    show(
        f"HYBRID  '{query}' (alice only)",
        store.search(query, 3, user_id="alice", exact_user_match=True),
    )
    store.close()

    vector = SQLiteMemoryStore(embedder, str(path), search_strategy=SearchStrategy.VECTOR)
    show(f"VECTOR  '{query}' (everyone)", vector.search(query, 4))
    show(
        f"VECTOR  '{query}' (bob only)",
        vector.search(query, 3, user_id="bob", exact_user_match=True),
    )
    show(
        "VECTOR  'food restrictions' with metadata_filter tags contains 'health'",
        vector.search(
            "food restrictions", 3, metadata_filter={"tags": {"$array_contains": "health"}}
        ),
    )
    vector.close()

    keyword = SQLiteMemoryStore(None, str(path), search_strategy=SearchStrategy.KEYWORD)
    show(
        "KEYWORD 'ZX-4411' (an exact identifier; no embedder needed)", keyword.search("ZX-4411", 3)
    )
    show(
        "KEYWORD 'marathon' restricted to source=chat",
        keyword.search("marathon", 3, metadata_filter={"source": "chat"}),
    )
    print(f"\nFacts stored for alice: {[r.content for r in keyword.list('fact', user_id='alice')]}")
    keyword.close()
    client_tour(path.parent / "client.db")


def client_tour(path: Path) -> None:
    """The client most applications use: threads, memories, a context card, search."""
    print("\n=== The client: two threads for one user ===")
    with OracleAgentMemory(connection=str(path)) as memory:  # bundled model, file created
        memory.add_user("carol", "Carol is a product manager who travels a lot.")
        trip = memory.create_thread(thread_id="trip", user_id="carol", agent_id="concierge")
        trip.add_messages(
            [
                {"role": "user", "content": "I'm flying to Tokyo next month."},
                {"role": "assistant", "content": "Noted! Any seating preference?"},
                {"role": "user", "content": "Always an aisle seat, and no shellfish please."},
            ]
        )
        trip.add_memory("Carol is allergic to shellfish.", memory_type="fact")
        trip.add_memory("Carol prefers aisle seats.", memory_type="preference")

        dinner = memory.create_thread(thread_id="dinner", user_id="carol", agent_id="concierge")
        dinner.add_messages([{"role": "user", "content": "Book me a seafood restaurant tonight."}])

        print("\nContext card for the dinner thread (memories come from the trip thread):")
        print(dinner.get_context_card().content)

        print("\nClient search 'what can Carol not eat?' (user carol):")
        for result in memory.search("what can Carol not eat?", user_id="carol", max_results=3):
            print(f"   {result.distance:6.3f}  {result.record.record_type:<10} {result.content}")
        print(f"\nThreads of carol: {[t.thread_id for t in memory.list_threads(user_id='carol')]}")


if __name__ == "__main__":
    main()
