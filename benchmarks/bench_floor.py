"""How far autodiff is from the cheapest reverse-mode tape Python can run: `chain` and `ode`.

Run: python -m benchmarks.bench_floor
Both workloads are long chains of small NumPy operations, where the time goes to the
interpreter rather than to arithmetic. The tape below is about the least a reverse-mode
recorder in Python can do per operation: one tuple per recorded op, rules that are plain
functions, cotangents in a list indexed by position. It has no nesting, no dtype or
broadcasting rules beyond what these two workloads need, no hooks, no memory recycling.
Its time is a floor for any pure-Python tape on this machine; the script prints it beside
autodiff's `grad` and the plain NumPy forward evaluation, all in one process and timed in
turns (the median, over about 20 s per workload, of each time and of each time's ratio to
the floor's in the same turn, which this host's drifting speed leaves intact).
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import statistics  # noqa: E402
import time  # noqa: E402
from functools import partial  # noqa: E402

import numpy as np  # noqa: E402

import autodiff as ad  # noqa: E402
import autodiff.numpy as anp  # noqa: E402
from benchmarks.workloads import chain_loss, lorenz_inputs, lorenz_loss  # noqa: E402

# ---------------------------------------------------------------------------------------------
# The tape: entries (rule, residuals, parent positions); position 0 is the input.

_NUMBERS = (int, float)


_tape: list = []


def _record(value, rule, residuals, parents) -> Var:
    _tape.append((rule, residuals, parents))
    return Var(value, len(_tape) - 1)


def _binary(ufunc, rule, x, y) -> Var:
    px = x.index if type(x) is Var else -1
    py = y.index if type(y) is Var else -1
    x = x.value if px >= 0 else x
    y = y.value if py >= 0 else y
    return _record(ufunc(x, y), rule, (x, y), (px, py))


def _reduce(g, x):
    """`g` summed to the shape of `x` (a Python number gets no cotangent)."""
    if type(x) in _NUMBERS:
        return None
    if g.shape == x.shape:
        return g
    lead = g.ndim - x.ndim
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(x.shape) if n == 1 and g.shape[lead + i] != 1
    )
    return np.add.reduce(g, axis=axes, keepdims=True).reshape(x.shape)


def _add_rule(g, x, y):
    return _reduce(g, x), _reduce(g, y)


def _subtract_rule(g, x, y):
    return _reduce(g, x), _reduce(-g, y)


def _multiply_rule(g, x, y):
    return _reduce(g * y, x), _reduce(g * x, y)


def _getitem_rule(g, x, key):
    ct = np.zeros_like(x)
    ct[key] = g
    return (ct,)


def _sin_rule(g, x):
    return (g * np.cos(x),)


def _stack_rule(g, count):
    return tuple(g)


def _sum_rule(g, x):
    return (np.broadcast_to(g, x.shape),)


def _operators(ufunc, rule):
    """A binary operator and its reflected form, recording `ufunc` with `rule`."""
    return (
        lambda self, other: _binary(ufunc, rule, self, other),
        lambda self, other: _binary(ufunc, rule, other, self),
    )


class Var:
    """A recorded value: its array and its position on the tape."""

    __slots__ = ("value", "index")
    __array_ufunc__ = None  # (ndarray op Var: NumPy defers to Var's reflected operator)

    def __init__(self, value, index):
        self.value = value
        self.index = index

    __add__, __radd__ = _operators(np.add, _add_rule)
    __sub__, __rsub__ = _operators(np.subtract, _subtract_rule)
    __mul__, __rmul__ = _operators(np.multiply, _multiply_rule)

    def __getitem__(self, key):
        return _record(self.value[key], _getitem_rule, (self.value, key), (self.index,))


class TapeNumPy:
    """The functions the two workloads call through their `xp` module argument."""

    @staticmethod
    def sin(x: Var) -> Var:
        return _record(np.sin(x.value), _sin_rule, (x.value,), (x.index,))

    @staticmethod
    def stack(xs) -> Var:
        return _record(
            np.stack([x.value for x in xs]), _stack_rule, (len(xs),), tuple(x.index for x in xs)
        )

    @staticmethod
    def sum(x: Var) -> Var:
        return _record(np.add.reduce(x.value, axis=None), _sum_rule, (x.value,), (x.index,))


def tape_grad(loss):
    """`grad(loss)` on the tape: record, then run the rules backwards over it."""

    def gradient(x, *args):
        _tape.clear()
        _tape.append(None)  # position 0: the input
        out = loss(TapeNumPy, Var(x, 0), *args)
        cts = [None] * len(_tape)
        cts[out.index] = np.ones_like(out.value)
        for i in range(len(_tape) - 1, 0, -1):
            g = cts[i]
            if g is None:
                continue
            cts[i] = None
            rule, residuals, parents = _tape[i]
            for p, ct in zip(parents, rule(g, *residuals)):
                if p >= 0 and ct is not None:
                    prev = cts[p]
                    cts[p] = ct if prev is None else prev + ct
        _tape.clear()
        return cts[0]

    return gradient


# ---------------------------------------------------------------------------------------------


def in_turns(calls: dict, seconds: float) -> dict:
    """Times per call (s) of each function, measured in turns of short loops: the median
    time and the median ratio to the first function's time in the same turn."""
    for f in calls.values():
        f()
    start = time.perf_counter()
    first = next(iter(calls.values()))
    first()
    n = max(1, int(0.02 / (time.perf_counter() - start)))
    times: dict = {name: [] for name in calls}
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for name, f in calls.items():
            start = time.perf_counter()
            for _ in range(n):
                f()
            times[name].append((time.perf_counter() - start) / n)
    base = times[next(iter(calls))]
    return {
        name: (statistics.median(t), statistics.median(a / b for a, b in zip(t, base)))
        for name, t in times.items()
    }


def main() -> None:
    x = np.random.default_rng(0).standard_normal(8)
    p, state = lorenz_inputs(64)
    ode = partial(lorenz_loss, steps=100)
    workloads = {
        "chain": (chain_loss, (x,)),
        "ode": (lambda xp, p, s: ode(xp, p, s), (p, state)),
    }
    print("workload | floor tape | autodiff | numpy forward | autodiff/floor | numpy/floor")
    for name, (loss, args) in workloads.items():
        floor, mine = tape_grad(loss), ad.grad(partial(loss, anp))
        np.testing.assert_allclose(floor(*args), mine(*args), rtol=1e-12)
        calls = {"floor": partial(floor, *args), "autodiff": partial(mine, *args)}
        calls["numpy"] = partial(loss, np, *args)
        r = in_turns(calls, 20.0)
        print(
            f"{name:8} | {r['floor'][0] * 1e3:7.2f} ms | {r['autodiff'][0] * 1e3:6.2f} ms | "
            f"{r['numpy'][0] * 1e3:10.2f} ms | {r['autodiff'][1]:13.2f}x | {r['numpy'][1]:10.2f}x"
        )


if __name__ == "__main__":
    main()
