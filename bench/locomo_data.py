"""LoCoMo as every bench reads it (the dev file of ``shared/data/locomo``): the turns of a
conversation, its usable questions, and ``Conversation``, one conversation's turns, questions
and precomputed signal matrices (``bench/tuning.py`` computes them, ``bench/tuning_rank.py``
ranks from them). ``bench/locomo.py``, ``bench/tuning.py``, ``bench/llm.py`` and
``bench/invalid_links.py`` import from here, so none of them imports another for its data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared/data/locomo/locomo_dev.json"


def parse_session_date(text: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00'."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat()


def normalise_evidence(evidence: Sequence[Any]) -> list[str]:
    """Split 'D8:6; D9:17' / space lists, fix 'D:11:26', strip leading zeros ('D30:05').
    A token that is still not a turn id (a bare 'D') is kept as is: it names no turn, so
    the question is skipped as pointing at a missing turn (995 usable dev questions, as in
    the data README's baseline)."""
    out: list[str] = []
    for item in evidence:
        for tok in re.split(r"[;,\s]+", str(item)):
            tok = re.sub(r"^D:", "D", tok.strip())
            if not tok:
                continue
            m = re.fullmatch(r"D(\d+):(\d+)", tok)
            out.append(f"D{int(m[1])}:{int(m[2])}" if m else tok)
    return list(dict.fromkeys(out))


def turns(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """All turns of a conversation in order, with their text, date and session number."""
    c = conv["conversation"]
    sessions = sorted(
        (int(k.split("_")[1]), v)
        for k, v in c.items()
        if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
    )
    out = []
    for num, session in sessions:
        date = c.get(f"session_{num}_date_time")
        ts = parse_session_date(date) if date else None
        for t in session:
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares {t['blip_caption']}]"
            dia = normalise_evidence([t["dia_id"]])
            out.append(
                {
                    "dia_id": dia[0] if dia else t["dia_id"],
                    "text": text,
                    "timestamp": ts,
                    "session": num,
                    "speaker": t["speaker"],
                }
            )
    return out


def questions(conv: dict[str, Any], known: set[str]) -> tuple[list[dict[str, Any]], int]:
    """Usable questions (normalised evidence, all pointing at existing turns) and the number
    skipped (evidence empty after normalisation, or naming a turn that does not exist)."""
    usable, skipped = [], 0
    for qa in conv["qa"]:
        gold = normalise_evidence(qa.get("evidence", []))
        if not gold or any(g not in known for g in gold):
            skipped += 1
            continue
        usable.append({"question": qa["question"], "gold": gold, "category": int(qa["category"])})
    return usable, skipped


@dataclass
class Conversation:
    """One conversation's turns, questions and per-question signal matrices."""

    sample_id: str
    dia_ids: list[str]
    questions: list[dict[str, Any]]
    gold: list[NDArray[np.int64]]
    signals: dict[str, NDArray[np.float32]]  # name -> (questions, turns); 0 = no match
