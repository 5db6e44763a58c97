"""The window-mix bench builds the vectors it says it measures (``bench/window_mix.py``)."""

from __future__ import annotations

import numpy as np
from bench.window_mix import mixed


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def test_pair_mixes_the_previous_messages_own_vector() -> None:
    rng = np.random.default_rng(1)
    u = rng.normal(size=(4, 8)).astype(np.float32)
    v = mixed(u, "pair", 0.5)
    assert np.allclose(v[0], _unit(u[0]), atol=1e-6)
    for i in range(1, 4):
        assert np.allclose(v[i], _unit(u[i] + 0.5 * u[i - 1]), atol=1e-6)


def test_chain_mixes_the_previous_window_vector() -> None:
    rng = np.random.default_rng(2)
    u = rng.normal(size=(4, 8)).astype(np.float32)
    v = mixed(u, "chain", 1.0)
    want = [_unit(u[0])]
    for i in range(1, 4):
        want.append(_unit(u[i] + want[-1]))
    assert np.allclose(v, np.stack(want), atol=1e-6)
    # the first message still reaches the last one's vector (decaying), unlike ``pair``
    assert not np.allclose(v[3], mixed(u[1:], "chain", 1.0)[2], atol=1e-4)
    assert np.allclose(mixed(u, "pair", 1.0)[3], mixed(u[1:], "pair", 1.0)[2], atol=1e-6)
