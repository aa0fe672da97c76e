"""The Numba backend of `jit` (autodiff/staging/numba/): the op table compiled and checked
against the NumPy executor, which primitives run natively, and NumPy's semantics in the
generated code (dtypes, NaN and inf, reductions, control flow, falling back).

Numba takes ~0.15 s to compile a function and ~10 ms more per equation, so the op table's
~3,500 graphs (float64 and float32 values, float64 gradients) would take ~16 minutes from a
cold cache. Every row's float64 values run; its float32 values and float64 gradient run when
its graph lowers an equation that no earlier graph lowered alike (`_lowering_keys`: the
primitive, kind, operand dtypes and ranks, and params, shapes by their rank), and are skipped,
saying so, otherwise: about a third of them run.
"""

import collections
import functools
import os
import subprocess
import sys

import numpy as np
import pytest
from test_ops import CASES, PARAMS, _cast
from test_ops_jit import SINGLE, _assert_close, _flat, _projection, _staged_or_skip

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.errors import ConcretizationError
from autodiff.core.primitive import all_primitives
from autodiff.kernels._numba import numba_available
from autodiff.staging.ir import Graph, Literal
from autodiff.staging.numba import lower
from autodiff.staging.numba.executor import kind_of

pytestmark = pytest.mark.skipif(not numba_available(), reason="needs Numba")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Primitives the Numba backend runs as NumPy calls on purpose, wherever they appear.
FALLBACK = {
    **dict.fromkeys(
        "adjugate cholesky det eig eigh expm inv lstsq pinv qr slogdet solve svd "
        "triangular_solve".split(),
        "linear algebra: LAPACK through NumPy",
    ),
    **dict.fromkeys(
        "betainc digamma entr erf erfc erfinv expit gamma gammainc gammainc_da gammaincc "
        "gammaln gammasgn i0e i1e log_ndtr logit ndtri polygamma rgamma riemann_zeta xlog1py xlogy "
        "zeta".split(),
        "a special function: its own kernel (autodiff/kernels), no scalar expression",
    ),
    "logsumexp": "a stable reduction (max, then a sum of exponentials): its own impl",
    "tie_weights": "the weights of max's ties (a mask over a reduction): NumPy",
    "argmax": "an index reduction (the first of ties; in eig's rules): NumPy's argmax",
    **dict.fromkeys(("argsort", "searchsorted"), "sorting and searching: NumPy"),
    **dict.fromkeys(
        ("cumsum", "cumprod", "linear_recurrence", "correlate"),
        "a scan or sliding window along an axis: NumPy's accumulate and correlate",
    ),
    **dict.fromkeys(
        "gather index_set index_max index_min index_multiply scatter_add_along segment_sum "
        "repeat".split(),
        "positions read from an index array: NumPy's advanced indexing",
    ),
    "split": "several outputs that are views in NumPy (nothing to compute)",
    "einsum": "a contraction planned by np.einsum (BLAS through tensordot)",
    "dot": "only N-d dots reach it (1-d and 2-d stage as matmul): NumPy's sum product",
    "round": "round(x, decimals): NumPy scales, rounds half to even and scales back",
    **dict.fromkeys(("fft", "rfft", "irfft"), "a fast Fourier transform: NumPy's pocketfft"),
}


def _numba_jit(fun, *args, **options):
    """`fun` jitted on the Numba backend, called; (its outputs, its graph), the graph
    checked to have compiled (no fallback to the NumPy executor)."""
    jitted = ad.jit(fun, backend="numba", **options)
    outs = jitted(*args)
    graph = jitted.graph(*args)
    assert graph.backend == "numba"
    assert graph.numba_failure is None, graph.numba_failure
    return outs, graph


def _same(got, want, rtol: float = 0.0) -> None:
    """Equal (or within `rtol`) values, equal dtypes and shapes; NaN where NumPy has NaN, and
    zeros of its signs."""
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), k
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)) if w.dtype.kind == "c" else ((g, w),):
            np.testing.assert_allclose(gp, wp, rtol=rtol, atol=0, err_msg=f"output {k}")
            zero = wp == 0
            np.testing.assert_array_equal(
                np.signbit(gp[zero]), np.signbit(wp[zero]), f"output {k}: signed zeros"
            )


def _numpy_jit(fun, *args):
    return ad.jit(fun, backend="numpy")(*args)


# ---------------------------------------------------------------------------------------------
# The op table


def _ensure_rules() -> None:
    lower.define_ufuncs(all_primitives())  # (what the executor does before its first compile)


def _graphs(graph: Graph):
    """`graph` and the sub-graphs written inline with it (those of native equations)."""
    yield graph
    for eqn in graph.equations:
        if kind_of(eqn) is not None:
            for value in eqn.params.values():
                if isinstance(value, Graph):
                    yield from _graphs(value)


def _lowering_keys(graph: Graph) -> set:
    """What a graph asks of the lowering rules: for each equation that runs natively, its
    primitive, kind, operands (literal or not, dtype, rank) and params (a shape by its rank,
    a sub-graph by its own keys)."""

    def operand(x) -> tuple:
        return type(x) is Literal, x.aval.dtype.name, x.aval.ndim

    def param(name: str, value):
        if isinstance(value, Graph):
            return frozenset(_lowering_keys(value))
        return len(value) if name == "shape" and isinstance(value, tuple) else repr(value)

    keys = set()
    for g in _graphs(graph):
        for eqn in g.equations:
            kind = kind_of(eqn)
            if kind is not None:
                params = tuple((k, param(k, v)) for k, v in sorted(eqn.params.items()))
                operands = tuple(operand(x) for x in (*eqn.inputs, *eqn.outputs))
                keys.add((eqn.prim.name, kind, operands, params))
    return keys


@functools.cache
def _staged() -> dict:
    """(column, id of the case) -> the optimized graph jit runs, for every row that stages:
    column "float64" and "float32" (values), "grad" (the float64 gradient of a projection)."""
    _ensure_rules()
    graphs = {}
    for column, dtype in (("float64", np.float64), ("float32", np.float32), ("grad", np.float64)):
        for case in CASES:
            if dtype == np.float32 and not case.float32:
                continue
            args = _cast(case.args, dtype)
            fun = case.fun
            if column == "grad":
                try:
                    fun = ad.grad(_projection(case, args), tuple(range(len(args))))
                except pytest.skip.Exception:
                    continue
            try:
                graphs[column, id(case)] = ad.jit(fun).graph(*args)
            except ConcretizationError:
                continue
    return graphs


@functools.cache
def _covered() -> frozenset:
    """The rows whose lowering earlier rows have all compiled (float64 values first)."""
    seen: set = set()
    covered = set()
    for row, graph in _staged().items():
        keys = _lowering_keys(graph)
        if row[0] != "float64" and keys <= seen:
            covered.add(row)
        seen |= keys
    return frozenset(covered)


def _skip_if_covered(column: str, case) -> None:
    if (column, id(case)) in _covered():
        pytest.skip("every equation lowers as in an earlier row (see the module docstring)")


@pytest.mark.parametrize("case, dtype", PARAMS)
def test_op_table_values(case, dtype):
    column = np.dtype(dtype).name
    _skip_if_covered(column, case)
    args = _cast(case.args, dtype)
    jitted = ad.jit(case.fun, backend="numba")
    got = _staged_or_skip(jitted, *args)
    graph = jitted.graph(*args)
    assert graph.numba_failure is None, graph.numba_failure
    tol = 1e-5 if dtype == np.float32 else 1e-12
    _assert_close(got, _numpy_jit(case.fun, *args), rtol=tol, atol=tol * 1e-2)


@pytest.mark.parametrize("case", SINGLE)
def test_op_table_gradients(case):
    _skip_if_covered("grad", case)
    args = _cast(case.args, np.float64)
    gradient = ad.grad(_projection(case, args), tuple(range(len(args))))
    jitted = ad.jit(gradient, backend="numba")
    got = _staged_or_skip(jitted, *args)
    graph = jitted.graph(*args)
    assert graph.numba_failure is None, graph.numba_failure
    _assert_close(got, gradient(*args), rtol=1e-10)


def test_primitive_coverage():
    """How the backend runs each primitive of the op table's graphs: natively (elementwise,
    reduction, statement) or as a NumPy call; a primitive never lowered is in FALLBACK, with
    its reason, and FALLBACK names no primitive lowered wherever it appears."""
    counts: dict = collections.defaultdict(collections.Counter)
    for graph in _staged().values():
        for g in _graphs(graph):
            for eqn in g.equations:
                counts[eqn.prim.name][kind_of(eqn) or "numpy"] += 1
    names = sorted(p.name for p in all_primitives())
    print(f"\n{'primitive':<20} how the Numba backend runs it on the op table (equations)")
    for name in names:
        kinds = counts.get(name)
        how = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) if kinds else "not staged"
        reason = f"  [fallback: {FALLBACK[name]}]" if name in FALLBACK else ""
        print(f"{name:<20} {how}{reason}")
    never_native = {name for name, kinds in counts.items() if set(kinds) == {"numpy"}}
    assert never_native <= FALLBACK.keys(), sorted(never_native - FALLBACK.keys())
    always_native = {name for name in FALLBACK if name in counts and "numpy" not in counts[name]}
    assert not always_native, sorted(always_native)
    assert FALLBACK.keys() <= set(names), sorted(FALLBACK.keys() - set(names))


# ---------------------------------------------------------------------------------------------
# NumPy's semantics in the generated code


def test_float32_stays_float32_in_fused_loops():
    x = np.linspace(-2.0, 2.0, 7, dtype=np.float32)

    def f(x):
        return x * 0.1, (x * 0.1 + 1.5) / 3.0 - x * x

    got, graph = _numba_jit(f, x)
    assert {kind_of(eqn) for eqn in graph.equations} == {"elementwise"}
    _same(got, f(x))  # (NumPy's float32 arithmetic, bit for bit)


PROMOTIONS = [  # (function, argument dtypes, the result's dtype under NEP 50)
    (lambda x: x + 0.5, (np.float32,), np.float32),
    (lambda x: x * 3, (np.float32,), np.float32),
    (lambda x: x + 0.5, (np.int32,), np.float64),
    (lambda x: x * 3, (np.int8,), np.int8),
    (lambda x: x + True, (np.uint8,), np.uint8),
    (lambda x, y: x / y, (np.int64, np.int64), np.float64),
    (lambda x, y: x / y, (np.int8, np.int8), np.float64),
    (lambda x, y: x + y, (np.int8, np.float32), np.float32),
    (lambda x, y: x * y, (np.float32, np.float64), np.float64),
    (lambda x, y: x - y, (np.uint64, np.int64), np.float64),
    (lambda x, y: x + y, (np.bool_, np.bool_), np.bool_),
    (lambda x: x * 1j, (np.float32,), np.complex64),
]


@pytest.mark.parametrize("fun, dtypes, dtype", PROMOTIONS)
def test_promotion_as_numpy(fun, dtypes, dtype):
    args = [np.array([1, 2, 3, 7]).astype(d) for d in dtypes]
    got, _ = _numba_jit(fun, *args)
    assert got.dtype == dtype
    _same(got, fun(*args))


def test_nan_and_inf_as_numpy():
    x = np.array([np.nan, -np.inf, -1.5, -0.5, -0.0, 0.0, 0.5, 2.0, np.inf, 3.0])
    y = np.roll(x, 3)

    def f(x, y):
        return (
            (anp.maximum(x, y), anp.minimum(x, y), anp.fmax(x, y), anp.fmin(x, y)),
            (x / y, x / x, anp.log(x), anp.sqrt(x), anp.sqrt(x - 1.0), x**0.5, y**x),
            (x // y, x % y, anp.fmod(x, y), x // 2.0, 2.0 // x, anp.sign(x), anp.rint(x * 2.5)),
            (anp.max(x), anp.min(y), anp.sum(x), anp.isnan(x), anp.isinf(y), anp.signbit(x)),
        )

    with np.errstate(all="ignore"):
        got, _ = _numba_jit(f, x, y)
        _same(got, _numpy_jit(f, x, y), rtol=5e-16)  # (log: ours, within 1 ulp of NumPy's)


UFUNCS = sorted(
    (p.name, p.impl.nin)
    for p in all_primitives()
    if isinstance(p.impl, np.ufunc) and p.impl.nout == 1
)
SPECIAL = {  # (values of each kind, with NumPy's edge cases)
    "b": [True, False, True, True, False, False],
    "i": [-7, -2, -1, 0, 1, 3, 5, 2],
    "u": [0, 1, 2, 3, 7, 200, 5, 2],
    "f": [np.nan, -np.inf, -2.5, -1.5, -0.5, -0.0, 0.0, 1e-310, 0.5, 1.5, 2.5, 1e30, np.inf],
    "c": [
        complex(a, b) for a in (np.nan, -np.inf, -1.5, -0.0, 0.5, 1e30) for b in (-2.0, 0.0, np.inf)
    ],
}


def _ufunc_calls(*args) -> list:
    """`ufunc(*args)` for every ufunc primitive that NumPy computes for these arguments."""
    calls = []
    for name, nin in UFUNCS:
        if nin == len(args):
            with np.errstate(all="ignore"):
                try:
                    getattr(np, name)(*args)
                except (TypeError, ValueError):
                    continue
            calls.append(getattr(anp, name))
    return calls


@pytest.mark.parametrize(
    "dtype", [np.bool_, np.uint8, np.int64, np.float32, np.float64, np.complex128]
)
def test_ufuncs_as_numpy(dtype):
    """Every ufunc primitive, unary and binary, on values of one dtype with its edge cases:
    NumPy's values, or a NumPy call where Numba's scalar function differs."""
    x = np.array(SPECIAL[np.dtype(dtype).kind]).astype(dtype)
    y = np.roll(x, 3)
    unary, binary = _ufunc_calls(x), _ufunc_calls(x, y)

    def f(x, y):
        return [u(x) for u in unary], [b(x, y) for b in binary]

    with np.errstate(all="ignore"):
        got, _ = _numba_jit(f, x, y)
        _same(got, _numpy_jit(f, x, y), rtol=1e-5 if dtype == np.float32 else 1e-12)


# Binary ufuncs with a Python scalar on the side that matters (both, unless commutative).
WITH_SCALARS = [
    (name, swap)
    for name in "add multiply maximum equal subtract divide floor_divide remainder power less".split()
    for swap in ((False,) if name in ("add", "multiply", "maximum", "equal") else (False, True))
]


@pytest.mark.parametrize(
    "dtype, scalars",
    [(np.uint8, (-1, 300, 2)), (np.int64, (-1, 0.5)), (np.float32, (2, 0.5)), (np.bool_, (2, 0.5))],
)
def test_python_scalars_as_numpy(dtype, scalars):
    """Python scalars against arrays (NEP 50: weak), out of the array dtype's range too."""
    x = np.array(SPECIAL[np.dtype(dtype).kind]).astype(dtype)
    calls = []
    for scalar in scalars:
        for name, swap in WITH_SCALARS:
            args = (scalar, x) if swap else (x, scalar)
            with np.errstate(all="ignore"):
                try:
                    getattr(np, name)(*args)
                except (TypeError, ValueError, OverflowError):
                    continue
            calls.append((getattr(anp, name), swap, scalar))

    def f(x):
        return [call(*((s, x) if swap else (x, s))) for call, swap, s in calls]

    with np.errstate(all="ignore"):
        got, _ = _numba_jit(f, x)
        _same(got, _numpy_jit(f, x), rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_integer_division_by_zero_as_numpy():
    a = np.array([0, 1, -2, 7, -7, 5, 0])
    b = np.array([0, 0, 0, 2, -2, -3, 3])

    def f(a, b):
        return a // b, a % b, a / b, a // 0, a % 0, a / 0, anp.floor_divide(a, b)

    for dtype in (np.int64, np.int8, np.uint8):
        x, y = a.astype(dtype), b.astype(dtype)
        with np.errstate(all="ignore"):
            got, _ = _numba_jit(f, x, y)  # (no ZeroDivisionError)
            _same(got, _numpy_jit(f, x, y))


def _reductions(x):
    """Every reduction, each over a few of the axes of a 3-d `x`, with keepdims and without."""
    return (
        anp.sum(x),
        anp.sum(x, axis=(0, 2), keepdims=True),
        anp.sum(x, axis=-1),
        anp.max(x, axis=0, keepdims=True),
        anp.max(x),
        anp.min(x, axis=-1),
        anp.min(x, axis=(0, 2), keepdims=True),
        anp.prod(x, axis=1),
        anp.prod(x, keepdims=True),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.bool_])
def test_reductions_as_numpy(dtype):
    x = (np.arange(24).reshape(2, 3, 4) % 5 - 1).astype(dtype)
    got, graph = _numba_jit(_reductions, x)
    assert "reduction" in {kind_of(eqn) for eqn in graph.equations}
    rtol = 1e-6 if dtype == np.float32 else 0  # (float32 sums accumulate in float64)
    _assert_close(got, _numpy_jit(_reductions, x), rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradients_of_reductions_and_broadcasting(dtype):
    """expand_reduced (reductions' pullbacks, keepdims or not), sum_to_shape (broadcasting's)
    and scatter_add (basic indexing's, negative steps included)."""
    rng = np.random.default_rng(0)
    x, y, s = (rng.standard_normal(shape).astype(dtype) for shape in ((2, 3, 4), (3, 1), ()))

    def f(x, y, s):
        outs = _reductions(anp.tanh(x * y + s))
        picked = x[::-1, 1:, ::-2] * x[-1, None, 1:, ::2]
        return sum(anp.sum(o * (k + 1.0)) for k, o in enumerate(outs)) + anp.sum(picked * y[1:])

    gradient = ad.grad(f, (0, 1, 2))
    got, _ = _numba_jit(gradient, x, y, s)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    _assert_close(got, gradient(x, y, s), rtol=tol, atol=tol)


def test_data_movement_and_products():
    """getitem with negative steps, transpose without axes, stack and concatenate of mixed
    dtypes, 0-d values, and matmul of float32 with float64 and of 1-d operands."""
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4) / 7
    i = np.arange(12, dtype=np.int32).reshape(3, 4)
    v = np.linspace(0.0, 1.0, 4)

    def f(a, i, v):
        s = a[1, 2, 3] * 2.0  # (a 0-d value: a scalar in the generated code)
        return (
            a[::-1, ::-2, 1:] * s,
            anp.transpose(a) + 1.0,
            anp.transpose(a, (1, 0, 2)) - a[0, 0],
            anp.stack([a[0], i, i > 5], axis=-1),
            anp.concatenate([i, a[1], v[None]], axis=0),
            anp.matmul(a, v),
            anp.matmul(v, v),
            anp.matmul(a[0], v[:, None].astype(np.float64)),
            (a[0] @ a[1].T).astype(np.int16) + i[:, :3],
            s + v[0],
        )

    got, _ = _numba_jit(f, a, i, v)
    _assert_close(got, _numpy_jit(f, a, i, v), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "fun",
    [
        lambda x: (anp.sum(anp.sin(x) * x + x / 3.0), anp.sqrt(x * x + 1.0) * 2.0),
        # (approx.py's exp and tanh round with (t + shifter) - shifter: fastmath=True keeps
        # LLVM's reassociation off so that it stays)
        pytest.param(lambda x: (anp.sum(anp.exp(x)), anp.tanh(x)), id="exp-tanh"),
    ],
)
def test_fastmath_runs_and_is_close(fun):
    x = np.linspace(-3.0, 3.0, 50)
    got, graph = _numba_jit(fun, x, fastmath=True)
    assert graph.fastmath
    _assert_close(got, _numpy_jit(fun, x), rtol=1e-10, atol=1e-12)


def test_numpy_backend_compiles_no_numba_code():
    x = np.arange(3.0)
    jitted = ad.jit(lambda x: anp.sin(x) * 2.0, backend="numpy")
    jitted(x)
    graph = jitted.graph(x)
    assert graph.backend == "numpy"
    assert "segment" not in graph.compiled.source  # (the NumPy executor's Python)
    code = (
        "import sys, numpy as np, autodiff as ad, autodiff.numpy as anp\n"
        "ad.jit(lambda x: anp.sin(x) * 2.0, backend='numpy')(np.arange(3.0))\n"
        "print('numba' in sys.modules)\n"
    )
    assert _child(code) == "False"


def test_unknown_backend_raises():
    with pytest.raises(ValueError, match="backend"):
        ad.jit(lambda x: x, backend="cuda")


def test_disable_numba_runs_on_numpy():
    code = (
        "import numpy as np, autodiff as ad, autodiff.numpy as anp\n"
        "f = ad.jit(lambda x: anp.sin(x) * 2.0, backend='numba')\n"
        "x = np.arange(3.0)\n"
        "assert np.allclose(f(x), np.sin(x) * 2.0)\n"
        "print(f.graph(x).backend)\n"
    )
    assert _child(code, AUTODIFF_DISABLE_NUMBA="1") == "numpy"


def _child(code: str, **env) -> str:
    """What a new Python process running `code` prints (autodiff from this checkout)."""
    pythonpath = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=pythonpath, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# ---------------------------------------------------------------------------------------------
# Control flow, written inline


def _fori(x):
    return ad.fori_loop(0, 4, lambda i, v: anp.tanh(v) * 1.5 + x * i, x)


def _scan(x):
    def step(carry, xi):  # (an output is a carry as it came in)
        a, b = carry
        return (b, anp.sin(a) + xi), a

    return ad.scan(step, (x[0], x[1]), x, reverse=True)


def _while(x):
    def body(carry):  # (two carries swap)
        k, a, b, c = carry
        return k + 1, b, a, c * 1.5 + a

    return ad.while_loop(lambda carry: carry[0] < 5, body, (0, x, x[::-1], x * 2.0))


def _cond(x):
    return ad.cond(anp.sum(x) > 0, lambda v: anp.sin(v) * v, lambda v: anp.cos(v), x)


def _switch(x):
    return ad.switch(anp.sum(x > 0), [lambda v: v * 2.0, anp.tanh, anp.exp, anp.sin], x)


@pytest.mark.parametrize("fun", [_fori, _scan, _while, _cond, _switch])
def test_control_flow_compiles_natively(fun):
    x = np.array([0.3, -1.2, 0.8, 2.0])
    for arg in (x, -x):
        got, graph = _numba_jit(fun, arg)
        flow = [eqn for eqn in graph.equations if eqn.prim.name in ("scan", "while", "cond")]
        assert flow and all(kind_of(eqn) == "statement" for eqn in flow)
        _assert_close(got, _numpy_jit(fun, arg))


def test_gradient_of_fori_loop_compiles_natively():
    x = np.array([0.3, -1.2, 0.8])
    gradient = ad.grad(lambda x: anp.sum(_fori(x) ** 2))
    got, graph = _numba_jit(gradient, x)
    flow = [eqn for eqn in graph.equations if eqn.prim.name in ("scan", "while")]
    assert flow and all(kind_of(eqn) == "statement" for eqn in flow)
    _assert_close(got, gradient(x), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Falling back


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty Numba cache, for code that should not outlive the test."""
    import numba

    from autodiff.staging.numba import cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_modules", {})
    return tmp_path


def test_a_graph_whose_source_is_broken_falls_back_to_numpy(monkeypatch):
    monkeypatch.setitem(lower._OPERATORS, "add", "({0} +* {1})")  # (a SyntaxError)
    x = np.arange(3.0)
    jitted = ad.jit(lambda x: x + 1.0, backend="numba")
    np.testing.assert_array_equal(jitted(x), x + 1.0)
    assert "SyntaxError" in jitted.graph(x).numba_failure


def test_kind_of_knows_the_ufuncs_before_any_compile():
    from autodiff.staging.numba.executor import kind_of

    graph = ad.jit(lambda x: x + 1.0, backend="numpy").graph(np.zeros(3))
    assert kind_of(graph.equations[0]) == "elementwise"


def test_a_graph_numba_cannot_compile_falls_back_to_numpy(cache_dir, monkeypatch):
    monkeypatch.setitem(lower._OPERATORS, "add", "no_such_function({0}, {1})")
    x = np.arange(4.0)
    jitted = ad.jit(lambda x: anp.sin(x) + x * 2.0, backend="numba")
    for _ in range(2):
        np.testing.assert_allclose(jitted(x), np.sin(x) + x * 2.0)
    graph = jitted.graph(x)
    assert graph.numba_failure is not None and "no_such_function" in graph.numba_failure


def test_literals_of_every_float_value_are_source():
    # nan and the infinities have no Python literal (repr gives 'nan'): as names, in complex too
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        for value in (np.nan, np.inf, -np.inf, 1.5):
            got = eval(lower.literal(value, dtype), {"np": np})
            np.testing.assert_equal(np.asarray(got), np.asarray(value, dtype))
    for value in (complex(np.nan, -np.inf), complex(2.0, np.inf)):
        got = eval(lower.literal(value, np.complex128), {"np": np})
        np.testing.assert_equal(got, value)
    f = ad.jit(lambda x: anp.where(anp.abs(x) > 1, np.nan, x * (1 + 2j)), backend="numba")
    np.testing.assert_equal(f(np.array([0.5, 2.0])), [0.5 + 1j, complex(np.nan, 0.0)])
