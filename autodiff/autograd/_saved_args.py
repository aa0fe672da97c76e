"""The `_saved_*` attributes torch's index, slice, select and shape nodes carry, by node name.

torch's codegen gives each node a `_saved_<arg>` per argument its backward keeps:
`IndexBackward0._saved_indices` (one entry per indexed dimension, None where a dimension is
not indexed by a tensor) with `_raw_saved_indices` (SavedTensor objects), `_saved_dim` /
`_saved_index` of select and index_select, `_saved_dim` / `_saved_start` / `_saved_end` /
`_saved_step` of a slice, and `_saved_self_sym_sizes` (the input's shape) of these and of
sum, mean and expand. autodiff's nodes of those operations are one primitive (`getitem`,
`reduce_sum`, `broadcast_to`, ...) whose parameters hold the same information: the getters
here read it back in torch's form. A node without the attribute raises AttributeError (so
`hasattr` tells, as on torch's nodes).
"""

from __future__ import annotations

import numpy as np

from autodiff.autograd._nodes import RELEASED_MESSAGE, _LooseSavedTensor, register_saved_attrs
from autodiff.core.tensor import Tensor

_INT64_MAX = 2**63 - 1  # (torch's end of an open slice)


def _input_shape(node) -> tuple:
    primals = node.primals
    if primals is None:
        raise RuntimeError(RELEASED_MESSAGE)
    return tuple(int(n) for n in np.shape(getattr(primals[0], "_value", primals[0])))


def _is_int(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _specified(index) -> int:
    """How many of the input's dimensions `index` names (a boolean mask names its ndim)."""
    n = 0
    for i in index:
        if i is None or i is Ellipsis:
            continue
        if isinstance(i, np.ndarray) and i.dtype == np.bool_:
            n += i.ndim
        else:
            n += 1
    return n


def _walk(node) -> tuple[list, tuple]:
    """torch's reading of `x[index]`, element by element, as `(kind, dim, element, sizes)`:
    each select, slice, unsqueeze and tensor index with the dimension it applies to and the
    shape it applies to (selects and slices run first, then one index of the tensors); and
    the shape the tensor index applies to."""
    index = node.params["index"]
    shape = _input_shape(node)
    sizes = list(shape)
    dim = 0
    steps = []
    for i in index:
        if i is Ellipsis:
            dim += len(shape) - _specified(index)
        elif i is None:
            steps.append(("unsqueeze", dim, i, tuple(sizes)))
            sizes.insert(dim, 1)
            dim += 1
        elif _is_int(i):
            steps.append(("select", dim, int(i), tuple(sizes)))
            del sizes[dim]
        elif type(i) is slice:
            steps.append(("slice", dim, i, tuple(sizes)))
            sizes[dim] = len(range(*i.indices(sizes[dim])))
            dim += 1
        else:
            arr = np.asarray(i)
            steps.append(("tensor", dim, arr, tuple(sizes)))
            dim += arr.ndim if arr.dtype == np.bool_ else 1
    return steps, tuple(sizes)


def _last(node, kind: str):
    found = [s for s in _walk(node)[0] if s[0] == kind]
    if not found:
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '_saved_{kind}'")
    return found[-1]


def _indices(node) -> tuple:
    """IndexBackward0's indices: a tensor per indexed dimension, None before it where a
    dimension is not indexed by a tensor."""
    out: list = []
    for kind, dim, element, _ in _walk(node)[0]:
        if kind == "tensor":
            out.extend([None] * (dim - len(out)))
            out.append(Tensor._from(element))
    return tuple(out)


def _index_sizes(node) -> tuple:
    """The shape IndexBackward0 indexes: the input after its selects, slices, unsqueezes."""
    return _walk(node)[1]


def _raw_indices(node) -> tuple:
    """The indices as SavedTensor objects (None entries too: registering hooks on one raises)."""
    return tuple(_LooseSavedTensor._make(t, False, None, None) for t in _indices(node))


def _slice_part(node, field: str):
    _, dim, sl, sizes = _last(node, "slice")
    values = {
        "dim": dim,
        "start": 0 if sl.start is None else int(sl.start),
        "end": _INT64_MAX if sl.stop is None else int(sl.stop),
        "step": 1 if sl.step is None else int(sl.step),
        "self_sym_sizes": sizes,
    }
    return values[field]


def _select_part(node, field: str):
    _, dim, i, sizes = _last(node, "select")
    return {"dim": dim, "index": i, "self_sym_sizes": sizes}[field]


def _index_select_part(node, field: str):
    _, dim, arr, _ = _last(node, "tensor")
    values = {"dim": dim, "index": Tensor._from(arr), "self_sym_sizes": _input_shape(node)}
    return values[field]


def _reduced_shape(node) -> tuple:
    """The shape of what sum, mean (a sum divided by a count) or expand read."""
    if node.prim is not None and node.prim.name == "divide":  # (mean: the sum's input)
        parent = node.parents[0]
        if parent is None:
            raise AttributeError("_saved_self_sym_sizes")
        return _input_shape(parent[0] if type(parent) is tuple else parent)
    return _input_shape(node)


def _mean_part(node, field: str):
    """MeanBackward1's dim and keepdim: those of the sum its division reads."""
    parent = node.parents[0] if node.prim is not None and node.prim.name == "divide" else None
    if parent is None:
        raise AttributeError(field)
    params = (parent[0] if type(parent) is tuple else parent).params
    if field == "dim":
        return tuple(int(a) for a in params["axes"])
    return bool(params["keepdims"])


def _part(getter, field: str):
    return lambda node: getter(node, field)


register_saved_attrs(
    "IndexBackward0",
    {"indices": _indices, "self_sym_sizes": _index_sizes},
    raw={"indices": _raw_indices},
)
register_saved_attrs(
    "SliceBackward0",
    {f: _part(_slice_part, f) for f in ("dim", "start", "end", "step", "self_sym_sizes")},
)
register_saved_attrs(
    "SelectBackward0", {f: _part(_select_part, f) for f in ("dim", "index", "self_sym_sizes")}
)
register_saved_attrs(
    "IndexSelectBackward0",
    {f: _part(_index_select_part, f) for f in ("dim", "index", "self_sym_sizes")},
)
register_saved_attrs("MeanBackward1", {f: _part(_mean_part, f) for f in ("dim", "keepdim")})
for _name in ("SumBackward0", "SumBackward1", "MeanBackward0", "MeanBackward1", "ExpandBackward0"):
    register_saved_attrs(_name, {"self_sym_sizes": _reduced_shape})
