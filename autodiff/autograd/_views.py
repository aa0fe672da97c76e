"""In-place operations on views and on tensors that have views, at level 0 (torch's CopySlices).

A view (core/views.py) shares its base's memory, so an in-place operation on it writes into
the base; the graph has to say so. As torch, the base's history is rebased on a CopySlices
node (`copy_slices_p`): its gradient is the incoming one with the written region zeroed for
the old base, and that region for the written value. Every live view of the base then takes
a new grad_fn reading the base (AsStridedBackward0, as torch's default), so a gradient through
any of them sees the write. The same happens when the base itself, or a `detach()` alias, is
written into while views of it live: the data are written through (the views see them) and
the views' grad_fns are renewed.

Where a view's elements lie in its base is read from the memory addresses
(`core.views.positions`): any chain of strided views (slices, transposes, reshapes, select,
narrow, ...) is covered without replaying it.

torch's errors for in-place operations on views are raised here, before anything is written:
a view of a leaf that requires grad, one of several views returned by one operation (split,
unbind), a view made under no_grad written with grad mode on, a view with overlapping
elements (expand).
"""

from __future__ import annotations

import numpy as np

from autodiff.autograd._state import autograd_state
from autodiff.core import views
from autodiff.core.abstract import ShapedArray, same_aval
from autodiff.core.graph import VersionCounter, name_node
from autodiff.core.primitive import Primitive
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE, state
from autodiff.ops.elementwise import imag, real, where
from autodiff.ops.gather_scatter import filled
from autodiff.ops.index import index_set, take
from autodiff.ops.structural import reshape


def _copy_slices_impl(base, value, *, positions, mask, shape):
    out = np.array(base, copy=True)
    if positions is None:
        out[...] = value
    else:
        out.reshape(-1)[positions.reshape(-1)] = np.reshape(value, -1)
    return out


def _copy_slices_vjp(g, base, value, *, out, positions, mask, shape):
    if positions is None:  # (the whole tensor overwritten)
        return filled(shape, 0, g.dtype), g
    return where(mask, 0.0, g), take(reshape(g, (-1,)), positions)


def _copy_slices_jvp(primals, tangents, *, out, positions, mask, shape):
    t_base, t_value = tangents
    if t_base is None and t_value is None:
        return None
    dtype = np.asarray(out).dtype if not isinstance(out, Tensor) else out.dtype
    if positions is None:
        return filled(shape, 0, dtype) if t_value is None else t_value
    if t_base is None:
        t_base = filled(shape, 0, dtype)
    if t_value is None:
        return where(mask, 0.0, t_base)
    flat = index_set(reshape(t_base, (-1,)), positions, t_value)
    return reshape(flat, shape)


copy_slices_p = Primitive("copy_slices")
copy_slices_p.saves_inputs = False  # its rules read the positions, not the values
copy_slices_p.saves_output = False
copy_slices_p.impl = _copy_slices_impl
copy_slices_p.abstract_eval = lambda base, value, **params: same_aval(base)
copy_slices_p.vjp = _copy_slices_vjp
copy_slices_p.jvp = _copy_slices_jvp


# ---- the checks torch makes before an in-place operation on a view ----


def _op_name(meta) -> str:
    return views.op_name(meta)


def check_view_inplace(view: Tensor, result_records: bool) -> None:
    """torch's errors for an in-place operation on `view` (nothing written yet)."""
    meta = view._view
    base = meta.base
    if not state().grad_enabled:
        return
    leaf = base._requires_grad and base._edge is None
    if not (result_records or leaf or base._edge is not None):
        return
    if meta.creation == views.MULTI_OUTPUT:
        raise RuntimeError(
            f"Output {meta.output} of {_op_name(meta)} is a view and is being modified inplace. "
            "This view is the output of a function that returns multiple views. Such functions "
            "do not allow the output views to be modified inplace. You should replace the "
            "inplace operation by an out-of-place one."
        )
    if meta.creation in (views.NO_GRAD_MODE, views.INFERENCE_MODE):
        if meta.creation == views.NO_GRAD_MODE:
            made, now, block = "no_grad mode", "with grad mode enabled", "no_grad"
        else:
            made, now, block = "inference mode", "in normal mode", "inference_mode"
        if meta.of_view_of == meta.creation:
            lead = (
                f"Output {meta.output} of {_op_name(meta)} is a view of a view which was created "
                f"in {made} and is being modified inplace {now}."
            )
        else:
            lead = f"A view was created in {made} and is being modified inplace {now}."
        raise RuntimeError(
            f"{lead} Given that this use case is ambiguous and error-prone, it is forbidden. "
            "You can clarify your code by moving both the view and the inplace either both "
            f"inside the {block} block (if you don't want the inplace to be tracked) or both "
            "outside (if you want the inplace to be tracked)."
        )
    if meta.creation == views.IN_CUSTOM_FUNCTION:
        raise RuntimeError(
            f"Output {meta.output} of {_op_name(meta)} is a view and is being modified inplace. "
            "This view was created inside a custom Function (or because an input was returned "
            "as-is) and the autograd logic to handle view+inplace would override the custom "
            "backward associated with the custom Function, leading to incorrect gradients. "
            "This behavior is forbidden. You can fix this by cloning the output of the custom "
            "Function."
        )
    if leaf:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )


_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


def _writable(buffer: np.ndarray) -> np.ndarray:
    """`buffer` itself, or a writable alias of a read-only view (NumPy's diagonal) whose memory
    is writable; torch's error for views that repeat elements (expand)."""
    if any(s == 0 and n > 1 for n, s in zip(buffer.shape, buffer.strides)):
        raise RuntimeError(_OVERLAP)
    if buffer.flags.writeable:
        return buffer
    root = buffer
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.writeable:
        raise ValueError("assignment destination is read-only")
    start = buffer.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return np.ndarray(buffer.shape, buffer.dtype, buffer=root, offset=start, strides=buffer.strides)


def _bump(tensor: Tensor) -> None:
    vc = tensor._vc
    if type(vc) is VersionCounter:
        vc.value += 1
    else:
        tensor._vc = vc + 1


def _renew_views(base: Tensor, skip: Tensor | None = None) -> None:
    """Give every live view of `base` made in grad mode a grad_fn reading the (new) base."""
    if base._edge is None and not base._requires_grad:
        return
    for v in views.views_of(base):
        if v is skip:
            continue
        if v._view.creation == views.DEFAULT:
            _regrow(v, base)
        elif v._view.creation in (views.MULTI_OUTPUT, views.NO_GRAD_MODE, views.INFERENCE_MODE):
            _invalidate(v)


def _invalidate_vjp(g, *, out, message):
    raise RuntimeError(message)


# The grad_fn of a view that cannot follow a write into its base: its backward raises.
invalid_view_p = Primitive("invalid_view")
invalid_view_p.saves_inputs = False
invalid_view_p.saves_output = False
invalid_view_p.impl = lambda *, message: np.zeros(())
invalid_view_p.abstract_eval = lambda *, message: ShapedArray((), np.dtype(np.float64))
invalid_view_p.vjp = _invalidate_vjp


def _invalidate(view: Tensor) -> None:
    """torch's error for a view made under no_grad, or one of several views, once its base was
    written in place with grad mode on: reading its grad_fn raises it, and so does a backward
    pass through it (torch raises at any use)."""
    _poison(view, views.base_written_message(view._view))


def _poison(view: Tensor, message: str) -> None:
    view._view.invalid = message
    poisoned = EVAL_TRACE.recorder(invalid_view_p, (), {"message": message}, np.zeros(()))
    view._edge = poisoned._edge


def _regrow(view: Tensor, base: Tensor, pos: np.ndarray | None = None) -> None:
    part = None
    try:
        if pos is None:
            pos = views.positions(view._value, base._value)
    except ValueError:  # (a view of another element size: the real or imaginary parts?)
        try:
            pos, part = views.part_positions(view._value, base._value)
        except ValueError:
            _poison(
                view,
                "This view (of another element type than its base: view(dtype)) cannot follow "
                "an in-place write into its base: take it again from the base after the write.",
            )
            return
    fresh = take(reshape(base, (-1,)), pos)
    if part is not None:
        fresh = (imag if part else real)(fresh)
    if isinstance(fresh, Tensor) and fresh._edge is not None:
        view._rebase(name_node(fresh, "AsStridedBackward0")._edge)


def write_view(view: Tensor, result, since=None) -> Tensor:
    """`view` (a level-0 view) made to hold `result` in place: written into the base's memory,
    the base's history rebased on CopySlices when the write is recorded."""
    meta = view._view
    base = meta.base
    grad = state().grad_enabled
    if isinstance(result, Tensor) and result._trace is not EVAL_TRACE:
        raise RuntimeError(
            "An in-place operation would write a value that carries a derivative (of a dual "
            f"level or transform: a {type(result).__name__}) into a view of a tensor that has "
            "none. Use the out-of-place form, e.g. `x = x + y` for `x += y`."
        )
    records = grad and isinstance(result, Tensor) and result._edge is not None
    check_view_inplace(view, records)
    value = view._inplace_value(result)
    graph = grad and (records or base._edge is not None)
    pos = mask = None
    if graph:
        try:
            pos = views.positions(view._value, base._value)
        except ValueError:
            raise NotImplementedError(
                "An in-place operation on a view of another element type (the real or "
                "imaginary part of a complex tensor, view(dtype)) is not supported while "
                "gradients are recorded: write the whole tensor instead (e.g. torch.complex)."
            ) from None
        flat = pos.reshape(-1)
        if np.unique(flat).size != flat.size:
            raise RuntimeError(_OVERLAP)
        mask = np.zeros(base._value.size, dtype=bool)
        mask[flat] = True
        mask = mask.reshape(base.shape)
    buffer = _writable(view._value)
    if records:
        views.adopt_saved(view, result, since, copy_buffer=True)
    views.memory_written(view)
    np.copyto(buffer, value, casting="unsafe")
    _bump(view)
    if graph:
        source = result if records else Tensor._from(np.asarray(value))
        rebased = EVAL_TRACE.recorder(
            copy_slices_p,
            (base, source),
            {"positions": pos, "mask": mask, "shape": base.shape},
            base._value,
        )
        base._rebase(rebased._edge)
        _regrow(view, base, pos)
        _renew_views(base, skip=view)
    return view


def write_aliased(tensor: Tensor, result, since=None) -> Tensor:
    """`tensor` (level 0, not a view) made to hold `result` in place where the general path
    cannot simply take the new buffer: others share its memory (its views, `detach()`
    aliases), so the data are written through and its views' grad_fns renewed; or the write
    is not recorded but `tensor` has a history (`y.zero_()`, `y.copy_(constant)`), which is
    then cut by a CopySlices node of the whole tensor (torch's ZeroBackward0, CopyBackwards:
    no gradient reaches the old value)."""
    grad = state().grad_enabled
    value = tensor._inplace_value(result)
    records = grad and isinstance(result, Tensor) and result._edge is not None
    if records:
        views.adopt_saved(tensor, result, since, copy_buffer=True)
    try:
        buffer = _writable(tensor._value)
    except (ValueError, RuntimeError):  # (read-only or repeating memory: a new buffer, which
        buffer = None  # its aliases no longer see)
    if buffer is None:
        tensor._value = np.array(value, dtype=tensor.dtype)
    else:
        views.memory_written(tensor)
        np.copyto(buffer, value, casting="unsafe")
    _bump(tensor)
    if records:
        tensor._rebase(result._edge)
    elif grad and tensor._edge is not None:
        source = Tensor._from(np.array(value, dtype=tensor.dtype))
        rebased = EVAL_TRACE.recorder(
            copy_slices_p,
            (tensor, source),
            {"positions": None, "mask": None, "shape": tensor.shape},
            tensor._value,
        )
        tensor._rebase(rebased._edge)
    _renew_views(tensor)
    return tensor


views.set_view_writer(write_view, write_aliased, lambda: autograd_state().seq)
