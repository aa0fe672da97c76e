"""Op table: indexing (basic, integer-array, boolean, mixed), take and take_along_axis.

Index arrays live in the closures (they are constants). Products of two gathers make
the second-order checks go through getitem's and scatter_add's own derivatives.
"""
import numpy as np
from optable import OpCase, arr

import autodiff.numpy as anp
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
        lambda a: anp.take_along_axis(a, np.array([[4, 0], [1, 1]]), 1) * getitem(a, (slice(None), 0, None)),
        (arr(2, 5),),
        ref=lambda a: np.take_along_axis(a, np.array([[4, 0], [1, 1]]), 1) * a[:, 0, None],
    )
)
