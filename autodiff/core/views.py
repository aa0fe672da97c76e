"""Views at level 0: which Tensors share their base's memory, as torch tracks them.

A level-0 operation whose primitive may return a view of its first operand (`VIEW_PRIMITIVES`:
reshape, transpose, basic indexing, broadcast_to, split, ...) and did (its NumPy result shares
the operand's memory) makes a Tensor that records its base in `_view`: the root base (a view
of a view has the same base), how it was made (torch's CreationMeta: in grad mode, under
no_grad, as one of several outputs) and it shares the base's version counter. Nothing else is
kept: where a view's elements lie in its base is read from the memory addresses when an
in-place operation needs it (`positions`), so no chain of view functions is stored.

What an in-place operation on a view does to the graph (torch's CopySlices) lives in the torch
face (autograd/_views.py), which installs it here (`set_view_writer`): core imports nothing
above it.
"""

from __future__ import annotations

import re

import numpy as np

from autodiff.core.graph import VersionCounter, node_name, remember

# torch's CreationMeta: how a view was made decides whether an in-place operation on it may
# be recorded.
# The names of the primitives whose impl may return a view of its first operand: which they
# are is the torch face's knowledge (autodiff/torch/_node_names.py fills this at import), and
# core, below it, keeps only the set it reads (core/trace.py).
VIEW_PRIMITIVES: set[str] = set()

DEFAULT = "default"
NO_GRAD_MODE = "no_grad_mode"
MULTI_OUTPUT = "multi_output_node"
IN_CUSTOM_FUNCTION = "in_custom_function"
INFERENCE_MODE = "inference_mode"


class ViewMeta:
    """A view's base (the root: never itself a view), how the view was made, and the operation
    that made it (a node name, or the (primitive, params) pair it is made from: `op_name`), as
    torch's errors name it ("Output 0 of Unbind is a view...")."""

    __slots__ = ("base", "creation", "op", "output", "of_view_of", "invalid", "version")

    def __init__(self, base, creation: str, op, output: int = 0, of_view_of=None, version=0):
        self.base = base
        self.version = version  # (of the shared counter when the view was made)
        self.creation = creation
        self.op = op
        self.output = output
        self.of_view_of = of_view_of  # (the creation of the view this one was taken from)
        # torch's error once its base was written in place while this view (made under no_grad,
        # or one of several views) cannot follow: reading grad_fn raises it (autograd/_views.py)
        self.invalid = None


def op_name(meta: ViewMeta) -> str:
    """The torch name of the operation that made a view ("Unbind", "Slice", "View")."""
    op = meta.op
    if type(op) is tuple:
        prim, params = op
        op = node_name(prim, params)
    return re.sub(r"Backward\d*$", "", op)


def mark_view(result, source, op, creation: str, output: int = 0) -> None:
    """Record that the level-0 Tensor `result` is a view of `source` (or of its base)."""
    meta = source._view
    if meta is not None:
        base = meta.base
        # (a view of a view made under no_grad inherits that: torch's "view of a view" error)
        parent = meta.creation
        if parent != DEFAULT and creation == DEFAULT:
            creation = parent
        of = parent
    else:
        base = source
        of = None
    vc = base._vc
    if type(vc) is int:
        vc = base._vc = VersionCounter(vc)
    result._vc = vc
    result._view = ViewMeta(base, creation, op, output, of, vc.value)
    remember(vc, result)


def views_of(base) -> list:
    """The live views of `base` (a root base), oldest first."""
    vc = base._vc
    if type(vc) is int or not vc.views:
        return []
    out = []
    for ref in vc.views:
        t = ref()
        if t is not None and t._view is not None and t._view.base is base:
            out.append(t)
    return out


def positions(view: np.ndarray, base: np.ndarray) -> np.ndarray:
    """For each element of `view` (a NumPy array in `base`'s memory), its flat row-major
    position in `base`: an int64 array of `view`'s shape, read from the memory addresses (so
    any chain of strided views gives it). Raises ValueError for a view whose elements are not
    elements of `base` (another dtype's view, e.g. the real part of a complex array)."""
    if view.dtype.itemsize != base.dtype.itemsize:
        raise ValueError("a view with another element size than its base")
    item = base.dtype.itemsize
    offsets = _byte_offsets(view) + (
        view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    )
    if base.flags.c_contiguous:
        if np.any(offsets % item) or (offsets.size and (offsets.min() < 0)):
            raise ValueError("a view whose elements are not its base's")
        found = offsets // item
        if found.size and found.max() >= base.size:
            raise ValueError("a view whose elements are not its base's")
        return found
    base_offsets = _byte_offsets(base).reshape(-1)
    order = np.argsort(base_offsets, kind="stable")
    sorted_offsets = base_offsets[order]
    at = np.searchsorted(sorted_offsets, offsets)
    at = np.minimum(at, max(sorted_offsets.size - 1, 0))
    if sorted_offsets.size == 0 or np.any(sorted_offsets[at] != offsets):
        raise ValueError("a view whose elements are not its base's")
    return order[at]


def part_positions(view: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, int]:
    """For a view of the real or imaginary parts of a complex `base` (NumPy's `.real`,
    `.imag`): the positions of its elements' complex elements in `base` (as `positions`) and
    which part it is (0 real, 1 imaginary). Raises ValueError for any other view."""
    if base.dtype.kind != "c" or view.dtype.itemsize * 2 != base.dtype.itemsize:
        raise ValueError("not a view of the parts of a complex array")
    half = view.dtype.itemsize
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    part = (start % base.dtype.itemsize) // half
    whole = (
        np.ndarray(
            view.shape,
            base.dtype,
            buffer=base,
            offset=start - part * half,
            strides=view.strides,
        )
        if base.flags.c_contiguous or base.flags.f_contiguous
        else None
    )
    if whole is None:
        raise ValueError("a part view of a non-contiguous complex array")
    return positions(whole, base), int(part)


def _byte_offsets(a: np.ndarray) -> np.ndarray:
    """The byte offset of each element of `a` from its first (index 0, ..., 0) element."""
    out = np.zeros(a.shape, np.int64)
    for k, (n, s) in enumerate(zip(a.shape, a.strides)):
        shape = [1] * a.ndim
        shape[k] = n
        out += np.arange(n, dtype=np.int64).reshape(shape) * s
    return out


class _ViewWriter:
    """The torch face's in-place-on-a-view machinery (autograd/_views.py installs it)."""

    # write(view, result, since) -> view: an in-place result written into a view;
    # write_aliased(tensor, result, since) -> tensor: into a tensor others share memory with;
    # clock() -> the sequence number of the last recorded node (see `adopt_saved`)
    write = None
    write_aliased = None
    clock = staticmethod(lambda: -1)


WRITER = _ViewWriter()


def set_view_writer(write, write_aliased, clock) -> None:
    """Install the torch face's writers (see `_ViewWriter`)."""
    WRITER.write = write
    WRITER.write_aliased = write_aliased
    WRITER.clock = clock


def adopt_saved(tensor, result, since, copy_buffer: bool) -> None:
    """`tensor` is about to hold `result` in place: the nodes that computed `result` from
    `tensor`'s current value (its own node; with `since`, every node recorded after that
    sequence number, the parts of a composite in-place operation such as clamp_) saved that
    value legitimately: they expect the version after the write (torch's original_self), and
    with `copy_buffer` (the memory is about to be overwritten) they keep a copy of it."""
    edge = result._edge
    if type(edge) is not tuple:
        return
    vc = tensor._vc
    current = vc if type(vc) is int else vc.value
    if since is not None and edge[0].seq <= since:
        return  # (f returned a tensor made before the operation began)
    stack = [edge[0]]
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node.versions) is list:
            _adopt_node(node, tensor, current, copy_buffer)
        if since is None:
            break  # (the result's own node only)
        for parent in node.parents:
            if parent is not None:
                above = parent[0] if type(parent) is tuple else parent
                if above.seq > since:
                    stack.append(above)


def _adopt_node(node, tensor, current: int, copy_buffer: bool) -> None:
    """`adopt_saved` for one node: its saves of `tensor` at version `current`."""
    versions = node.versions
    mine = [
        k for k, v in enumerate(versions) if v is not None and v[0] is tensor and v[1] == current
    ]
    if not mine:
        return
    buffer = tensor._value
    primals = node.primals
    if copy_buffer and primals is not None and any(p is buffer for p in primals):
        primals = tuple(p.copy() if p is buffer else p for p in primals)
        node.primals = primals
    for k in mine:
        # A raw saved value is now the node's own (the old buffer, left intact or copied): no
        # later write into `tensor` reaches it, so it is no longer checked. A packed one
        # (saved-tensor hooks) may read `tensor` again: it expects the version after this write.
        own = primals is not None and k < len(primals) and type(primals[k]) is np.ndarray
        versions[k] = None if own else (tensor, current + 1)


def as_view_of(result, source, view: np.ndarray, op: str, grad_enabled: bool):
    """`result` (a level-0 Tensor computed from `source` by an operation that torch defines as
    a view but that autodiff computes as a copy: diagonal, as_strided) made a view of `source`:
    it takes `view`, a NumPy view of `source`'s memory holding the same values. Anything else
    (tracers: their level is not 0) is returned as it is."""
    trace = getattr(result, "_trace", None)
    if trace is None or trace.level or source._trace.level:
        return result
    if type(source._value) is not np.ndarray or result._view is not None:
        return result
    result._value = view
    mark_view(result, source, op, DEFAULT if grad_enabled else NO_GRAD_MODE)
    return result


def saved_output_written(tensor) -> None:
    """Before `tensor`'s memory is written in place: the node that produced it, if it saved its
    output (exp, tanh, sqrt save what they return) and that is this memory, expects the version
    before the write, so that a backward pass through it raises torch's "modified by an inplace
    operation" error rather than reading the new values."""
    edge = tensor._edge
    if type(edge) is not tuple:
        return
    node, index = edge
    versions = node.versions
    prim = node.prim
    if type(versions) is not list or prim is None or not prim.saves_output:
        return
    out = node.out
    if type(out) is tuple:
        out = out[index] if index < len(out) else None
    value = tensor._value
    if type(out) is np.ndarray and type(value) is np.ndarray and np.may_share_memory(out, value):
        vc = tensor._vc
        versions.append((tensor, vc if type(vc) is int else vc.value))


def stale(tensor) -> str | None:
    """torch's error for reading the grad_fn of a view that cannot follow a write into its base
    (made under no_grad or in inference mode, or one of several views, and its base, which
    requires grad, written in place since): None when it is not such a view."""
    meta = getattr(tensor, "_view", None)
    if meta is None:
        return None
    if meta.invalid is not None:
        return meta.invalid
    if meta.creation not in (NO_GRAD_MODE, INFERENCE_MODE, MULTI_OUTPUT):
        return None
    base = meta.base
    vc = tensor._vc
    if not (base._requires_grad or base._edge is not None) or meta.version == (
        vc if type(vc) is int else vc.value
    ):
        return None
    return base_written_message(meta)


def base_written_message(meta: ViewMeta) -> str:
    """The text of `stale`'s error."""
    if meta.creation == MULTI_OUTPUT:
        return (
            f"Output {meta.output} of {op_name(meta)} is a view and its base or another view of "
            "its base has been modified inplace. This view is the output of a function that "
            "returns multiple views. Such functions do not allow the output views to be "
            "modified inplace. You should replace the inplace operation by an out-of-place one."
        )
    if meta.creation == INFERENCE_MODE:
        made, now, block = "inference mode", "in normal mode", "inference_mode"
    else:
        made, now, block = "no_grad mode", "with grad mode enabled", "no_grad"
    return (
        f"A view was created in {made} and its base or another view of its base has been "
        f"modified inplace {now}. Given that this use case is ambiguous and error-prone, it is "
        "forbidden. You can clarify your code by moving both the view and the inplace either "
        f"both inside the {block} block (if you don't want the inplace to be tracked) or both "
        "outside (if you want the inplace to be tracked)."
    )


def memory_written(tensor) -> None:
    """Before `tensor`'s memory is written in place: `saved_output_written` for it and for every
    live tensor sharing its memory (its base, the base's views, the tensor a `detach()` alias
    was taken from), whose producers may have saved that memory."""
    saved_output_written(tensor)
    meta = getattr(tensor, "_view", None)
    if meta is not None:
        saved_output_written(meta.base)
    vc = tensor._vc
    if type(vc) is int or not vc.views:
        return
    for ref in list(vc.views):
        other = ref()
        if other is not None and other is not tensor:
            saved_output_written(other)
