"""A short conversation turned into searchable memories by the offline model (`make demo-llm`).

No network: the model is the packaged Qwen2.5-Coder-0.5B-Instruct (extra [local-llm]), run by
llama.cpp with JSON-schema-constrained decoding; the memories land in a SQLite file with the
bundled embedder and are found again by search.

The extraction step here is a plain `generate(..., response_json_schema=...)` call in
`extract_memories()`. Swap in your own prompt or schema there; with automatic extraction
(`OracleAgentMemory(llm=LocalLlm(), ...)` and `extract_memories=True`) the client does this step
itself.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core.llms.local import MODELS, LocalLlm

CONVERSATION = [
    {"role": "user", "content": "Hi, I'm Maria. I moved from Boston to Lisbon last spring."},
    {"role": "assistant", "content": "Welcome to Lisbon! How are you finding it?"},
    {"role": "user", "content": "I love it. I'm vegetarian, so the food took some exploring."},
    {"role": "assistant", "content": "Any favourites so far?"},
    {"role": "user", "content": "A small place in Alfama. Also: please keep answers short."},
]

MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": 6,
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 3, "maxLength": 100},
                    "type": {"enum": ["fact", "preference", "guideline", "memory"]},
                },
                "required": ["content", "type"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memories"],
    "additionalProperties": False,
}

INSTRUCTIONS = (
    "You write down what an assistant should remember about its user. Each memory is one "
    "short sentence in the third person, starting with 'The user'. Never copy the "
    "conversation; never repeat a memory."
)

# One worked example: small models follow a demonstration far better than a description.
EXAMPLE_CONVERSATION = (
    "user: I'm Tom and I work as a nurse in Berlin.\nassistant: Nice to meet you!\n"
    "user: I hate cilantro."
)
EXAMPLE_MEMORIES = {
    "memories": [
        {"content": "The user's name is Tom.", "type": "fact"},
        {"content": "The user works as a nurse in Berlin.", "type": "fact"},
        {"content": "The user dislikes cilantro.", "type": "preference"},
    ]
}


def extract_memories(llm: LocalLlm, conversation: list[dict[str, str]]) -> list[dict[str, str]]:
    """Ask the model for memories as JSON matching MEMORY_SCHEMA (exact repeats dropped)."""
    transcript = "\n".join(f"{m['role']}: {m['content']}" for m in conversation)
    prompt = [
        Message("system", INSTRUCTIONS),
        Message("user", f"Conversation:\n{EXAMPLE_CONVERSATION}\n\nMemories:"),
        Message("assistant", json.dumps(EXAMPLE_MEMORIES)),
        Message("user", f"Conversation:\n{transcript}\n\nMemories:"),
    ]
    response = llm.generate(prompt, response_json_schema=MEMORY_SCHEMA)
    usage = response.usage
    if usage is not None:
        print(f"   tokens: {usage.prompt_tokens} in, {usage.completion_tokens} out")
    memories: list[dict[str, str]] = []
    for item in json.loads(response.text)["memories"]:
        if item not in memories:
            memories.append(item)
    return memories


def main() -> None:
    model = MODELS["qwen2.5-coder-0.5b-instruct-q4_k_m"]
    print(f"Model: {model.name} ({model.size / 1e6:.0f} MB GGUF, sha256 {model.sha256[:16]}...)")
    print(f"Licence: {model.license}")
    start = time.monotonic()
    with LocalLlm(max_tokens=384) as llm:
        print("\nConversation:")
        for message in CONVERSATION:
            print(f"   {message['role']:>9}: {message['content']}")
        print("\nExtracting memories (offline, schema-constrained)...")
        memories = extract_memories(llm, CONVERSATION)
        print(f"   done in {time.monotonic() - start:.1f} s")

    path = Path(tempfile.mkdtemp(prefix="oam-llm-demo-")) / "memory.db"
    with OracleAgentMemory(connection=str(path)) as memory:
        thread = memory.create_thread(thread_id="lisbon", user_id="maria", agent_id="concierge")
        thread.add_messages(CONVERSATION)
        print("\nMemories stored:")
        for item in memories:
            thread.add_memory(item["content"], memory_type=item["type"])
            print(f"   [{item['type']:<10}] {item['content']}")

        for question in ("Where does the user live?", "What does the user eat?"):
            results = memory.search(
                question,
                user_id="maria",
                record_types=["fact", "preference", "guideline", "memory"],
                max_results=2,
            )
            print(f"\nSearch: {question}")
            for result in results:
                print(f"   {result.record.record_type:<10} {result.content}")


if __name__ == "__main__":
    main()
