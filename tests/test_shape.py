"""Shape functions: NumPy-exact results and errors on raw inputs, views, dtypes, rules, array()."""

import numpy as np
import pytest
from optable import assert_same_as_numpy

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.tensor import Tensor
from autodiff.ops import rearrange, structural
from autodiff.ops.structural import sum_to_shape

X = np.arange(6.0).reshape(2, 3)
X3 = np.arange(24.0).reshape(2, 3, 4)
I6 = np.arange(6, dtype=np.int32)
B = np.array([True, False, True])
F32 = X.astype(np.float32)


def total(x):
    """The sum of all entries (shape family only needs sum_to_shape from below)."""
    return sum_to_shape(x, ())


# ---- values, dtypes and types equal NumPy's on raw inputs ----------------------------------

RAW_CALLS = [
    ("reshape", (X, (3, 2)), {}),
    ("reshape", (X, -1), {}),
    ("reshape", (I6, (2, -1)), {"order": "F"}),
    ("reshape", (X.T, 6), {"order": "A"}),
    ("reshape", ([1, 2, 3, 4], (2, 2)), {}),
    ("reshape", (2.5, (1, 1)), {}),
    ("reshape", (np.float32(2.5), ()), {}),
    ("reshape", (X, np.array(6)), {}),
    ("reshape", (X, (6,)), {"copy": True}),
    ("ravel", (X,), {}),
    ("ravel", (X.T,), {"order": "K"}),
    ("ravel", (X,), {"order": "F"}),
    ("ravel", (3.0,), {}),
    ("transpose", (X3,), {}),
    ("transpose", (X3, (1, -1, 0)), {}),
    ("transpose", (B,), {}),
    ("transpose", (np.float64(2.0),), {}),
    ("transpose", ([[1, 2], [3, 4]],), {}),
    ("swapaxes", (X3, 0, -1), {}),
    ("moveaxis", (X3, [0, 1], [-1, 0]), {}),
    ("moveaxis", (X3, 2, 0), {}),
    ("expand_dims", (X, (0, 3)), {}),
    ("expand_dims", (I6, [-1]), {}),
    ("expand_dims", (3.0, 0), {}),
    ("squeeze", (np.ones((1, 3, 1)),), {}),
    ("squeeze", (np.ones((1, 3, 1), np.float32), (0, 2)), {}),
    ("squeeze", (np.float64(2.0),), {}),
    ("broadcast_to", (I6, (2, 6)), {}),
    ("broadcast_arrays", (X, np.ones(3, np.float32), 1.0), {}),
    ("concatenate", ([X, X],), {"axis": 1}),
    ("concatenate", ([X, I6.reshape(2, 3)],), {}),
    ("concatenate", ([I6, B],), {}),
    ("concatenate", ((F32, np.ones((1, 3), np.float32)),), {}),
    ("concatenate", ([X, 7.0],), {"axis": None}),
    ("concatenate", ([X, F32],), {"dtype": np.float32}),
    ("concatenate", ([X, X],), {"dtype": np.int32, "casting": "unsafe"}),
    ("concatenate", ([[1, 2], [3]],), {}),
    ("concatenate", (X,), {}),
    ("stack", ([I6, I6],), {"axis": -1}),
    ("stack", ([1.0, 2.0],), {}),
    ("stack", ([X, F32],), {"axis": 1, "dtype": np.float32}),
    ("hstack", ([1, I6],), {}),
    ("hstack", ([X, X],), {}),
    ("vstack", ([I6, I6],), {}),
    ("dstack", ([X, X],), {}),
    ("column_stack", ([I6, I6, np.ones((6, 2))],), {}),
    ("split", (I6, 3), {}),
    ("split", (X, [1, 1, 5]), {"axis": 1}),
    ("split", (X, [-1]), {"axis": -1}),
    ("array_split", (np.arange(7), 3), {}),
    ("array_split", ([1, 2, 3], 5), {}),
    ("hsplit", (X, [1]), {}),
    ("vsplit", (X, 2), {}),
    ("dsplit", (X3, [1, 3]), {}),
    ("tile", (I6, (2, 1)), {}),
    ("tile", (X, 1), {}),
    ("tile", (B, (2, 2)), {}),
    ("tile", (2.0, 3), {}),
    ("repeat", (X, 2), {}),
    ("repeat", (I6, [1, 0, 2, 0, 0, 3]), {}),
    ("repeat", (X, [2, 0], 0), {}),
    ("repeat", (X, np.array([3]), -1), {}),
    ("repeat", (np.float32(1.5), 3), {}),
    ("flip", (X,), {}),
    ("flip", (X3, (0, -1)), {}),
    ("flip", (np.float64(1.0),), {}),
    ("fliplr", (X,), {}),
    ("flipud", (I6,), {}),
    ("atleast_1d", (2.0,), {}),
    ("atleast_1d", (X, 1, [1, 2]), {}),
    ("atleast_2d", (I6,), {}),
    ("atleast_3d", (X,), {}),
    ("atleast_3d", (I6,), {}),
    ("copy", (X,), {}),
    ("copy", (np.float32(2.0),), {}),
    ("array", ([[1, 2], [3, 4]],), {}),
    ("array", ([1.0, 2.0],), {"dtype": np.float32, "ndmin": 2}),
    ("array", (X,), {"copy": False}),
    ("array", ([np.float32(1.0), 2.0],), {}),
    ("asarray", ([1, 2],), {}),
    ("asarray", (X,), {"dtype": np.float32}),
]


@pytest.mark.parametrize("name, args, kwargs", RAW_CALLS, ids=[c[0] for c in RAW_CALLS])
def test_raw_results_are_numpys(name, args, kwargs):
    assert_same_as_numpy(getattr(anp, name)(*args, **kwargs), getattr(np, name)(*args, **kwargs))


def test_views_on_raw_arrays():
    for f in (
        lambda a: anp.reshape(a, (3, 2)),
        anp.transpose,
        anp.ravel,
        lambda a: anp.flip(a, 1),
        lambda a: anp.split(a, 3, axis=1)[1],
        lambda a: anp.expand_dims(a, 0),
        lambda a: anp.swapaxes(a, 0, 1),
    ):
        assert np.shares_memory(f(X), X)


def test_copies_are_fresh_arrays():
    for f in (
        anp.copy,
        lambda a: anp.tile(a, 1),
        lambda a: anp.array(a),
        lambda a: anp.concatenate([a]),
    ):
        out = f(X)
        assert not np.shares_memory(out, X)
        assert out.flags.writeable


# ---- errors are NumPy's ----------------------------------------------------------------------

ERROR_CALLS = [
    ("reshape", (X, (4, 2)), {}),
    ("reshape", (X, 6.0), {}),
    ("reshape", (X, 6), {"order": "K"}),
    ("transpose", (X, (0,)), {}),
    ("transpose", (X, (0, 0)), {}),
    ("swapaxes", (X, 0, 5), {}),
    ("moveaxis", (X, [0], [0, 1]), {}),
    ("moveaxis", (X, 0, 3), {}),
    ("expand_dims", (X, 4), {}),
    ("expand_dims", (X, (0, 0)), {}),
    ("squeeze", (X, 0), {}),
    ("squeeze", (X, 2), {}),
    ("broadcast_to", (X, (3, 3)), {}),
    ("broadcast_arrays", (X, np.ones(4)), {}),
    ("concatenate", ([],), {}),
    ("concatenate", ([np.float64(1.0)],), {}),
    ("concatenate", ([X, np.ones(3)],), {}),
    ("concatenate", ([X, X],), {"axis": 2}),
    ("concatenate", ([X, F32],), {"dtype": np.int32}),
    ("stack", ([],), {}),
    ("stack", ([X, np.ones(3)],), {}),
    ("stack", ([X, X],), {"axis": 3}),
    ("split", (X, 4), {"axis": 1}),
    ("split", (X, 2), {"axis": 5}),
    ("array_split", (X, 0), {}),
    ("hsplit", (np.float64(1.0), 1), {}),
    ("vsplit", (I6, 1), {}),
    ("dsplit", (X, 1), {}),
    ("tile", (X, -1), {}),
    ("repeat", (X, -1), {}),
    ("repeat", (X, [1, 2]), {"axis": 1}),
    ("repeat", (X, 2), {"axis": 2}),
    ("flip", (X, 3), {}),
    ("fliplr", (I6,), {}),
    ("flipud", (np.float64(1.0),), {}),
]


@pytest.mark.parametrize("name, args, kwargs", ERROR_CALLS, ids=[c[0] for c in ERROR_CALLS])
def test_errors_are_numpys_on_raw_and_traced_inputs(name, args, kwargs):
    with pytest.raises(Exception) as want:
        getattr(np, name)(*args, **kwargs)
    with pytest.raises(type(want.value), match=_escaped(want.value)):
        getattr(anp, name)(*args, **kwargs)
    traced = (Tensor(args[0]),) + args[1:] if isinstance(args[0], np.ndarray) else args
    with pytest.raises(type(want.value), match=_escaped(want.value)):
        getattr(anp, name)(*traced, **kwargs)


def _escaped(exc):
    import re

    return re.escape(str(exc))


def test_out_is_not_supported():
    with pytest.raises(NotImplementedError, match="out="):
        anp.concatenate([X, X], out=np.empty((4, 3)))


# ---- derivatives: dtypes, constants, dispatch, methods ---------------------------------------


def test_cotangents_keep_each_inputs_dtype():
    x32 = np.ones(3, np.float32)
    x64 = np.ones(2)

    def f(a, b):
        out = anp.concatenate([a, b, np.arange(2)])
        assert out.dtype == np.float64
        return total(out * out)

    ga, gb = ad.grad(f, argnums=(0, 1))(x32, x64)
    assert ga.dtype == np.float32 and gb.dtype == np.float64
    np.testing.assert_allclose(ga, 2.0)
    np.testing.assert_allclose(gb, 2.0)


def test_float32_stays_float32_through_every_rule():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(x):
        parts = anp.split(anp.repeat(anp.flip(x.T, 0), [2, 1], axis=1), 3)
        y = anp.stack([anp.tile(p, 2) for p in parts])
        assert y.dtype == np.float32
        return total(y * y)

    g = ad.grad(f)(x)
    assert g.dtype == np.float32


def test_integer_dtype_concatenation_has_no_derivative():
    def f(x):
        y = anp.concatenate([x, x], dtype=np.int64, casting="unsafe")
        assert not isinstance(y, Tensor) and y.dtype == np.int64
        return total(y * x[0])

    np.testing.assert_array_equal(ad.grad(f)(np.array([1.5, 2.5])), [6.0, 0.0])


def test_repeat_counts_from_a_tensor_are_constants():
    counts = Tensor(np.array([2, 1]))
    g = ad.grad(lambda x: total(anp.repeat(x, counts) ** 2))(np.array([1.0, 3.0]))
    np.testing.assert_allclose(g, [4.0, 6.0])


def test_numpy_functions_dispatch_inside_grad():
    def f(x):
        y = np.concatenate([np.reshape(x, (2, 2)), np.transpose(np.reshape(x, (2, 2)))], axis=1)
        a, b = np.split(y, 2)
        return total(np.stack([a, b]) * np.tile(x, 2)[:4].reshape(1, 1, 4))

    x = np.array([1.0, 2.0, 3.0, 4.0])
    g = ad.grad(f)(x)
    eps = 1e-6
    num = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g, num, rtol=1e-6)


def test_tensor_methods():
    t = Tensor(np.arange(6.0))
    np.testing.assert_array_equal(t.reshape(2, 3).numpy(), X)
    np.testing.assert_array_equal(t.reshape((3, 2)).T.numpy(), X.reshape(3, 2).T)
    m = Tensor(X3)
    assert m.transpose().shape == (4, 3, 2)
    assert m.transpose(1, 0, 2).shape == (3, 2, 4)
    assert m.transpose((2, 0, 1)).shape == (4, 2, 3)
    assert m.swapaxes(0, 2).shape == (4, 3, 2)
    assert Tensor(np.ones((1, 3))).squeeze().shape == (3,)
    np.testing.assert_array_equal(Tensor(X).repeat(2, axis=0).numpy(), X.repeat(2, axis=0))
    np.testing.assert_array_equal(Tensor(X).ravel().numpy(), X.ravel())


def test_level0_tensors_in_tensors_out():
    a, b = Tensor(X), Tensor(X)
    assert isinstance(anp.concatenate([a, b]), Tensor)
    pieces = anp.split(a, 3, axis=1)
    assert isinstance(pieces, list) and all(isinstance(p, Tensor) for p in pieces)
    assert isinstance(anp.stack([a, X]), Tensor)


def test_second_derivative_through_split_and_concatenate():
    def f(x):
        a, b = anp.split(x, [1])
        y = anp.concatenate([b * b, a * b])
        return total(y * y)

    x = np.array([1.5, -0.5, 2.0])
    h = ad.grad(lambda x: total(ad.grad(f)(x) * np.array([1.0, 2.0, 3.0])))(x)
    eps = 1e-5
    g = ad.grad(f)
    num = [
        total((g(x + eps * e) - g(x - eps * e)) * np.array([1.0, 2.0, 3.0])) / (2 * eps)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(h, num, rtol=1e-6)


# ---- array / asarray ---------------------------------------------------------------------------


def test_array_mixing_tensors_and_numbers_is_differentiable():
    def f(x):
        m = anp.array([[x[0], 2.0], [1.0, x[0] * x[1]]])
        assert m.shape == (2, 2)
        return total(m * m)

    g = ad.grad(f)(np.array([3.0, 4.0]))
    np.testing.assert_allclose(g, [2 * 3.0 + 2 * 3.0 * 16.0, 2 * 9.0 * 4.0])


def test_array_dtype_follows_numpy_promotion():
    def f(x):
        assert anp.array([x, 2.0]).dtype == np.array([np.float32(1.0), 2.0]).dtype
        assert anp.array([x, x]).dtype == np.float32
        assert anp.array([x, 2.0], dtype=np.float32).dtype == np.float32
        return total(anp.array([x, x]))

    assert ad.grad(f)(np.float32(1.0)).dtype == np.float32


def test_array_ragged_raises():
    with pytest.raises(ValueError, match="inhomogeneous"):
        anp.array([Tensor(np.ones(2)), 1.0])


def test_array_without_tensors_is_numpy_array():
    out = anp.array([1, 2, 3], dtype=np.float32)
    assert type(out) is np.ndarray and out.dtype == np.float32
    src = np.ones(3)
    assert anp.asarray(src) is src


def test_asarray_of_a_tensor():
    t = Tensor(np.ones(3))
    assert anp.asarray(t) is t
    c = anp.asarray(t, dtype=np.float32)
    assert isinstance(c, Tensor) and c.dtype == np.float32
    a = anp.array(t)
    assert isinstance(a, Tensor) and a is not t
    assert anp.array(t, ndmin=3).shape == (1, 1, 3)


# ---- the rules of each primitive: jvp is the op itself, vjp is its transpose -------------------

_rng = np.random.default_rng(3)
PRIMITIVES = [
    (structural.reshape_p, [X3], {"shape": (4, -1), "order": "F"}),
    (structural.reshape_p, [X3], {"shape": (6, 4), "order": "C"}),
    (structural.transpose_p, [X3], {"axes": (2, 0, 1)}),
    (structural.transpose_p, [X3], {"axes": None}),
    (rearrange.flip_p, [X3], {"axis": (0, 2)}),
    (rearrange.copy_p, [X], {}),
    (
        rearrange.concatenate_p,
        [X, np.ones((2, 2)), np.ones((2, 0))],
        {"axis": -1, "dtype": None, "casting": "same_kind"},
    ),
    (rearrange.split_p, [np.arange(7.0)], {"ranges": ((0, 2), (2, 2), (2, 7)), "axis": 0}),
    (rearrange.split_p, [X3], {"ranges": ((0, 3), (1, 4), (2, 2)), "axis": 2}),
    (rearrange.split_p, [X3], {"ranges": ((1, 2),), "axis": 1}),
    (rearrange.repeat_p, [X], {"repeats": (2, 0, 3), "axis": 1}),
    (rearrange.repeat_p, [X], {"repeats": 2, "axis": 0}),
    (
        rearrange.segment_sum_p,
        [np.arange(10.0).reshape(2, 5)],
        {"counts": (0, 3, 0, 2, 0), "axis": 1},
    ),
    (rearrange.segment_sum_p, [np.arange(12.0).reshape(6, 2)], {"counts": (3, 3), "axis": 0}),
]


def _random(x):
    return _rng.standard_normal(np.shape(x))


@pytest.mark.parametrize("prim, primals, params", PRIMITIVES, ids=[p[0].name for p in PRIMITIVES])
def test_linear_rules(prim, primals, params):
    out = prim.impl(*primals, **params)
    outs = out if prim.multiple_results else (out,)
    tangents = [_random(x) for x in primals]
    t_out = prim.jvp(tuple(primals), tuple(tangents), out=out, **params)
    want = prim.impl(*tangents, **params)
    for got, w in zip(
        t_out if prim.multiple_results else (t_out,), want if prim.multiple_results else (want,)
    ):
        np.testing.assert_allclose(got, w)
    cts = [_random(o) for o in outs]
    in_cts = prim.vjp(cts if prim.multiple_results else cts[0], *primals, out=out, **params)
    for x, c in zip(primals, in_cts):
        assert np.shape(c) == np.shape(x)
    lhs = sum(np.sum(c * t) for c, t in zip(cts, want if prim.multiple_results else (want,)))
    rhs = sum(np.sum(c * t) for c, t in zip(in_cts, tangents))
    np.testing.assert_allclose(lhs, rhs)


def test_split_vjp_with_missing_cotangents():
    x = np.arange(5.0)
    out = rearrange.split_p.impl(x, ranges=((0, 2), (2, 5)), axis=0)
    (ct,) = rearrange.split_p.vjp([None, np.ones(3)], x, out=out, ranges=((0, 2), (2, 5)), axis=0)
    np.testing.assert_array_equal(ct, [0, 0, 1, 1, 1])


def test_stack_matches_numpy_in_dtype_layout_and_errors():
    """stack's impl concatenates arrays of one shape and dtype along the first axis: the
    result is np.stack's, whatever the inputs' dtypes and layouts."""
    stack_p = rearrange.stack_p
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    cases = [
        [a, a.T.copy().T, np.asfortranarray(a)],  # one shape, three layouts
        [a.astype(np.float32), a],  # two dtypes: promoted as np.stack does
        [a[:, ::2], a[:, 1::2]],  # strided views
        [np.float64(1.0), np.float64(2.0)],  # scalars
    ]
    for arrays in cases:
        got = stack_p.impl(*arrays, axis=0, dtype=None, casting="same_kind")
        want = np.stack(arrays)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.flags.c_contiguous and np.array_equal(got, want)
    with pytest.raises(ValueError, match="same shape"):
        stack_p.impl(np.ones(2), np.ones(3), axis=0, dtype=None, casting="same_kind")


@pytest.mark.parametrize(
    "x, shape",
    [
        (np.array(2.0), (3, 4)),
        (np.arange(3.0), (2, 3)),
        (np.arange(3.0).reshape(3, 1), (2, 3, 5)),
        (np.arange(6.0).reshape(2, 3), (2, 3)),
        (np.arange(3), (4, 3)),
        (np.array([True, False]), (2, 2)),
        (np.arange(3.0) + 1j, (2, 3)),
        (np.ones((1, 1)), (0, 1)),
        (np.zeros(0), (2, 0)),
        (np.arange(4.0)[::2], (3, 2)),  # (not C-contiguous: NumPy's own)
        (np.ones(1, dtype=">f8"), (3,)),
    ],
)
def test_broadcast_to_impl_is_numpys(x, shape):
    """broadcast_to's impl, which makes the view itself for contiguous arrays: NumPy's values,
    dtype, strides and memory, read-only."""
    got, want = structural._broadcast_to_impl(x, shape), np.broadcast_to(x, shape)
    assert got.shape == want.shape and got.dtype == want.dtype and got.strides == want.strides
    np.testing.assert_array_equal(got, want)
    assert not got.flags.writeable
    assert np.shares_memory(got, x) == np.shares_memory(want, x)


@pytest.mark.parametrize("x, shape", [(np.arange(3.0), (2, 4)), (np.ones(3), (-1, 3))])
def test_broadcast_to_impl_raises_numpys_errors(x, shape):
    with pytest.raises(ValueError) as want:
        np.broadcast_to(x, shape)
    with pytest.raises(ValueError, match=str(want.value)[:30]):
        structural._broadcast_to_impl(x, shape)
