"""The argument check every bundled and served embedder runs before embedding."""

from __future__ import annotations

from typing import Any

from oracleagentmemory.apis.embedders.embedder import check_texts_encodable


def check_text_list(texts: Any) -> None:
    """TypeError unless ``texts`` is a list of str; ValueError for text that is not Unicode."""
    if isinstance(texts, str) or not isinstance(texts, list):
        raise TypeError(f"texts must be a list of str, got {type(texts).__name__}")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be str, got {type(text).__name__}")
    check_texts_encodable(texts)
