"""The OpenAI-compatible ``Embedder`` against a real local HTTP server speaking the protocol."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core.embedders import Embedder, EmbeddingRequestError

from ._openai_server import (
    NATIVE_DIMENSION,
    FakeOpenAIServer,
    Scripted,
    error_reply,
    vector_for,
)
from ._pki import make_pki, server_tls

KEY = "sk-test"
MODEL = "test-embed"


def unit(v: NDArray[np.float32]) -> NDArray[np.float32]:
    out: NDArray[np.float32] = v / np.linalg.norm(v)
    return out


def expected(texts: list[str], dims: int = NATIVE_DIMENSION) -> NDArray[np.float32]:
    return np.stack([unit(vector_for(t, dims)) for t in texts])


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=KEY, models=(MODEL, "other-model")) as srv:
        yield srv


@pytest.fixture
def emb(server: FakeOpenAIServer) -> Iterator[Embedder]:
    with Embedder(MODEL, api_base=server.api_base, api_key=KEY) as e:
        yield e


def make(server: FakeOpenAIServer, **kwargs: Any) -> Embedder:
    kwargs.setdefault("api_key", KEY)
    return Embedder(kwargs.pop("model", MODEL), api_base=server.api_base, **kwargs)


TEXTS = [f"memory number {i} about topic {i % 7}" for i in range(25)]


# -- the wire protocol -------------------------------------------------------------------------


def test_is_an_iembedder(emb: Embedder) -> None:
    assert isinstance(emb, IEmbedder)


def test_sync_embed_orders_by_index_and_normalises(emb: Embedder, server: FakeOpenAIServer) -> None:
    out = emb.embed(TEXTS)
    assert out.shape == (len(TEXTS), NATIVE_DIMENSION)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected(TEXTS), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    (req,) = server.requests
    assert req.path == "/v1/embeddings"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body == {"model": MODEL, "input": TEXTS}


def test_server_really_shuffles(server: FakeOpenAIServer, emb: Embedder) -> None:
    # Guards the ordering test: the reply's data must not already be in request order.
    import httpx

    r = httpx.post(
        f"{server.api_base}/embeddings",
        json={"model": MODEL, "input": TEXTS},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    indices = [item["index"] for item in r.json()["data"]]
    assert sorted(indices) == list(range(len(TEXTS)))
    assert indices != sorted(indices)


def test_normalize_false_returns_server_vectors(server: FakeOpenAIServer) -> None:
    with make(server, normalize=False) as e:
        out = e.embed(["alpha", "beta"])
    np.testing.assert_allclose(out, np.stack([vector_for("alpha"), vector_for("beta")]), 1e-6)
    assert not np.allclose(np.linalg.norm(out, axis=1), 1.0)


def test_prefixes_reach_the_server(server: FakeOpenAIServer) -> None:
    with make(server, query_prefix="query: ", document_prefix="passage: ") as e:
        docs = e.embed(["cats purr"])
        query = e.embed(["cats purr"], is_query=True)
    assert server.inputs == [["passage: cats purr"], ["query: cats purr"]]
    np.testing.assert_allclose(docs[0], unit(vector_for("passage: cats purr")), rtol=1e-5)
    np.testing.assert_allclose(query[0], unit(vector_for("query: cats purr")), rtol=1e-5)


def test_no_prefix_by_default_and_none_means_no_prefix(server: FakeOpenAIServer) -> None:
    with make(server, query_prefix=None, document_prefix=None) as e:
        e.embed(["x"], is_query=True)
        e.embed(["y"])
    assert server.inputs == [["x"], ["y"]]


def test_batches_large_inputs_and_keeps_order(emb: Embedder, server: FakeOpenAIServer) -> None:
    texts = [f"text {i}" for i in range(600)]
    out = emb.embed(texts)
    assert [len(batch) for batch in server.inputs] == [256, 256, 88]
    assert [t for batch in server.inputs for t in batch] == texts
    np.testing.assert_allclose(out, expected(texts), rtol=1e-5, atol=1e-6)


def test_batch_size_can_be_tuned_per_instance(emb: Embedder, server: FakeOpenAIServer) -> None:
    emb.batch_size = 10
    emb.embed(TEXTS)
    assert [len(batch) for batch in server.inputs] == [10, 10, 5]


def test_requested_dimensions(server: FakeOpenAIServer) -> None:
    with make(server, embedding_dimension=8) as e:
        assert e.embedding_dimension == 8
        assert not server.requests  # a configured dimension needs no probe
        out = e.embed(["a", "b"])
        assert e.model_identity == f"openai-compatible:{MODEL}:8"
    assert out.shape == (2, 8)
    assert server.requests[0].body["dimensions"] == 8
    np.testing.assert_allclose(out, expected(["a", "b"], 8), rtol=1e-5, atol=1e-6)


def test_dimension_is_probed_once_and_cached(emb: Embedder, server: FakeOpenAIServer) -> None:
    assert emb.embedding_dimension == NATIVE_DIMENSION
    assert emb.embedding_dimension == NATIVE_DIMENSION
    assert len(server.requests) == 1
    assert "dimensions" not in server.requests[0].body
    assert emb.model_identity == f"openai-compatible:{MODEL}"


def test_dimension_learnt_from_first_embed(emb: Embedder, server: FakeOpenAIServer) -> None:
    emb.embed(["hello"])
    assert emb.embedding_dimension == NATIVE_DIMENSION
    assert len(server.requests) == 1


def test_empty_input(emb: Embedder, server: FakeOpenAIServer) -> None:
    out = emb.embed([])
    assert out.shape == (0, NATIVE_DIMENSION)
    assert out.dtype == np.float32
    assert emb.embed([]).shape == (0, NATIVE_DIMENSION)
    assert len(server.requests) == 1  # only the probe


def test_extra_fields_and_truncation_go_into_the_body(server: FakeOpenAIServer) -> None:
    with make(server, truncate_prompt_tokens=128, user="agent-7") as e:
        e.embed(["x"])
    body = server.requests[0].body
    assert body["truncate_prompt_tokens"] == 128
    assert body["user"] == "agent-7"


def test_base64_encoding_format(server: FakeOpenAIServer) -> None:
    with make(server, encoding_format="base64") as e:
        out = e.embed(TEXTS)
    assert server.requests[0].body["encoding_format"] == "base64"
    np.testing.assert_allclose(out, expected(TEXTS), rtol=1e-5, atol=1e-6)


def test_max_input_tokens(server: FakeOpenAIServer) -> None:
    assert make(server).max_input_tokens == 512
    assert make(server, max_input_tokens=8192).max_input_tokens == 8192


def test_api_base_may_name_the_endpoint(server: FakeOpenAIServer) -> None:
    with Embedder(MODEL, api_base=server.api_base + "/embeddings/", api_key=KEY) as e:
        assert e.embed(["x"]).shape == (1, NATIVE_DIMENSION)
    assert server.requests[0].path == "/v1/embeddings"


def test_defaults_come_from_the_environment(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.api_base)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with Embedder(MODEL) as e:
        e.embed(["x"])
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_explicit_none_key_sends_no_header(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with make(server, api_key=None) as e, pytest.raises(EmbeddingRequestError) as info:
        e.embed(["x"])
    assert info.value.status_code == 401
    assert "authorization" not in server.requests[0].headers


def test_keyless_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer(api_key=None) as srv, Embedder(MODEL, api_base=srv.api_base) as e:
        assert e.embed(["x"]).shape == (1, NATIVE_DIMENSION)
        assert "authorization" not in srv.requests[0].headers


def test_close_then_reuse(server: FakeOpenAIServer) -> None:
    e = make(server)
    first = e.embed(["x"])
    e.close()
    e.close()
    np.testing.assert_array_equal(e.embed(["x"]), first)
    e.close()


def test_repr_hides_the_key(emb: Embedder) -> None:
    assert KEY not in repr(emb)
    assert MODEL in repr(emb)


# -- errors ------------------------------------------------------------------------------------


def test_wrong_key_maps_to_a_clear_error(server: FakeOpenAIServer) -> None:
    with make(server, api_key="sk-wrong") as e, pytest.raises(EmbeddingRequestError) as info:
        e.embed(["x"])
    err = info.value
    assert isinstance(err, RuntimeError)
    assert err.status_code == 401
    assert err.server_message == "Incorrect API key provided."
    assert "401" in str(err) and "Incorrect API key provided." in str(err)
    assert "sk-wrong" not in str(err)


def test_bad_request_maps_to_400(server: FakeOpenAIServer) -> None:
    with make(server, embedding_dimension=999) as e, pytest.raises(EmbeddingRequestError) as info:
        e.embed(["x"])
    assert info.value.status_code == 400
    assert "dimensions" in str(info.value)


def test_unknown_model_maps_to_404(server: FakeOpenAIServer) -> None:
    with make(server, model="nope") as e, pytest.raises(EmbeddingRequestError) as info:
        e.embed(["x"])
    assert info.value.status_code == 404
    assert "nope" in str(info.value)


def test_non_json_error_body(server: FakeOpenAIServer, emb: Embedder) -> None:
    server.script.append(Scripted(400, b"plain text failure"))
    with pytest.raises(EmbeddingRequestError, match="plain text failure"):
        emb.embed(["x"])


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not json</html>",
        b'{"object": "list"}',
        b'{"data": [{"index": 0, "embedding": [1.0, 2.0]}]}',  # one row for two inputs
        b'{"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}',
        b'{"data": [{"index": 0, "embedding": [1.0]}, {"index": 5, "embedding": [2.0]}]}',
        b'{"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}',
        b'{"data": [{"index": 0, "embedding": ["a"]}, {"index": 1, "embedding": [2.0]}]}',
        b'{"data": [{"index": 0}, {"index": 1, "embedding": [2.0]}]}',
        b'{"data": [{"index": 0, "embedding": "***"}, {"index": 1, "embedding": [2.0]}]}',
    ],
)
def test_malformed_responses_raise_value_error(
    server: FakeOpenAIServer, emb: Embedder, body: bytes
) -> None:
    server.script.append(Scripted(200, body))
    with pytest.raises(ValueError, match=r"malformed|not JSON"):
        emb.embed(["a", "b"])


def test_dimension_change_is_refused(server: FakeOpenAIServer, emb: Embedder) -> None:
    emb.embed(["a"])
    server.script.append(Scripted(200, b'{"data": [{"index": 0, "embedding": [1.0, 2.0]}]}'))
    with pytest.raises(ValueError, match="2-dimensional"):
        emb.embed(["b"])


def test_transient_failures_are_retried(server: FakeOpenAIServer, emb: Embedder) -> None:
    server.script += [
        error_reply(503, "overloaded", **{"Retry-After": "0"}),
        error_reply(429, "slow down", **{"Retry-After": "0"}),
    ]
    out = emb.embed(["x"])
    np.testing.assert_allclose(out, expected(["x"]), rtol=1e-5)
    assert len(server.requests) == 3


def test_retries_give_up(server: FakeOpenAIServer, emb: Embedder) -> None:
    server.script += [error_reply(429, "slow down", **{"Retry-After": "0"})] * 3
    with pytest.raises(EmbeddingRequestError, match="slow down") as info:
        emb.embed(["x"])
    assert info.value.status_code == 429
    assert len(server.requests) == 3


def test_unreachable_server() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = Embedder(MODEL, api_base=f"http://127.0.0.1:{port}/v1", api_key=KEY)
    e.max_retries = 0
    with e, pytest.raises(EmbeddingRequestError) as info:
        e.embed(["x"])
    assert info.value.status_code is None
    assert f"127.0.0.1:{port}" in str(info.value)


# -- argument validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"model": ""}, ValueError, "model"),
        ({"model": "  "}, ValueError, "model"),
        ({"model": 3}, TypeError, "model"),
        ({"model": None}, TypeError, "model"),
        ({"embedding_dimension": 0}, ValueError, "embedding_dimension"),
        ({"embedding_dimension": -4}, ValueError, "embedding_dimension"),
        ({"embedding_dimension": "8"}, TypeError, "embedding_dimension"),
        ({"embedding_dimension": True}, TypeError, "embedding_dimension"),
        ({"max_input_tokens": 0}, ValueError, "max_input_tokens"),
        ({"max_input_tokens": 1.5}, TypeError, "max_input_tokens"),
        ({"normalize": "yes"}, TypeError, "normalize"),
        ({"trust_env": 1}, TypeError, "trust_env"),
        ({"query_prefix": 1}, TypeError, "query_prefix"),
        ({"api_key": 42}, TypeError, "api_key"),
        ({"api_base": "ftp://example.com"}, ValueError, "api_base"),
        ({"truncate_prompt_tokens": 0}, ValueError, "truncate_prompt_tokens"),
        ({"truncate_prompt_tokens": "7"}, TypeError, "truncate_prompt_tokens"),
        ({"cert_file": "/nonexistent/cert.pem"}, ValueError, "cert_file"),
        ({"ca_file": "/nonexistent/ca.pem"}, ValueError, "ca_file"),
        ({"key_file": __file__}, ValueError, "key_file needs cert_file"),
        ({"input": ["sneaky"]}, ValueError, "input"),
        ({"dimensions": 8}, ValueError, "dimensions"),
    ],
)
def test_argument_validation(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    args = {"model": MODEL, "api_base": "http://127.0.0.1:9/v1", **kwargs}
    with pytest.raises(error, match=match):
        Embedder(**args)


def test_truncate_minus_one_means_model_limit(server: FakeOpenAIServer) -> None:
    with make(server, truncate_prompt_tokens=-1) as e:
        e.embed(["x"])
    assert server.requests[0].body["truncate_prompt_tokens"] == -1


def test_texts_must_be_a_list_of_str(emb: Embedder) -> None:
    with pytest.raises(TypeError):
        emb.embed("not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        emb.embed(["ok", 3])  # type: ignore[list-item]


# -- async -------------------------------------------------------------------------------------


async def test_async_matches_sync(server: FakeOpenAIServer) -> None:
    async with make(server) as e:
        out = await e.embed_async(TEXTS)
        sync = await asyncio.to_thread(e.embed, TEXTS)
    np.testing.assert_allclose(out, expected(TEXTS), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out, sync)


async def test_async_prefix_batching_and_dimensions(server: FakeOpenAIServer) -> None:
    texts = [f"t{i}" for i in range(300)]
    async with make(server, query_prefix="q: ", embedding_dimension=4) as e:
        out = await e.embed_async(texts, is_query=True)
    assert out.shape == (300, 4)
    assert [len(b) for b in server.inputs] == [256, 44]
    assert server.inputs[0][0] == "q: t0"
    np.testing.assert_allclose(out, expected([f"q: {t}" for t in texts], 4), rtol=1e-5, atol=1e-6)


async def test_async_concurrent_calls(server: FakeOpenAIServer) -> None:
    async with make(server) as e:
        results = await asyncio.gather(*(e.embed_async([f"c{i}"]) for i in range(8)))
    for i, out in enumerate(results):
        np.testing.assert_allclose(out[0], unit(vector_for(f"c{i}")), rtol=1e-5)


async def test_async_empty_probes_without_blocking(server: FakeOpenAIServer) -> None:
    async with make(server) as e:
        out = await e.embed_async([])
    assert out.shape == (0, NATIVE_DIMENSION)
    assert len(server.requests) == 1


async def test_async_errors(server: FakeOpenAIServer) -> None:
    async with make(server, api_key="sk-wrong") as e:
        with pytest.raises(EmbeddingRequestError) as info:
            await e.embed_async(["x"])
    assert info.value.status_code == 401
    server.script.append(Scripted(200, b"{}"))
    async with make(server) as e:
        with pytest.raises(ValueError, match="malformed"):
            await e.embed_async(["x"])


async def test_async_retry(server: FakeOpenAIServer) -> None:
    server.script.append(error_reply(502, "bad gateway", **{"Retry-After": "0"}))
    async with make(server) as e:
        out = await e.embed_async(["x"])
    assert out.shape == (1, NATIVE_DIMENSION)
    assert len(server.requests) == 2


def test_async_across_event_loops(server: FakeOpenAIServer) -> None:
    e = make(server)

    async def once(text: str) -> NDArray[np.float32]:
        out = await e.embed_async([text])
        await e.aclose()
        return out

    a = asyncio.run(once("first loop"))
    b = asyncio.run(once("second loop"))
    np.testing.assert_allclose(a[0], unit(vector_for("first loop")), rtol=1e-5)
    np.testing.assert_allclose(b[0], unit(vector_for("second loop")), rtol=1e-5)
    e.close()


def test_sync_close_releases_an_idle_loops_pool(server: FakeOpenAIServer) -> None:
    loop = asyncio.new_event_loop()
    try:
        e = make(server)
        loop.run_until_complete(e.embed_async(["x"]))
        assert len(e._http._aclients) == 1
        e.close()
        assert len(e._http._aclients) == 0
        # Closed means released, not unusable: the next call opens a new pool.
        assert loop.run_until_complete(e.embed_async(["y"])).shape == (1, NATIVE_DIMENSION)
        loop.run_until_complete(e.aclose())
    finally:
        loop.close()


async def test_sync_close_inside_a_running_loop(server: FakeOpenAIServer) -> None:
    e = make(server)
    await e.embed_async(["x"])
    e.close()  # schedules the pool's closing on this loop
    await asyncio.sleep(0.05)
    assert (await e.embed_async(["y"])).shape == (1, NATIVE_DIMENSION)
    await e.aclose()


def test_redirect_is_an_error(server: FakeOpenAIServer, emb: Embedder) -> None:
    server.script.append(Scripted(307, b"", {"Location": "http://example.invalid/v1"}))
    with pytest.raises(EmbeddingRequestError) as info:
        emb.embed(["x"])
    assert info.value.status_code == 307


# -- TLS ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_tls_with_custom_ca(pki: Path) -> None:
    with FakeOpenAIServer(ssl_context=server_tls(pki, require_client_cert=False)) as srv:
        assert srv.api_base.startswith("https://")
        with make(srv, ca_file=str(pki / "ca.pem")) as e:
            np.testing.assert_allclose(e.embed(["x"]), expected(["x"]), rtol=1e-5)
        untrusted = make(srv, trust_env=False)
        untrusted.max_retries = 0
        with untrusted, pytest.raises(EmbeddingRequestError, match="CERTIFICATE_VERIFY_FAILED"):
            untrusted.embed(["x"])


def test_tls_client_certificate(pki: Path) -> None:
    with FakeOpenAIServer(ssl_context=server_tls(pki, require_client_cert=True)) as srv:
        files = {
            "ca_file": str(pki / "ca.pem"),
            "cert_file": str(pki / "client.pem"),
            "key_file": str(pki / "client.key"),
        }
        with make(srv, **files) as e:
            assert e.embed(["x"]).shape == (1, NATIVE_DIMENSION)
        anonymous = make(srv, ca_file=str(pki / "ca.pem"))
        anonymous.max_retries = 0
        with anonymous, pytest.raises(EmbeddingRequestError):
            anonymous.embed(["x"])
