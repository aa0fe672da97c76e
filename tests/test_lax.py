"""autodiff.lax against jax.lax: values, gradients (grad and jvp), and under jit and vmap.

Oracle: JAX 0.10 with x64 enabled, on the same inputs; each case compares the value, the
gradient of a random projection of the output, a jvp along a random tangent, and (for the
main operations) the value under `jit` and `vmap`.
"""

from __future__ import annotations

import numpy as np
import pytest

import autodiff as ad
import autodiff.lax as lax
import autodiff.numpy as anp

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jlax = jax.lax
jnp = jax.numpy

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.standard_normal(shape)


def _close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=tol, atol=tol)


def _central_grad(f, args, argnums):
    """The gradient of scalar `f` in `args[argnums]` by central differences."""
    x = np.array(args[argnums], dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = 1e-6
        at = [list(args), list(args)]
        at[0][argnums], at[1][argnums] = x + step, x - step
        g[i] = (float(f(*at[0])) - float(f(*at[1]))) / 2e-6
    return g


def _check(ours, theirs, *args, argnums=0, transforms=True, jax_grad=True):
    """Value, grad of a projection, jvp; with `transforms`, also under jit and vmap. Without
    `jax_grad` (JAX cannot differentiate the case) the derivatives' oracle is central
    differences of JAX's values."""
    _close(ours(*args), theirs(*args))
    out = np.asarray(theirs(*args))
    w = RNG.standard_normal(out.shape)
    g_ours = ad.grad(lambda *a: anp.sum(ours(*a) * w), argnums=argnums)(*args)
    if not jax_grad:
        g_fd = _central_grad(lambda *a: np.sum(np.asarray(theirs(*a)) * w), args, argnums)
        _close(g_ours, g_fd, 1e-6)
        return
    g_theirs = jax.grad(lambda *a: jnp.sum(theirs(*a) * w), argnums=argnums)(*args)
    _close(g_ours, g_theirs)
    primal = args[argnums]
    t = RNG.standard_normal(np.shape(primal))

    def along(f):
        return lambda p: f(*args[:argnums], p, *args[argnums + 1 :])

    _close(ad.jvp(along(ours), (primal,), (t,))[1], jax.jvp(along(theirs), (primal,), (t,))[1])
    if transforms:
        _close(ad.jit(ours)(*args), out)
        stacked = tuple(np.stack([a, a * 0.5]) if i == argnums else a for i, a in enumerate(args))
        axes = tuple(0 if i == argnums else None for i in range(len(args)))
        _close(ad.vmap(ours, in_axes=axes)(*stacked), jax.vmap(theirs, in_axes=axes)(*stacked))


DOT_CASES = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((4, 2, 3), (3, 5, 2), (((2,), (0,)), ((1,), (2,)))),
    ((2, 3), (4,), (((), ()), ((), ()))),
    ((2, 3, 4), (3, 4), (((1, 2), (0, 1)), ((), ()))),
]


@pytest.mark.parametrize("lhs_shape, rhs_shape, dn", DOT_CASES)
def test_dot_general(lhs_shape, rhs_shape, dn):
    lhs, rhs = _rand(*lhs_shape), _rand(*rhs_shape)
    for argnums in (0, 1):
        _check(
            lambda a, b: lax.dot_general(a, b, dn),
            lambda a, b: jlax.dot_general(a, b, dn),
            lhs,
            rhs,
            argnums=argnums,
        )


CONV_CASES = [
    dict(x=(2, 3, 7, 6), w=(4, 3, 3, 2), strides=(1, 1), padding="VALID"),
    dict(x=(1, 2, 7, 6), w=(4, 2, 3, 3), strides=(2, 1), padding="SAME"),
    dict(
        x=(1, 2, 6, 5),
        w=(2, 2, 2, 3),
        strides=(1, 2),
        padding=((1, 2), (0, 1)),
        lhs_dilation=(2, 1),
    ),
    dict(x=(2, 2, 8, 7), w=(3, 2, 2, 2), strides=(1, 1), padding="SAME", rhs_dilation=(2, 3)),
    dict(x=(1, 4, 6, 6), w=(6, 2, 3, 3), strides=(1, 1), padding="VALID", feature_group_count=2),
    dict(
        x=(2, 5, 6, 3), w=(3, 2, 3, 4), strides=(1, 1), padding="SAME", dn=("NHWC", "HWIO", "NHWC")
    ),
    dict(x=(2, 9, 3), w=(3, 3, 2), strides=(2,), padding="SAME_LOWER", dn=("NWC", "WIO", "NCW")),
    dict(x=(1, 2, 5, 4, 3), w=(2, 2, 2, 2, 2), strides=(1, 1, 1), padding="VALID"),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=range(len(CONV_CASES)))
def test_conv_general_dilated(case):
    options = dict(
        lhs_dilation=case.get("lhs_dilation"),
        rhs_dilation=case.get("rhs_dilation"),
        dimension_numbers=case.get("dn"),
        feature_group_count=case.get("feature_group_count", 1),
    )
    x, w = _rand(*case["x"]), _rand(*case["w"])
    for argnums in (0, 1):
        _check(
            lambda a, b: lax.conv_general_dilated(
                a, b, case["strides"], case["padding"], **options
            ),
            lambda a, b: jlax.conv_general_dilated(
                a, b, case["strides"], case["padding"], **options
            ),
            x,
            w,
            argnums=argnums,
        )


def test_conv_dimension_numbers_and_errors():
    dn = lax.conv_dimension_numbers((1, 5, 5, 2), (3, 3, 2, 4), ("NHWC", "HWIO", "NHWC"))
    theirs = jlax.conv_dimension_numbers((1, 5, 5, 2), (3, 3, 2, 4), ("NHWC", "HWIO", "NHWC"))
    assert tuple(dn) == tuple(theirs)
    x, w = _rand(1, 5, 5, 2), _rand(3, 3, 2, 4)
    _close(
        lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=dn_of(theirs)),
        jlax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=theirs),
    )
    x, w = _rand(1, 4, 5, 5), _rand(3, 4, 2, 2)
    _close(lax.conv(x, w, (1, 1), "SAME"), jlax.conv(x, w, (1, 1), "SAME"))
    with pytest.raises(ValueError, match="feature_group_count"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=3)
    with pytest.raises(ValueError, match="padding"):
        lax.conv_general_dilated(x, w, (1, 1), "FULL")


def dn_of(theirs):
    return lax.ConvDimensionNumbers(*theirs)


WINDOW_CASES = [
    ("add", 0.0, (2, 3), (1, 1), "VALID", None, None),
    ("max", -np.inf, (3, 3), (2, 2), "SAME", None, None),
    ("min", np.inf, (2, 2), (1, 2), ((1, 0), (1, 1)), None, None),
    ("add", 0.0, (2, 2), (1, 1), "SAME", None, (2, 1)),
    ("add", 1.5, (2, 2), (1, 1), "VALID", (2, 1), None),
    ("max", -np.inf, (1, 2), (1, 1), "SAME", (1, 2), None),  # (JAX: no max vjp with dilation)
]


@pytest.mark.parametrize("case", WINDOW_CASES, ids=range(len(WINDOW_CASES)))
def test_reduce_window(case):
    name, init, window, strides, padding, base, dilation = case
    ours_op = {"add": lax.add, "max": lax.max, "min": lax.min}[name]
    theirs_op = {"add": jlax.add, "max": jlax.max, "min": jlax.min}[name]
    x = _rand(6, 7)
    _check(
        lambda a: lax.reduce_window(a, init, ours_op, window, strides, padding, base, dilation),
        lambda a: jlax.reduce_window(a, init, theirs_op, window, strides, padding, base, dilation),
        x,
        jax_grad=init in (0.0, -np.inf, np.inf),  # (JAX differentiates the monoids only)
    )


GATHER_CASES = [
    # x[idx] on the first axis (jnp.take's form)
    (
        (5, 3),
        [[2], [0], [4]],
        dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
        (1, 3),
    ),
    # windows of 2 along axis 0, starts clamped or filled out of bounds
    (
        (6,),
        [[1], [5], [-2]],
        dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,)),
        (2,),
    ),
    # x[i, j] scalar picks
    (
        (4, 5),
        [[0, 1], [3, 4], [2, 2]],
        dict(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1)),
        (1, 1),
    ),
    # 2-d windows, index map reversed, batch of 2x2
    (
        (4, 5, 3),
        [[[1, 0], [2, 3]], [[0, 1], [1, 1]]],
        dict(offset_dims=(2, 3), collapsed_slice_dims=(0,), start_index_map=(1, 0)),
        (1, 2, 3),
    ),
    # operand batching dims: per-row picks (take_along_axis's form)
    (
        (3, 5),
        [[[1], [4]], [[0], [0]], [[3], [2]]],
        dict(
            offset_dims=(),
            collapsed_slice_dims=(1,),
            start_index_map=(1,),
            operand_batching_dims=(0,),
            start_indices_batching_dims=(0,),
        ),
        (1, 1),
    ),
]


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("case", GATHER_CASES, ids=range(len(GATHER_CASES)))
def test_gather(case, mode):
    shape, indices, dn, sizes = case
    indices = np.asarray(indices)
    if mode == "promise_in_bounds" and (np.any(indices < 0) or np.any(indices >= 4)):
        indices = np.clip(indices, 0, 4)  # (out of bounds is implementation-defined there)
    ours_dn, theirs_dn = lax.GatherDimensionNumbers(**dn), jlax.GatherDimensionNumbers(**dn)
    _check(
        lambda a: lax.gather(a, indices, ours_dn, sizes, mode=mode),
        lambda a: jlax.gather(a, indices, theirs_dn, sizes, mode=mode),
        _rand(*shape),
    )


def test_gather_vmapped_indices_and_fill_value():
    dn = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    x, idx = _rand(5, 3), np.array([[[1], [4]], [[0], [7]]])
    ours = ad.vmap(
        lambda i: lax.gather(x, i, lax.GatherDimensionNumbers(**dn), (1, 3), fill_value=-1.0)
    )(idx)
    theirs = jax.vmap(
        lambda i: jlax.gather(x, i, jlax.GatherDimensionNumbers(**dn), (1, 3), fill_value=-1.0)
    )(idx)
    _close(ours, theirs)
    ours_int = lax.gather(
        np.arange(5), np.array([[9]]), lax.GatherDimensionNumbers((), (0,), (0,)), (1,)
    )
    theirs_int = jlax.gather(
        jnp.arange(5), np.array([[9]]), jlax.GatherDimensionNumbers((), (0,), (0,)), (1,)
    )
    assert ours_int.tolist() == theirs_int.tolist()


SCATTER_CASES = [
    (
        (5,),
        [[1], [3], [1]],
        (3,),
        dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)),
    ),
    (
        (5, 3),
        [[4], [0], [9]],
        (3, 3),
        dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)),
    ),
    (
        (4, 5),
        [[0, 1], [2, 3]],
        (2, 2),
        dict(
            update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0, 1)
        ),
    ),
    (
        (6, 4),
        [[1, 0], [3, 2]],
        (2, 2, 3),
        dict(
            update_window_dims=(1, 2), inserted_window_dims=(), scatter_dims_to_operand_dims=(0, 1)
        ),
    ),
]


@pytest.mark.parametrize(
    "name", ["scatter_add", "scatter_mul", "scatter_min", "scatter_max", "scatter"]
)
@pytest.mark.parametrize("mode", ["clip", "drop"])
@pytest.mark.parametrize("case", SCATTER_CASES, ids=range(len(SCATTER_CASES)))
def test_scatter(case, mode, name):
    shape, indices, updates_shape, dn = case
    indices = np.asarray(indices)
    if name == "scatter" and len({tuple(i) for i in np.clip(indices, 0, 1).tolist()}) < len(
        indices
    ):
        indices = indices[:1]  # (overlapping writes: which one wins is unspecified)
        updates_shape = (1,) + updates_shape[1:]
    ours_dn, theirs_dn = lax.ScatterDimensionNumbers(**dn), jlax.ScatterDimensionNumbers(**dn)
    operand, updates = _rand(*shape), _rand(*updates_shape)
    ours_f, theirs_f = getattr(lax, name), getattr(jlax, name)
    for argnums in (0, 1):
        _check(
            lambda a, u: ours_f(a, indices, u, ours_dn, mode=mode),
            lambda a, u: theirs_f(a, indices, u, theirs_dn, mode=mode),
            operand,
            updates,
            argnums=argnums,
            transforms=name == "scatter_add",
            # (JAX differentiates scatter_mul only for unique indices, and its scatter_min/max
            # jvp is NaN on repeated ones)
            jax_grad=name in ("scatter_add", "scatter"),
        )


def test_scatter_add_under_vmap_of_indices():
    dn = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    idx = np.array([[[1], [1]], [[0], [6]]])
    u = np.array([1.0, 2.0])
    ours = ad.vmap(lambda i: lax.scatter_add(np.zeros(4), i, u, lax.ScatterDimensionNumbers(**dn)))(
        idx
    )
    theirs = jax.vmap(
        lambda i: jlax.scatter_add(jnp.zeros(4), i, u, jlax.ScatterDimensionNumbers(**dn))
    )(idx)
    _close(ours, theirs)


@pytest.mark.parametrize("config", [[(1, 2, 1)], [(-1, 2, 2)], [(2, -3, 0)], [(0, 0, 3)]])
def test_pad_1d(config):
    _check(
        lambda a, v: lax.pad(a, v, config),
        lambda a, v: jlax.pad(a, v, config),
        _rand(5),
        np.float64(0.5),
    )
    _check(
        lambda a, v: lax.pad(a, v, config),
        lambda a, v: jlax.pad(a, v, config),
        _rand(5),
        np.float64(0.5),
        argnums=1,
        jax_grad=False,  # (JAX's transpose of pad fails when only padding_value is differentiated)
    )


def test_pad_2d_interior():
    config = [(1, -1, 1), (0, 2, 2)]
    _check(lambda a: lax.pad(a, 0.0, config), lambda a: jlax.pad(a, 0.0, config), _rand(3, 4))


@pytest.mark.parametrize("dimension", [0, 1, -1])
def test_sort_key_val(dimension):
    keys = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, np.nan, -1.0, 0.0], [2.0, 2.0, 2.0, 1.0]])
    values = _rand(3, 4)
    ours_k, ours_v = lax.sort_key_val(keys, values, dimension)
    theirs_k, theirs_v = jlax.sort_key_val(keys, values, dimension)
    _close(ours_k, theirs_k)
    _close(ours_v, theirs_v)
    _check(
        lambda v: lax.sort_key_val(keys, v, dimension)[1],
        lambda v: jlax.sort_key_val(keys, v, dimension)[1],
        values,
    )
    _check(lambda k: lax.sort(k, dimension), lambda k: jlax.sort(k, dimension), _rand(3, 4))


def test_sort_several_keys():
    a = np.array([2, 1, 2, 1, 0])
    b = np.array([1.0, 3.0, 0.0, 2.0, 5.0])
    c = _rand(5)
    ours = lax.sort((a, b, c), num_keys=2)
    theirs = jlax.sort((a, b, c), num_keys=2)
    for o, t in zip(ours, theirs):
        _close(o, t)
    with pytest.raises(ValueError, match="num_keys"):
        lax.sort((a, b), num_keys=3)


def test_top_k():
    x = np.array([[1.0, 3.0, 3.0, -2.0, 5.0], [0.0, 0.0, 1.0, 1.0, 0.0]])
    for o, t in zip(lax.top_k(x, 3), jlax.top_k(x, 3)):
        _close(o, t)
    _check(lambda a: lax.top_k(a, 2)[0], lambda a: jlax.top_k(a, 2)[0], _rand(3, 6))


def test_cumulative():
    x = _rand(4, 3)
    for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
        for axis, reverse in ((0, False), (1, True)):
            _check(
                lambda a: getattr(lax, name)(a, axis=axis, reverse=reverse),
                lambda a: getattr(jlax, name)(a, axis=axis, reverse=reverse),
                x,
                transforms=False,
            )


ELEMENTWISE = [
    ("exp", 1),
    ("log", 1),
    ("sin", 1),
    ("cos", 1),
    ("tanh", 1),
    ("logistic", 1),
    ("rsqrt", 1),
    ("sqrt", 1),
    ("abs", 1),
    ("sign", 1),
    ("square", 1),
    ("erf", 1),
    ("erf_inv", 1),
    ("expm1", 1),
    ("log1p", 1),
    ("neg", 1),
    ("add", 2),
    ("sub", 2),
    ("mul", 2),
    ("div", 2),
    ("pow", 2),
    ("max", 2),
    ("min", 2),
    ("atan2", 2),
    ("rem", 2),
    ("lgamma", 1),
    ("digamma", 1),
]


@pytest.mark.parametrize("name, arity", ELEMENTWISE)
def test_elementwise(name, arity):
    x = RNG.uniform(0.2, 0.9, (2, 3))
    args = (x,) if arity == 1 else (x, RNG.uniform(0.2, 0.9, (2, 3)))
    _check(getattr(lax, name), getattr(jlax, name), *args, transforms=False)


def test_integer_division_and_misc():
    a, b = np.array([-7, 7, -7, 6]), np.array([2, -2, -2, 3])
    assert lax.div(a, b).tolist() == jlax.div(a, b).tolist()
    assert lax.rem(a, b).tolist() == jlax.rem(a, b).tolist()
    x = _rand(3, 4)
    _check(lambda v: lax.integer_pow(v, 3), lambda v: jlax.integer_pow(v, 3), x)
    _check(
        lambda v: lax.clamp(-0.5, v, 0.5), lambda v: jlax.clamp(-0.5, v, 0.5), x, transforms=False
    )
    pred = x > 0
    _check(
        lambda v: lax.select(pred, v, -v), lambda v: jlax.select(pred, v, -v), x, transforms=False
    )
    which = np.array([[0, 1, 2, 0]] * 3)
    _check(
        lambda v: lax.select_n(which, v, 2 * v, 3 * v),
        lambda v: jlax.select_n(which, v, 2 * v, 3 * v),
        x,
        transforms=False,
    )
    with pytest.raises(TypeError, match="integer"):
        lax.integer_pow(x, 2.5)


STRUCTURAL = [
    (lambda m: m.reshape(_X, (4, 3), (1, 0)),),
    (lambda m: m.broadcast_in_dim(_X[0], (2, 4, 3), (1,)),),
    (lambda m: m.broadcast(_X, (2,)),),
    (lambda m: m.squeeze(m.expand_dims(_X, (0, 3)), (0,)),),
    (lambda m: m.transpose(_X, (1, 0)),),
    (lambda m: m.rev(_X, (0, 1)),),
    (lambda m: m.concatenate([_X, 2 * _X], 1),),
    (lambda m: m.slice(_X, (1, 0), (3, 4), (1, 2)),),
    (lambda m: m.slice_in_dim(_X, 0, 4, 2, axis=1),),
    (lambda m: m.index_in_dim(_X, -1, axis=0, keepdims=False),),
    (lambda m: m.dynamic_slice(_X, (1, 2), (2, 2)),),
    (lambda m: m.dynamic_update_slice(_X, _X[:1, :2] * 3, (2, 1)),),
    (lambda m: m.dynamic_slice_in_dim(_X, 1, 2, axis=1),),
    (lambda m: m.reduce_sum(_X, (0,)),),
    (lambda m: m.reduce_max(_X, (1,)),),
    (lambda m: m.reduce_min(_X, (0, 1)),),
    (lambda m: m.reduce_prod(_X, (1,)),),
    (lambda m: m.convert_element_type(_X, np.float32),),
    (lambda m: m.argmax(_X, 1, np.int32),),
    (lambda m: m.argmin(_X, 0, np.int32),),
    (lambda m: m.broadcasted_iota(np.int32, (2, 3), 1),),
    (lambda m: m.iota(np.int64, 4),),
    (lambda m: m.full((2, 2), 3.0),),
    (lambda m: m.full_like(_X, 2, np.int32),),
    (lambda m: m.dot(_X, _X.T),),
    (lambda m: m.reduce(_X, 0.0, m.add, (0,)),),
    (lambda m: m.reduce(_X, -np.inf, m.max, (1,)),),
    (lambda m: m.reduce(_X, 1.0, m.mul, (0, 1)),),
    (lambda m: m.reduce(_X, 0.0, lambda a, b: a + 2 * b, (1,)),),
    (
        lambda m: m.reduce((_X, 2 * _X), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[1]), (0,))[
            1
        ],
    ),
]
_X = _rand(3, 4)


@pytest.mark.parametrize("case", range(len(STRUCTURAL)))
def test_structural_values(case):
    (f,) = STRUCTURAL[case]
    ours, theirs = f(lax), f(jlax)
    assert np.shape(ours) == np.shape(theirs)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype or case in (18, 19)
    _close(ours, theirs, 1e-6)


def test_reduce_gradients():
    def generic(m):
        # (associative: JAX differentiates a reduce as if it were)
        return lambda a: m.reduce(a, 1.0, lambda u, v: u * v, (1,))

    _check(generic(lax), generic(jlax), _rand(3, 4), transforms=False)
    _check(
        lambda a: lax.reduce(a, 0.0, lax.add, (0,)),
        lambda a: jlax.reduce(a, 0.0, jlax.add, (0,)),
        _rand(3, 4),
    )


def test_linalg():
    a = _rand(3, 3)
    spd = a @ a.T + 3 * np.eye(3)
    _check(lax.linalg.cholesky, jlax.linalg.cholesky, spd, transforms=False)
    tri = np.tril(a) + 3 * np.eye(3)
    b = _rand(3, 2)
    for left, lower, trans in ((True, True, False), (True, False, True), (False, True, False)):
        rhs = b if left else b.T
        options = dict(left_side=left, lower=lower, transpose_a=trans)
        m = tri if lower else tri.T
        _check(
            lambda x, options=options: lax.linalg.triangular_solve(m, x, **options),
            lambda x, options=options: jlax.linalg.triangular_solve(m, x, **options),
            rhs,
            transforms=False,
        )
    _close(lax.linalg.svd(a, compute_uv=False), jlax.linalg.svd(a, compute_uv=False))
    v, w = lax.linalg.eigh(spd)
    _close(w, jlax.linalg.eigh(spd)[1])
    _close(v @ np.diag(w) @ v.T, spd)
    q, r = lax.linalg.qr(a)
    _close(q @ r, a)
    _close(np.abs(r), np.abs(np.asarray(jlax.linalg.qr(a)[1])))
    dl, d, du = np.r_[0.0, _rand(3)], 4 + _rand(4), np.r_[_rand(3), 0.0]
    rhs = _rand(4, 2)
    _close(
        lax.linalg.tridiagonal_solve(dl, d, du, rhs), jlax.linalg.tridiagonal_solve(dl, d, du, rhs)
    )


def test_control_flow_reexports():
    assert lax.scan is ad.scan and lax.cond is ad.cond and lax.fori_loop is ad.fori_loop
    assert lax.stop_gradient is ad.stop_gradient and lax.custom_root is ad.custom_root
    total = lax.fori_loop(0, 4, lambda i, c: c + i, 0)
    assert int(total) == 6


def test_jit_accepts_inline():
    f = ad.jit(lambda x: x * 2, inline=True)
    assert float(f(3.0)) == 6.0
    assert float(ad.jit(inline=False)(lambda x: x + 1)(1.0)) == 2.0


def test_bad_arguments():
    with pytest.raises(TypeError, match="dimension_numbers"):
        lax.dot_general(np.ones(2), np.ones(2), ((0,), (0,)))
    with pytest.raises(ValueError, match="broadcast_dimensions"):
        lax.broadcast_in_dim(np.ones(2), (2, 3), (0, 1))
    with pytest.raises(ValueError, match="padding_config"):
        lax.pad(np.ones(2), 0.0, [(1, 1)])
    with pytest.raises(ValueError, match="gather mode"):
        lax.gather(
            np.ones(3),
            np.array([[0]]),
            lax.GatherDimensionNumbers((), (0,), (0,)),
            (1,),
            mode="wrap",
        )
    with pytest.raises(ValueError, match="k must be"):
        lax.top_k(np.ones(3), 4)
