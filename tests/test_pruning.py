"""LLM pruning of search results: PruningMemorySearchConfig, the client's pruner_llm, the
three evaluation modes, protection, budgets and failing open."""

from __future__ import annotations

import html
import logging
import re
from typing import Any

import pytest

from oracleagentmemory.core import (
    MemoryExtractionConfig,
    MemorySearchConfig,
    OracleAgentMemory,
    PruningEvaluationMode,
    PruningMemorySearchConfig,
    TopKMemorySearchConfig,
)
from oracleagentmemory.core._client.search._prune import Pruner, prune_schema, read_prune_answer
from oracleagentmemory.core._client.search._search import estimate_tokens

from ._llm_double import LlmCall, ScriptedLlm

_RESULT = re.compile(r'<result number="(\d+)"[^>]*>(.*?)</result>', re.DOTALL)


def shown(call: LlmCall) -> dict[int, str]:
    """Result number -> text of a pruning prompt."""
    return {int(n): html.unescape(t) for n, t in _RESULT.findall(call.last_user_text)}


def judge(keep: Any) -> ScriptedLlm:
    """A pruner that keeps the results whose text ``keep(text)`` accepts."""

    def respond(call: LlmCall) -> Any:
        return {str(n): "keep" if keep(text) else "drop" for n, text in shown(call).items()}

    return ScriptedLlm(respond=respond)


def ranked_items(n: int = 10) -> list[str]:
    return [f"item {i}" for i in range(n)]


def run(mode: PruningEvaluationMode, keep: Any, n: int = 10, **kw: Any) -> tuple[list[str], Any]:
    llm = judge(keep)
    pruner = Pruner(llm, mode, kw.get("probes", 5), kw.get("protected", 0.2))
    items = ranked_items(n)
    return pruner.prune("query", items, items), llm


# --------------------------------------------------------------------------------------------
# The algorithm
# --------------------------------------------------------------------------------------------


def test_fast_judges_every_unprotected_result_in_one_call() -> None:
    kept, llm = run(PruningEvaluationMode.FAST, lambda t: t in ("item 4", "item 7"))
    assert kept == ["item 0", "item 1", "item 4", "item 7"]  # 0 and 1 are protected (20%)
    assert len(llm.calls) == 1
    assert sorted(shown(llm.calls[0])) == list(range(3, 11))  # ranks 3..10, never 1 and 2
    assert llm.calls[0].schema == prune_schema(list(range(3, 11)))
    assert "<query>query</query>" in llm.calls[0].last_user_text


def test_extended_finds_a_cut_off_with_probes_then_the_gap() -> None:
    relevant = {f"item {i}" for i in range(8)} - {"item 3"}  # 3 is a hole before the cut
    kept, llm = run(PruningEvaluationMode.EXTENDED, lambda t: t in relevant, n=20, probes=4)
    # protected: 4 of 20; probes over the 16 others at ranks 5, 9, 13, 17 (1-based)
    assert sorted(shown(llm.calls[0])) == [5, 9, 13, 17]
    # probe 5 ("item 4") is kept, probe 9 ("item 8") dropped: the gap is ranks 6-8
    assert sorted(shown(llm.calls[1])) == [6, 7, 8]
    assert kept == [f"item {i}" for i in range(8)]  # a prefix: the hole at 3 stays
    assert len(llm.calls) == 2


def test_extended_with_no_useful_probe_keeps_only_the_protected_results() -> None:
    kept, llm = run(PruningEvaluationMode.EXTENDED, lambda t: False)
    assert kept == ["item 0", "item 1"]
    assert len(llm.calls) == 1


def test_extended_when_the_last_probe_is_useful_checks_the_tail() -> None:
    kept, llm = run(PruningEvaluationMode.EXTENDED, lambda t: t != "item 9", probes=3)
    # unprotected ranks 3..10; probes at 3, 5, 8 (1-based); all kept -> the tail 9..10
    assert sorted(shown(llm.calls[0])) == [3, 5, 8]
    assert sorted(shown(llm.calls[1])) == [9, 10]
    assert kept == [f"item {i}" for i in range(9)]


def test_exhaustive_judges_each_result_in_batches_of_num_probe_points() -> None:
    kept, llm = run(
        PruningEvaluationMode.EXHAUSTIVE, lambda t: t.endswith(("3", "8", "9")), probes=3
    )
    assert [sorted(shown(c)) for c in llm.calls] == [[3, 4, 5], [6, 7, 8], [9, 10]]
    assert kept == ["item 0", "item 1", "item 3", "item 8", "item 9"]


def test_everything_protected_makes_no_call() -> None:
    kept, llm = run(PruningEvaluationMode.FAST, lambda t: False, protected=1.0)
    assert kept == ranked_items() and llm.calls == []
    kept, llm = run(PruningEvaluationMode.FAST, lambda t: False, protected=0.0, n=3)
    assert kept == [] and len(llm.calls) == 1


def test_the_pruner_fails_open(caplog: Any) -> None:
    items = ranked_items(5)
    down = Pruner(ScriptedLlm([RuntimeError("down")]), PruningEvaluationMode.FAST, 5, 0.0)
    with caplog.at_level(logging.WARNING):
        assert down.prune("q", items, items) == items
    assert "its results are kept" in caplog.text
    junk = Pruner(
        ScriptedLlm(['{"1": "drop", "2": "maybe", "9": "drop", "x": "drop"}']),
        PruningEvaluationMode.FAST,
        5,
        0.0,
    )
    with caplog.at_level(logging.WARNING):
        assert junk.prune("q", items, items) == items[1:]  # only result 1 was dropped
    assert "'9' names no result shown" in caplog.text
    assert "result 2: 'maybe' read as keep" in caplog.text
    assert read_prune_answer(["drop"], [1]).verdicts == {}


def test_long_results_are_cut_in_the_prompt() -> None:
    llm = judge(lambda t: True)
    long = "x" * 5000
    Pruner(llm, PruningEvaluationMode.FAST, 5, 0.0).prune("q", [long], [long])
    assert len(shown(llm.calls[0])[1]) < 1100


# --------------------------------------------------------------------------------------------
# Through the client and threads
# --------------------------------------------------------------------------------------------


FACTS = [
    "Maria moved to Lisbon in 2024.",
    "Maria's flat in Lisbon has a balcony.",
    "Maria likes the weather in Lisbon.",
    "Tom collects stamps.",
    "The office printer is broken.",
]


def _fill(target: Any, **scope: Any) -> None:
    for text in FACTS:
        target.add_memory(text, **scope)


def test_the_page_example_pruned_search_client(make_client: Any) -> None:
    llm = judge(lambda t: "Maria" in t)
    client = make_client(
        memory_extraction_config=MemoryExtractionConfig(extract_memories=False),
        pruner_llm=llm,
    )
    thread = client.create_thread(user_id="u1")
    _fill(thread)
    results = client.search("Where does Maria live?", user_id="u1", max_results=5)
    assert {r.content for r in results} >= {"Maria moved to Lisbon in 2024."}
    assert all("Maria" in r.content for r in results[1:])  # the protected first result aside
    assert len(results) < 5
    assert len(llm.calls) == 1
    assert all("Maria" in r.content for r in thread.search("Maria", max_results=5)[1:])
    assert len(llm.calls) == 2  # threads inherit the client's pruner


def test_search_config_on_a_thread_and_budgets_after_pruning(make_client: Any) -> None:
    client_pruner = judge(lambda t: True)
    client = make_client(pruner_llm=client_pruner)
    own = judge(lambda t: "Lisbon" in t)
    thread = client.create_thread(
        user_id="u1",
        search_config=PruningMemorySearchConfig(
            pruner=own, protected_fraction=0.0, evaluation_mode=PruningEvaluationMode.EXHAUSTIVE
        ),
    )
    _fill(thread)
    found = thread.search("Maria in Lisbon", max_results=5, record_types=["memory"])
    assert {r.content for r in found} == set(FACTS[:3])
    assert client_pruner.calls == [] and len(own.calls) == 1
    first = estimate_tokens(found[0].formatted_content)
    budgeted = thread.search(
        "Maria in Lisbon", max_results=5, record_types=["memory"], token_budget=first + 1
    )
    assert [r.content for r in budgeted] == [found[0].content]  # the budget applies after


def test_top_k_config_turns_the_client_pruner_off(make_client: Any) -> None:
    llm = judge(lambda t: False)
    client = make_client(pruner_llm=llm, search_config=TopKMemorySearchConfig(max_results=3))
    _fill(client, user_id="u1")
    assert len(client.search("Maria", user_id="u1")) == 3
    assert llm.calls == []
    budgets_only = make_client(
        name="b.db", pruner_llm=llm, search_config=MemorySearchConfig(token_budget=500)
    )
    _fill(budgets_only, user_id="u1")
    assert len(budgets_only.search("Maria", user_id="u1", max_results=5)) == 1  # protected
    assert len(llm.calls) == 1


def test_pruner_llm_must_be_an_llm(tmp_path: Any) -> None:
    with pytest.raises(TypeError, match="pruner_llm must implement ILlm"):
        OracleAgentMemory(connection=str(tmp_path / "x.db"), pruner_llm="gpt")


def test_thread_search_configs_take_effect_and_reopen_with_their_kind(make_client: Any) -> None:
    """A config given to create_thread works on the returned handle (its reranker or pruner
    included); a reopened thread rebuilds the stored kind and fields, and a stored pruning
    config prunes with the client's pruner_llm (its own LLM is never stored)."""
    first = make_client(name="k.db")
    thread = first.create_thread(
        thread_id="t1", user_id="u1", search_config=TopKMemorySearchConfig(max_results=2)
    )
    _fill(thread)
    assert len(thread.search("Maria")) == 2
    pruned = first.create_thread(
        thread_id="t2",
        user_id="u1",
        search_config=PruningMemorySearchConfig(
            pruner=judge(lambda t: False), protected_fraction=0.0
        ),
    )
    _fill(pruned)
    assert pruned.search("Maria") == []
    first.close()
    client_pruner = judge(lambda t: "Maria" in t)
    again = make_client(name="k.db", pruner_llm=client_pruner)
    assert len(again.get_thread("t1").search("Maria")) == 2
    kept = again.get_thread("t2").search("Maria", max_results=5)
    assert kept and all("Maria" in r.content for r in kept)
    assert len(client_pruner.calls) == 1
    without = make_client(name="k.db")
    assert len(without.get_thread("t2").search("Maria", max_results=5)) == 5  # budgets only
