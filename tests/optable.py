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


def arr(*shape, low: float = -2.0, high: float = 2.0, rng=None) -> np.ndarray:
    """Reproducible random float64 values in [low, high) (a 0-d array for no shape), from the
    table's shared generator or `rng` (a file of cases with its own leaves the shared stream,
    and so the other files' arguments, as they were)."""
    return (_rng if rng is None else rng).uniform(low, high, size=shape)


def pos(*shape, low: float = 0.5, high: float = 2.0, rng=None) -> np.ndarray:
    """Positive values, for log/sqrt-like domains."""
    return arr(*shape, low=low, high=high, rng=rng)


def distinct(*shape, spread: float = 1.0) -> np.ndarray:
    """Values whose pairwise gaps are at least `spread`/size (for max/sort, away from ties)."""
    n = int(np.prod(shape)) if shape else 1
    vals = _rng.permutation(n).astype(np.float64) * spread / max(n, 1) * 4 - 2
    return vals.reshape(shape)


def _square(out):
    if isinstance(out, (tuple, list)):
        return tuple(o * o for o in out)
    return out * out


def squared_case(name, f, *args, **kwargs) -> OpCase:
    """A case written once as `f(m, *arrays)`, run with `m = autodiff.numpy` and with `m = numpy`
    for the reference. The output is squared: most shape-like functions are linear, and
    without it the second-order checks would only see zeros."""
    import autodiff.numpy as anp

    return OpCase(
        name,
        lambda *xs: _square(f(anp, *xs)),
        args,
        ref=lambda *xs: _square(f(np, *xs)),
        **kwargs,
    )


def dispatched_case(name, f, *args, **kwargs) -> OpCase:
    """A case of plain `numpy` code: on tracers NumPy dispatches it to autodiff.numpy."""
    return OpCase(
        name, lambda *xs: _square(f(*xs)), args, ref=lambda *xs: _square(f(*xs)), **kwargs
    )


def assert_same_as_numpy(got, want) -> None:
    """Same type, shape, dtype and values as NumPy's result (recursing into lists/tuples)."""
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_as_numpy(g, w)
        return
    assert type(got) is type(want), f"type {type(got)}, NumPy gives {type(want)}"
    assert np.shape(got) == np.shape(want)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
