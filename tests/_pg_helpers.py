"""Helpers of the PostgreSQL-only test modules."""

from __future__ import annotations

import os

import numpy as np
import pytest

needs_postgres = pytest.mark.skipif(
    "postgres" not in os.environ.get("OAM_TEST_BACKENDS", "sqlite,postgres"),
    reason="OAM_TEST_BACKENDS excludes postgres",
)
"""``pytestmark`` of a module whose every test needs PostgreSQL."""


def unit_vectors(n: int, seed: int, dim: int) -> np.ndarray:
    """``n`` random unit vectors of ``dim`` dimensions (float32), the same for a seed."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
