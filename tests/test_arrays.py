"""Array functions: NumPy-exact results, dtypes and errors; semantics of the derivatives the op
table cannot express (sort ties, cumprod at zeros, NaNs, interp edges); vmap of the
index-producing ops; constants (argsort, searchsorted, unique)."""

import re
import warnings

import numpy as np
import pytest
from optable import assert_same_as_numpy

import autodiff as ad
from autodiff.core.tensor import Tensor
from autodiff.numpy import FUNCTIONS as F
from autodiff.ops.cumulative import linear_recurrence

X = np.arange(12.0).reshape(3, 4) / 3 - 1.5
X3 = np.arange(24.0).reshape(2, 3, 4) ** 1.5 % 7
F32 = X.astype(np.float32)
I6 = np.array([3, -1, 4, 1, -5, 9], dtype=np.int32)
B = np.array([True, False, True, True])
C = np.array([1 + 2j, -0.5j, 3.0, 2 - 1j])
XP = np.array([-1.0, 0.0, 0.5, 2.0])
FP = np.array([1.0, -2.0, 0.5, 3.0])
EDGES = np.array([-3.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0, 2.5, np.nan, np.inf, -np.inf])
NANS = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan], [0.5, -1.0, np.nan]])
INFS = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0])
INFS_COMPLEX = INFS.astype(complex)
INFS_COMPLEX.imag = INFS[::-1]

# ---- values, dtypes and types equal NumPy's on raw inputs ----------------------------------

RAW_CALLS = [
    ("cumsum", (X,), {}),
    ("cumsum", (X3, 1), {}),
    ("cumsum", (I6,), {}),
    ("cumsum", (I6,), {"dtype": np.int8}),
    ("cumsum", (B,), {}),
    ("cumsum", (F32, -1), {}),
    ("cumsum", (F32,), {"axis": 0, "dtype": np.float64}),
    ("cumsum", (3.0,), {}),
    ("cumsum", (np.float64(3.0), -1), {}),
    ("cumprod", (np.array(2.0), 0), {}),
    ("argsort", (np.array(2.0),), {}),
    ("cumsum", ([1, 2, 3],), {}),
    ("cumsum", (C,), {}),
    ("cumsum", (np.zeros((2, 0)), 1), {}),
    ("cumprod", (X,), {"axis": 1}),
    ("cumprod", (I6,), {}),
    ("cumprod", (I6,), {"dtype": np.float32}),
    ("cumprod", (F32, 0), {}),
    ("cumprod", (C,), {}),
    ("nancumsum", (NANS, 1), {}),
    ("nancumprod", (NANS,), {}),
    ("sort", (X3,), {}),
    ("sort", (X3, 0), {}),
    ("sort", (X3, None), {}),
    ("sort", (I6,), {"kind": "stable"}),
    ("sort", (EDGES,), {}),
    ("sort", (C,), {}),
    ("argsort", (X3, 1), {}),
    ("argsort", (I6,), {"stable": True}),
    ("argsort", (EDGES, None), {}),
    ("searchsorted", (XP, EDGES), {}),
    ("searchsorted", (XP, EDGES), {"side": "right"}),
    ("searchsorted", (XP, 0.5), {}),
    ("searchsorted", (np.array([3, 1, 2]), [2, 5]), {"sorter": np.array([1, 2, 0])}),
    ("unique", (np.array([3.0, 1.0, 3.0, np.nan, np.nan]),), {}),
    ("unique", (I6,), {"return_index": True, "return_inverse": True, "return_counts": True}),
    ("unique", (np.array([[1, 2], [1, 2], [0, 1]]),), {"axis": 0}),
    ("unique", (np.array([2.0, np.nan, np.nan]),), {"equal_nan": False}),
    ("pad", (X, 1), {}),
    ("pad", (I6, (2, 3)), {"constant_values": 7}),
    ("pad", (I6, 2), {"constant_values": 1.7}),
    ("pad", (X, ((1, 2), (0, 3))), {"mode": "edge"}),
    ("pad", (X, {1: (2, 1)}), {"mode": "wrap"}),
    ("pad", (X3, 1), {"mode": "symmetric"}),
    ("pad", (I6, (4, 9)), {"mode": "reflect", "reflect_type": "odd"}),
    ("pad", (I6, (3, 2)), {"mode": "mean"}),
    ("pad", (B, 2), {"mode": "maximum"}),
    ("pad", (F32, (2, 1)), {"mode": "minimum", "stat_length": 1}),
    ("pad", (np.zeros((0, 3)), ((0, 0), (1, 1))), {"mode": "edge"}),
    ("pad", (np.zeros((0, 3)), 2), {}),
    ("pad", (np.float64(2.0), 2), {}),
    ("roll", (X, 5), {}),
    ("roll", (X, (1, 2), (1, 0)), {}),
    ("roll", (I6, -2), {}),
    ("roll", (np.float64(1.0), 3), {}),
    ("roll", (np.zeros((0, 2)), 1, 0), {}),
    ("diag", (I6,), {}),
    ("diag", (B, -1), {}),
    ("diag", (X, 1), {}),
    ("diag", (X, -5), {}),
    ("diagonal", (X3, 1, 2, 0), {}),
    ("diagonal", (I6.reshape(2, 3),), {}),
    ("trace", (X,), {}),
    ("trace", (I6.reshape(2, 3),), {}),
    ("trace", (X3, 1, 0, 2), {}),
    ("trace", (X,), {"dtype": np.float32}),
    ("triu", (X, -1), {}),
    ("triu", (I6,), {}),
    ("tril", (B.reshape(2, 2),), {}),
    ("tril", (X3, 1), {}),
    ("kron", (I6, X), {}),
    ("kron", (2.0, X), {}),
    ("kron", (X3, F32), {}),
    ("kron", (B, B), {}),
    ("kron", (np.float64(2.0), 3), {}),
    ("cross", (X[:, :3], F32[0, 1:]), {}),
    ("cross", (I6[:3], I6[3:]), {}),
    ("cross", (X[0, :2], X[1, :2]), {}),
    ("cross", (X[:, :2], X[0, 1:]), {"axisc": 0}),
    ("cross", (X3[:, :, :3], X[:, 1:]), {"axisc": 1}),
    ("diff", (X,), {}),
    ("diff", (I6, 2), {}),
    ("diff", (B,), {}),
    ("diff", (X, 0), {}),
    ("diff", (X3, 2, 1), {"prepend": 0.0, "append": X3[:, :1]}),
    ("interp", (EDGES, XP, FP), {}),
    ("interp", (EDGES, XP, FP), {"left": -9.0, "right": 9.0}),
    ("interp", (0.25, XP, FP), {}),
    ("interp", (EDGES.astype(np.float32), XP.astype(np.float32), FP.astype(np.float32)), {}),
    ("interp", (EDGES, XP[:1], FP[:1]), {}),
    ("interp", (EDGES, XP, FP * (1 - 2j)), {}),
    ("interp", (EDGES, XP, FP + 1j), {"left": 1j, "right": -2.0}),
    ("interp", (EDGES[:-3], np.array([0.3, 3.0, -1.0]), FP[:3]), {"period": 2.0}),
    ("interp", ([0, 1], [0, 2], [1, 3]), {}),
    ("nan_to_num", (INFS,), {}),
    ("nan_to_num", (INFS.astype(np.float32),), {"nan": -1.0}),
    ("nan_to_num", (INFS_COMPLEX,), {"posinf": 3.0}),
    ("nan_to_num", (I6,), {}),
    ("nan_to_num", (np.float64(np.inf),), {}),
    ("nansum", (NANS,), {}),
    ("nansum", (NANS, 1), {"keepdims": True}),
    ("nansum", (I6,), {}),
    ("nansum", (NANS.astype(np.float32), 0), {}),
    ("nanprod", (NANS, 0), {}),
    ("nanmean", (NANS[[0, 2]],), {}),
    ("nanmean", (NANS[[0, 2]], 1), {}),
    ("nanmean", (NANS[[0, 2]].astype(np.float32), 0), {}),
    ("nanmean", (I6,), {}),
    ("nanmean", (NANS[[0, 2]],), {"dtype": np.float32}),
    ("convolve", (X[0], I6), {}),
    ("convolve", (I6, X[0]), {"mode": "same"}),
    ("convolve", (F32[1], F32[0, :2]), {"mode": "valid"}),
    ("convolve", (C, C[:3]), {}),
    ("convolve", (2.0, I6), {}),
    ("correlate", (I6, X[0]), {}),
    ("correlate", (C, C[1:]), {"mode": "full"}),
    ("correlate", (X[0, :2], I6), {"mode": "same"}),
    ("correlate", (X[0], X[1]), {"mode": 1}),
    ("meshgrid", (I6, X[0]), {}),
    ("meshgrid", (I6, X[0], F32[0]), {"indexing": "ij", "sparse": True}),
    ("meshgrid", (X, I6), {"copy": False}),
    ("meshgrid", (), {}),
    ("vander", (I6,), {}),
    ("vander", (X[0], 3), {"increasing": True}),
    ("vander", (F32[0],), {}),
    ("vander", (B, 0), {}),
    ("vander", (C, 2), {}),
    ("polyval", (I6, X), {}),
    ("polyval", (X[0], 2.0), {}),
    ("polyval", ([1, 2], F32), {}),
    ("polyval", (X, I6[:4]), {}),
]


@pytest.mark.parametrize("name, args, kwargs", RAW_CALLS, ids=[c[0] for c in RAW_CALLS])
def test_raw_results_are_numpys(name, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN results, as in NumPy
        warnings.simplefilter("ignore", DeprecationWarning)  # cross of 2-vectors, as in NumPy
        assert_same_as_numpy(F[name](*args, **kwargs), getattr(np, name)(*args, **kwargs))


@pytest.mark.parametrize("name, args, kwargs", RAW_CALLS, ids=[c[0] for c in RAW_CALLS])
def test_tensor_results_hold_numpys_values(name, args, kwargs):
    """Through the primitives (Tensors at level 0) the values are NumPy's too."""
    tensors = tuple(Tensor(a) if isinstance(a, np.ndarray) else a for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN results, as in NumPy
        warnings.simplefilter("ignore", DeprecationWarning)  # cross of 2-vectors, as in NumPy
        got, want = F[name](*tensors, **kwargs), getattr(np, name)(*args, **kwargs)
    got, want = ad.tree_flatten(got)[0], ad.tree_flatten(want)[0]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = g.primal() if isinstance(g, Tensor) else g
        assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


def test_pad_matches_numpy_over_modes_and_widths():
    x = np.arange(1.0, 13.0).reshape(3, 4) ** 1.3
    modes = [
        ("edge", {}),
        ("wrap", {}),
        ("reflect", {}),
        ("symmetric", {}),
        ("reflect", {"reflect_type": "odd"}),
        ("symmetric", {"reflect_type": "odd"}),
        ("constant", {"constant_values": ((1, 2), (3, 4))}),
        ("maximum", {}),
        ("minimum", {"stat_length": ((1, 2), (3, 1))}),
        ("mean", {"stat_length": 2}),
    ]
    for mode, kwargs in modes:
        for widths in [0, 1, (0, 5), ((2, 0), (7, 1)), ((9, 4), (3, 11)), ((5, 5), (0, 0))]:
            for shape in [(3, 4), (1, 4), (3, 1), (2, 2)]:
                a = x[: shape[0], : shape[1]]
                want = np.pad(a, widths, mode=mode, **kwargs)
                got = F["pad"](Tensor(a), widths, mode=mode, **kwargs).primal()
                np.testing.assert_array_equal(got, want, err_msg=f"{mode} {kwargs} {widths}")


def test_pad_empty_mode_has_numpys_shape():
    out = F["pad"](Tensor(X), ((1, 2), (0, 3)), mode="empty")
    assert out.shape == np.pad(X, ((1, 2), (0, 3)), mode="empty").shape


def test_interp_edge_cases_match_numpy():
    xp = np.array([-1.0, 0.0, 0.0, 1.0, 3.0])  # a repeated knot
    fp = np.array([np.inf, 2.0, 5.0, -np.inf, 1.0])
    for x in (EDGES, np.linspace(-2, 4, 13)):
        for f in (fp, np.array([1.0, 1.0, np.inf, np.inf, 2.0]), np.array([-0.0, 0.0, 1, 2, 3])):
            with np.errstate(invalid="ignore"):
                want = np.interp(x, xp, f)
                got = F["interp"](Tensor(x), xp, f).primal()
            np.testing.assert_array_equal(got, want)


# ---- errors are NumPy's ----------------------------------------------------------------------

ERROR_CALLS = [
    ("cumsum", (X, 2), {}),
    ("cumprod", (np.float64(1.0), 1), {}),
    ("argsort", (np.float64(1.0), 1), {}),
    ("sort", (np.float64(1.0),), {}),
    ("sort", (X,), {"kind": "bogus"}),
    ("argsort", (X, 3), {}),
    ("searchsorted", (X, 1.0), {}),
    ("searchsorted", (XP, 1.0), {"side": "middle"}),
    ("pad", (X, -1), {}),
    ("pad", (X, 1.5), {}),
    ("pad", (X, ((1, 2), (3, 4), (5, 6))), {}),
    ("pad", (X, 1), {"mode": "bogus"}),
    ("pad", (X, 1), {"mode": "edge", "constant_values": 0}),
    ("pad", (np.zeros((0, 2)), 1), {"mode": "edge"}),
    ("pad", (X, 1), {"mode": "maximum", "stat_length": 0}),
    ("roll", (X, (1, 2, 3), (0, 1)), {}),
    ("roll", (X, 1, 2), {}),
    ("diag", (X3,), {}),
    ("diagonal", (I6,), {}),
    ("diagonal", (X, 0, 1, 1), {}),
    ("diagonal", (X, 0, 0, 2), {}),
    ("trace", (I6,), {}),
    ("cross", (X, X), {}),
    ("cross", (np.float64(1.0), X[:, :3]), {}),
    ("cross", (X[:, :3], X[:, :3]), {"axisc": 2}),
    ("cross", (X[:, :3], X[:2, :3]), {}),
    ("diff", (X, -1), {}),
    ("diff", (np.float64(1.0),), {}),
    ("diff", (X, 1, 2), {}),
    ("interp", (1.0, XP, FP[:3]), {}),
    ("interp", (1.0, [], []), {}),
    ("interp", (1.0, X, X), {}),
    ("interp", (1.0, XP, FP), {"period": 0}),
    ("convolve", (X[0], []), {}),
    ("convolve", ([], X[0]), {}),
    ("convolve", (X[0], X[1]), {"mode": "bogus"}),
    ("correlate", (X[0], X[1]), {"mode": 7}),
    ("correlate", (X[0], X[1]), {"mode": None}),
    ("convolve", (X[0], X[1]), {"mode": "f"}),
    ("nanmean", (NANS,), {"dtype": np.int32}),
    ("meshgrid", (X[0], X[1]), {"indexing": "xz"}),
    ("vander", (X,), {}),
    ("vander", (I6, -1), {}),
    ("polyval", (np.float64(1.0), 2.0), {}),
]


def _escaped(exc):
    return re.escape(str(exc))


@pytest.mark.parametrize("name, args, kwargs", ERROR_CALLS, ids=[c[0] for c in ERROR_CALLS])
def test_errors_are_numpys_on_raw_and_traced_inputs(name, args, kwargs):
    with pytest.raises(Exception) as want:
        getattr(np, name)(*args, **kwargs)
    with pytest.raises(type(want.value), match=_escaped(want.value)):
        F[name](*args, **kwargs)
    traced = (Tensor(args[0]),) + args[1:] if isinstance(args[0], np.ndarray) else args
    with pytest.raises(type(want.value), match=_escaped(want.value)):
        F[name](*traced, **kwargs)


def test_unsupported_arguments_raise():
    for call in (
        lambda: F["cumsum"](X, out=np.empty(12)),
        lambda: F["trace"](X, out=np.empty(())),
        lambda: F["sort"](X, order="f"),
        lambda: F["pad"](X, 1, mode="linear_ramp"),
        lambda: F["pad"](X, 1, mode="median"),
        lambda: F["pad"](X, 1, mode=lambda *a: None),
    ):
        with pytest.raises(NotImplementedError, match="autodiff"):
            call()


def test_cross_of_2_vectors_warns_like_numpy():
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated"):
        F["cross"](X[0, :2], X[1, :2])


# ---- sort: the gradient follows the permutation --------------------------------------------


def test_sort_jacobian_is_the_permutation():
    x = np.array([0.3, -1.0, 2.0, 0.1])
    jac = ad.jacrev(F["sort"])(x)
    np.testing.assert_array_equal(jac, np.eye(4)[np.argsort(x)])
    np.testing.assert_array_equal(ad.jacfwd(F["sort"])(x), jac)


def test_sort_ties_take_the_gradient_of_their_sorted_position():
    """Equal values: the earlier element gets the earlier sorted position's gradient."""
    x = np.array([2.0, 1.0, 2.0, 1.0, 2.0])
    weights = np.arange(1.0, 6.0)  # sorted positions 0..4 weigh 1..5
    grad = ad.grad(lambda x: (F["sort"](x) * weights).sum())(x)
    np.testing.assert_array_equal(grad, [3.0, 1.0, 4.0, 2.0, 5.0])
    grad = ad.grad(lambda x: (F["sort"](x, kind="quicksort") * weights).sum())(x)
    np.testing.assert_array_equal(grad, [3.0, 1.0, 4.0, 2.0, 5.0])


def test_sort_nans_go_last_and_keep_their_gradient():
    x = np.array([np.nan, 1.0, -1.0])
    out, pullback = ad.vjp(F["sort"], x)
    np.testing.assert_array_equal(out, [-1.0, 1.0, np.nan])
    np.testing.assert_array_equal(pullback(np.array([1.0, 2.0, 3.0]))[0], [3.0, 2.0, 1.0])


def test_sort_second_derivative_is_zero():
    x = np.array([0.5, -0.2, 0.9])
    hess = ad.hessian(lambda x: (F["sort"](x) * np.arange(3.0)).sum())(x)
    np.testing.assert_array_equal(hess, np.zeros((3, 3)))


def test_sort_under_vmap_sorts_each_example():
    xs = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]])
    np.testing.assert_array_equal(ad.vmap(F["sort"], in_axes=1, out_axes=1)(xs.T), np.sort(xs).T)
    per_example = ad.vmap(ad.grad(lambda x: F["sort"](x)[0]))(xs)
    np.testing.assert_array_equal(per_example, [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])


# ---- cumprod: exact at zeros, no division ---------------------------------------------------


def _prod_of_others_ref(x):
    n = len(x)
    jac = np.zeros((n, n))
    for k in range(n):
        for i in range(k + 1):
            jac[k, i] = np.prod(np.delete(x[: k + 1], i))
    return jac


@pytest.mark.parametrize(
    "x",
    [
        np.array([2.0, 0.0, 3.0, 1.5]),
        np.array([0.0, 0.0, 2.0]),
        np.array([1.5, -2.0, 0.0, 0.0, 4.0]),
        np.array([0.0]),
    ],
)
def test_cumprod_jacobian_with_zeros_is_exact(x):
    want = _prod_of_others_ref(x)
    np.testing.assert_array_equal(ad.jacrev(F["cumprod"])(x), want)
    np.testing.assert_array_equal(ad.jacfwd(F["cumprod"])(x), want)


def test_cumprod_hessian_with_zeros():
    x = np.array([2.0, 0.0, 3.0, 0.0])
    f = lambda x: F["cumprod"](x)[-1] + F["cumprod"](x)[2]
    # d2/dxi dxj of x0 x1 x2 (x3 + 1): the product of the factors other than i and j
    want = np.zeros((4, 4))
    for i in range(4):
        for j in range(4):
            if i != j:
                factors = np.array([x[0], x[1], x[2], x[3] + 1.0])
                want[i, j] = np.prod(np.delete(factors, [i, j]))
    np.testing.assert_array_equal(ad.hessian(f)(x), want)


def test_cumprod_does_not_warn_or_produce_nans_at_zeros():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grad = ad.grad(lambda x: F["cumprod"](x).sum())(np.zeros(3))
    np.testing.assert_array_equal(grad, [1.0, 0.0, 0.0])


def test_cumsum_integer_dtype_is_a_constant():
    x = np.array([0.4, 1.6, 2.5])
    out = F["cumsum"](x, dtype=np.int64)
    np.testing.assert_array_equal(out, np.cumsum(x, dtype=np.int64))
    np.testing.assert_array_equal(
        ad.grad(lambda x: (F["cumsum"](x, dtype=int) * x).sum())(x), np.cumsum(x, dtype=int)
    )


def test_linear_recurrence_is_its_own_transpose_family():
    a, b = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    jac = ad.jacrev(lambda b: linear_recurrence(a, b, 0))(b)
    np.testing.assert_allclose(jac, [[1, 0, 0], [-1, 1, 0], [-2, 2, 1]])
    rev = ad.jacrev(lambda b: linear_recurrence(a, b, 0, reverse=True))(b)
    np.testing.assert_allclose(rev, [[1, 0.5, -0.5], [0, 1, -1], [0, 0, 1]])


# ---- NaN-aware functions: zero gradient at NaNs ---------------------------------------------


def test_nan_functions_have_zero_gradient_at_nans():
    x = np.array([1.0, np.nan, 3.0, np.nan])
    for name, want in [
        ("nansum", [1.0, 0, 1.0, 0]),
        ("nanmean", [0.5, 0, 0.5, 0]),
        ("nanprod", [3.0, 0, 1.0, 0]),
    ]:
        grad = ad.grad(F[name])(x)
        np.testing.assert_array_equal(grad, want, err_msg=name)
        np.testing.assert_array_equal(ad.jacfwd(F[name])(x), want, err_msg=name)
    np.testing.assert_array_equal(
        ad.grad(lambda x: F["nan_to_num"](x).sum())(INFS), [0, 0, 0, 1, 1]
    )


def test_nanmean_of_an_all_nan_slice_warns_and_is_nan():
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        out = F["nanmean"](NANS, axis=1)
    np.testing.assert_array_equal(out, [1.5, np.nan, -0.25])
    assert F["nanmean"](NANS.astype(np.float32), axis=0).dtype == np.float32


# ---- interp ----------------------------------------------------------------------------------


def test_interp_derivatives():
    x = np.array([-2.0, -0.5, 0.25, 1.0, 3.0])
    dx = ad.jacfwd(lambda x: F["interp"](x, XP, FP))(x)
    np.testing.assert_array_equal(np.diag(dx), [0.0, -3.0, 5.0, 5 / 3, 0.0])
    # in fp: the interpolation weights (knots at the right end of a segment count fully)
    dfp = ad.jacrev(lambda fp: F["interp"](x, XP, fp))(FP)
    np.testing.assert_allclose(
        dfp, [[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0], [0, 0, 2 / 3, 1 / 3], [0, 0, 0, 1]]
    )
    # at a knot, the slope of the segment to its right
    assert float(ad.grad(lambda x: F["interp"](x, XP, FP))(0.5)) == pytest.approx(5 / 3)


def test_interp_float32_inputs_give_float64_and_float32_gradients():
    x, fp = np.float32(0.25), FP.astype(np.float32)
    out = F["interp"](x, XP, fp)
    assert type(out) is np.float64
    grad = ad.grad(lambda fp: F["interp"](x, XP, fp), argnums=0)(fp)
    assert grad.dtype == np.float32


def test_interp_vmaps_over_every_argument():
    xs = np.array([[0.25, 1.0], [-0.5, 1.5]])
    xps = np.stack([XP, XP * 1.5])
    fps = np.stack([FP, FP[::-1]])
    got = ad.vmap(F["interp"])(xs, xps, fps)
    want = np.stack([np.interp(x, p, f) for x, p, f in zip(xs, xps, fps)])
    np.testing.assert_array_equal(got, want)
    got = ad.vmap(F["interp"], in_axes=(None, 0, None))(xs[0], xps, FP)
    np.testing.assert_array_equal(got, np.stack([np.interp(xs[0], p, FP) for p in xps]))


# ---- constants: argsort, searchsorted, unique -----------------------------------------------


def test_index_results_are_constants():
    x = np.array([0.3, -1.0, 2.0])
    for f in (F["argsort"], lambda x: F["searchsorted"](XP, x)):
        out, tangent = ad.jvp(lambda x: f(x) * x, (x,), (np.ones(3),))
        np.testing.assert_array_equal(tangent, f(x))
        assert f(x).dtype == np.intp
    assert isinstance(F["argsort"](Tensor(x)), Tensor)


def test_searchsorted_vmaps_over_the_sorted_array_too():
    a = np.sort(np.random.default_rng(1).standard_normal((3, 2, 5)), axis=-1)
    v = np.random.default_rng(2).standard_normal((3, 2, 4))
    for side in ("left", "right"):
        got = ad.vmap(ad.vmap(lambda a, v: F["searchsorted"](a, v, side=side)))(a, v)
        want = [[np.searchsorted(a[i, j], v[i, j], side) for j in range(2)] for i in range(3)]
        np.testing.assert_array_equal(got, want)
        got = ad.vmap(
            ad.vmap(lambda a, v: F["searchsorted"](a, v, side=side), in_axes=(0, None)),
            in_axes=(None, 0),
        )(a[0], v[:, 0])
        want = [[np.searchsorted(a[0, j], v[i, 0], side) for j in range(2)] for i in range(3)]
        np.testing.assert_array_equal(got, want)


def test_unique_is_a_constant_and_cannot_be_vmapped():
    x = np.array([2.0, 1.0, 2.0])
    np.testing.assert_array_equal(
        ad.grad(lambda x: (F["unique"](x) * x[:2]).sum())(x), [1.0, 2.0, 0.0]
    )
    values, counts = F["unique"](Tensor(x), return_counts=True)
    assert isinstance(values, Tensor) and counts.tolist() == [1, 2]
    with pytest.raises(NotImplementedError, match="cannot be vmapped"):
        ad.vmap(F["unique"])(np.ones((2, 3)))


# ---- a few more derivative semantics --------------------------------------------------------


def test_edge_padding_accumulates_the_gradient_of_the_copies():
    grad = ad.grad(lambda x: F["pad"](x, (2, 3), mode="edge").sum())(np.arange(3.0))
    np.testing.assert_array_equal(grad, [3.0, 1.0, 4.0])


def test_diag_round_trip_and_trace_gradient():
    v = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(F["diag"](F["diag"](v, 1), 1), v)
    np.testing.assert_array_equal(ad.grad(F["trace"])(X), np.eye(3, 4))


def test_correlate_of_complex_values_conjugates_v_and_differentiates():
    a, v = C, C[:3] * 1j
    np.testing.assert_array_equal(F["correlate"](a, v, "full"), np.correlate(a, v, "full"))
    f = lambda re, im: ad.numpy.real(F["correlate"](re + 1j * im, v, "same")).sum()
    g = ad.grad(f, argnums=(0, 1))(a.real, a.imag)
    eps, want = 1e-6, []
    for k in (0, 1):
        d = np.zeros((2, 4))
        for i in range(4):
            e = np.zeros(4)
            e[i] = eps
            args = [a.real, a.imag]
            hi, lo = list(args), list(args)
            hi[k], lo[k] = args[k] + e, args[k] - e
            d[k, i] = (f(*hi) - f(*lo)) / (2 * eps)
        want.append(d[k])
    np.testing.assert_allclose(g, want, atol=1e-8)


def test_convolve_vmaps_over_either_operand():
    a = np.random.default_rng(3).standard_normal((3, 5))
    v = np.random.default_rng(4).standard_normal((3, 2))
    for mode in ("full", "same", "valid"):
        got = ad.vmap(lambda a, v: F["convolve"](a, v, mode))(a, v)
        np.testing.assert_allclose(got, [np.convolve(p, q, mode) for p, q in zip(a, v)])
        got = ad.vmap(lambda v: F["convolve"](a[0], v, mode))(v)
        np.testing.assert_allclose(got, [np.convolve(a[0], q, mode) for q in v])


def test_imperative_backward_through_the_family():
    t = ad.tensor(np.array([2.0, 0.0, 3.0]), requires_grad=True)
    total = F["cumprod"](t).sum() + F["sort"](t)[0] * 2.0 + F["pad"](t, 1, mode="wrap").sum()
    total.backward()
    np.testing.assert_array_equal(t.grad.numpy(), [1.0 + 2.0, 8.0 + 2.0 + 1.0, 0.0 + 2.0])


# ---- complex inputs: derivatives of the bilinear rules, both modes, order 2 ------------------

_rng = np.random.default_rng(5)
Z = _rng.normal(size=5) + 1j * _rng.normal(size=5)
W = _rng.normal(size=3) + 1j * _rng.normal(size=3)

COMPLEX = {
    "cumsum": lambda z, w: F["cumsum"](z) * z,
    "cumprod": lambda z, w: F["cumprod"](z * np.array([1, 0, 1, 1, 0])),
    "sort": lambda z, w: F["sort"](z) * np.arange(5),
    "pad_reflect_odd": lambda z, w: F["pad"](z, (4, 2), mode="reflect", reflect_type="odd") ** 2,
    "roll_diff": lambda z, w: F["diff"](F["roll"](z, 2) * z),
    "diag_trace": lambda z, w: F["trace"](F["diag"](w, 1) @ F["diag"](w, 1).T + 1) * w,
    "kron_cross": lambda z, w: F["cross"](F["kron"](w, w)[:3], w) * z[:3],
    "convolve": lambda z, w: F["convolve"](z, w) ** 2,
    "correlate": lambda z, w: F["correlate"](z, w, "same") * z,
    "interp": lambda z, w: F["interp"](np.array([-0.5, 0.3, 1.7]), XP[:3], w) * w,
    "nansum": lambda z, w: F["nansum"](z * z, axis=0),
    "polyval": lambda z, w: F["polyval"](w, z),
    "vander": lambda z, w: F["vander"](w, 4),
}


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_derivatives(name):
    from autodiff.testing import check_grads

    check_grads(COMPLEX[name], (Z, W), order=2, modes=("fwd", "rev"))
