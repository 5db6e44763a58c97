"""``integrations.openai_agents`` on both engines: the Session protocol against the SDK's own
``SQLiteSession``, exact item round trips, ownership and validation, real ``Runner.run``
conversations (a local OpenAI-protocol server, or a scripted model calling our tools),
extraction with the scripted LLM, and the documentation page's example."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    SQLiteSession,
    set_tracing_disabled,
)
from agents.memory import Session
from agents.usage import Usage
from openai import AsyncOpenAI
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from oracleagentmemory.core import MemoryExtractionConfig, MemoryExtractionMode
from oracleagentmemory.core.store._threads import ThreadOwnershipError
from oracleagentmemory.integrations.openai_agents import AgentMemorySession, memory_tools

from ._fake_model import fake_model
from ._llm_double import ScriptedLlm
from ._openai_server import FakeOpenAIServer

set_tracing_disabled(True)

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations" / "openai-agents.md"
INLINE = MemoryExtractionConfig(extraction_mode=MemoryExtractionMode.INLINE)

# One of each kind of item the SDK hands a session, with the text a message of it reads as.
ITEMS: list[tuple[dict[str, Any], str, str]] = [
    ({"role": "system", "content": "You are terse."}, "system", "You are terse."),
    ({"role": "developer", "content": "Use metric units."}, "developer", "Use metric units."),
    ({"role": "user", "content": "Weather in Paris?"}, "user", "Weather in Paris?"),
    (
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "And Rome, see the map."},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,iVBORw0KGgo=",
                    "detail": "auto",
                },
                {"type": "input_file", "file_id": "file-1", "filename": "notes.pdf"},
            ],
        },
        "user",
        "And Rome, see the map.\n[image]\n[file: notes.pdf]",
    ),
    (
        {
            "type": "reasoning",
            "id": "rs_1",
            "encrypted_content": "gAAAAB==",
            "summary": [{"type": "summary_text", "text": "Need the weather tool."}],
        },
        "assistant",
        "[reasoning] Need the weather tool.",
    ),
    (
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
            "status": "completed",
        },
        "assistant",
        '[function_call get_weather] {"city": "Paris"}',
    ),
    (
        {"type": "function_call_output", "call_id": "call_1", "output": "18°C and sunny"},
        "tool",
        "18°C and sunny",
    ),
    (
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": "Rome: rainy"}],
        },
        "tool",
        "Rome: rainy",
    ),
    (
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "Paris: 18°C.", "annotations": [], "logprobs": []},
                {"type": "refusal", "refusal": "No forecast for Rome."},
            ],
        },
        "assistant",
        "Paris: 18°C.\n[refusal] No forecast for Rome.",
    ),
    (
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "rome weather"},
        },
        "assistant",
        "[web_search_call] rome weather",
    ),
    (
        {
            "type": "custom_tool_call",
            "id": "ct_1",
            "call_id": "c3",
            "name": "sql",
            "input": "SELECT 1",
        },
        "assistant",
        "[custom_tool_call sql] SELECT 1",
    ),
    (
        {"type": "mcp_approval_response", "approval_request_id": "a1", "approve": True},
        "tool",
        "[mcp_approval_response]",
    ),
    ({"type": "item_reference", "id": "msg_0"}, "assistant", "[item_reference]"),
    (
        # Beyond what the store holds in text: NUL, a lone surrogate, 70-bit integers, floats.
        {
            "role": "user",
            "content": "日本 ✓ a\x00b \ud800!",
            "provider_data": {"big": 2**70, "ratio": 0.1, "deep": [[[{"k": None}]]]},
        },
        "user",
        "日本 ✓ ab \ufffd!",
    ),
]
ALL = [item for item, _, _ in ITEMS]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def session_of(client: Any, session_id: str = "conv", **kwargs: Any) -> AgentMemorySession:
    kwargs.setdefault("user_id", "alice")
    return AgentMemorySession(session_id, client, **kwargs)


def stored(client: Any, thread_id: str = "conv") -> list[tuple[str | None, Any]]:
    return [(m.role, m.content) for m in client.store.list_thread_messages(thread_id)]


# ---------------------------------------------------------------------------- the protocol


def test_it_is_an_sdk_session(client: Any) -> None:
    session = session_of(client)
    assert isinstance(session, Session)
    assert session.session_id == "conv" and session.session_settings is not None
    assert session.session_settings.limit is None


def test_protocol_semantics_match_sqlite_session(client: Any) -> None:
    ours, reference = session_of(client), SQLiteSession("conv")

    async def both(name: str, *args: Any) -> Any:
        mine = await getattr(ours, name)(*args)
        theirs = await getattr(reference, name)(*args)
        assert mine == theirs, name
        return mine

    async def scenario() -> None:
        assert await both("get_items") == []
        assert await both("pop_item") is None
        await both("add_items", ALL[:5])
        await both("add_items", [])
        await both("add_items", ALL[5:])
        assert await both("get_items") == ALL
        for limit in (0, 1, 3, len(ALL), len(ALL) + 5):
            assert await both("get_items", limit) == ALL[max(0, len(ALL) - limit) :]
        assert await both("pop_item") == ALL[-1]
        assert await both("pop_item") == ALL[-2]
        assert await both("get_items") == ALL[:-2]
        await both("add_items", [ALL[-1]])
        assert await both("get_items", 2) == [ALL[-3], ALL[-1]]
        await both("clear_session")
        assert await both("get_items") == []
        assert await both("pop_item") is None
        await both("clear_session")
        await both("add_items", ALL[2:4])
        assert await both("get_items") == ALL[2:4]

    run(scenario())
    reference.close()


def test_session_settings_limit_is_the_default_limit_as_in_sqlite_session(client: Any) -> None:
    ours = session_of(client, session_settings={"limit": 2})
    reference = SQLiteSession("conv", session_settings={"limit": 2})

    async def scenario() -> None:
        for session in (ours, reference):
            await session.add_items(ALL[:5])
        assert await ours.get_items() == await reference.get_items() == ALL[3:5]
        assert await ours.get_items(4) == await reference.get_items(4) == ALL[1:5]

    run(scenario())
    reference.close()


def test_every_item_round_trips_exactly_and_reads_as_a_message(client: Any) -> None:
    run(session_of(client).add_items(ALL))
    again = session_of(client)  # a new session on the same thread reads it back
    items = run(again.get_items())
    assert items == ALL
    assert json.dumps(items) == json.dumps(ALL)  # key order too
    assert stored(client) == [(role, text) for _, role, text in ITEMS]
    (record,) = client.store.list_thread_messages("conv", last_n=1)
    assert json.loads(record.metadata["$agent_memory"]["openai_agents"]["item"]) == ALL[-1]
    assert record.user_id == "alice"


def test_an_item_too_large_for_metadata_keeps_its_json_as_content(client: Any) -> None:
    big = {"type": "function_call_output", "call_id": "c1", "output": "word " * 60_000}
    session = session_of(client)
    run(session.add_items([ALL[2], big]))
    assert run(session.get_items()) == [ALL[2], big]
    (record,) = client.store.list_thread_messages("conv", last_n=1)
    assert record.role == "tool" and json.loads(record.content) == big
    assert run(session.pop_item()) == big


def test_messages_no_session_wrote_read_as_plain_messages(client: Any) -> None:
    thread = client.create_thread(thread_id="conv", user_id="alice")
    thread.add_messages(
        [{"role": "user", "content": "typed elsewhere"}, {"role": "tool", "content": "a tool said"}]
    )
    session = session_of(client)
    run(session.add_items([ALL[2]]))
    assert run(session.get_items()) == [
        {"role": "user", "content": "typed elsewhere"},
        {"role": "assistant", "content": "a tool said"},
        ALL[2],
    ]


def test_add_items_is_one_write(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    session = session_of(client)
    calls: list[int] = []
    original = client.store.add_batches

    def spy(batches: Any, **kwargs: Any) -> Any:
        calls.append(sum(len(b.contents) for b in batches))
        return original(batches, **kwargs)

    monkeypatch.setattr(client.store, "add_batches", spy)
    run(session.add_items(ALL[:4]))
    assert calls == [4]


def test_calls_run_off_the_event_loop(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    session = session_of(client)
    seen: list[threading.Thread] = []
    original = client.store.list_thread_messages

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(client.store, "list_thread_messages", spy)

    async def scenario() -> None:
        await session.add_items(ALL[:2])
        await session.get_items()
        await session.pop_item()
        await session.clear_session()

    run(scenario())
    assert seen and threading.main_thread() not in seen


def test_a_cancelled_write_still_lands_then_the_cancellation_is_raised(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = session_of(client)
    original = client.store.add_batches

    def slow(batches: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)  # the caller is cancelled while the write runs
        return original(batches, **kwargs)

    monkeypatch.setattr(client.store, "add_batches", slow)

    async def scenario() -> None:
        task = asyncio.ensure_future(session.add_items(ALL[:3]))
        await asyncio.sleep(0)  # the write has started in its worker thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await session.get_items() == ALL[:3]

    run(scenario())


def test_concurrent_pops_return_each_item_once(client: Any) -> None:
    session = session_of(client)

    async def scenario() -> list[Any]:
        await session.add_items(ALL[:3])
        return list(await asyncio.gather(*(session.pop_item() for _ in range(5))))

    popped = run(scenario())
    assert sorted(json.dumps(p) for p in popped if p is not None) == sorted(
        json.dumps(i) for i in ALL[:3]
    )
    assert popped.count(None) == 2


def test_clear_is_one_delete_and_keeps_the_thread_and_memories(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = session_of(client, agent_id="helper")
    run(session.add_items(ALL[:3]))
    session.thread.add_memory("keeps bees")
    calls: list[str] = []
    original = client.store.delete_thread_messages
    monkeypatch.setattr(
        client.store, "delete_thread_messages", lambda t: calls.append(t) or original(t)
    )
    monkeypatch.setattr(client.store, "delete", lambda *a, **k: pytest.fail("one by one"))
    run(session.clear_session())
    assert calls == ["conv"] and stored(client) == []
    assert [m.content for m in client.list_memories(user_id="alice")] == ["keeps bees"]


def test_a_deleted_thread_is_started_again(client: Any) -> None:
    session = session_of(client, agent_id="helper")
    run(session.add_items(ALL[:3]))
    run(session.clear_session())
    assert stored(client) == []
    assert client.get_thread("conv").agent_id == "helper"
    client.delete_thread("conv")
    run(session.add_items([ALL[2]]))
    thread = client.get_thread("conv")
    assert (thread.user_id, thread.agent_id) == ("alice", "helper")
    assert run(session.get_items()) == [ALL[2]]


# ---------------------------------------------------------------------------- ownership


def test_a_new_session_creates_the_thread_for_its_user_and_agent(client: Any) -> None:
    session = session_of(client, "new", agent_id="helper", thread_metadata={"app": "x"})
    thread = client.get_thread("new")
    assert (thread.user_id, thread.agent_id, thread.metadata) == ("alice", "helper", {"app": "x"})
    assert session.thread.thread_id == "new" and session.agent_id == "helper"
    assert session_of(client, "new").agent_id == "helper"  # reopened without naming the agent
    assert session_of(client, "plain").agent_id is None  # no agent id is made up


def test_another_users_thread_is_refused_and_nothing_is_written(client: Any) -> None:
    client.create_thread(thread_id="bobs", user_id="bob").add_messages(
        [{"role": "user", "content": "bob's secret"}]
    )
    with pytest.raises(ThreadOwnershipError, match="belongs to another user") as err:
        session_of(client, "bobs")
    assert "bob" not in str(err.value).replace("'bobs'", "")
    assert stored(client, "bobs") == [("user", "bob's secret")]
    # Messages written without a thread row still make the id bob's.
    client.store.add(
        ["bob's pin"], record_type="message", roles="user", thread_ids="raw", user_ids="bob"
    )
    with pytest.raises(ThreadOwnershipError):
        session_of(client, "raw")
    assert stored(client, "raw") == [("user", "bob's pin")]


def test_another_agents_thread_is_refused(client: Any) -> None:
    session_of(client, agent_id="a1")
    with pytest.raises(ValueError, match="another agent"):
        session_of(client, agent_id="a2")


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"session_id": ""}, ValueError, "session_id"),
        ({"session_id": 7}, TypeError, "session_id"),
        ({"session_id": "x" * 300}, ValueError, "session_id"),
        ({"client": "memory.db"}, TypeError, "client"),
        ({"user_id": None}, TypeError, "user_id"),
        ({"user_id": ""}, ValueError, "user_id"),
        ({"agent_id": 3}, TypeError, "agent_id"),
        ({"session_settings": 5}, TypeError, "session_settings"),
        ({"thread_metadata": ["x"]}, TypeError, "thread_metadata"),
        ({"thread_id": "other"}, TypeError, "thread_settings"),
        ({"no_such_setting": 1}, TypeError, "no_such_setting"),
    ],
)
def test_bad_constructor_arguments_are_refused(
    client: Any, kwargs: dict[str, Any], error: type[Exception], name: str
) -> None:
    args: dict[str, Any] = {"session_id": "conv", "client": client, "user_id": "alice"}
    args.update(kwargs)
    with pytest.raises(error, match=name):
        AgentMemorySession(args.pop("session_id"), args.pop("client"), **args)
    assert client.list_threads(user_id="alice") == []


@pytest.mark.parametrize(
    ("items", "error", "name"),
    [
        ("hello", TypeError, "items"),
        ({"role": "user", "content": "hi"}, TypeError, "items"),
        ([ALL[0], {"role": "user", "content": object()}], TypeError, r"items\[1\]"),
        ([ALL[0], {"x"}], TypeError, r"items\[1\]"),
        ([ALL[0], {"role": "user", "content": float("nan")}], TypeError, r"items\[1\]"),
        ([ALL[0], {1: "x", "role": "user"}], TypeError, r"items\[1\]"),
    ],
)
def test_bad_items_are_refused_before_anything_is_written(
    client: Any, items: Any, error: type[Exception], name: str
) -> None:
    session = session_of(client)
    with pytest.raises(error, match=name):
        run(session.add_items(items))
    assert stored(client) == []


# What the SDK's EncryptedSession stores, and other JSON values that are not chat items.
OPAQUE: list[Any] = [
    {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": "gAAAAABn-ciphertext=="},
    "hi",
    {"content": "no role"},
    {"type": 3},
    {"role": ""},
    42,
    [1, {"a": None}],
]


def test_any_json_item_is_kept_exactly_as_in_sqlite_session(client: Any) -> None:
    ours, reference = session_of(client), SQLiteSession("conv")
    mixed = [ALL[2], *OPAQUE, ALL[3]]

    async def scenario() -> None:
        for session in (ours, reference):
            await session.add_items(mixed)
        assert await ours.get_items() == await reference.get_items() == mixed
        assert await ours.get_items(3) == await reference.get_items(3) == mixed[-3:]
        assert await ours.pop_item() == await reference.pop_item() == ALL[3]
        assert await ours.pop_item() == await reference.pop_item() == OPAQUE[-1]

    run(scenario())
    reference.close()
    rows = stored(client)
    assert rows[0] == ("user", "Weather in Paris?")  # a chat item reads as conversation
    assert rows[1:] == [("data", "[data]")] * (len(OPAQUE) - 1)  # the others: a placeholder
    found = client.search("ciphertext", user_id="alice", record_types=["message"])
    assert found and all("ciphertext" not in r.content for r in found)


def test_close_ends_the_session_and_leaves_the_client_open(client: Any) -> None:
    session = session_of(client)
    run(session.add_items(ALL[:2]))
    session.close()
    session.close()  # idempotent, as SQLiteSession.close
    for call in (
        session.get_items(),
        session.add_items(ALL[2:3]),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(RuntimeError, match="closed"):
            run(call)
    assert run(session_of(client).get_items()) == ALL[:2]  # the client still works


def test_the_sdks_encrypted_session_works_over_it(tmp_path: Path) -> None:
    pytest.importorskip("cryptography", reason="EncryptedSession needs openai-agents[encrypt]")
    from agents.extensions.memory import EncryptedSession
    from cryptography.fernet import Fernet

    from oracleagentmemory.core import OracleAgentMemory

    from ._embedders import HashingEmbedder

    db = tmp_path / "enc.db"
    plain = ALL[:-1]  # EncryptedSession cannot encrypt the last (a lone surrogate)
    client = OracleAgentMemory(connection=str(db), embedder=HashingEmbedder())
    key = Fernet.generate_key().decode("ascii")
    ours = session_of(client)
    session = EncryptedSession("conv", underlying_session=ours, encryption_key=key, ttl=600)

    async def scenario() -> None:
        await session.add_items(plain[:6])
        await session.add_items(plain[6:])
        assert await session.get_items() == plain  # decrypted, exactly, in order
        assert await session.get_items(2) == plain[-2:]
        envelopes = await ours.get_items()
        assert len(envelopes) == len(plain) and all(e["__enc__"] == 1 for e in envelopes)
        assert await session.pop_item() == plain[-1]
        assert await session.get_items() == plain[:-1]
        # A second session over the same thread, with the same key, reads the history.
        again = EncryptedSession("conv", underlying_session=session_of(client), encryption_key=key)
        assert await again.get_items() == plain[:-1]
        await session.clear_session()
        assert await session.get_items() == []
        await session.add_items(plain[:1])

    run(scenario())
    assert stored(client) == [("data", "[data]")]
    session.close()  # EncryptedSession hands close() to the session beneath it
    with pytest.raises(RuntimeError, match="closed"):
        run(session.get_items())
    client.close()
    written = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("enc.db"))
    assert b"You are terse" not in written and b"Weather in Paris" not in written


@pytest.mark.parametrize(
    ("limit", "error"), [(-1, ValueError), ("2", TypeError), (True, TypeError), (2.0, TypeError)]
)
def test_bad_limits_are_refused(client: Any, limit: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="limit"):
        run(session_of(client).get_items(limit))


def test_the_module_names_the_extra_when_the_sdk_is_missing() -> None:
    code = (
        "import sys; sys.modules['agents'] = None\n"
        "try:\n    import oracleagentmemory.integrations.openai_agents\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 'pip install "recallwell[openai-agents]"' in out.stdout


# ---------------------------------------------------------------------------- Runner.run


def chat_model(server: FakeOpenAIServer) -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel("m", AsyncOpenAI(base_url=server.api_base, api_key="sk-test"))


def test_a_two_turn_conversation_is_remembered_through_runner(client: Any) -> None:
    with FakeOpenAIServer(models=("m",)) as server:
        agent = Agent(name="a", instructions="Be brief.", model=chat_model(server))
        session = session_of(client)

        async def scenario() -> tuple[str, str]:
            first = await Runner.run(agent, "I keep bees on my roof.", session=session)
            second = await Runner.run(agent, "What do I keep?", session=session)
            return first.final_output, second.final_output

        assert run(scenario()) == ("echo: I keep bees on my roof.", "echo: What do I keep?")
        messages = server.bodies("/v1/chat/completions")[-1]["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("system", "Be brief."),
        ("user", "I keep bees on my roof."),
        ("assistant", "echo: I keep bees on my roof."),
        ("user", "What do I keep?"),
    ]
    items = run(session.get_items())
    assert items[0] == {"role": "user", "content": "I keep bees on my roof."}
    assert items[1]["type"] == "message" and items[1]["role"] == "assistant"
    assert stored(client) == [
        ("user", "I keep bees on my roof."),
        ("assistant", "echo: I keep bees on my roof."),
        ("user", "What do I keep?"),
        ("assistant", "echo: What do I keep?"),
    ]
    hits = client.search("bees roof", user_id="alice", max_results=2)
    assert "bees" in hits[0].content


def test_a_responses_model_turn_stores_its_reasoning_item(client: Any) -> None:
    with FakeOpenAIServer(models=("m",)) as server:
        model = OpenAIResponsesModel("m", AsyncOpenAI(base_url=server.api_base, api_key="sk-test"))
        agent = Agent(name="a", instructions="Be brief.", model=model)
        session = session_of(client)
        result = run(Runner.run(agent, "Hello there", session=session))
    assert result.final_output == "echo: Hello there"
    items = run(session.get_items())
    assert [i.get("type") for i in items] == [None, "reasoning", "message"]
    assert stored(client) == [
        ("user", "Hello there"),
        ("assistant", "[reasoning]"),
        ("assistant", "echo: Hello there"),
    ]


class ScriptedModel(Model):
    """A model that answers from a script: each turn is a callable of the input items that
    returns the output items."""

    def __init__(self, turns: list[Callable[[list[Any]], list[Any]]]) -> None:
        self.turns = list(turns)
        self.inputs: list[list[Any]] = []
        self.tools: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        self.tools.append(list(tools))
        output = self.turns.pop(0)(items)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this test model does not stream")


def call(name: str, call_id: str, **arguments: Any) -> Callable[[list[Any]], list[Any]]:
    return lambda items: [
        ResponseFunctionToolCall(
            type="function_call",
            id=f"fc_{call_id}",
            call_id=call_id,
            name=name,
            arguments=json.dumps(arguments),
            status="completed",
        )
    ]


def say(text: str) -> Callable[[list[Any]], list[Any]]:
    return lambda items: [
        ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
    ]


def tool_outputs(items: list[Any]) -> list[str]:
    return [i["output"] for i in items if i.get("type") == "function_call_output"]


def test_the_model_saves_and_finds_memories_with_the_tools(client: Any) -> None:
    client.add_memory("Bob is allergic to peanuts", memory_type="fact", user_id="bob")
    model = ScriptedModel(
        [
            call("add_memory", "c1", content="Alice is allergic to peanuts", memory_type="fact"),
            call("search_memory", "c2", query="peanuts allergy", max_results=3),
            say("Noted: no peanuts."),
        ]
    )
    agent = Agent(
        name="a", model=model, tools=memory_tools(client, user_id="alice", agent_id="helper")
    )
    session = session_of(client)
    result = run(Runner.run(agent, "Remember I'm allergic to peanuts.", session=session))
    assert result.final_output == "Noted: no peanuts."
    (memory,) = client.list_memories(user_id="alice")
    assert (memory.record_type, memory.content) == ("fact", "Alice is allergic to peanuts")
    assert (memory.user_id, memory.agent_id, memory.thread_id) == ("alice", "helper", None)
    saved, found = tool_outputs(model.inputs[2])
    assert saved == f"Saved fact {memory.id}."
    assert "Alice is allergic to peanuts" in found and "Bob" not in found
    # The whole exchange, tool calls and outputs included, is the session's history.
    kinds = [i.get("type") for i in run(session.get_items())]
    assert kinds == [
        None,
        "function_call",
        "function_call_output",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert [role for role, _ in stored(client)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_the_tools_cannot_change_the_user_scope(client: Any) -> None:
    client.add_memory("Bob's password hint: tulips", user_id="bob")
    search, add = memory_tools(client, user_id="alice")
    assert isinstance(search, FunctionTool) and isinstance(add, FunctionTool)
    assert (search.name, add.name) == ("search_memory", "add_memory")
    for tool in (search, add):
        assert tool.strict_json_schema
        assert tool.params_json_schema["additionalProperties"] is False
        assert not {"user_id", "agent_id", "thread_id"} & set(tool.params_json_schema["properties"])
    model = ScriptedModel(
        [
            call("search_memory", "c1", query="password hint tulips", user_id="bob"),
            call("search_memory", "c2", query="password hint tulips", max_results=0),
            call("search_memory", "c3", query="password hint tulips"),
            say("done"),
        ]
    )
    agent = Agent(name="a", model=model, tools=[search, add])
    run(Runner.run(agent, "What is bob's hint?", session=session_of(client)))
    extra, zero, plain = tool_outputs(model.inputs[3])
    assert extra == "No memories found."  # the extra user_id is not a parameter: alice's scope
    assert zero == "Invalid arguments: max_results must be between 1 and 20, got 0"
    assert plain == "No memories found."


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"user_id": None}, TypeError, "user_id"),
        ({"agent_id": ""}, ValueError, "agent_id"),
        ({"thread_id": 4}, TypeError, "thread_id"),
        ({"max_results": 0}, ValueError, "max_results"),
        ({"max_results": 30}, ValueError, "max_results"),
        ({"max_results_limit": True}, TypeError, "max_results_limit"),
        ({"record_types": "fact"}, TypeError, "record_types"),
        ({"record_types": []}, ValueError, "record_types"),
    ],
)
def test_bad_tool_arguments_are_refused(
    client: Any, kwargs: dict[str, Any], error: type[Exception], name: str
) -> None:
    args: dict[str, Any] = {"user_id": "alice", **kwargs}
    with pytest.raises(error, match=name):
        memory_tools(client, **args)
    with pytest.raises(TypeError, match="client"):
        memory_tools("client", user_id="alice")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- extraction


def test_memories_are_extracted_from_the_session_inline(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model())
    client = make_client(llm=llm, memory_extraction_config=INLINE)
    session = session_of(client, agent_id="helper")
    run(
        session.add_items(
            [
                {"role": "user", "content": "I moved to Lisbon last spring."},
                {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "Lisbon, Portugal"},
            ]
        )
    )
    (memory,) = client.list_memories(user_id="alice")
    assert memory.content == "I moved to Lisbon last spring."
    assert (memory.user_id, memory.agent_id, memory.thread_id) == ("alice", "helper", "conv")
    prompt = next(c.text for c in llm.calls if c.schema and "memories" in c.schema["properties"])
    assert "[function_call lookup] {}" in prompt and "openai_agents" not in prompt
    assert memory.metadata is None or "$agent_memory" not in memory.metadata


def test_memories_are_extracted_in_the_background_from_a_runner_conversation(
    make_client: Any,
) -> None:
    client = make_client(llm=ScriptedLlm(respond=fake_model()))
    with FakeOpenAIServer(models=("m",)) as server:
        agent = Agent(name="a", model=chat_model(server))
        session = session_of(client)
        run(Runner.run(agent, "My daughter is called Ines.", session=session))
    client.wait_for_memory_extraction(timeout=60)
    assert [m.content for m in client.list_memories(user_id="alice")] == [
        "My daughter is called Ines."
    ]
    assert client.list_memories(user_id="bob") == []


def test_thread_settings_reach_the_extraction_pipeline(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model())
    client = make_client(llm=llm, memory_extraction_config=INLINE)
    off = MemoryExtractionConfig(extract_memories=False, enable_context_summary=False)
    session = session_of(client, memory_extraction_config=off)
    run(session.add_items([{"role": "user", "content": "I collect stamps."}]))
    assert client.list_memories(user_id="alice") == [] and llm.calls == []


# ---------------------------------------------------------------------------- the doc page


def test_the_documentation_example_runs(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "the page has a Python example"
    monkeypatch.chdir(tmp_path)
    printed: list[str] = []
    with FakeOpenAIServer(models=("m",)) as server:
        # The page's two marked lines are swapped for this test's client and a local model.
        local = {"client = ": "client = test_client", "model = ": "model = test_model"}
        for block in blocks:
            lines = [
                next((new for old, new in local.items() if line.startswith(old)), line)
                for line in block.splitlines()
            ]
            assert "client = test_client" in lines  # every example uses the test's client
            namespace: dict[str, Any] = {
                "test_client": client,
                "test_model": chat_model(server),
                "print": lambda *a: printed.append(" ".join(map(str, a))),
            }
            exec(compile("\n".join(lines), str(DOC), "exec"), namespace)
    assert printed == [
        "echo: What do I drink in the morning? 4",
        "[{'role': 'user', 'content': 'My PIN is 4321.'}]",
        "['__enc__', 'kid', 'payload', 'v']",
    ]
    assert [role for role, _ in stored(client, "conversation-1")] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
