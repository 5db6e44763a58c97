"""The window-late bench measures what ships (``bench/window_late.py`` against the default
embedder's ``embed_run``), and at two messages a segment its pair+ctx span is today's window
vector."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from bench.window_late import late_vectors

TEXTS = [
    "Caroline: I went to the support group on Tuesday.",
    "Melanie: How did it go?",
    "Caroline: It went well, everyone was kind.",
    "Melanie: I painted a sunrise over the lake last week.",
    "Caroline: I would love to see it.",
    "Melanie: I signed the kids up for swimming lessons.",
]


def test_the_chosen_configuration_is_what_embed_run_gives(local_embedder: Any) -> None:
    bench = late_vectors(local_embedder, TEXTS, 4, ("own",))["own"]
    shipped = np.stack(local_embedder.embed_run(TEXTS))
    np.testing.assert_allclose(shipped, bench, atol=1e-6)


def test_two_messages_a_segment_with_the_context_states_is_todays_window(
    local_embedder: Any,
) -> None:
    two = late_vectors(local_embedder, TEXTS, 2, ("pair+ctx",))["pair+ctx"]
    windows = local_embedder.embed([f"{a}\n{b}" for a, b in itertools.pairwise(TEXTS)])
    np.testing.assert_allclose(two[1:], windows, atol=1e-5)
