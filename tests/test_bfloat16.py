"""bfloat16 (ml_dtypes' dtype, as JAX's): the op table's bfloat16 rows against torch's own.

Each row is written once as `f(torch, *xs)` and run with real torch and with `autodiff` as
`torch`, from the same bfloat16 inputs; values and gradients (of `sum(f(...) * w)`, `w` a
fixed bfloat16 weight) must come back as bfloat16 and agree within bfloat16 rounding: a few
units in the last place (2^-8 relative), measured against the larger of the element and, for
results that cancel (a softmax's or a variance's gradient), a sixteenth of the tensor's
largest element. Then the dtype's surface on the torch face (torch.bfloat16, finfo,
promotion, conversions), the JAX face against JAX, jit, and `import autodiff` not importing
ml_dtypes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import autodiff
import autodiff.numpy as anp

ml_dtypes = pytest.importorskip("ml_dtypes")
torch = pytest.importorskip("torch")

BF16 = np.dtype(ml_dtypes.bfloat16)
ULP = 2.0**-8  # bfloat16's unit roundoff: 8 significant bits
ROOT = Path(__file__).resolve().parent.parent

# Argument domains: the rows' arguments are drawn from these intervals, then rounded to
# bfloat16 (so both libraries start from the same representable values).
REAL, POS, UNIT = (-2.0, 2.0), (0.5, 2.0), (-0.9, 0.9)

# Rows whose gradients cancel (softmax's `out * (g - sum(g * out))`): torch's backward
# kernels read the bfloat16-rounded output where autodiff's read the float32 one, so the two
# differ by more than a rounding of the result; there autodiff must be no farther from the
# float64 result than torch's bfloat16 one is (plus one unit of the largest element).
CANCELS = "cancels"
# A gradient summed over a broadcast batch axis: autodiff rounds each batch's product before
# summing them, torch rounds once: up to twice the rounding.
SUMMED = "summed"

# (name, f(torch, *xs), argument shapes, domain[, CANCELS or SUMMED]): torch's functions,
# methods and operators.
ROWS = [
    # elementwise, one operand
    ("neg", lambda t, x: -x, [(3, 5)], REAL),
    ("abs", lambda t, x: t.abs(x), [(3, 5)], REAL),
    ("exp", lambda t, x: t.exp(x), [(3, 5)], REAL),
    ("expm1", lambda t, x: t.expm1(x), [(3, 5)], REAL),
    ("log", lambda t, x: t.log(x), [(3, 5)], POS),
    ("log1p", lambda t, x: t.log1p(x), [(3, 5)], POS),
    ("log2", lambda t, x: t.log2(x), [(3, 5)], POS),
    ("log10", lambda t, x: t.log10(x), [(3, 5)], POS),
    ("sqrt", lambda t, x: t.sqrt(x), [(3, 5)], POS),
    ("rsqrt", lambda t, x: t.rsqrt(x), [(3, 5)], POS),
    ("reciprocal", lambda t, x: t.reciprocal(x), [(3, 5)], POS),
    ("square", lambda t, x: t.square(x), [(3, 5)], REAL),
    ("sin", lambda t, x: t.sin(x), [(3, 5)], REAL),
    ("cos", lambda t, x: t.cos(x), [(3, 5)], REAL),
    ("tan", lambda t, x: t.tan(x), [(3, 5)], UNIT),
    ("tanh", lambda t, x: t.tanh(x), [(3, 5)], REAL),
    ("sinh", lambda t, x: t.sinh(x), [(3, 5)], REAL),
    ("cosh", lambda t, x: t.cosh(x), [(3, 5)], REAL),
    ("asin", lambda t, x: t.asin(x), [(3, 5)], UNIT),
    ("acos", lambda t, x: t.acos(x), [(3, 5)], UNIT),
    ("atan", lambda t, x: t.atan(x), [(3, 5)], REAL),
    ("asinh", lambda t, x: t.asinh(x), [(3, 5)], REAL),
    ("sigmoid", lambda t, x: t.sigmoid(x), [(3, 5)], REAL),
    ("relu", lambda t, x: t.relu(x), [(3, 5)], REAL),
    ("erf", lambda t, x: t.erf(x), [(3, 5)], REAL),
    # elementwise, two operands (and Python scalars, which keep bfloat16)
    ("add", lambda t, x, y: x + y, [(3, 5), (3, 5)], REAL),
    ("add_broadcast", lambda t, x, y: x + y, [(3, 5), (5,)], REAL),
    ("sub", lambda t, x, y: x - y, [(3, 5), (3, 5)], REAL),
    ("mul", lambda t, x, y: x * y, [(3, 5), (3, 5)], REAL),
    ("div", lambda t, x, y: x / y, [(3, 5), (3, 5)], POS),
    ("pow", lambda t, x, y: x**y, [(3, 5), (3, 5)], POS),
    ("pow_scalar", lambda t, x: x**3, [(3, 5)], REAL),
    ("scalar_affine", lambda t, x: 2.5 - x * 3.0 + 1.0, [(3, 5)], REAL),
    ("scalar_div", lambda t, x: 1.0 / x, [(3, 5)], POS),
    ("maximum", lambda t, x, y: t.maximum(x, y), [(3, 5), (3, 5)], REAL),
    ("minimum", lambda t, x, y: t.minimum(x, y), [(3, 5), (3, 5)], REAL),
    ("atan2", lambda t, x, y: t.atan2(x, y), [(3, 5), (3, 5)], POS),
    ("where", lambda t, x, y: t.where(x > 0, x, y), [(3, 5), (3, 5)], REAL),
    ("clamp", lambda t, x: t.clamp(x, -1.0, 1.0), [(3, 5)], REAL),
    # reductions
    ("sum", lambda t, x: x.sum(), [(40, 50)], REAL),
    ("sum_dim", lambda t, x: t.sum(x, 1), [(6, 300)], POS),
    ("mean", lambda t, x: x.mean(), [(40, 50)], POS),
    ("mean_dim", lambda t, x: x.mean(0), [(300, 4)], REAL),
    ("prod", lambda t, x: t.prod(x, 1), [(4, 6)], POS),
    ("amax", lambda t, x: t.amax(x, 1), [(4, 6)], REAL),
    ("amin", lambda t, x: t.amin(x, 0), [(4, 6)], REAL),
    ("max_dim", lambda t, x: t.max(x, 1).values, [(4, 6)], REAL),
    ("var", lambda t, x: t.var(x, 1), [(4, 30)], REAL),
    ("std", lambda t, x: t.std(x), [(4, 30)], REAL),
    ("norm", lambda t, x: t.norm(x), [(4, 30)], REAL),
    ("norm_dim", lambda t, x: t.norm(x, dim=1), [(4, 30)], REAL),
    ("logsumexp", lambda t, x: t.logsumexp(x, 1), [(4, 30)], REAL),
    ("softmax", lambda t, x: t.softmax(x, 1), [(4, 30)], REAL, CANCELS),
    ("log_softmax", lambda t, x: t.log_softmax(x, 1), [(4, 30)], REAL, CANCELS),
    ("F.softmax", lambda t, x: t.nn.functional.softmax(x, 0), [(30, 4)], REAL, CANCELS),
    ("F.log_softmax", lambda t, x: t.nn.functional.log_softmax(x, -1), [(4, 30)], REAL, CANCELS),
    ("cumsum", lambda t, x: t.cumsum(x, 1), [(3, 100)], POS),
    ("cumprod", lambda t, x: t.cumprod(x, 1), [(3, 6)], POS),
    # products
    ("matmul", lambda t, x, y: x @ y, [(16, 64), (64, 8)], REAL),
    ("matmul_batched", lambda t, x, y: t.matmul(x, y), [(2, 3, 40), (40, 5)], REAL, SUMMED),
    ("mm", lambda t, x, y: t.mm(x, y), [(8, 100), (100, 4)], REAL),
    ("bmm", lambda t, x, y: t.bmm(x, y), [(2, 8, 64), (2, 64, 4)], REAL),
    ("mv", lambda t, x, y: t.mv(x, y), [(8, 100), (100,)], REAL),
    ("dot", lambda t, x, y: t.dot(x, y), [(200,), (200,)], REAL),
    ("outer", lambda t, x, y: t.outer(x, y), [(5,), (4,)], REAL),
    ("einsum", lambda t, x, y: t.einsum("bij,jk->bik", x, y), [(2, 3, 50), (50, 4)], REAL),
    ("linear", lambda t, x, w: t.nn.functional.linear(x, w), [(6, 64), (5, 64)], REAL),
]


def _inputs(shapes, domain, seed: int) -> list[np.ndarray]:
    """float32 arrays of bfloat16 values (exact in both libraries)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(*domain, size=s).astype(BF16).astype(np.float32) for s in shapes]


def _run(lib, f, arrays, dtype=None):
    """`f`'s value and its inputs' gradients of `sum(f(...) * w)`, all as float64 arrays,
    after checking they are bfloat16 (the inputs in `dtype`, if given: torch's float64 run
    is the reference of the rows that cancel)."""
    xs = [lib.tensor(a).to(dtype or lib.bfloat16).requires_grad_(True) for a in arrays]
    out = f(lib, *xs)
    w = np.linspace(0.5, 1.5, max(out.numel(), 1), dtype=np.float32).reshape(tuple(out.shape))
    (out * lib.tensor(w).to(lib.bfloat16)).sum().backward()
    if dtype is None:
        assert out.dtype == lib.bfloat16, f"value: {out.dtype}"
        for x in xs:
            assert x.grad is not None and x.grad.dtype == lib.bfloat16, f"gradient: {x.grad}"
    return [np.asarray(t.detach().double().numpy()) for t in [out, *(x.grad for x in xs)]]


def _assert_bf16_close(ours, theirs, what: str, ulps: float = 4.0) -> None:
    """Within `ulps` bfloat16 units of the element, or of a sixteenth of the tensor's largest
    element where the result cancels."""
    scale = np.maximum(np.abs(theirs), np.max(np.abs(theirs), initial=0.0) / 16)
    err = np.abs(ours - theirs) / np.where(scale > 0, scale, 1.0)
    assert np.all(err <= ulps * ULP), f"{what}: {np.max(err) / ULP:.1f} ulps\n{ours}\n{theirs}"


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_row_matches_torch(row):
    name, f, shapes, domain = row[:4]
    kind = row[4] if len(row) > 4 else None
    arrays = _inputs(shapes, domain, seed=len(name))
    expected = _run(torch, f, arrays)
    got = _run(autodiff, f, arrays)
    exact = _run(torch, f, arrays, torch.float64) if kind == CANCELS else None
    for k, (ours, theirs) in enumerate(zip(got, expected)):
        what = f"{name}: {'value' if k == 0 else f'gradient {k}'}"
        if kind == CANCELS and k > 0:
            unit = ULP * np.max(np.abs(exact[k]))
            assert np.max(np.abs(ours - exact[k])) <= np.max(np.abs(theirs - exact[k])) + unit
            _assert_bf16_close(ours, theirs, what, ulps=16 * 4.0)  # (4 of the largest)
        else:
            _assert_bf16_close(ours, theirs, what, ulps=8.0 if kind == SUMMED else 4.0)


def test_sums_accumulate_in_float32():
    """A sum of many bfloat16 terms is accumulated in float32 and rounded once (NumPy's
    np.add.reduce of bfloat16 rounds after each term: 10,000 times 0.01 would be 4)."""
    x = autodiff.full((10_000,), 0.01, dtype=autodiff.bfloat16)
    assert float(x.sum()) == float(torch.full((10_000,), 0.01, dtype=torch.bfloat16).sum())
    assert float(x.sum()) == pytest.approx(100.0, rel=ULP)
    assert float(x.mean()) == pytest.approx(0.01, rel=2 * ULP)
    assert float(autodiff.cumsum(x, 0)[-1]) == pytest.approx(100.0, rel=ULP)
    m = autodiff.ones(1, 4096, dtype=autodiff.bfloat16)
    assert float((m @ m.T)[0, 0]) == 4096.0  # (bfloat16 steps: 256 + 1 == 256)


# ---- the dtype on the torch face ----


def test_torch_dtype_surface():
    bf = autodiff.bfloat16
    assert repr(bf) == "torch.bfloat16" and bf == BF16 and bf.is_floating_point
    assert not bf.is_complex and bf.is_signed and bf.itemsize == 2
    assert autodiff.bfloat16 is autodiff.torch.dtypes.bfloat16
    assert autodiff.torch.dtypes.dtype_of_torch(BF16) is bf
    t = autodiff.tensor([1.0, 2.5, -3.0])
    for converted in (t.bfloat16(), t.to(bf), t.to(dtype=bf), t.type(bf)):
        assert converted.dtype == bf and autodiff.torch.dtypes.dtype_of_torch(converted.dtype) is bf
        assert converted.is_floating_point() and autodiff.is_floating_point(converted)
        assert converted.tolist() == [1.0, 2.5, -3.0]
    assert t.bfloat16().type() == "torch.BFloat16Tensor" == torch.ones(1).bfloat16().type()
    assert t.bfloat16().element_size() == 2
    assert repr(t.bfloat16()) == "tensor([ 1. ,  2.5, -3. ])"
    x = autodiff.tensor([1.0], dtype=bf, requires_grad=True)
    assert x.requires_grad and autodiff.tensor([1.0], dtype="torch.bfloat16").dtype == bf
    for factory in (autodiff.zeros, autodiff.ones, autodiff.empty, autodiff.randn):
        assert factory(2, 3, dtype=bf).dtype == bf


def test_torch_default_dtype_bfloat16():
    """torch accepts bfloat16 as the default floating dtype; the factories then make it."""
    autodiff.set_default_dtype(autodiff.bfloat16)
    try:
        assert repr(autodiff.get_default_dtype()) == "torch.bfloat16"
        assert autodiff.tensor([1.5]).dtype == autodiff.zeros(2).dtype == BF16
    finally:
        autodiff.set_default_dtype(autodiff.float64)


def test_torch_finfo():
    ours, theirs = autodiff.finfo(autodiff.bfloat16), torch.finfo(torch.bfloat16)
    # (not `resolution`: ml_dtypes' is 10**-2 rounded to bfloat16, 0.0100098; torch's 0.01)
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal"):
        assert float(getattr(ours, field)) == float(getattr(theirs, field)), field


@pytest.mark.parametrize(
    "a, b",
    [("bfloat16", "float16"), ("bfloat16", "float32"), ("bfloat16", "float64"),
     ("bfloat16", "bfloat16"), ("bfloat16", "int64"), ("bfloat16", "int32"), ("bfloat16", "bool"),
     ("bfloat16", "complex64")],
)  # fmt: skip
def test_torch_promotion(a, b):
    """torch.promote_types, and the operators on two tensors of floating dtypes."""
    ours = autodiff.promote_types(getattr(autodiff, a), getattr(autodiff, b))
    assert repr(ours) == repr(torch.promote_types(getattr(torch, a), getattr(torch, b)))
    if b.startswith("float") or b == "bfloat16":
        x = autodiff.ones(2, dtype=getattr(autodiff, a))
        y = autodiff.ones(2, dtype=getattr(autodiff, b))
        assert (x + y).dtype == ours and (y * x).dtype == ours


def test_torch_python_scalars_keep_bfloat16():
    x = autodiff.ones(3, dtype=autodiff.bfloat16)
    for y in (x + 2.5, 2.5 + x, 2.5 - x, x * 3, 1.0 / x, x**2.0, autodiff.where(x > 0, 0.0, x)):
        assert y.dtype == autodiff.bfloat16
    assert repr(autodiff.result_type(x, 2.0)) == "torch.bfloat16"
    assert repr(torch.result_type(torch.ones(3, dtype=torch.bfloat16), 2.0)) == "torch.bfloat16"


def test_module_bfloat16():
    """`module.bfloat16()` / `.to(torch.bfloat16)` cast floating parameters; the layer then
    computes in bfloat16 with gradients in bfloat16, as torch's."""
    rng = np.random.default_rng(3)
    w, b = rng.normal(size=(4, 6)), rng.normal(size=4)
    x = rng.normal(size=(5, 6)).astype(BF16).astype(np.float32)
    results = []
    for lib in (torch, autodiff):
        layer = lib.nn.Linear(6, 4)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(w))
            layer.bias.copy_(lib.tensor(b))
        layer = layer.bfloat16() if lib is torch else layer.to(lib.bfloat16)
        out = layer(lib.tensor(x).to(lib.bfloat16)).tanh().sum()
        out.backward()
        assert layer.weight.dtype == lib.bfloat16 and layer.weight.grad.dtype == lib.bfloat16
        results.append([float(out.detach()), layer.weight.grad.float().numpy()])
    _assert_bf16_close(np.float32(results[1][0]), np.float32(results[0][0]), "value")
    _assert_bf16_close(results[1][1], results[0][1], "weight gradient")


# ---- the JAX face ----

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

JAX_ROWS = [
    ("tanh_sum", lambda np_, x, y: np_.sum(np_.tanh(x) * y)),
    ("matmul", lambda np_, x, y: np_.sum(np_.sin(x @ y.T))),
    ("mean_exp", lambda np_, x, y: np_.mean(np_.exp(x) - y * 2.0)),
    ("var", lambda np_, x, y: np_.var(x * y)),
    ("max_where", lambda np_, x, y: np_.max(np_.where(x > y, x, 0.5 * y))),
]


@pytest.mark.parametrize("name, f", JAX_ROWS, ids=[r[0] for r in JAX_ROWS])
def test_jax_face_matches_jax(name, f):
    x, y = _inputs([(6, 40), (6, 40)], REAL, seed=len(name))
    x, y = x.astype(BF16), y.astype(BF16)
    got_value, got_grads = autodiff.value_and_grad(lambda a, b: f(anp, a, b), (0, 1))(x, y)
    want_value, want_grads = jax.value_and_grad(lambda a, b: f(jnp, a, b), (0, 1))(
        jnp.asarray(x), jnp.asarray(y)
    )
    assert got_value.dtype == BF16 and all(g.dtype == BF16 for g in got_grads)
    for k, (ours, theirs) in enumerate(zip((got_value, *got_grads), (want_value, *want_grads))):
        # (gradients: within 4 units of their largest element, as XLA fuses bfloat16 chains
        # and rounds where it chooses; `1 - tanh(x)**2` then differs where it cancels)
        ulps = 4.0 if k == 0 else 64.0
        ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
        _assert_bf16_close(ours, theirs, f"{name}: {k}", ulps=ulps)


def test_jax_face_dtype_and_promotion():
    assert anp.bfloat16 is ml_dtypes.bfloat16 and anp.dtype(anp.bfloat16) == BF16
    x = anp.asarray(np.ones(3), anp.bfloat16)
    assert x.dtype == BF16 == jnp.asarray(np.ones(3), jnp.bfloat16).dtype
    for other in (np.float16, np.float32, np.float64):
        y = np.ones(3, other)
        want = jnp.promote_types(jnp.bfloat16, other)
        assert (x + y).dtype == want and (y * x).dtype == want, other
    for y in (
        x + 1.5,
        1.5 * x,
        anp.where(x > 0, 0.5, x),
        anp.clip(x, 0.0, 0.5),
        anp.maximum(x, 0.0),
    ):
        assert y.dtype == BF16  # (a Python number is weak on both faces)


def test_jvp_and_vmap():
    x = np.linspace(-1, 1, 7).astype(BF16)
    out, tangent = autodiff.jvp(lambda v: anp.sum(anp.sin(v) * 2.0), (x,), (np.ones_like(x),))
    want_out, want_tangent = jax.jvp(
        lambda v: jnp.sum(jnp.sin(v) * 2.0), (jnp.asarray(x),), (jnp.ones(7, jnp.bfloat16),)
    )
    assert out.dtype == tangent.dtype == BF16
    assert float(out) == float(want_out) and float(tangent) == float(want_tangent)
    batched = autodiff.vmap(autodiff.grad(lambda v: anp.sum(v**2)))(x.reshape(7, 1))
    assert batched.dtype == BF16 and np.array_equal(batched, (2 * x).reshape(7, 1))


# ---- jit: Numba has no bfloat16, the NumPy executor runs the graph ----


def test_jit_runs_bfloat16_graphs():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 50)).astype(BF16)
    w = rng.normal(size=(50, 30)).astype(BF16)

    def loss(x, w):
        return anp.sum(anp.tanh(x @ w) ** 2) + anp.mean(anp.exp(x))

    eager = autodiff.value_and_grad(loss, (0, 1))(x, w)
    compiled = autodiff.jit(autodiff.value_and_grad(loss, (0, 1)))
    for _ in range(40):  # (past the executor's tier-up to compiled code for other dtypes)
        got = compiled(x, w)
    assert got[0].dtype == BF16 and got[1][0].dtype == got[1][1].dtype == BF16
    assert float(got[0]) == float(eager[0])
    for a, b in zip(got[1], eager[1]):
        assert np.array_equal(a, b)


def test_torch_compile_bfloat16():
    layer = autodiff.nn.Linear(8, 3).bfloat16()
    step = autodiff.compile(lambda x: layer(x).relu().sum())
    x = autodiff.ones(4, 8, dtype=autodiff.bfloat16)
    for _ in range(3):
        out = step(x)
    assert out.dtype == autodiff.bfloat16
    assert float(out.detach()) == float(layer(x).relu().sum().detach())


# ---- import cost, and a clear error without ml_dtypes ----


def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )


def test_import_autodiff_does_not_import_ml_dtypes():
    code = (
        "import sys, autodiff, autodiff.numpy, autodiff.torch.dtypes\n"
        "assert 'ml_dtypes' not in sys.modules\n"
        "t = autodiff.ones(2).float()\n"
        "assert 'ml_dtypes' not in sys.modules\n"
        "print(autodiff.bfloat16, 'ml_dtypes' in sys.modules)"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["torch.bfloat16", "True"]


def test_missing_ml_dtypes_is_a_clear_error():
    code = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import autodiff\n"
        "try:\n"
        "    autodiff.bfloat16\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert "bfloat16 needs the ml_dtypes package" in result.stdout
    assert "pip install ml_dtypes" in result.stdout
