"""store.reembed: moving a store to another embedding model, on every backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from oracleagentmemory.core import SearchStrategy
from tests._embedders import HashingEmbedder

TEXTS = [
    "Alice is allergic to peanuts.",
    "Bob plays the cello on Sundays.",
    "The flight to Lisbon leaves at noon.",
    "Carol adopted a grey cat named Pixel.",
]


class FailingEmbedder(HashingEmbedder):
    """Fails on its second call: re-embedding must then change nothing."""

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        if self.calls >= 1:
            raise RuntimeError("model crashed")
        return super().embed(texts, is_query=is_query)


def _fill(store: Any) -> None:
    store.add(TEXTS, record_type="fact", record_ids=[f"f{i}" for i in range(len(TEXTS))])
    store.add(
        ["Book me a flight", "Window seat?"],
        record_type="message",
        thread_ids="t1",
        user_ids="u1",
        roles=["user", "assistant"],
    )


def test_reembed_moves_the_store_to_the_new_model(make_store: Any) -> None:
    store = make_store()
    _fill(store)
    new = HashingEmbedder(dim=96)
    written = store.reembed(new, batch_size=2)
    assert written == len(TEXTS) + 2
    assert store.embedder is new and store.vector_dim == 96
    # Searches now embed the query with the new model and find the same records.
    (record, distance), *_ = store.search("cat named Pixel", 3)
    assert record.id == "f3"
    assert distance == pytest.approx(
        1 - float(new.embed(["cat named Pixel"], is_query=True)[0] @ new.embed([TEXTS[3]])[0]),
        abs=1e-5,
    )
    # Nothing was lost: every record is still there.
    assert {r.id for r in store.list("fact")} == {f"f{i}" for i in range(len(TEXTS))}
    assert len(store.list_thread_messages("t1")) == 2
    store.close()

    # The store now belongs to the new model: the old one is refused, the new one opens.
    with pytest.raises(ValueError, match="96-dimensional"):
        make_store(embedder=HashingEmbedder())
    reopened = make_store(embedder=HashingEmbedder(dim=96))
    assert reopened.vector_dim == 96
    assert reopened.search("cat named Pixel", 1)[0][0].id == "f3"


def test_reembed_with_the_same_dimension_keeps_working_with_writes(make_store: Any) -> None:
    store = make_store(search_strategy=SearchStrategy.HYBRID)
    _fill(store)
    new = HashingEmbedder(dim=64)
    new_identity = type("Renamed", (HashingEmbedder,), {"model_identity": "tests.renamed"})()
    assert store.reembed(new_identity) == len(TEXTS) + 2
    store.add(["Dave collects stamps."], record_type="fact", record_ids="f9")
    assert store.search("stamps collection", 1)[0][0].id == "f9"
    assert new.embedding_dimension == store.vector_dim


def test_a_failing_reembed_changes_nothing(make_store: Any) -> None:
    store = make_store()
    _fill(store)
    before = [(r.id, d) for r, d in store.search("flight to Lisbon", 6)]
    with pytest.raises(RuntimeError, match="model crashed"):
        store.reembed(FailingEmbedder(dim=32), batch_size=2)
    assert store.embedder.model_identity == "tests.hashing-64"
    assert store.vector_dim == 64
    assert [(r.id, d) for r, d in store.search("flight to Lisbon", 6)] == before
    store.close()
    reopened = make_store()  # still the old model's store
    assert [(r.id, round(d, 6)) for r, d in reopened.search("flight to Lisbon", 6)] == [
        (i, round(d, 6)) for i, d in before
    ]


def test_reembed_opened_without_the_old_model(make_store: Any) -> None:
    """A user who no longer has the old model opens the store with embedder=None."""
    make_store()  # creates the schema with the old model
    _fill(make_store())
    store = make_store(embedder=None)
    assert store.reembed(HashingEmbedder(dim=48)) == len(TEXTS) + 2
    assert store.search("peanut allergy", 1)[0][0].id == "f0"


@pytest.mark.parametrize(
    ("new_embedder", "batch_size", "error"),
    [
        ("not an embedder", 256, TypeError),
        (HashingEmbedder(), 0, ValueError),
        (HashingEmbedder(), "8", TypeError),
    ],
)
def test_reembed_rejects_bad_arguments_before_writing(
    make_store: Any, new_embedder: Any, batch_size: Any, error: type[Exception]
) -> None:
    store = make_store()
    _fill(store)
    with pytest.raises(error):
        store.reembed(new_embedder, batch_size=batch_size)
    assert store.embedder.model_identity == "tests.hashing-64"
    assert store.search("cello", 1)[0][0].id == "f1"


def test_a_store_of_another_model_says_how_to_move(make_store: Any) -> None:
    make_store().close()
    renamed = type("Other", (HashingEmbedder,), {"model_identity": "tests.other-model"})()
    with pytest.raises(ValueError, match=r"store\.reembed\(new_embedder\)"):
        make_store(embedder=renamed)


def test_a_store_of_the_previous_default_model_opens_with_it(tmp_path: Path) -> None:
    """Upgrading the library does not lock users out of their embedded default store."""
    from oracleagentmemory.core import OracleAgentMemory

    path = str(tmp_path / "old-default.db")
    with OracleAgentMemory(connection=path, embedder="all-MiniLM-L6-v2") as memory:
        memory.add_memory("User likes tea", user_id="u1")
    with OracleAgentMemory(connection=path) as memory:  # the current default is another model
        assert [r.content for r in memory.search("tea", user_id="u1")] == ["User likes tea"]
    with pytest.raises(ValueError, match="reembed"):
        OracleAgentMemory(connection=path, embedder="multilingual-e5-small")


class WindowedEmbedder(HashingEmbedder):
    """A model with a 64-token window that refuses a longer input (as a strict server does)."""

    @property
    def max_input_tokens(self) -> int:
        return 64

    @property
    def model_identity(self) -> str:
        return "windowed-64"

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        longest = max(len(t.split()) for t in texts)
        if longest > 64:
            raise ValueError(f"an input of {longest} words is past the 64-token window")
        return super().embed(texts, is_query=is_query)


def test_a_row_past_the_new_models_window_gets_its_pieces_mean(make_store: Any) -> None:
    """A long text given one vector is one row (page 000); re-embedding it with a model of a
    smaller window sends the model pieces that fit, and the row gets their normalised mean."""
    store = make_store(embedder=WindowedEmbedder())
    long = " ".join(f"word{i}" for i in range(300))
    given = np.zeros(store.vector_dim, dtype=np.float32)
    given[1] = 1.0
    store.add([long, "short text"], record_type="memory", record_ids=["m", "s"],
              embeddings=[given, given])  # fmt: skip
    new = WindowedEmbedder()
    assert store.reembed(new) == 2
    pieces = store._core.chunker.split(long)
    assert len(pieces) > 1 and all(len(p.split()) <= 64 for p in pieces)
    mean = new.embed(pieces).mean(axis=0)
    want = mean / np.linalg.norm(mean)
    (hit, distance), *_ = store.search(None, 1, query_vector=want, record_types=["memory"])
    assert hit.id == "m" and distance == pytest.approx(0.0, abs=1e-5)
    (hit, distance), *_ = store.search(None, 1, query_vector=new.embed(["short text"])[0])
    assert hit.id == "s" and distance == pytest.approx(0.0, abs=1e-5)
    store.close()


def test_reembedding_with_the_same_model_changes_no_vector(make_store: Any) -> None:
    """Rows a write embedded whole (a caller's chunk longer than the chunker's cautious size
    but within the model's window) are embedded whole again: reembed(E) on a store built
    with E is a no-op on its vectors."""
    store = make_store(embedder=WindowedEmbedder())
    texts = [" ".join(f"w{i}x{j}" for j in range(n)) for i, n in enumerate((10, 60))]
    store.add(texts, record_type="memory", record_ids=["a", "b"], index_texts=[[t] for t in texts])
    d = store._dialect

    def vectors() -> dict[int, Any]:
        rows = d.execute(f"SELECT rid, {d.vector_read_sql('vector')} FROM {d.tables.chunks}")
        return {int(r): d.vectors_from_db([v], store.vector_dim)[0] for r, v in rows}

    before = vectors()
    assert len(texts[1].split()) > store._core.chunker.max_words  # past the cautious size
    store.reembed(WindowedEmbedder())
    after = vectors()
    for rid, v in before.items():
        assert np.allclose(v, after[rid], atol=1e-6)
    store.close()
