"""Op table: indexing (basic, integer-array, boolean, mixed), take, take_along_axis,
index_set and the `.at` updates.

Index arrays live in the closures (they are constants). Products make the second-order
checks go through the rules' own derivatives. The `vmapped-index-*` cases run an inner
vmap whose index arrays are batched, so the harness checks the traced-index path too.
"""

import numpy as np
from optable import OpCase, arr

import autodiff as ad
import autodiff.numpy as anp
from autodiff.ops.at import at
from autodiff.ops.index import getitem

_MASK_34 = np.array([[True, False, True, True], [False, False, True, False], [True] * 4])
_ROWS = np.array([True, False, True])

# (label, input shape, index): every index is checked as getitem(x, index) against x[index].
GETITEM = [
    ("int", (5,), 2),
    ("neg-int", (5,), -1),
    ("row", (3, 4), 1),
    ("element", (3, 4), (2, -1)),
    ("scalar-empty-tuple", (), ()),
    ("scalar-newaxis", (), None),
    ("slice", (5,), slice(1, 4)),
    ("slice-step", (7,), slice(None, None, 3)),
    ("slice-neg-step", (6,), slice(None, None, -1)),
    ("slice-neg-bounds", (6,), slice(-1, 0, -2)),
    ("slices-2d", (4, 5), (slice(None, None, 2), slice(1, None))),
    ("ellipsis-last", (2, 3, 4), (Ellipsis, 1)),
    ("ellipsis-middle", (2, 3, 4), (0, Ellipsis, slice(None, 2))),
    ("newaxis", (3, 4), (None, slice(None), None, 2)),
    ("ellipsis-newaxis", (3, 4), (Ellipsis, None)),
    ("array", (5,), np.array([4, 0, 2])),
    ("array-duplicates", (4,), np.array([1, 1, 3, 1])),
    ("array-negative", (5,), np.array([-1, 0, -5, -1])),
    ("array-2d-index", (5,), np.array([[0, 1], [4, 4]])),
    ("list", (5,), [3, 3, 0]),
    ("rows-duplicates", (3, 4), np.array([2, 0, 2])),
    ("array-then-slice", (3, 4), (np.array([0, 2, 0]), slice(1, 3))),
    ("slice-then-array", (3, 4), (slice(1, None), np.array([0, 3, 3]))),
    ("two-arrays", (3, 4), (np.array([0, 2, 2]), np.array([1, -1, 1]))),
    ("arrays-broadcast", (3, 4), (np.array([[0], [2]]), np.array([1, 3, 1]))),
    ("arrays-adjacent-3d", (2, 3, 4), (slice(None), np.array([0, 2, 0]), np.array([3, 1, 3]))),
    ("arrays-separated-3d", (3, 2, 4), (np.array([0, 2, 0]), slice(None), np.array([3, 1, 3]))),
    ("array-int-mixed", (3, 2, 4), (1, slice(None), np.array([0, 0, 3]))),
    ("array-ellipsis", (3, 2, 4), (Ellipsis, np.array([1, 1]))),
    ("array-newaxis", (3, 4), (None, np.array([2, 2]), slice(None))),
    ("zero-d-array", (5,), np.array(3)),
    ("mask-full", (3, 4), _MASK_34),
    ("mask-rows", (3, 4), _ROWS),
    ("mask-cols", (3, 4), (slice(None), np.array([True, False, False, True]))),
    ("mask-and-slice", (3, 4), (_ROWS, slice(1, None))),
    ("mask-and-array", (3, 4), (_ROWS, np.array([3, 3]))),
    ("mask-0d-true", (3,), np.True_),
    ("empty-result", (4,), np.array([], dtype=np.intp)),
]


def _getitem_case(label, shape, index):
    return OpCase(
        f"getitem-{label}{shape}",
        lambda x: getitem(x, index),
        (arr(*shape),),
        ref=lambda x: x[index],
    )


def _product_case(label, shape, i, j):
    """x[i] * x[j]: a nonlinear function, so order 2 differentiates scatter_add too."""
    return OpCase(
        f"getitem-product-{label}{shape}",
        lambda x: getitem(x, i) * getitem(x, j),
        (arr(*shape),),
        ref=lambda x: x[i] * x[j],
    )


_TAKE = [
    # (label, shape, indices, kwargs)
    ("flat", (3, 4), np.array([11, 0, 5, 5]), {}),
    ("flat-negative", (3, 4), [-1, -12, 3], {}),
    ("flat-scalar-index", (3, 4), 7, {}),
    ("flat-2d-indices", (6,), np.array([[0, 5], [5, 1]]), {}),
    ("flat-0d-array", (), [0, 0, -1], {}),
    ("axis0", (3, 4), np.array([2, 0, 2]), {"axis": 0}),
    ("axis1", (3, 4), np.array([[3, 0], [1, 1]]), {"axis": 1}),
    ("axis-neg", (2, 3, 4), np.array([0, -1, 0]), {"axis": -1}),
    ("axis-scalar-index", (2, 3, 4), 1, {"axis": 1}),
    ("wrap", (5,), np.array([7, -6, 2]), {"mode": "wrap"}),
    ("clip", (3, 4), np.array([-3, 1, 9]), {"axis": 1, "mode": "clip"}),
]


def _take_case(label, shape, indices, kwargs):
    return OpCase(
        f"take-{label}{shape}",
        lambda a: anp.take(a, indices, **kwargs),
        (arr(*shape),),
        ref=lambda a: np.take(a, indices, **kwargs),
    )


_ALONG = [
    # (label, shape, indices, axis)
    ("last", (3, 4), np.array([[3, 0], [1, 1], [2, 2]]), -1),
    ("axis0", (3, 4), np.array([[0, 2, 1, 0], [2, 2, 2, 2]]), 0),
    ("broadcast", (3, 4), np.array([[0, 3, 3]]), 1),
    ("3d-middle", (2, 3, 4), np.array([[[2, 0, 0, 1]], [[1, 1, 0, 2]]]), 1),
    ("negative", (2, 5), np.array([[-1, 0], [-5, -1]]), 1),
    ("none", (2, 3), np.array([5, 0, 5, -1]), None),
]


def _along_case(label, shape, indices, axis):
    return OpCase(
        f"take_along_axis-{label}{shape}",
        lambda a: anp.take_along_axis(a, indices, axis=axis),
        (arr(*shape),),
        ref=lambda a: np.take_along_axis(a, indices, axis=axis),
    )


CASES = [_getitem_case(*c) for c in GETITEM]
CASES += [
    _product_case("rows", (3, 4), np.array([2, 0, 2]), np.array([0, 0, 1])),
    _product_case("flat-duplicates", (5,), np.array([1, 1, 4, 0]), np.array([1, 3, 3, 1])),
    _product_case("slice-and-mask", (3, 4), (slice(None, None, 2), slice(1, 3)), (_ROWS, slice(2))),
    _product_case("basic-and-array", (6,), slice(None, None, -2), np.array([5, 5, 0])),
]
CASES += [_take_case(*c) for c in _TAKE]
CASES += [_along_case(*c) for c in _ALONG]
CASES.append(
    OpCase(
        "take_along_axis-sorted-product(2, 5)",
        lambda a: (
            anp.take_along_axis(a, np.array([[4, 0], [1, 1]]), 1)
            * getitem(a, (slice(None), 0, None))
        ),
        (arr(2, 5),),
        ref=lambda a: np.take_along_axis(a, np.array([[4, 0], [1, 1]]), 1) * a[:, 0, None],
    )
)

# ------------------------------------------------------------------------- index_set and .at
_MASK_SET = np.array([[True, False, True, False], [False, False, False, True], [True] * 4])

# (label, x shape, index, value shape): index_set(x, index, v) against `x[index] = v`.
INDEX_SET = [
    ("int", (5,), 2, ()),
    ("row", (3, 4), 1, (4,)),
    ("row-scalar", (3, 4), -1, ()),
    ("scalar-x", (), (), ()),
    ("slice-step", (6,), slice(1, 5, 2), (2,)),
    ("slice-neg-step", (5,), slice(None, None, -1), (5,)),
    ("ellipsis", (2, 3, 4), (Ellipsis, 1), (2, 3)),
    ("newaxis", (3, 4), (None, 1), (1, 4)),
    ("leading-ones", (5,), slice(0, 2), (1, 1, 2)),
    ("array", (5,), [4, 0, 2], (3,)),
    ("array-duplicates", (4,), np.array([1, 3, 1, 1]), (4,)),
    ("rows-duplicates-broadcast", (3, 4), np.array([2, 0, 2]), (4,)),
    ("two-arrays", (3, 4), (np.array([0, 2, 0]), np.array([1, 3, 1])), (3,)),
    ("arrays-separated", (3, 2, 4), (np.array([0, 2]), slice(None), np.array([3, 1])), (2, 2)),
    ("array-and-slice", (3, 4), (slice(1, None), np.array([[0], [3]])), (2, 2, 1)),
    ("mask", (3, 4), _MASK_SET, (7,)),
    ("mask-scalar", (3, 4), _MASK_SET, ()),
    ("mask-rows", (3, 4), np.array([True, False, True]), (4,)),
]


def _set_ref(index):
    def ref(x, v):
        out = x.copy()
        out[index] = v
        return out

    return ref


def _index_set_case(label, shape, index, value_shape):
    return OpCase(
        f"index_set-{label}{shape}",
        lambda x, v: anp.index_set(x, index, v),
        (arr(*shape), arr(*value_shape)),
        ref=_set_ref(index),
    )


def _ufunc_at_ref(ufunc, index):
    def ref(x, v):
        out = x.copy()
        ufunc.at(out, index, v)
        return out

    return ref


# (method, label, x shape, index, value shape): at(x)[index].method(v) against ufunc.at.
AT = [
    ("add", "duplicates", (5,), [0, 2, 0, 0], (4,)),
    ("add", "rows-duplicates", (3, 4), np.array([2, 2]), (4,)),
    ("add", "slice-scalar", (5,), slice(1, 4), ()),
    ("add", "mask", (3, 4), _MASK_SET, (7,)),
    ("multiply", "duplicates", (5,), [1, 1, 3, 1], (4,)),
    ("multiply", "unique-column", (3, 4), (slice(None), 1), (3,)),
    ("multiply", "rows-duplicates", (3, 4), np.array([0, 2, 0]), (3, 4)),
    ("min", "duplicates", (5,), [1, 1, 3], (3,)),
    ("min", "rows", (3, 4), (np.array([0, 0]), slice(None)), (2, 4)),
    ("max", "duplicates", (5,), np.array([4, 0, 4, 4]), (4,)),
    ("max", "separated", (3, 2, 4), (np.array([0, 0]), slice(None), np.array([1, 1])), (2, 2)),
]
_UFUNCS = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}


def _at_case(method, label, shape, index, value_shape):
    return OpCase(
        f"at_{method}-{label}{shape}",
        lambda x, v: getattr(at(x)[index], method)(v),
        (arr(*shape), arr(*value_shape)),
        ref=_ufunc_at_ref(_UFUNCS[method], index),
    )


CASES += [_index_set_case(*c) for c in INDEX_SET]
CASES += [_at_case(*c) for c in AT]
CASES += [
    OpCase(
        "index_set-product(3, 4)",
        lambda x, v: anp.index_set(x * x, (np.array([2, 0, 2]), 1), v * getitem(x, (0, 0))) * x,
        (arr(3, 4), arr(3)),
        ref=lambda x, v: _set_ref((np.array([2, 0, 2]), 1))(x * x, v * x[0, 0]) * x,
    ),
    OpCase(
        "at_get(3, 4)",
        lambda x: at(x)[1:, [0, 0]].get() * 2,
        (arr(3, 4),),
        ref=lambda x: x[1:, [0, 0]] * 2,
    ),
    OpCase(
        "at_multiply-product(5,)",
        lambda x, v: at(x)[[1, 1, 4]].multiply(v * v) * x,
        (arr(5), arr(3)),
        ref=lambda x, v: _ufunc_at_ref(np.multiply, [1, 1, 4])(x, v * v) * x,
    ),
]

# ------------------------------------------------- per-example (vmapped) indices, inside a case
# An inner vmap makes the index arrays batch tracers, so the harness differentiates and
# batches the traced-index path: gathers, scatter-adds and updates with index arguments.
_ROWS_I = np.array([[0, 2], [4, 4], [-1, 0]])
_COLS_I = np.array([[3, 3], [0, 1], [2, -4]])
_LABELS = np.array([[2], [0], [4], [2]])


def _loop(f, *batched):
    return np.stack([np.asarray(f(*xs)) for xs in zip(*batched)])


def _vmapped(f, *batched, in_axes=0):
    return ad.vmap(f, in_axes=in_axes)(*batched)


VMAPPED = [
    # (name, fun, args, ref)
    (
        "table-rows(5, 3)",
        lambda x: _vmapped(lambda i: getitem(x, i), _ROWS_I),
        (arr(5, 3),),
        lambda x: _loop(lambda i: x[i], _ROWS_I),
    ),
    (
        "table-slice-array(4, 5)",
        lambda x: _vmapped(lambda i: getitem(x, (slice(1, None), i)), _COLS_I),
        (arr(4, 5),),
        lambda x: _loop(lambda i: x[1:, i], _COLS_I),
    ),
    (
        "batched-x-separated(3, 5, 2, 4)",
        lambda x: _vmapped(lambda x, i, j: getitem(x, (i, slice(None), j)), x, _ROWS_I, _COLS_I),
        (arr(3, 5, 2, 4),),
        lambda x: _loop(lambda x, i, j: x[i, :, j], x, _ROWS_I, _COLS_I),
    ),
    (
        "batched-x-newaxis(3, 4, 5)",
        lambda x: _vmapped(lambda x, i: getitem(x, (None, slice(None), i)), x, _COLS_I),
        (arr(3, 4, 5),),
        lambda x: _loop(lambda x, i: x[None, :, i], x, _COLS_I),
    ),
    (
        "cross-entropy(4, 5)",
        lambda L: _vmapped(
            lambda l, y: anp.take_along_axis(l, y, 0) * anp.sum(l * l) - anp.take(l, y[0]),
            L,
            _LABELS,
        ),
        (arr(4, 5),),
        lambda L: _loop(
            lambda l, y: np.take_along_axis(l, y, 0) * np.sum(l * l) - l[y[0]], L, _LABELS
        ),
    ),
    (
        "index_set(5,)",
        lambda x, v: _vmapped(lambda i, w: anp.index_set(x, i, w), _COLS_I % 5, v),
        (arr(5), arr(3, 2)),
        lambda x, v: _loop(_set_ref_fn(x), _COLS_I % 5, v),
    ),
    (
        "index_set-batched-x(3, 2, 5)",
        lambda x, v: _vmapped(
            lambda x, i, w: anp.index_set(x, (slice(None), i), w), x, _COLS_I % 5, v
        ),
        (arr(3, 2, 5), arr(3, 2)),
        lambda x, v: _loop(lambda x, i, w: _set_ref((slice(None), i))(x, w), x, _COLS_I % 5, v),
    ),
    (
        "at-add(5, 2)",
        lambda x, v: _vmapped(lambda i, w: at(x)[i].add(w), _ROWS_I, v),
        (arr(5, 2), arr(3, 2, 2)),
        lambda x, v: _loop(lambda i, w: _ufunc_at_ref(np.add, i)(x, w), _ROWS_I, v),
    ),
    (
        "at-multiply(5,)",
        lambda x, v: _vmapped(lambda i, w: at(x)[i].multiply(w), _ROWS_I, v),
        (arr(5), arr(3, 2)),
        lambda x, v: _loop(lambda i, w: _ufunc_at_ref(np.multiply, i)(x, w), _ROWS_I, v),
    ),
    (
        "at-min(5,)",
        lambda x, v: _vmapped(lambda i, w: at(x)[i].min(w), _ROWS_I, v),
        (arr(5), arr(3, 2)),
        lambda x, v: _loop(lambda i, w: _ufunc_at_ref(np.minimum, i)(x, w), _ROWS_I, v),
    ),
    (
        "at-max-batched-x(3, 5)",
        lambda x, v: _vmapped(lambda x, i, w: at(x)[i].max(w), x, _ROWS_I, v),
        (arr(3, 5), arr(3, 2)),
        lambda x, v: _loop(lambda x, i, w: _ufunc_at_ref(np.maximum, i)(x, w), x, _ROWS_I, v),
    ),
]


def _set_ref_fn(x):
    return lambda i, w: _set_ref(i)(x, w)


CASES += [OpCase(f"vmapped-index-{name}", fun, args, ref=ref) for name, fun, args, ref in VMAPPED]

# ------------------------------------------- per-example scalar indices and dynamic slices
# Scalar indices (x[i]), slices with vmapped bounds (x[i:i + 2], a dynamic slice of the block
# they span) and JAX's dynamic_slice / dynamic_update_slice (starts clamped so that the block
# fits), each against a loop of the same function on plain NumPy values.
_I = np.array([2, 0, 4, -1])
_STARTS = np.array([0, 3, 4])
_STARTS_DOWN = np.array([3, 5, 4])
_BLOCK_ROWS, _BLOCK_COLS = np.array([0, 2, 9, -1]), np.array([1, -2, 0, 4])


def _clamped(start, n, size):
    return min(max(start + n if start < 0 else start, 0), n - size)


def _block_ref(x, starts, sizes):
    return x[
        tuple(
            slice(_clamped(s, n, k), _clamped(s, n, k) + k)
            for s, n, k in zip(starts, x.shape, sizes)
        )
    ]


def _update_ref(x, u, starts):
    out = x.copy()
    out[
        tuple(
            slice(_clamped(s, n, k), _clamped(s, n, k) + k)
            for s, n, k in zip(starts, x.shape, u.shape)
        )
    ] = u
    return out


DYNAMIC = [
    # (name, fun, args, ref)
    (
        "scalar-rows(5, 3)",
        lambda x: _vmapped(lambda i: getitem(x, i) * x[0], _I),
        (arr(5, 3),),
        lambda x: _loop(lambda i: x[i] * x[0], _I),
    ),
    (
        "scalar-batched-x(4, 5)",
        lambda x: _vmapped(lambda x, i: getitem(x, (slice(None), i)) * x[0, 0], x, _I),
        (arr(4, 4, 5),),
        lambda x: _loop(lambda x, i: x[:, i] * x[0, 0], x, _I),
    ),
    (
        "slice-bounds(6, 3)",
        lambda x: _vmapped(lambda i: getitem(x, slice(i, i + 2)), _STARTS),
        (arr(6, 3),),
        lambda x: _loop(lambda i: x[i : i + 2], _STARTS),
    ),
    (
        "slice-step-batched-x(3, 7)",
        lambda x: _vmapped(lambda x, i: getitem(x, slice(i, i + 5, 2)) * x[0], x, _STARTS % 3),
        (arr(3, 7),),
        lambda x: _loop(lambda x, i: x[i : i + 5 : 2] * x[0], x, _STARTS % 3),
    ),
    (
        "slice-negative-step(4, 6)",
        lambda x: _vmapped(lambda i: getitem(x, (Ellipsis, slice(i, i - 3, -1))), _STARTS_DOWN),
        (arr(4, 6),),
        lambda x: _loop(lambda i: x[..., i : i - 3 : -1], _STARTS_DOWN),
    ),
    (
        "dynamic_slice(5, 6)",
        lambda x: _vmapped(
            lambda i, j: ad.dynamic_slice(x, (i, j), (2, 3)) * x[0, 0], _BLOCK_ROWS, _BLOCK_COLS
        ),
        (arr(5, 6),),
        lambda x: _loop(
            lambda i, j: _block_ref(x, (i, j), (2, 3)) * x[0, 0], _BLOCK_ROWS, _BLOCK_COLS
        ),
    ),
    (
        "dynamic_slice-batched-x(4, 3, 5)",
        lambda x: _vmapped(
            lambda x, j: ad.dynamic_slice_in_dim(x, j, 2, axis=1) ** 2, x, _BLOCK_COLS
        ),
        (arr(4, 3, 5),),
        lambda x: _loop(lambda x, j: _block_ref(x, (0, j), (3, 2)) ** 2, x, _BLOCK_COLS),
    ),
    (
        "dynamic_update_slice(5, 3)",
        lambda x, u: _vmapped(
            lambda i, u: ad.dynamic_update_slice(x, u * u, (i, 1)), _BLOCK_ROWS, u
        ),
        (arr(5, 3), arr(4, 2, 2)),
        lambda x, u: _loop(lambda i, u: _update_ref(x, u * u, (i, 1)), _BLOCK_ROWS, u),
    ),
    (
        "dynamic_update_slice-batched-x(4, 6)",
        lambda x, u: _vmapped(
            lambda x, i, u: ad.dynamic_update_slice(x * x, u, (i,)), x, _BLOCK_COLS, u
        ),
        (arr(4, 6), arr(4, 3)),
        lambda x, u: _loop(lambda x, i, u: _update_ref(x * x, u, (i,)), x, _BLOCK_COLS, u),
    ),
    (
        "take-scalar(5, 3)",
        lambda x: _vmapped(lambda i: anp.take(x, i, axis=0) * x[1], _I),
        (arr(5, 3),),
        lambda x: _loop(lambda i: np.take(x, i, axis=0) * x[1], _I),
    ),
    (
        "at-set-scalar(5, 2)",
        lambda x, v: _vmapped(lambda i, w: at(x)[i].set(w * w), _I, v),
        (arr(5, 2), arr(4, 2)),
        lambda x, v: _loop(lambda i, w: _set_ref(i)(x, w * w), _I, v),
    ),
    (
        "at-add-slice(6,)",
        lambda x, v: _vmapped(lambda i, w: at(x * x)[i : i + 2].add(w), _STARTS, v),
        (arr(6), arr(3, 2)),
        lambda x, v: _loop(
            lambda i, w: _ufunc_at_ref(np.add, slice(i, i + 2))(x * x, w), _STARTS, v
        ),
    ),
    (
        "at-multiply-slice-batched-x(3, 6)",
        lambda x, v: _vmapped(lambda x, i, w: at(x)[i : i + 3].multiply(w), x, _STARTS % 4, v),
        (arr(3, 6), arr(3, 3)),
        lambda x, v: _loop(
            lambda x, i, w: _ufunc_at_ref(np.multiply, slice(i, i + 3))(x, w), x, _STARTS % 4, v
        ),
    ),
    (
        "index_set-slice(4, 6)",
        lambda x, v: _vmapped(
            lambda i, w: anp.index_set(x, (slice(None), slice(i, i + 2)), w), _STARTS, v
        ),
        (arr(4, 6), arr(3, 4, 2)),
        lambda x, v: _loop(lambda i, w: _set_ref((slice(None), slice(i, i + 2)))(x, w), _STARTS, v),
    ),
]

CASES += [OpCase(f"vmapped-index-{name}", fun, args, ref=ref) for name, fun, args, ref in DYNAMIC]

# Starts computed from the data: concrete eagerly, staged under jit (the primitives themselves
# then run, and the harness's vmap batches them).
CASES += [
    OpCase(
        "dynamic_slice-data-start(5, 6)",
        lambda x: ad.dynamic_slice(x, (anp.sum(x[:, 0] > 0), -4), (2, 3)) * x[0, 0],
        (arr(5, 6),),
        ref=lambda x: _block_ref(x, (int(np.sum(x[:, 0] > 0)), -4), (2, 3)) * x[0, 0],
    ),
    OpCase(
        "dynamic_update_slice-data-start(4, 5)",
        lambda x, u: ad.dynamic_update_slice(x * x, u, (anp.sum(u[0] < 0) - 1, 1)),
        (arr(4, 5), arr(2, 3)),
        ref=lambda x, u: _update_ref(x * x, u, (int(np.sum(u[0] < 0)) - 1, 1)),
    ),
]
