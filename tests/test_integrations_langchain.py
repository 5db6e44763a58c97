"""The LangChain integration: chat history on a thread, retriever over search, on both engines."""

from __future__ import annotations

import importlib
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from oracleagentmemory.integrations.langchain import (
    AgentMemoryChatMessageHistory,
    AgentMemoryRetriever,
)

DOC = Path(__file__).resolve().parent.parent / "docs" / "integrations" / "langchain.md"


class RecordingChatModel(FakeListChatModel):
    """A fake chat model that keeps every prompt it was given."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, copied per model

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.seen.append(list(messages))
        return super()._call(messages, *args, **kwargs)


def every_kind() -> list[BaseMessage]:
    """One message of every kind the history stores, with the fields that must survive."""
    return [
        SystemMessage("You are terse.", id="sys-1"),
        HumanMessage(
            content=[
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            ],
            name="alice",
            additional_kwargs={"locale": "en-GB"},
        ),
        AIMessage(
            "",
            id="ai-1",
            tool_calls=[{"name": "lookup", "args": {"q": "cat", "n": 2}, "id": "call-1"}],
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
            usage_metadata={"input_tokens": 3, "output_tokens": 5, "total_tokens": 8},
        ),
        ToolMessage("a tabby cat", tool_call_id="call-1", name="lookup", artifact={"hits": 1}),
        AIMessage("It is a tabby cat.", name="bot"),
        ChatMessage("Looks right.", role="critic"),
        FunctionMessage("legacy", name="old_fn"),
        AIMessageChunk("partial", id="chunk-1"),
    ]


def dump(message: BaseMessage) -> dict[str, Any]:
    return {"class": type(message).__name__, **message.model_dump(exclude={"id"})}


# ---------------------------------------------------------------------- history


def test_history_round_trips_every_message_kind(client: Any) -> None:
    thread = client.create_thread(user_id="u1", agent_id="a1")
    history = AgentMemoryChatMessageHistory(thread)
    given = every_kind()
    history.add_messages(given)

    back = history.messages
    assert [dump(m) for m in back] == [dump(m) for m in given]
    stored = thread.get_messages(start=0, end=None)
    # Ids: kept when given, the stored id otherwise.
    assert [m.id for m in back] == [m.id for m in stored]
    assert back[0].id == "sys-1" and back[2].id == "ai-1" and back[7].id == "chunk-1"
    assert isinstance(back[3], ToolMessage) and back[3].tool_call_id == "call-1"
    assert isinstance(back[2], AIMessage) and back[2].tool_calls[0]["args"] == {"q": "cat", "n": 2}
    # The stored role and readable text (what search and extraction see).
    assert [(m.role, m.content) for m in stored] == [
        ("system", "You are terse."),
        ("user", "What is in this picture?\n[image]"),
        ("assistant", ""),
        ("tool", "a tabby cat"),
        ("assistant", "It is a tabby cat."),
        ("critic", "Looks right."),
        ("function", "legacy"),
        ("assistant", "partial"),
    ]


def test_history_keeps_order_across_writes_and_reads_a_fresh_handle(client: Any) -> None:
    thread = client.create_thread(thread_id="t-order", user_id="u1")
    history = AgentMemoryChatMessageHistory(thread)
    history.add_user_message("one")
    history.add_ai_message("two")
    history.add_messages([HumanMessage("three"), AIMessage("four")])
    history.add_message(HumanMessage("five"))
    reopened = AgentMemoryChatMessageHistory(client.get_thread("t-order"))
    assert [m.content for m in reopened.messages] == ["one", "two", "three", "four", "five"]
    assert [type(m) for m in reopened.messages] == [
        HumanMessage,
        AIMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]


def test_history_reads_more_than_the_default_message_window(client: Any) -> None:
    history = AgentMemoryChatMessageHistory(client.create_thread(user_id="u1"))
    history.add_messages([HumanMessage(f"m{i}") for i in range(130)])
    assert [m.content for m in history.messages] == [f"m{i}" for i in range(130)]


def test_add_messages_is_one_write(client: Any) -> None:
    thread = client.create_thread(user_id="u1")
    history = AgentMemoryChatMessageHistory(thread)
    history.add_messages([HumanMessage("first", id="dup")])
    with pytest.raises(ValueError, match="dup"):
        history.add_messages([HumanMessage("ok"), AIMessage("clash", id="dup")])
    with pytest.raises(ValueError, match=r"262144|limit"):
        history.add_messages(
            [HumanMessage("ok"), AIMessage("big", additional_kwargs={"blob": "x" * 300_000})]
        )
    with pytest.raises(TypeError, match="JSON"):
        history.add_messages([HumanMessage("ok"), AIMessage("odd", additional_kwargs={"o": {1}})])
    assert [m.content for m in history.messages] == ["first"]


def test_clear_empties_only_this_thread(client: Any) -> None:
    mine = AgentMemoryChatMessageHistory(client.create_thread(thread_id="mine", user_id="u1"))
    other = AgentMemoryChatMessageHistory(client.create_thread(thread_id="other", user_id="u1"))
    mine.add_messages([HumanMessage("a"), AIMessage("b")])
    other.add_messages([HumanMessage("c")])
    mine.clear()
    assert mine.messages == []
    assert client.get_thread("mine").get_messages() == []
    assert [m.content for m in other.messages] == ["c"]
    mine.add_messages([HumanMessage("again")])
    assert [m.content for m in mine.messages] == ["again"]


def test_two_histories_on_two_threads_do_not_mix(client: Any) -> None:
    one = AgentMemoryChatMessageHistory(client.create_thread(user_id="u1"))
    two = AgentMemoryChatMessageHistory(client.create_thread(user_id="u2"))
    one.add_messages([HumanMessage("one-a")])
    two.add_messages([HumanMessage("two-a")])
    one.add_messages([AIMessage("one-b")])
    assert [m.content for m in one.messages] == ["one-a", "one-b"]
    assert [m.content for m in two.messages] == ["two-a"]


def _record_threads(obj: Any, names: list[str]) -> list[bool]:
    """Wrap ``obj``'s sync methods; the list gets, per call, whether it ran on the main thread."""
    on_main: list[bool] = []
    for name in names:
        original = getattr(obj, name)

        def wrapper(*args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            on_main.append(threading.current_thread() is threading.main_thread())
            return _original(*args, **kwargs)

        setattr(obj, name, wrapper)
    return on_main


async def test_history_async_twins_run_off_the_loop(client: Any) -> None:
    thread = client.create_thread(user_id="u1")
    on_main = _record_threads(thread, ["add_messages", "get_messages", "delete_message"])
    history = AgentMemoryChatMessageHistory(thread)
    given = every_kind()
    await history.aadd_messages(given)
    back = await history.aget_messages()
    assert [dump(m) for m in back] == [dump(m) for m in given]
    await history.aclear()
    assert await history.aget_messages() == []
    assert on_main and not any(on_main)  # every sync call ran in a worker thread


def test_messages_written_natively_are_read_by_role(client: Any) -> None:
    thread = client.create_thread(user_id="u1")
    thread.add_messages(
        [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "tool", "content": "42", "metadata": {"tool_call_id": "c9"}},
            {"role": "narrator", "content": "meanwhile"},
        ]
    )
    back = AgentMemoryChatMessageHistory(thread).messages
    assert [type(m) for m in back] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        ChatMessage,
    ]
    assert isinstance(back[3], ToolMessage) and back[3].tool_call_id == "c9"
    assert isinstance(back[4], ChatMessage) and back[4].role == "narrator"
    assert [m.id for m in back] == [m.id for m in thread.get_messages()]


def test_unreadable_langchain_fields_fall_back_to_the_role(client: Any) -> None:
    thread = client.create_thread(user_id="u1")
    bogus = {"$agent_memory": {"langchain": {"type": "no-such-type", "data": {}}}}
    thread.add_messages([{"role": "assistant", "content": "kept", "metadata": bogus}])
    (back,) = AgentMemoryChatMessageHistory(thread).messages
    assert type(back) is AIMessage and back.content == "kept"


def test_history_refuses_what_it_cannot_store(client: Any) -> None:
    with pytest.raises(TypeError, match="thread"):
        AgentMemoryChatMessageHistory("not a thread")  # type: ignore[arg-type]
    history = AgentMemoryChatMessageHistory(client.create_thread(user_id="u1"))
    with pytest.raises(TypeError, match="RemoveMessage"):
        history.add_messages([RemoveMessage(id="x")])
    with pytest.raises(TypeError, match="list"):
        history.add_messages(HumanMessage("one"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        history.add_messages([HumanMessage("ok"), "plain text"])  # type: ignore[list-item]
    assert history.messages == []


def test_for_thread_creates_reopens_and_guards_the_owner(client: Any) -> None:
    first = AgentMemoryChatMessageHistory.for_thread(client, "s1", user_id="u1", agent_id="a1")
    first.add_messages([HumanMessage("hello")])
    again = AgentMemoryChatMessageHistory.for_thread(client, "s1", user_id="u1")
    assert [m.content for m in again.messages] == ["hello"]
    assert client.get_thread("s1").agent_id == "a1"
    with pytest.raises(ValueError, match="another user"):
        AgentMemoryChatMessageHistory.for_thread(client, "s1", user_id="u2")
    with pytest.raises(ValueError, match="another agent"):
        AgentMemoryChatMessageHistory.for_thread(client, "s1", user_id="u1", agent_id="a2")
    with pytest.raises(TypeError, match="user_id"):
        AgentMemoryChatMessageHistory.for_thread(client, "s2", user_id="")
    with pytest.raises(ValueError, match=r"thread_id|record_ids"):
        AgentMemoryChatMessageHistory.for_thread(client, "x" * 300, user_id="u1")


# ---------------------------------------------------------------------- retriever


def _seed(client: Any) -> dict[str, str]:
    return {
        "u1_fact": client.add_memory(
            "The user is allergic to shellfish.",
            user_id="u1",
            agent_id="chef",
            memory_type="fact",
            metadata={"topic": "food", "level": 3},
        ),
        "u1_pref": client.add_memory(
            "The user prefers window seats on planes.",
            user_id="u1",
            agent_id="travel",
            memory_type="preference",
            metadata={"topic": "travel"},
        ),
        "u2_fact": client.add_memory(
            "The user is allergic to peanuts and shellfish.",
            user_id="u2",
            agent_id="chef",
            memory_type="fact",
            metadata={"topic": "food"},
        ),
    }


def test_retriever_returns_documents_with_the_record_fields(client: Any) -> None:
    ids = _seed(client)
    docs = AgentMemoryRetriever(client=client, user_id="u1").invoke("allergic to shellfish")
    assert all(isinstance(d, Document) for d in docs)
    assert {d.id for d in docs} == {ids["u1_fact"], ids["u1_pref"]}  # never u2's
    fact = next(d for d in docs if d.id == ids["u1_fact"])
    assert docs[0].id == ids["u1_fact"]
    assert fact.page_content == "The user is allergic to shellfish."
    meta = fact.metadata
    assert {k: meta[k] for k in ("id", "record_type", "user_id", "agent_id", "thread_id")} == {
        "id": ids["u1_fact"],
        "record_type": "fact",
        "user_id": "u1",
        "agent_id": "chef",
        "thread_id": None,
    }
    assert meta["record_metadata"] == {"topic": "food", "level": 3}
    assert meta["status"] == "valid" and isinstance(meta["timestamp"], str)
    assert meta["score"] == pytest.approx(1.0 - meta["distance"])
    hits = client.search("allergic to shellfish", user_id="u1")
    assert [d.id for d in docs] == [h.record.id for h in hits]
    assert [d.metadata["distance"] for d in docs] == pytest.approx([h.distance for h in hits])


def test_retriever_scope_filters_and_k(client: Any) -> None:
    ids = _seed(client)
    u2 = AgentMemoryRetriever(client=client, user_id="u2").invoke("shellfish")
    assert [d.id for d in u2] == [ids["u2_fact"]]
    travel = AgentMemoryRetriever(client=client, user_id="u1", agent_id="travel")
    assert [d.id for d in travel.invoke("shellfish")] == [ids["u1_pref"]]
    food = AgentMemoryRetriever(client=client, user_id="u1", metadata_filter={"topic": "food"})
    assert [d.id for d in food.invoke("seats")] == [ids["u1_fact"]]
    prefs = AgentMemoryRetriever(client=client, user_id="u1", record_types=["preference"])
    assert [d.id for d in prefs.invoke("shellfish")] == [ids["u1_pref"]]
    one = AgentMemoryRetriever(client=client, user_id="u1", k=1)
    assert one.max_results == 1 and len(one.invoke("shellfish")) == 1
    wide = AgentMemoryRetriever(client=client, user_id="u1")
    assert len(wide.invoke("shellfish", k=1)) == 1  # per-call override
    assert [d.id for d in wide.invoke("x", metadata_filter={"topic": "travel"})] == [ids["u1_pref"]]
    assert AgentMemoryRetriever(client=client, user_id="nobody").invoke("shellfish") == []


def test_retriever_tells_an_unset_agent_from_agent_none(client: Any) -> None:
    ids = _seed(client)
    agentless = client.add_memory("The user is vegetarian.", user_id="u1")
    any_agent = AgentMemoryRetriever(client=client, user_id="u1").invoke("user")
    assert {d.id for d in any_agent} == {ids["u1_fact"], ids["u1_pref"], agentless}
    no_agent = AgentMemoryRetriever(client=client, user_id="u1", agent_id=None).invoke("user")
    assert [d.id for d in no_agent] == [agentless]
    assert no_agent[0].metadata["agent_id"] is None


def test_retriever_over_messages_hides_the_reserved_metadata(client: Any) -> None:
    thread = client.create_thread(thread_id="t-r", user_id="u1", agent_id="a1")
    history = AgentMemoryChatMessageHistory(thread)
    history.add_messages([HumanMessage("I collect vintage typewriters.", id="m-1")])
    retriever = AgentMemoryRetriever(client=client, user_id="u1", thread_id="t-r")
    (doc,) = retriever.invoke("typewriters")
    assert doc.id == "m-1" and doc.page_content == "I collect vintage typewriters."
    assert doc.metadata["role"] == "user" and doc.metadata["seq_no"] >= 1
    assert doc.metadata["thread_id"] == "t-r" and doc.metadata["record_metadata"] == {}


async def test_retriever_async_runs_off_the_loop(client: Any) -> None:
    ids = _seed(client)
    on_main = _record_threads(client, ["search"])
    retriever = AgentMemoryRetriever(client=client, user_id="u1", k=1)
    docs = await retriever.ainvoke("allergic to shellfish")
    assert [d.id for d in docs] == [ids["u1_fact"]]
    assert on_main == [False]


def test_retriever_as_of_ranks_what_was_true_then(client: Any) -> None:
    from datetime import UTC, datetime

    old = client.add_memory("u1 lives in Paris", user_id="u1", timestamp="2024-01-01T00:00:00")
    client.add_memory(
        "u1 lives in Lisbon", user_id="u1", timestamp="2025-06-01T00:00:00",
        memory_id_to_link=old, link_type="supersedes",
    )  # fmt: skip
    then = datetime(2024, 6, 1, tzinfo=UTC)
    past = AgentMemoryRetriever(client=client, user_id="u1", as_of=then, record_types=["memory"])
    assert [d.page_content for d in past.invoke("where does u1 live")] == ["u1 lives in Paris"]
    now = AgentMemoryRetriever(client=client, user_id="u1", record_types=["memory"])
    assert "u1 lives in Lisbon" in [d.page_content for d in now.invoke("where does u1 live")]
    with pytest.raises(ValueError, match="as_of"):  # pydantic's error, naming the field
        AgentMemoryRetriever(client=client, user_id="u1", as_of="2024-06-01")
    with pytest.raises(TypeError, match="as_of"):
        now.invoke("where does u1 live", as_of="2024-06-01")


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({}, ValueError, "user_id"),
        ({"user_id": 5}, ValueError, "user_id"),
        ({"user_id": ""}, ValueError, "user_id"),
        ({"user_id": "u1", "k": 0}, ValueError, "max_results"),
        ({"user_id": "u1", "max_results": 10_001}, ValueError, "max_results"),
        ({"user_id": "u1", "k": True}, ValueError, "k"),
        ({"user_id": "u1", "record_types": "fact"}, ValueError, "record_types"),
        ({"user_id": "u1", "metadata_filter": ["topic"]}, ValueError, "metadata_filter"),
        ({"user_id": "u1", "num_hops": -1}, ValueError, "num_hops"),
        ({"user_id": "u1", "exact_user_match": False}, ValueError, "exact_user_match"),
        ({"user_id": "u1", "metadata_filters": {}}, ValueError, "metadata_filters"),
    ],
)
def test_retriever_validation_names_the_argument(
    client: Any, kwargs: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        AgentMemoryRetriever(client=client, **kwargs)


def test_retriever_refuses_a_wrong_client_and_bad_call_options(client: Any) -> None:
    with pytest.raises(ValueError, match="client"):
        AgentMemoryRetriever(client="memory.db", user_id="u1")  # type: ignore[arg-type]
    retriever = AgentMemoryRetriever(client=client, user_id="u1")
    with pytest.raises(TypeError, match="user_id"):
        retriever.invoke("q", user_id="u2")  # the scope is fixed
    with pytest.raises(ValueError, match="max_results"):
        retriever.invoke("q", k=0)
    with pytest.raises(TypeError, match="k or max_results"):
        retriever.invoke("q", k=1, max_results=2)
    with pytest.raises(ValueError, match="record_types"):  # the client's own check
        retriever.invoke("q", record_types=["no_such_type"])


# ---------------------------------------------------------------------- end to end


@pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")
def test_runnable_with_message_history_over_two_turns(client: Any) -> None:
    model = RecordingChatModel(responses=["Lisbon is sunny.", "Pack a light jacket."], seen=[])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are a travel agent."), MessagesPlaceholder("history"), ("human", "{q}")]
    )
    chat = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: AgentMemoryChatMessageHistory.for_thread(
            client, session_id, user_id="u1", agent_id="travel"
        ),
        input_messages_key="q",
        history_messages_key="history",
    )
    config: Any = {"configurable": {"session_id": "trip"}}
    first = chat.invoke({"q": "How is Lisbon?"}, config=config)
    second = chat.invoke({"q": "What should I pack?"}, config=config)
    assert (first.content, second.content) == ("Lisbon is sunny.", "Pack a light jacket.")

    stored = client.get_thread("trip").get_messages()
    assert [(m.role, m.content) for m in stored] == [
        ("user", "How is Lisbon?"),
        ("assistant", "Lisbon is sunny."),
        ("user", "What should I pack?"),
        ("assistant", "Pack a light jacket."),
    ]
    # The second turn's prompt carried the first turn, read back from the thread.
    assert [m.content for m in model.seen[1]] == [
        "You are a travel agent.",
        "How is Lisbon?",
        "Lisbon is sunny.",
        "What should I pack?",
    ]
    assert [type(m) for m in model.seen[1][1:3]] == [HumanMessage, AIMessage]


def test_retrieval_chain_puts_the_memory_in_the_prompt(
    make_client: Callable[..., Any], local_embedder: Any
) -> None:
    client = make_client(embedder=local_embedder)
    wanted = client.add_memory("The user's dog is called Biscuit.", user_id="u1")
    client.add_memory("The user works as a structural engineer.", user_id="u1")
    client.add_memory("The user's dog is called Rex.", user_id="u2")
    retriever = AgentMemoryRetriever(client=client, user_id="u1", k=1)

    def format_docs(docs: list[Document]) -> dict[str, str]:
        return {"memories": "\n".join(f"- {d.page_content} ({d.id})" for d in docs)}

    model = RecordingChatModel(responses=["Biscuit."], seen=[])
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Known about the user:\n{memories}"), ("human", "What is my dog's name?")]
    )
    chain = retriever | RunnableLambda(format_docs) | prompt | model
    assert chain.invoke("what is the name of my dog?").content == "Biscuit."
    system = model.seen[0][0].content
    assert isinstance(system, str)
    assert f"The user's dog is called Biscuit. ({wanted})" in system
    assert "engineer" not in system and "Rex" not in system


# ---------------------------------------------------------------------- module and doc


def test_import_without_langchain_core_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "langchain_core" or name.startswith("langchain_core."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "oracleagentmemory.integrations.langchain")
    with pytest.raises(ImportError, match=re.escape('pip install "recallwell[langchain]"')):
        importlib.import_module("oracleagentmemory.integrations.langchain")


@pytest.mark.filterwarnings("ignore::langchain_core._api.deprecation.LangChainDeprecationWarning")
def test_the_doc_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)  # the examples open "memory.db": a temporary SQLite file
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[\"I'm flying to Tokyo; no shellfish please.\", 'Noted: no shellfish.']"
    assert out[1] == "4"
    assert out[2].startswith("The user is allergic to shellfish. fact ")
    assert (tmp_path / "memory.db").exists()
