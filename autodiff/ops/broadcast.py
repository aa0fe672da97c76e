"""Broadcasting primitives: broadcast_to and its transpose sum_to_shape (used by binary rules)."""

import numpy as np

from autodiff.core.abstract import ShapedArray, accumulation_dtype, shaped_like
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor

# (Module-level names: numpy's module __getattr__ keeps CPython from specializing `np.name`
# loads, and these run once per broadcasting operand of a backward pass.)
_HAVE_SHAPE = (np.ndarray, Tensor, np.generic, ShapedArray)
_add_reduce = np.add.reduce


def shape_of(x) -> tuple:
    """Shape of an array, Tensor, abstract value or Python scalar."""
    return x.shape if isinstance(x, _HAVE_SHAPE) else np.shape(x)


def _sum_to_shape_impl(x, shape):
    try:
        x_shape = x.shape  # (np.shape is a dispatched function: microseconds a call)
    except AttributeError:
        x_shape = np.shape(x)
    if x_shape == shape:
        return x
    if not shape:  # the common case of a scalar operand: one reduction over everything
        return _add_reduce(x, axis=None)
    lead = len(x_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and x_shape[i + lead] != 1
    )
    # np.add.reduce is np.sum without its Python-level dispatch (a few microseconds a call).
    out = _add_reduce(x, axis=axes, keepdims=True) if axes else x
    return out.reshape(shape) if lead or out.shape != shape else out


def _broadcast_to_abstract_eval(x, *, shape):
    if np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to shape {shape}")
    return shaped_like(x, shape)


def _sum_to_shape_abstract_eval(x, *, shape):
    if x.shape == shape:
        return x
    return shaped_like(x, shape, accumulation_dtype(x.dtype))  # a sum, as np.add.reduce sums


broadcast_to_p = Primitive("broadcast_to")
broadcast_to_p.node_name = "ExpandBackward0"
broadcast_to_p.saves_inputs = False
broadcast_to_p.saves_output = False
broadcast_to_p.impl = lambda x, shape: np.broadcast_to(x, shape)
broadcast_to_p.abstract_eval = _broadcast_to_abstract_eval
broadcast_to_p.jvp = lambda primals, tangents, *, out, shape: broadcast_to(tangents[0], shape)
broadcast_to_p.vjp = lambda g, x, *, out, shape: (sum_to_shape(g, shape_of(x)),)

sum_to_shape_p = Primitive("sum_to_shape")
sum_to_shape_p.saves_inputs = False
sum_to_shape_p.saves_output = False
sum_to_shape_p.impl = _sum_to_shape_impl
sum_to_shape_p.abstract_eval = _sum_to_shape_abstract_eval
sum_to_shape_p.jvp = lambda primals, tangents, *, out, shape: sum_to_shape(tangents[0], shape)
sum_to_shape_p.vjp = lambda g, x, *, out, shape: (broadcast_to(g, shape_of(x)),)


def broadcast_to(x, shape):
    """`numpy.broadcast_to`, differentiable."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if shape_of(x) == shape:
        return x
    return bind(broadcast_to_p, x, shape=shape)


def sum_to_shape(x, shape):
    """Sum `x` over the axes that broadcasting added or stretched, so that it has `shape`."""
    shape = tuple(shape)
    if shape_of(x) == shape:
        return x
    return bind(sum_to_shape_p, x, shape=shape)


def _reshape(x, shape):
    from autodiff.ops.shape import FUNCTIONS as shape_ops

    return shape_ops["reshape"](x, shape)


def _broadcast_to_batch(values, dims, *, shape):
    from autodiff.ops.batching import move_to_front

    x = move_to_front(values[0], dims[0])
    size, per_example = shape_of(x)[0], tuple(shape_of(x)[1:])
    x = _reshape(x, (size,) + (1,) * (len(shape) - len(per_example)) + per_example)
    return broadcast_to(x, (size,) + shape), 0


def _sum_to_shape_batch(values, dims, *, shape):
    from autodiff.ops.batching import move_to_front

    x = move_to_front(values[0], dims[0])
    size, per_example = shape_of(x)[0], tuple(shape_of(x)[1:])
    lead = len(per_example) - len(shape)
    x = sum_to_shape(x, (size,) + (1,) * lead + shape)
    return _reshape(x, (size,) + shape), 0


broadcast_to_p.batch = _broadcast_to_batch
sum_to_shape_p.batch = _sum_to_shape_batch
