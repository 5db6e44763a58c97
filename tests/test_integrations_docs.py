"""The integrations index (docs/integrations/README.md) shows the tested first examples of the
framework pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "integrations"
PAGES = {"langgraph.md": [0], "openai-agents.md": [0], "langchain.md": [0, 2]}


def _blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_index_shows_the_pages_tested_examples(page: str) -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    section = index.split("## A first example of each", 1)[1].split("\n## ", 1)[0]
    shown = _blocks(section)
    doc = _blocks((DOCS / page).read_text(encoding="utf-8"))
    for i in PAGES[page]:
        assert doc[i] in shown, f"the index differs from {page}'s example {i}"
        assert len([line for line in doc[i].splitlines() if line.strip()]) <= 15
