"""Late chunking of a thread's messages (Günther et al., 2024): one forward pass over a segment
of consecutive messages, each message's vector pooled from its own tokens' states.

A message's vector is then contextualised by the messages around it in its segment at about
1.3x the turn's tokens, where embedding each message with the one before it
(``window_text``) costs 1.9x. ``python -m bench window-late`` chose the segment and the span on
the LoCoMo dev conversations (leave one conversation out, by HYBRID recall@10): segments of
:data:`GROUP` messages overlapping by one, the message's own tokens only (no BOS, prefix or EOS
state); held out, HYBRID recall@10 -0.011 [-0.024, +0.002] and dense -0.006 [-0.031, +0.018]
against the pair windows (docs/retrieval-quality.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

GROUP = 4
"""Messages per segment (chosen by ``bench/window_late.py``); consecutive segments share one."""
REACH = GROUP - 1
"""How many messages before and after a message can be in a segment whose vectors it shaped:
a forget re-derives the vectors of the messages this close to a deleted one."""


def segments(lens: list[int], limit: int, first_owned: bool) -> list[tuple[int, int, bool]]:
    """``(start, end, owns_first)`` of each pass over messages of ``lens`` tokens: at most
    :data:`GROUP` messages and ``limit`` tokens, each starting at the last message of the one
    before. ``owns_first``: the segment's first message takes its vector from it (it starts
    the run, with ``first_owned``, or follows a message it could not share a segment with);
    otherwise the first message is context only. A message of more than ``limit`` tokens
    (or of none) is in no segment."""
    out: list[tuple[int, int, bool]] = []
    s, owned, n = 0, first_owned, len(lens)
    while s < n:
        if not 0 < lens[s] <= limit:
            s, owned = s + 1, True
            continue
        total, e = lens[s], s + 1
        while e < n and e - s < GROUP and lens[e] > 0 and total + lens[e] <= limit:
            total += lens[e]
            e += 1
        if e - s > 1 or owned:
            out.append((s, e, owned))
        if e == n:
            break
        s, owned = (e - 1, False) if e - s > 1 else (e, True)
    return out


def late_vectors(
    tokens: list[list[int]],
    prefix: list[int],
    limit: int,
    states: Callable[[list[list[int]]], NDArray[np.float32]],
    batch: int,
    first_owned: bool,
) -> tuple[NDArray[np.float32], list[int]]:
    """Unnormalised vectors of the messages whose token lists are ``tokens`` (the rows of
    messages in no segment, or context only, stay zero) and the indexes that got one.

    ``states`` maps a batch of token lists to their token states [B, L, H], BOS first;
    each segment is ``prefix`` and its messages' tokens, ``limit`` content tokens at most."""
    segs = segments([len(t) for t in tokens], limit - len(prefix), first_owned)
    order = sorted(range(len(segs)), key=lambda k: sum(map(len, tokens[segs[k][0] : segs[k][1]])))
    out: NDArray[np.float32] | None = None
    done: list[int] = []
    for b in range(0, len(order), batch):
        part = [segs[k] for k in order[b : b + batch]]
        hidden = states([prefix + [x for t in tokens[s:e] for x in t] for s, e, _ in part])
        if out is None:
            out = np.zeros((len(tokens), hidden.shape[-1]), np.float32)
        for row, (s, e, owned) in enumerate(part):
            at = 1 + len(prefix)  # after BOS and the prefix
            for i in range(s, e):
                end = at + len(tokens[i])
                if i > s or owned:
                    out[i] = hidden[row, at:end].mean(axis=0)
                    done.append(i)
                at = end
    if out is None:
        out = np.zeros((len(tokens), 0), np.float32)
    return out, sorted(done)
