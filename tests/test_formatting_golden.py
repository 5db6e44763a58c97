"""Search results and context cards render exactly as the reference SDK renders them.

``tests/golden/format_goldens.json`` was written by running ``tests/golden/format_cases.py``
against the reference package (see ``tests/golden/make_goldens.py``); this test runs the same
cases against ours.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden.format_cases import cases

GOLDENS = json.loads((Path(__file__).parent / "golden" / "format_goldens.json").read_text())
CASES = cases()


def test_every_case_has_a_golden() -> None:
    assert sorted(CASES) == sorted(GOLDENS)


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_rendering_matches_the_reference(name: str) -> None:
    expected = GOLDENS[name]
    if "error" in expected:
        with pytest.raises(Exception) as info:
            CASES[name]()
        assert type(info.value).__name__ == expected["error"]
    else:
        assert CASES[name]() == expected["text"]
