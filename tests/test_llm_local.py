"""The offline ``LocalLlm``: provenance checks (always) and the real model (``make test-llm``).

Tests marked ``local_llm`` load the packaged Qwen2.5-Coder-0.5B through llama.cpp; they need
the ``[local-llm]`` extra, are deselected by ``make test`` and run by ``make test-llm``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oracleagentmemory.apis.message import ImageContent, ImageMimeType
from oracleagentmemory.apis.thread import Message
from oracleagentmemory.core.llms import LlmOutputError
from oracleagentmemory.core.llms.local import (
    DEFAULT_MODEL,
    MODELS,
    LocalLlm,
    LocalModel,
    llama_cpp_available,
    model_file,
)

# -- provenance: packaged parts are joined, hashed and pinned (no llama.cpp needed) -------------


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalModel, list[bytes]]:
    """Two installed packages on sys.path holding the parts of a small 'model' file."""
    site = tmp_path / "site"
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"tail-of-the-model" * 100]
    for i, chunk in enumerate(chunks, start=1):
        pkg = site / f"oam_fake_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(chunks)
    model = LocalModel(
        name="fake-model",
        parts=(("oam_fake_part1", "data/part01.bin"), ("oam_fake_part2", "data/part02.bin")),
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        license="test",
        install="pip install fake",
    )
    return model, chunks


def test_parts_are_joined_once_and_verified(
    fake_parts: tuple[LocalModel, list[bytes]], tmp_path: Path
) -> None:
    model, chunks = fake_parts
    cache = tmp_path / "cache"
    path = model_file(model, cache)
    assert path.read_bytes() == b"".join(chunks)
    assert path.parent == cache and model.sha256[:12] in path.name
    mtime = path.stat().st_mtime_ns
    assert model_file(model, cache) == path and path.stat().st_mtime_ns == mtime  # reused
    assert "oam_fake_part1" not in sys.modules  # found on disk, never imported
    path.write_bytes(b"corrupted")  # a damaged cache file is rebuilt from the parts
    assert model_file(model, cache).read_bytes() == b"".join(chunks)


def test_wrong_sha256_is_refused(
    fake_parts: tuple[LocalModel, list[bytes]], tmp_path: Path
) -> None:
    model, _ = fake_parts
    wrong = dataclasses.replace(model, sha256="0" * 64)
    with pytest.raises(ValueError, match="refusing to load"):
        model_file(wrong, tmp_path / "cache")
    assert list((tmp_path / "cache").glob("*.gguf")) == []  # nothing half-written is left


def test_missing_parts_name_the_packages(tmp_path: Path) -> None:
    model = LocalModel(
        "x", (("oam_not_installed_pkg", "a.bin"),), "0" * 64, 1, "-", "pip install x"
    )
    with pytest.raises(FileNotFoundError, match=r"oam_not_installed_pkg.*pip install x"):
        model_file(model, tmp_path)


def test_registry_pins_full_hashes() -> None:
    for model in MODELS.values():
        assert len(model.sha256) == 64 and int(model.sha256, 16) >= 0
        assert model.license and model.install
    assert MODELS[DEFAULT_MODEL].sha256.startswith("1d961463") and MODELS[
        DEFAULT_MODEL
    ].sha256.endswith("c4ff32")


@pytest.mark.skipif(llama_cpp_available(), reason="llama_cpp is installed here")
def test_missing_runtime_names_the_extra() -> None:
    with pytest.raises(ImportError, match=r"recallwell\[local-llm\]"):
        LocalLlm()


# -- the real model (make test-llm) ----------------------------------------------------------------

local_llm = pytest.mark.local_llm

MEMORY_SCHEMA = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": 6,
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 3, "maxLength": 160},
                    "type": {"enum": ["memory", "fact", "preference", "guideline"]},
                },
                "required": ["content", "type"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memories"],
    "additionalProperties": False,
}

CONVERSATION = [
    Message("system", "Extract durable facts and preferences about the user as short sentences."),
    Message(
        "user",
        "Conversation:\nuser: Hi, I'm Maria. I moved from Boston to Lisbon last spring.\n"
        "assistant: Welcome! How do you like it?\n"
        "user: Love it. I'm vegetarian, so the food took some exploring. I prefer green tea.",
    ),
]


@pytest.fixture(scope="module")
def real_llm() -> Iterator[LocalLlm]:
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not installed (extra [local-llm]; run make test-llm)")
    try:
        llm = LocalLlm(max_tokens=256)
    except FileNotFoundError as exc:
        pytest.skip(f"the packaged weights are not installed: {exc}")
    with llm:
        yield llm


@local_llm
def test_real_model_answers_text(real_llm: LocalLlm) -> None:
    response = real_llm.generate("Reply with the single word: hello", max_tokens=8)
    assert response.text.strip()
    assert response.usage is not None and (response.usage.completion_tokens or 0) >= 1
    assert response.finish_reason in ("stop", "length")


@local_llm
def test_real_model_follows_a_json_schema(real_llm: LocalLlm) -> None:
    start = time.monotonic()
    response = real_llm.generate(CONVERSATION, response_json_schema=MEMORY_SCHEMA)
    elapsed = time.monotonic() - start
    value = json.loads(response.text)
    assert isinstance(value["memories"], list) and value["memories"]
    text = " ".join(m["content"] for m in value["memories"]).lower()
    assert "lisbon" in text or "vegetarian" in text or "tea" in text, value
    print(f"\nstructured extraction took {elapsed:.1f} s: {value}")


@local_llm
def test_real_model_cut_off_is_a_failure(real_llm: LocalLlm) -> None:
    with pytest.raises(LlmOutputError, match="cut off"):
        real_llm.generate(CONVERSATION, response_json_schema=MEMORY_SCHEMA, max_tokens=6)


@local_llm
def test_real_model_async_and_text_only(real_llm: LocalLlm) -> None:
    response = asyncio.run(real_llm.generate_async("Say OK.", max_tokens=4))
    assert response.text.strip()
    with pytest.raises(ValueError, match="text only"):
        real_llm.generate([Message("user", [ImageContent(b"\x89PNG", ImageMimeType.PNG)])])


@local_llm
def test_real_model_constrained_without_schema_in_prompt() -> None:
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not installed (extra [local-llm]; run make test-llm)")
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 40}},
        "required": ["city"],
        "additionalProperties": False,
    }
    with LocalLlm(schema_in_prompt=False, max_tokens=40) as llm:
        response = llm.generate(
            "Maria lives in Lisbon. In which city does Maria live?", response_json_schema=schema
        )
    assert set(json.loads(response.text)) == {"city"}


@local_llm
def test_real_model_extracts_memories_that_search_finds(tmp_path: Path) -> None:
    """The whole offline path: the client extracts memories from a conversation with the
    packaged model (INLINE), and search finds them with their source messages."""
    from oracleagentmemory.core import (
        MemoryExtractionConfig,
        MemoryExtractionMode,
        OracleAgentMemory,
    )

    if not llama_cpp_available():
        pytest.skip("llama_cpp is not installed (extra [local-llm]; run make test-llm)")
    config = MemoryExtractionConfig(
        extraction_mode=MemoryExtractionMode.INLINE,
        enable_context_summary=False,
        memory_extraction_custom_instructions=(
            "Write one memory per fact, each a short sentence about the user in the third "
            "person. Never copy whole messages."
        ),
    )
    with (
        LocalLlm(max_tokens=768) as llm,
        OracleAgentMemory(
            connection=str(tmp_path / "m.db"), llm=llm, memory_extraction_config=config
        ) as memory,
    ):
        thread = memory.create_thread(thread_id="t", user_id="maria", agent_id="a")
        ids = thread.add_messages(
            [
                {"role": "user", "content": "Hi, I'm Maria. I moved from Boston to Lisbon."},
                {"role": "assistant", "content": "Welcome to Lisbon!"},
                {"role": "user", "content": "Thanks. I'm vegetarian."},
            ]
        )
        extracted = memory.list_memories(user_id="maria")
        assert extracted, "the model extracted nothing"
        results = memory.search(
            "Where does Maria live?", user_id="maria", record_types=["fact", "memory", "preference"]
        )
        assert results and "lisbon" in results[0].content.lower()
        sources = getattr(results[0], "source_message_ids", ())
        assert sources and set(sources) <= set(ids)
