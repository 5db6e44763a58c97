"""The store the ``/ui`` tests browse: a few users (most without a profile), a short thread
whose fact was extracted by a scripted LLM (so it has source messages), a 120-message
thread, memories of every type on several days, a link, an invalid memory, hostile text,
and another user's records."""

from __future__ import annotations

from typing import Any

from oracleagentmemory.core import MemoryExtractionConfig, MemoryExtractionMode, OracleAgentMemory

from ._fake_model import fake_model
from ._llm_double import ScriptedLlm

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & "quotes"'
LONG_THREAD = 120
EXTRACTED = "Alice is allergic to peanuts."


def fill(dsn: str, embedder: Any, *, hostile: bool = True, **client: Any) -> dict[str, str]:
    """Write the tour into ``dsn`` (``hostile``: with a fact of :data:`HOSTILE` text);
    returns the ids the tests look for."""
    ids: dict[str, str] = {}
    answer = {
        "memories": [{"type": "fact", "content": EXTRACTED, "sources": [3]}],
        "summary": "Alice flies to Tokyo on Friday; she is allergic to peanuts.",
        "topics": ["travel", "food"],
    }
    llm = ScriptedLlm([answer], respond=fake_model(memory_for=lambda text: None))
    opts = {
        "connection": dsn,
        "embedder": embedder,
        "schema_policy": "create_if_necessary",
        **client,
    }
    inline = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE)
    with OracleAgentMemory(llm=llm, memory_extraction_config=inline, **opts) as mem:
        trip = mem.create_thread(thread_id="trip-tokyo", user_id="alice", agent_id="concierge")
        msgs = trip.add_messages(
            [
                {"role": "user", "content": "I'm flying to Tokyo on Friday."},
                {"role": "assistant", "content": "Noted. Any dietary needs?"},
                {"role": "user", "content": "I'm allergic to peanuts."},
            ]
        )
        ids["source_message"] = msgs[2]
        (fact,) = [m.id for m in mem.list_memories(user_id="alice")]
        ids["fact"] = fact
    with OracleAgentMemory(**opts) as mem:
        mem.add_user("alice", "Alice, a frequent traveller.")
        trip = mem.get_thread("trip-tokyo")
        ids["pref"] = trip.add_memory(
            "Alice prefers window seats.", memory_type="preference", ttl_days=180
        )
        mem.link_records(ids["pref"], "preference", fact, "fact", "supports")
        ids["guideline"] = mem.add_memory(
            "Answer Alice in short sentences.",
            memory_type="guideline",
            user_id="alice",
            agent_id="planner",
            timestamp="2024-03-20T09:00:00",
        )
        ids["old"] = mem.add_memory(
            "Alice lived in Lisbon.", user_id="alice", timestamp="2024-01-05T09:00:00"
        )
        mem.update_memory(ids["old"], status="invalid")
        if hostile:
            ids["hostile"] = mem.add_memory(
                HOSTILE, user_id="alice", memory_type="fact", timestamp="2024-02-10T09:00:00"
            )
        long = mem.create_thread(thread_id="alice-long", user_id="alice", agent_id="planner")
        for start in range(0, LONG_THREAD, 60):
            long.add_messages(
                [
                    {
                        "role": "user" if i % 2 == 0 else "assistant",
                        "content": f"long message {i + 1}",
                    }
                    for i in range(start, min(LONG_THREAD, start + 60))
                ]
            )
        mem.add_memory("Carol collects stamps.", user_id="carol")  # no profile, no thread
        mem.add_user("dave", "Dave, a profile and nothing else.")
        bob = mem.create_thread(thread_id="bob-thread", user_id="bob")
        bob.add_messages([{"role": "user", "content": "bob's secret plan"}])
        ids["bob_memory"] = mem.add_memory(
            "Bob hides the key under the mat.", user_id="bob", thread_id="bob-thread"
        )
    return ids


MORE = [  # (type, agent, day, content): enough for two pages of ten in the browser test
    (
        "preference",
        "concierge",
        "2024-04-02",
        "Alice prefers hotels within walking distance of a train station.",
    ),
    ("fact", "concierge", "2024-04-09", "Alice holds a Japan Rail Pass valid until 30 June."),
    ("preference", "concierge", "2024-04-15", "Alice likes quiet rooms on a high floor."),
    ("fact", "planner", "2024-04-21", "Alice's sister Mia lives in Osaka."),
    ("guideline", "planner", "2024-05-03", "Confirm every booking with Alice before paying."),
    ("memory", "concierge", "2024-05-10", "Alice enjoyed the ramen place near Shinjuku."),
    ("preference", "planner", "2024-05-18", "Alice prefers morning flights."),
    ("fact", "planner", "2024-05-26", "Alice's frequent-flyer number ends in 4417."),
    ("memory", "concierge", "2024-06-02", "Alice asked for a late checkout in Kyoto."),
    ("guideline", "concierge", "2024-06-11", "Suggest vegetarian restaurants first."),
    ("fact", "concierge", "2024-06-19", "Alice is travelling with a colleague, Ken."),
    ("fact", "concierge", "2024-06-24", "Alice's hotel in Kyoto is booked for three nights."),
    ("preference", "concierge", "2024-06-28", "Alice likes an aisle seat on short flights."),
]


def fill_more(dsn: str, embedder: Any) -> None:
    """More memories of Alice's, on several days and agents."""
    with OracleAgentMemory(
        connection=dsn, embedder=embedder, schema_policy="create_if_necessary"
    ) as mem:
        for kind, agent, day, content in MORE:
            mem.add_memory(
                content,
                memory_type=kind,
                user_id="alice",
                agent_id=agent,
                timestamp=f"{day}T10:00:00",
            )
