"""The op table format: one `OpCase` per function and argument shapes to check.

Each family lists its cases in `tests/cases_<family>.py` as `CASES: list[OpCase]`;
`tests/test_ops.py` runs every case through `autodiff.testing.check_grads` in
float64 and float32, and compares values (and dtype) with the NumPy reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class OpCase:
    """A function of float arrays to differentiate, with its arguments and NumPy reference.

    Non-differentiable arguments (index arrays, masks, axes) belong in the closure `fun`,
    not in `args`.
    """

    name: str
    fun: Callable  # float arrays -> array (or tuple of arrays), written with autodiff.numpy
    args: tuple  # float64 NumPy arrays (the harness casts them to each dtype)
    ref: Callable | None = None  # the same function written with plain numpy, for values
    order: int = 2
    float32: bool = True
    rtol: float | None = None
    atol: float | None = None
    marks: tuple = field(default=())


_rng = np.random.default_rng(0)


def arr(*shape, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    """Reproducible random float64 values in [low, high) (a 0-d array for no shape)."""
    return _rng.uniform(low, high, size=shape)


def pos(*shape, low: float = 0.5, high: float = 2.0) -> np.ndarray:
    """Positive values, for log/sqrt-like domains."""
    return arr(*shape, low=low, high=high)


def distinct(*shape, spread: float = 1.0) -> np.ndarray:
    """Values whose pairwise gaps are at least `spread`/size (for max/sort, away from ties)."""
    n = int(np.prod(shape)) if shape else 1
    vals = _rng.permutation(n).astype(np.float64) * spread / max(n, 1) * 4 - 2
    return vals.reshape(shape)
