"""Products (matmul, dot, einsum, ...): dtypes, complex convention, NumPy dispatch, hot path, errors."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.ops import products, structural
from autodiff.testing import check_grads

rng = np.random.default_rng(0)


def _vjp(f, *args, ct=None):
    out, pullback = ad.vjp(f, *args)
    ct = np.ones_like(out) if ct is None else ct
    return out, pullback(ct)


# ------------------------------------------------------------------------------------ dtypes


@pytest.mark.parametrize("name", ["matmul", "dot", "inner", "tensordot", "vdot"])
def test_float32_stays_float32(name):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 3) if name in ("matmul", "dot") else (3, 4)).astype(np.float32)
    f = getattr(anp, name)
    out, (ga, gb) = _vjp(f, a, b)
    assert out.dtype == getattr(np, name)(a, b).dtype == np.float32
    assert ga.dtype == gb.dtype == np.float32


def test_float32_einsum_and_outer():
    a = rng.standard_normal((3, 3)).astype(np.float32)
    out, (g,) = _vjp(lambda x: anp.einsum("ii->i", x), a)
    assert out.dtype == g.dtype == np.float32
    out, (g,) = _vjp(lambda x: anp.outer(x, x), a[0])
    assert out.dtype == g.dtype == np.float32


def test_int_times_float_follows_numpy_and_differentiates_the_float():
    i = np.arange(12).reshape(3, 4)
    w32 = rng.standard_normal((4, 2)).astype(np.float32)
    assert anp.matmul(i, w32).dtype == np.matmul(i, w32).dtype
    assert anp.dot(i, w32).dtype == np.dot(i, w32).dtype
    out, (g,) = _vjp(lambda w: i @ w, w32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, i.T @ np.ones_like(out), rtol=1e-6)


def test_mixed_precision_cotangents_have_their_primal_dtype():
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2))
    for f in (anp.matmul, anp.dot, lambda x, y: anp.einsum("ij,jk", x, y)):
        out, (ga, gb) = _vjp(f, a, b)
        assert out.dtype == np.float64
        assert ga.dtype == np.float32 and gb.dtype == np.float64


def test_python_scalars_and_lists_as_numpy():
    assert anp.dot(2.0, np.ones(3, np.float32)).dtype == np.dot(2.0, np.ones(3, np.float32)).dtype
    np.testing.assert_array_equal(anp.outer([1.0, 2.0], [3, 4]), np.outer([1.0, 2.0], [3, 4]))
    assert anp.matmul([1.0, 2.0], [3.0, 4.0]) == 11.0
    assert type(anp.dot(np.ones(3), np.ones(3))) is np.float64


# ----------------------------------------------------------------------------------- complex


def test_complex_vjp_follows_each_face_convention():
    """The functional vjp follows JAX for complex values: the cotangent of a in a @ b is
    g @ b^T (the plain transpose); the torch face follows PyTorch: g @ b^H."""
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))
    g = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    _, (ga, gb) = _vjp(anp.matmul, a, b, ct=g)
    np.testing.assert_allclose(ga, g @ b.T)
    np.testing.assert_allclose(gb, a.T @ g)
    _, (ga, gb) = _vjp(lambda x, y: anp.einsum("ij,jk->ik", x, y), a, b, ct=g)
    np.testing.assert_allclose(ga, g @ b.T)
    np.testing.assert_allclose(gb, a.T @ g)
    ta, tb = ad.tensor(a, requires_grad=True), ad.tensor(b, requires_grad=True)
    (ta @ tb).backward(ad.tensor(g))
    np.testing.assert_allclose(ta.grad.numpy(), g @ b.conj().T)
    np.testing.assert_allclose(tb.grad.numpy(), a.conj().T @ g)


def test_vdot_conjugates_its_first_argument():
    a = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    b = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    assert anp.vdot(a, b) == np.vdot(a, b)
    _, (ga, gb) = _vjp(anp.vdot, a, b, ct=np.complex128(1.0))
    np.testing.assert_allclose(ga, np.conj(b))  # as jax.vjp(jnp.vdot, a, b)
    np.testing.assert_allclose(gb, np.conj(a))
    ta, tb = ad.tensor(a, requires_grad=True), ad.tensor(b, requires_grad=True)
    anp.vdot(ta, tb).backward()
    np.testing.assert_allclose(ta.grad.numpy(), b)  # as torch.vdot: grad_a = b * conj(g)
    np.testing.assert_allclose(tb.grad.numpy(), a)  # grad_b = a * g


# ------------------------------------------------------------------------ dispatch and methods


def test_plain_numpy_calls_dispatch_inside_grad():
    w = rng.standard_normal((4, 3))
    x = rng.standard_normal((2, 4))
    v = rng.standard_normal(3)

    def f(x):
        h = np.matmul(x, w) + np.dot(x, w) + np.einsum("ij,jk->ik", x, w)
        h = h + np.tensordot(x, w, axes=1) + np.inner(x, w.T)
        return np.vdot(np.ravel(np.outer(h, v)), np.ones(h.size * v.size))

    g = ad.grad(f)(x)
    np.testing.assert_allclose(g, 5 * v.sum() * np.outer(np.ones(2), w @ np.ones(3)), rtol=1e-12)


def test_matmul_operator_with_raw_array_on_either_side():
    w = rng.standard_normal((4, 4))
    x = rng.standard_normal(4)
    g = ad.grad(lambda x: anp.vdot(w @ x, x @ w))(x)
    np.testing.assert_allclose(g, w.T @ (x @ w) + w @ (w @ x), rtol=1e-12)


def test_tensor_operator_and_methods():
    a = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = ad.tensor([1.0, -1.0])
    assert isinstance(a @ b, ad.Tensor)
    np.testing.assert_array_equal((a @ b).numpy(), [-1.0, -1.0])
    np.testing.assert_array_equal(anp.dot(a, b).numpy(), [-1.0, -1.0])  # (a.dot: torch's, 1-d)
    np.testing.assert_array_equal((b @ a).numpy(), [-2.0, -2.0])


# ---------------------------------------------------------------------------------- hot path


def test_2d_matmul_backward_is_two_matmuls_and_no_einsum(monkeypatch):
    calls = []
    impl = products.matmul_p.impl
    counted = lambda a, b: calls.append("mm") or impl(a, b)
    monkeypatch.setattr(products.matmul_p, "impl", counted)
    monkeypatch.setattr(products.buffers, "matmul_into", counted)  # (the NumPy backward rule's)
    monkeypatch.setattr(products.einsum_p, "impl", lambda *a, **k: pytest.fail("einsum called"))
    x, w = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    _, pullback = ad.vjp(lambda x, w: x @ w, x, w)
    assert calls == ["mm"]
    gx, gw = pullback(np.ones((5, 3)))
    assert calls == ["mm"] * 3
    np.testing.assert_allclose(gx, np.ones((5, 3)) @ w.T)
    np.testing.assert_allclose(gw, x.T @ np.ones((5, 3)))


def test_broadcast_batch_dims_are_summed_back():
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((2, 5, 4, 3))
    _, (ga, gb) = _vjp(anp.matmul, a, b)
    np.testing.assert_allclose(ga, np.ones((3, 3)) @ b.sum((0, 1)).T)
    assert gb.shape == b.shape


# ------------------------------------------------------------------------------ higher order


def test_hessian_vector_product_of_a_quadratic_form():
    A = rng.standard_normal((4, 4))
    v = rng.standard_normal(4)
    f = lambda x: anp.einsum("i,ij,j", x, A, x)
    hv = ad.grad(lambda x: anp.vdot(v, ad.grad(f)(x)))(rng.standard_normal(4))
    np.testing.assert_allclose(hv, (A + A.T) @ v, rtol=1e-12)


def test_third_order_through_diagonal_einsum():
    # f(x) = trace(x @ x @ x) for x = t * M: f = t^3 trace(M^3), f''' = 6 trace(M^3)
    M = rng.standard_normal((3, 3))
    f = lambda t: anp.einsum("ii", (t * M) @ (t * M) @ (t * M))
    assert np.isclose(ad.grad(ad.grad(ad.grad(f)))(0.7), 6 * np.trace(M @ M @ M))


def test_forward_mode_with_one_constant_operand():
    w = rng.standard_normal((4, 3))
    x, dx = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    out, t = ad.jvp(lambda x: anp.einsum("ij,jk->ik", x, w) + x @ w, (x,), (dx,))
    np.testing.assert_allclose(t, 2 * dx @ w)


@pytest.mark.parametrize(
    "spec, shapes", [("ii->", [(3, 3)]), ("i,->i", [(3,), ()]), ("ij,j->i", [(2, 3), (3,)])]
)
def test_einsum_derivatives_to_order_three(spec, shapes):
    args = tuple(rng.standard_normal(s) for s in shapes)
    check_grads(lambda *xs: anp.einsum(spec, *xs), args, order=3, modes=("fwd", "rev"))


# ------------------------------------------------------------------------------ einsum forms


def test_einsum_forms_match_numpy():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_array_equal(anp.einsum(a, [0, 1], b, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]))
    np.testing.assert_array_equal(anp.einsum("bA", a), np.einsum("bA", a))
    path = np.einsum_path("ij,jk->ik", a, b, optimize="greedy")[0]
    np.testing.assert_allclose(anp.einsum("ij,jk->ik", a, b, optimize=path), a @ b)
    _, (ga, gb) = _vjp(lambda x, y: anp.einsum("ij,jk->ik", x, y, optimize=path), a, b)
    np.testing.assert_allclose(ga, np.ones((3, 5)) @ b.T)


# ------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "call",
    [
        lambda x: anp.matmul(x, x, out=np.empty((2, 2))),
        lambda x: anp.dot(x, x, out=np.empty((2, 2))),
        lambda x: anp.outer(x, x, out=np.empty((4, 4))),
        lambda x: anp.einsum("ij,jk", x, x, out=np.empty((2, 2))),
        lambda x: anp.einsum("ij,jk", x, x, dtype=np.float32),
    ],
)
def test_unsupported_arguments_raise(call):
    with pytest.raises(NotImplementedError):
        call(np.ones((2, 2)))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: anp.matmul(x[0, 0], x),
        lambda x: anp.matmul(x, np.ones((3, 2))),
        lambda x: anp.tensordot(x, np.ones((3, 2)), axes=1),
        lambda x: anp.tensordot(x, x, axes=([0, 1], [0])),
        lambda x: anp.einsum("ij,jk", x, np.ones((3, 2))),
        lambda x: anp.einsum("ii", np.ones((1, 2))),
        lambda x: anp.einsum("ij->k", x),
        lambda x: anp.einsum("ij->ii", x),
        lambda x: anp.einsum("...i->i", x),
        lambda x: anp.einsum("ij", x, x),
        lambda x: anp.einsum("i.j", x),
    ],
)
def test_invalid_shapes_and_subscripts_raise_value_error(call):
    with pytest.raises(ValueError):
        call(np.ones((2, 2)))
    with pytest.raises(ValueError):
        ad.grad(lambda x: anp.vdot(call(x), np.ones(1)))(np.ones((2, 2)))


@pytest.mark.parametrize("sa, sb", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 3)), ((3, 4), (4, 2))])
def test_mixed_dtype_dot_derivatives(sa, sb):
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb)
    check_grads(anp.dot, (a, b), order=2, modes=("fwd", "rev"))
    check_grads(anp.inner, (a, b.T), order=2, modes=("fwd", "rev"))


# -------------------------------------------------------------------------------------- vmap


def _vmap_vs_loop(f, args, in_axes, size=3, rtol=1e-12):
    """vmap(f, in_axes) on stacked args (batch axis at in_axes[i]) against a Python loop."""
    per = [
        [a * (1.0 + 0.1 * b) if d is not None else a for a, d in zip(args, in_axes)]
        for b in range(size)
    ]
    stacked = [
        np.stack([p[i] for p in per], axis=d) if d is not None else a
        for i, (a, d) in enumerate(zip(args, in_axes))
    ]
    got = ad.vmap(f, in_axes=tuple(in_axes))(*stacked)
    want = np.stack([np.asarray(f(*p)) for p in per])
    assert np.asarray(got).shape == want.shape
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=1e-13)


def _all_in_axes(shapes):
    """Every batch-axis position (first, middle, last) for one or both operands."""
    out = []
    for i, s in enumerate(shapes):
        for d in range(len(s) + 1):
            out.append(tuple(d if j == i else None for j in range(len(shapes))))
    if len(shapes) == 2:
        out += [(d0, d1) for d0 in range(len(shapes[0]) + 1) for d1 in range(len(shapes[1]) + 1)]
    return out


_PRODUCT_SHAPES = {
    "matmul": [
        ((4,), (4,)),
        ((3, 4), (4, 5)),
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((2, 3, 4), (4, 5)),
        ((4,), (2, 4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((3, 4), (2, 4, 5)),
    ],
    "dot": [
        ((4,), (4,)),
        ((3, 4), (4,)),
        ((2, 3, 4), (4,)),
        ((4,), (2, 4, 3)),
        ((2, 3, 4), (5, 4, 2)),
        ((3, 4), (2, 4, 5)),
        ((2, 3, 4), (4, 5)),
    ],
}
_VMAP_PARAMS = [
    pytest.param(name, sa, sb, axes, id=f"{name}{sa}{sb}-{axes}")
    for name, pairs in _PRODUCT_SHAPES.items()
    for sa, sb in pairs
    for axes in _all_in_axes([sa, sb])
]


@pytest.mark.parametrize("name, sa, sb, in_axes", _VMAP_PARAMS)
def test_vmap_of_products_at_every_batch_axis(name, sa, sb, in_axes):
    _vmap_vs_loop(getattr(anp, name), (rng.standard_normal(sa), rng.standard_normal(sb)), in_axes)


@pytest.mark.parametrize(
    "spec, shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ii->i", [(3, 3)]),
        ("iij->j", [(3, 3, 2)]),
        ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 3)]),
        (",i->i", [(), (3,)]),
        ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ],
)
def test_vmap_of_einsum_at_every_batch_axis(spec, shapes):
    args = tuple(rng.standard_normal(s) for s in shapes)
    for axes in _all_in_axes(shapes) + [tuple(len(s) // 2 for s in shapes)]:
        _vmap_vs_loop(lambda *xs: anp.einsum(spec, *xs), args, axes)


def test_vmap_of_einsum_with_an_explicit_path_and_many_labels():
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((5, 2))
    path = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")[0]
    _vmap_vs_loop(
        lambda *xs: anp.einsum("ij,jk,kl->il", *xs, optimize=path), (a, b, c), (1, None, 0)
    )
    # 51 labels used: the batch axis takes the last free one
    labels = products._LABELS[:-1]
    x = rng.standard_normal((1,) * 49 + (2, 3))
    _vmap_vs_loop(lambda x: anp.einsum(labels + "->" + labels[-1], x), (x,), (0,))


@pytest.mark.parametrize("sa, sb", [((3, 4), (4,)), ((2, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3))])
def test_vmap_of_mixed_dtype_dot_keeps_numpy_dtypes(sa, sb):
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb)
    for axes in _all_in_axes([sa, sb]):
        _vmap_vs_loop(anp.dot, (a, b), axes, rtol=1e-6)
    i = np.arange(int(np.prod(sa))).reshape(sa)
    for axes in [(0, None), (None, 0), (0, 0)]:
        _vmap_vs_loop(anp.dot, (i, b), axes)


def test_vmap_of_unbatched_weight_matmul_is_one_matrix_product(monkeypatch):
    """Per-example x @ w with w unbatched: the batch axis folds into the rows, so NumPy sees
    one 2-D product (one BLAS call) and no transpose."""
    monkeypatch.setattr(structural.transpose_p, "impl", lambda *a, **k: pytest.fail("transpose"))
    shapes = []
    matmul_impl = products.matmul_p.impl
    monkeypatch.setattr(
        products.matmul_p, "impl", lambda a, b: shapes.append((a.ndim, b.ndim)) or matmul_impl(a, b)
    )
    x, w = rng.standard_normal((7, 3, 4)), rng.standard_normal((4, 5))
    ad.vmap(lambda x: x @ w)(x)
    assert shapes == [(2, 2)]
    np.testing.assert_allclose(ad.vmap(lambda x: x @ w)(x), x @ w)
    np.testing.assert_allclose(ad.vmap(lambda x: x @ w, in_axes=1, out_axes=1)(x), x @ w)
    np.testing.assert_allclose(ad.vmap(lambda x: x[0] @ w)(x), x[:, 0] @ w)
    np.testing.assert_allclose(ad.vmap(anp.dot, in_axes=(0, None))(x, w), x @ w)


def test_per_example_gradients_of_a_linear_model():
    w = rng.standard_normal((4, 3))
    xs, ys = rng.standard_normal((6, 4)), rng.standard_normal((6, 3))

    def loss(w, x, y):
        r = x @ w - y
        return anp.einsum("i,i->", r, r) + anp.dot(x, w).sum()

    got = ad.vmap(ad.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    want = np.stack([ad.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(
        got, np.stack([np.outer(x, 2 * (x @ w - y) + 1) for x, y in zip(xs, ys)]), rtol=1e-12
    )


def test_nested_vmap_and_jvp_of_vmap():
    a, b = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((3, 5, 2))
    got = ad.vmap(ad.vmap(anp.matmul, in_axes=(0, 0)), in_axes=(0, None))(a, b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)
    got = ad.vmap(
        ad.vmap(lambda x, y: anp.einsum("ij,jk", x, y), in_axes=(1, 0)), in_axes=(0, None)
    )(np.swapaxes(a, 1, 2), b)
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)
    ta = rng.standard_normal(a.shape)
    _, t = ad.jvp(lambda x: ad.vmap(anp.dot, in_axes=(1, None))(x, b[0]), (a,), (ta,))
    np.testing.assert_allclose(t, np.swapaxes(ta, 0, 1) @ b[0], rtol=1e-12)


def test_jacobians_of_products():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    for f in (
        anp.matmul,
        anp.dot,
        lambda x, y: anp.einsum("ij,jk", x, y),
        lambda x, y: anp.tensordot(x, y, axes=1),
    ):
        jf = ad.jacfwd(f, argnums=(0, 1))(a, b)
        jr = ad.jacrev(f, argnums=(0, 1))(a, b)
        np.testing.assert_allclose(jr[0], np.einsum("ik,jl->ijkl", np.eye(3), b.T), rtol=1e-12)
        np.testing.assert_allclose(jr[1], np.einsum("ik,lj->ijkl", a, np.eye(2)), rtol=1e-12)
        for x, y in zip(jf, jr):
            np.testing.assert_allclose(x, y, rtol=1e-12)


@pytest.mark.parametrize(
    "a_shape, b_shape, a_dtype, b_dtype",
    [
        ((5, 3), (3, 4), np.float64, np.float64),  # the NumPy form's own case
        ((5, 3), (3, 4), np.float32, np.float32),
        ((5, 3), (3, 4), np.complex128, np.complex128),
        ((5, 3), (3, 4), np.float32, np.float64),  # the rule's: mixed dtypes
        ((2, 5, 3), (3, 4), np.float64, np.float64),  # the rule's: a stack of matrices
        ((5, 3), (3,), np.float64, np.float64),  # the rule's: a matrix-vector product
    ],
)
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
def test_matmul_numpy_rule_is_the_rule(a_shape, b_shape, a_dtype, b_dtype, needs):
    """matmul's NumPy form (the engine's, on plain arrays) gives the rule's cotangents bitwise,
    in the operands' dtypes, and none for an operand not asked for."""
    a = rng.standard_normal(a_shape).astype(a_dtype)
    b = rng.standard_normal(b_shape).astype(b_dtype)
    if np.iscomplexobj(a):
        a = a + 1j * rng.standard_normal(a_shape)
        b = b + 1j * rng.standard_normal(b_shape)
    out = a @ b
    g = rng.standard_normal(out.shape).astype(out.dtype)
    got = products.matmul_p.fast.vjp(g, out, a, b, needs=needs)
    want = products.matmul_p.vjp(g, a, b, out=out, needs=needs)
    for x, y, operand, need in zip(got, want, (a, b), needs):
        if not need:
            assert x is None and y is None
            continue
        assert x.dtype == y.dtype == operand.dtype and x.shape == operand.shape
        np.testing.assert_array_equal(x, y)
