"""A short conversation turned into searchable memories by the offline model (`make demo-llm`).

No network: the model is the packaged Qwen2.5-Coder-0.5B-Instruct (extra [local-llm]), run by
llama.cpp with JSON-schema-constrained decoding. The client extracts the memories itself when
the messages are added (INLINE mode, so they exist when `add_messages` returns), stores them in
a SQLite file with the bundled embedder, and search finds them again, each with the ids of the
messages it came from.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from oracleagentmemory.core import (
    MemoryExtractionConfig,
    MemoryExtractionMode,
    OracleAgentMemory,
)
from oracleagentmemory.core.llms.local import MODELS, LocalLlm

CONVERSATION = [
    {"role": "user", "content": "Hi, I'm Maria. I moved from Boston to Lisbon last spring."},
    {"role": "assistant", "content": "Welcome to Lisbon! How are you finding it?"},
    {"role": "user", "content": "I love it. I'm vegetarian, so the food took some exploring."},
    {"role": "assistant", "content": "Any favourites so far?"},
    {"role": "user", "content": "A small place in Alfama. Also: please keep answers short."},
]
MEMORY_TYPES = ["fact", "preference", "guideline", "memory"]


def main() -> None:
    model = MODELS["qwen2.5-coder-0.5b-instruct-q4_k_m"]
    print(f"Model: {model.name} ({model.size / 1e6:.0f} MB GGUF, sha256 {model.sha256[:16]}...)")
    print(f"Licence: {model.license}")
    path = Path(tempfile.mkdtemp(prefix="oam-llm-demo-")) / "memory.db"
    config = MemoryExtractionConfig(
        extract_memories=True,
        extraction_mode=MemoryExtractionMode.INLINE,
        enable_context_summary=False,
        # Small models follow a demonstration far better than a description.
        memory_extraction_custom_instructions=(
            "Write one memory per fact, each a short sentence about the user in the third "
            "person, for example: 'The user is vegetarian.', 'The user lives in Paris.'. "
            "Never copy whole messages."
        ),
    )
    with (
        LocalLlm(max_tokens=768) as llm,
        OracleAgentMemory(connection=str(path), llm=llm, memory_extraction_config=config) as memory,
    ):
        thread = memory.create_thread(thread_id="lisbon", user_id="maria", agent_id="concierge")
        print("\nConversation:")
        for message in CONVERSATION:
            print(f"   {message['role']:>9}: {message['content']}")
        print("\nAdding the messages; the client extracts memories (offline)...")
        start = time.monotonic()
        thread.add_messages(CONVERSATION)
        print(f"   done in {time.monotonic() - start:.1f} s")

        print("\nMemories extracted:")
        for record in memory.list_memories(user_id="maria"):
            print(f"   [{record.record_type:<10}] {record.content}")

        for question in ("Where does the user live?", "What does the user eat?"):
            results = memory.search(
                question, user_id="maria", record_types=MEMORY_TYPES, max_results=2
            )
            print(f"\nSearch: {question}")
            for result in results:
                sources = getattr(result, "source_message_ids", None) or []
                kind, count = result.record.record_type, len(sources)
                print(f"   {kind:<10} {result.content}  (from {count} message(s))")


if __name__ == "__main__":
    main()
