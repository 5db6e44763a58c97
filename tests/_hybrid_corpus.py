"""A seeded chat corpus and HYBRID searches over it, for the golden-ranking test (#53).

``fill`` writes three users' threads of messages (words drawn from a Zipf-like vocabulary, so
keyword scores vary; timestamps over 2023, so dated queries move the ranking), a few memories
and a metadata key; ``searches`` lists the searches; ``answers`` runs them all on a HYBRID
store, each ``REPEATS`` times (a repeated search may be answered from caches the first one
filled), then writes more messages and runs them again. ``tests/golden/make_hybrid_goldens.py``
saved the answers of the implementation before #53; ``test_hybrid_golden`` compares.
"""

from __future__ import annotations

import random
from typing import Any

_WORDS = (
    "camping hiking painting pottery guitar concert museum library garden beach mountain"
    " river sunset dinner recipe cookies sister brother mother friend adoption school"
    " career counseling support group parade pride book novel poem dance yoga running"
    " marathon bike car trip vacation paris tokyo dog cat puppy kitten birthday party"
    " wedding job interview nurse teacher doctor volunteer shelter charity donation"
    " music violin piano drawing sketch photo camera picture lake forest tent fire"
)
WORDS = _WORDS.split()
_FILLER = "i you we it is was the a to and of so really very just that this"
FILLER = _FILLER.split()
USERS = ("ua", "ub", "uc")
THREADS_PER_USER = 2
MESSAGES_PER_THREAD = 90
REPEATS = 3


def _text(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(4, 14)):
        if rng.random() < 0.45:
            words.append(rng.choice(FILLER))
        else:  # Zipf-like: the first words of the list are the common ones
            words.append(WORDS[min(int(rng.paretovariate(0.9)) - 1, len(WORDS) - 1)])
    return " ".join(words).capitalize() + rng.choice([".", "!", "?"])


def _stamp(i: int) -> str:
    month, day = 1 + (i // 28) % 12, 1 + i % 28
    return f"2023-{month:02d}-{day:02d}T10:00:00"


def fill(store: Any, seed: int = 53, part: int = 0) -> None:
    """Write the corpus (``part`` 0), or the messages written between the two rounds (1)."""
    rng = random.Random(seed + part)
    if part == 1:
        store.add(
            [_text(rng) for _ in range(12)],
            record_type="message",
            record_ids=[f"late{i}" for i in range(12)],
            thread_ids="ua-t0",
            user_ids="ua",
            roles="user",
            timestamps=[_stamp(400 + i) for i in range(12)],
        )
        return
    for u in USERS:
        for t in range(THREADS_PER_USER):
            n = MESSAGES_PER_THREAD
            store.add(
                [_text(rng) for _ in range(n)],
                record_type="message",
                record_ids=[f"{u}-t{t}-m{i}" for i in range(n)],
                thread_ids=f"{u}-t{t}",
                user_ids=u,
                roles=["user" if i % 2 == 0 else "assistant" for i in range(n)],
                timestamps=[_stamp(i * 3 + t) for i in range(n)],
                metadata=[{"topic": "a" if i % 3 else "b"} for i in range(n)],
            )
        store.add(
            [_text(rng) for _ in range(6)],
            record_type="memory",
            record_ids=[f"{u}-mem{i}" for i in range(6)],
            user_ids=u,
        )


def searches(seed: int = 53) -> list[tuple[str, dict[str, Any]]]:
    """(query, keyword arguments of ``store.search``) of every search."""
    rng = random.Random(seed * 7)
    texts = [" ".join(rng.sample(WORDS[:30], rng.randint(1, 4))) for _ in range(12)]
    texts += ["What did she paint in May 2023?", "the camping trip", "zzz unknownword"]
    out: list[tuple[str, dict[str, Any]]] = []
    for i, text in enumerate(texts):
        user = USERS[i % len(USERS)]
        out.append((text, {"user_id": user, "exact_user_match": True,
                           "record_types": ["message"]}))  # fmt: skip
        out.append((text, {"user_id": user, "exact_user_match": True}))
        out.append((text, {"thread_id": f"{user}-t1", "exact_thread_match": True}))
        out.append((text, {"user_id": user, "exact_user_match": True,
                           "metadata_filter": {"topic": "a"}}))  # fmt: skip
        if i % 4 == 0:
            out.append((text, {}))
            out.append((text, {"user_id": user, "exact_user_match": True, "k": 3}))
    return out


def answers(store: Any) -> list[list[list[list[Any]]]]:
    """For every search, before and after the second write, its ``REPEATS`` answers (each a
    list of ``[record id, distance]``)."""
    out = []
    for part in (0, 1):
        fill(store, part=part)
        for text, kwargs in searches():
            args = dict(kwargs)
            k = args.pop("k", 10)
            out.append(
                [
                    [[rec.id, dist] for rec, dist in store.search(text, k, **args)]
                    for _ in range(REPEATS)
                ]
            )
    return out
