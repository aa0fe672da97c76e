"""Loops the code generator shapes for speed (autodiff/staging/numba/codegen.py, views.py,
executor.py): innermost loops split where a roll's or a pad's select on the loop index
changes sides, cheap arithmetic recomputed by the loops that read it at other positions
instead of stored, and gathers by in-bounds constant positions read by a loop.

Every case is compared bit for bit with the NumPy executor on the LLVM backend and on the
Numba reference (`check` of test_codegen_views.py), and the generated source is checked for
the shape it should have.
"""

import re

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.staging.numba.codegen import MAX_LOOP_PIECES, split_loop
from autodiff.staging.numba.views import MAX_RECOMPUTED_OPS
from tests.test_codegen_views import check

RNG = np.random.default_rng(1)
G = RNG.standard_normal((5, 16, 16))
V = RNG.standard_normal(40)


# ---- split loops ----


def test_split_loop_decides_each_select_per_range():
    lines = [
        "    for i in range(10):",
        "        t = (a[i + 9 if i < 1 else i - 1] if 2 <= i < 9 else 0.0)",
        "        b[i] = (t if i < 10 else 1.0)",  # (a cut at the end: nothing to split)
    ]
    out = split_loop(lines, "i", 10)
    headers = [line for line in out if "for i in" in line]
    assert headers == [
        f"    for i in range({lo}, {hi}):" for lo, hi in [(0, 1), (1, 2), (2, 9), (9, 10)]
    ]
    bodies = [out[k + 1] for k, line in enumerate(out) if "for i in" in line]
    assert "if True else i - 1] if False else" in bodies[0]
    assert "if False else i - 1] if False else" in bodies[1]
    assert "if False else i - 1] if True else" in bodies[2]
    assert "if False else i - 1] if False else" in bodies[3]
    # what each range computes is what the loop computed there
    whole = lines[1].strip()[len("t = ") :]
    for lo, hi, body in zip([0, 1, 2, 9], [1, 2, 9, 10], bodies):
        for i in range(lo, hi):
            scope = {"i": i, "a": list(range(100, 110))}
            assert eval(body.strip()[len("t = ") :], scope) == eval(whole, scope)


def test_split_loop_leaves_other_loops_alone():
    plain = ["    for i in range(8):", "        b[i] = (x if j < 1 else y) + (z if i0 < 3 else w)"]
    assert split_loop(plain, "i", 8) == plain  # (selects on other names)
    chained = ["    for i in range(8):", "        b[i] = (x if k + i < 3 else y)"]
    assert split_loop(chained, "i", 8) == chained  # (a test that is not `i < k` itself)
    many = ["    for i in range(64):"]
    many += [f"        t{k} = (x if i < {k + 1} else y)" for k in range(MAX_LOOP_PIECES)]
    assert split_loop(many, "i", 64) == many


def test_rolls_split_their_inner_loop():
    def f(g):
        lap = anp.roll(g, 1, 2) + anp.roll(g, -1, 2) + anp.roll(g, 1, 1) - 4.0 * g
        return lap * g

    source = check(f, G, loops=1)
    middle = re.search(r"for (i\d+) in range\(1, 15\):\n((?:.*\n)*?).*for ", source)
    assert middle, source
    assert f"if {middle[1]} <" not in middle[2], source  # (the inner index's selects decided)


def test_pads_split_their_inner_loop():
    def f(v):
        return anp.pad(v * v, (1, 2)) + anp.pad(v, (3, 0))

    source = check(f, V)
    assert re.search(r"range\(\d+, \d+\)", source), source


# ---- recomputed arithmetic ----


def test_arithmetic_read_shifted_is_recomputed_not_stored():
    def f(x):  # the chained Rosenbrock gradient's shape: products read at i and i + 1
        d = x[1:] - x[:-1] * x[:-1]
        e = (1.0 - x[:-1]) * 2.0
        return anp.pad(d * 3.0, (1, 0)) + anp.pad(d * e, (0, 1))

    source = check(f, V, loops=3)  # (one loop, split in three)
    stored = set(re.findall(r"^ +(a\d+)\[.*\] = ", source, re.M))
    assert len(stored) == 1 and source.count("np.empty") == 1, source  # (the result only)


def test_arithmetic_read_in_place_by_its_own_loop_stays_one_scalar():
    def f(x):
        y = x * 2.0 + 1.0
        return y * y, anp.sum(y)

    source = check(f, V, loops=1, rtol=1e-15)
    assert source.count("* 2.0") == 1, source


def test_expensive_values_are_stored_not_recomputed():
    def f(x):
        y = anp.exp(x) * 2.0
        return anp.pad(y, (1, 0)) + anp.pad(y, (0, 1))

    source = check(f, V, rtol=1e-15)
    segment = source[source.index("def segment") :]
    assert segment.count("exp(") == 1, source


def test_recomputation_is_bounded():
    def f(x):
        y = x
        for _ in range(MAX_RECOMPUTED_OPS + 4):
            y = y * 1.5 + 0.25
        return anp.pad(y, (1, 0)) + anp.pad(y, (0, 1))

    source = check(f, V)
    assert "np.empty" in source or re.search(r"def segment\d+\([^)]*a\d+", source), source


# ---- gathers by known positions ----


def test_gather_by_constant_positions_is_a_loop():
    positions = RNG.integers(0, 40, 25)

    def f(x):
        return anp.take(x * x + 2.0, positions)

    source = check(f, V, loops=2)
    assert re.search(r"\w+\[\(?\w+\[i\d+\]\)?\]", source), source


@pytest.mark.parametrize("positions", [np.array([0, -1, 3]), np.array([39, 2, 0], np.uint8)])
def test_gathers_by_other_constants_keep_numpys_meaning(positions):
    def f(x):
        return (x * 3.0)[positions]

    check(f, V)


def test_gather_out_of_bounds_still_raises():
    positions = np.array([0, 40])
    with pytest.raises(IndexError):
        ad.jit(lambda x: (x * 3.0)[positions], backend="numba")(V)
