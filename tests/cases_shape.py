"""Op table: shape functions (reshape, transpose, stacking, splitting, tile, repeat, flip, array).

Each case is written once as `f(module, *arrays)` and run with autodiff.numpy and with
numpy for the reference. Outputs are squared: the ops are linear, so without it the
second-order check would only see zeros.
"""

import numpy as np
from optable import OpCase, arr

import autodiff.numpy as anp


def _square(out):
    if isinstance(out, (tuple, list)):
        return tuple(o * o for o in out)
    return out * out


def case(name, f, *args, **kwargs):
    return OpCase(
        name,
        lambda *xs: _square(f(anp, *xs)),
        args,
        ref=lambda *xs: _square(f(np, *xs)),
        **kwargs,
    )


def dispatched(name, f, *args):
    """Plain `numpy` code on tracers: NumPy dispatches to autodiff.numpy."""
    return OpCase(name, lambda *xs: _square(f(*xs)), args, ref=lambda *xs: _square(f(*xs)))


CONST = np.linspace(-1.0, 1.0, 6).reshape(2, 3)

CASES = [
    # reshape / ravel
    case("reshape", lambda m, x: m.reshape(x, (3, 2)), arr(2, 3)),
    case("reshape_infer", lambda m, x: m.reshape(x, (2, -1)), arr(6)),
    case("reshape_int", lambda m, x: m.reshape(x, 6), arr(2, 3)),
    case("reshape_scalar", lambda m, x: m.reshape(x, (1, 1)), arr()),
    case("reshape_to_scalar", lambda m, x: m.reshape(x, ()), arr(1, 1)),
    case("reshape_F", lambda m, x: m.reshape(x, (4, -1), order="F"), arr(2, 3, 4)),
    case("reshape_method", lambda m, x: x.reshape(3, 2), arr(2, 3)),
    case("reshape_method_tuple", lambda m, x: x.reshape((3, 2)), arr(6)),
    case("ravel", lambda m, x: m.ravel(x), arr(2, 3)),
    case("ravel_scalar", lambda m, x: m.ravel(x), arr()),
    case("ravel_F", lambda m, x: m.ravel(x, order="F"), arr(2, 3)),
    case("ravel_method", lambda m, x: x.ravel(), arr(3, 2)),
    case("flatten_method", lambda m, x: x.flatten(), arr(3, 2)),
    # transpose family
    case("transpose", lambda m, x: m.transpose(x), arr(2, 3)),
    case("transpose_3d", lambda m, x: m.transpose(x), arr(2, 3, 4)),
    case("transpose_axes", lambda m, x: m.transpose(x, (2, 0, 1)), arr(2, 3, 4)),
    case("transpose_negative", lambda m, x: m.transpose(x, (-1, 0, 1)), arr(2, 3, 4)),
    case("transpose_1d", lambda m, x: m.transpose(x), arr(5)),
    case("transpose_scalar", lambda m, x: m.transpose(x), arr()),
    case("T", lambda m, x: x.T, arr(2, 3)),
    case("transpose_method", lambda m, x: x.transpose(1, 0, 2), arr(2, 3, 4)),
    case("swapaxes", lambda m, x: m.swapaxes(x, 0, 2), arr(2, 3, 4)),
    case("swapaxes_negative", lambda m, x: m.swapaxes(x, -1, 0), arr(2, 3)),
    case("swapaxes_same", lambda m, x: m.swapaxes(x, 1, 1), arr(2, 3)),
    case("swapaxes_method", lambda m, x: x.swapaxes(0, 1), arr(2, 3)),
    case("moveaxis", lambda m, x: m.moveaxis(x, 0, -1), arr(2, 3, 4)),
    case("moveaxis_many", lambda m, x: m.moveaxis(x, [0, 1], [2, 0]), arr(2, 3, 4)),
    # expand_dims / squeeze
    case("expand_dims", lambda m, x: m.expand_dims(x, 0), arr(3)),
    case("expand_dims_negative", lambda m, x: m.expand_dims(x, -1), arr(2, 3)),
    case("expand_dims_tuple", lambda m, x: m.expand_dims(x, (0, 2)), arr(2, 3)),
    case("expand_dims_scalar", lambda m, x: m.expand_dims(x, 0), arr()),
    case("squeeze", lambda m, x: m.squeeze(x), arr(1, 3, 1)),
    case("squeeze_axis", lambda m, x: m.squeeze(x, 0), arr(1, 3, 1)),
    case("squeeze_negative", lambda m, x: m.squeeze(x, -1), arr(1, 3, 1)),
    case("squeeze_tuple", lambda m, x: m.squeeze(x, (0, -1)), arr(1, 3, 1)),
    case("squeeze_to_scalar", lambda m, x: m.squeeze(x), arr(1, 1)),
    case("squeeze_noop", lambda m, x: m.squeeze(x), arr(3)),
    case("squeeze_method", lambda m, x: x.squeeze(), arr(2, 1)),
    # broadcasting
    case("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3)), arr(3)),
    case("broadcast_to_scalar", lambda m, x: m.broadcast_to(x, (4,)), arr()),
    case("broadcast_to_3d", lambda m, x: m.broadcast_to(x, (2, 3, 4)), arr(3, 1)),
    case("broadcast_arrays", lambda m, x, y: m.broadcast_arrays(x, y), arr(3, 1), arr(4)),
    # concatenate / stack
    case("concatenate", lambda m, x, y: m.concatenate([x, y]), arr(2, 3), arr(1, 3)),
    case("concatenate_axis", lambda m, x, y: m.concatenate((x, y), axis=-1), arr(2, 3), arr(2, 1)),
    case("concatenate_None", lambda m, x, y: m.concatenate([x, y], axis=None), arr(2, 3), arr(4)),
    case("concatenate_three", lambda m, x, y: m.concatenate([x, y, x]), arr(3), arr(2)),
    case("concatenate_one", lambda m, x: m.concatenate([x], axis=1), arr(2, 3)),
    case("concatenate_const", lambda m, x: m.concatenate([x, CONST, [[1.0, 2.0, 3.0]]]), arr(2, 3)),
    case("concatenate_same_twice", lambda m, x: m.concatenate([x, x], 1), arr(2, 2)),
    case("concatenate_empty_piece", lambda m, x, y: m.concatenate([x, y]), arr(0, 3), arr(2, 3)),
    case("stack", lambda m, x, y: m.stack([x, y, x]), arr(2, 3), arr(2, 3)),
    case("stack_axis", lambda m, x, y: m.stack([x, y], axis=-1), arr(2, 3), arr(2, 3)),
    case("stack_middle", lambda m, x, y: m.stack([x, y], axis=1), arr(2, 3), arr(2, 3)),
    case("stack_scalars", lambda m, x, y: m.stack([x, y, x]), arr(), arr()),
    case("hstack_1d", lambda m, x, y: m.hstack([x, y]), arr(3), arr(2)),
    case("hstack_2d", lambda m, x, y: m.hstack([x, y]), arr(2, 3), arr(2, 1)),
    case("hstack_scalars", lambda m, x, y: m.hstack([x, y]), arr(), arr()),
    case("vstack_1d", lambda m, x, y: m.vstack([x, y]), arr(3), arr(3)),
    case("vstack_2d", lambda m, x, y: m.vstack([x, y]), arr(2, 3), arr(3)),
    case("dstack", lambda m, x, y: m.dstack([x, y]), arr(2, 3), arr(2, 3)),
    case("dstack_1d", lambda m, x, y: m.dstack([x, y]), arr(3), arr(3)),
    case("column_stack", lambda m, x, y: m.column_stack([x, y]), arr(3), arr(3, 2)),
    # split family
    case("split_sections", lambda m, x: m.split(x, 3), arr(6)),
    case("split_indices", lambda m, x: m.split(x, [1, 4], axis=1), arr(2, 6)),
    case("split_negative_axis", lambda m, x: m.split(x, 2, axis=-1), arr(3, 4)),
    case("split_negative_index", lambda m, x: m.split(x, [-2]), arr(5)),
    case("split_overlapping", lambda m, x: m.split(x, [3, 1]), arr(5)),
    case("split_past_end", lambda m, x: m.split(x, [2, 10]), arr(5)),
    case("split_one_used", lambda m, x: m.split(x, 2)[1], arr(4)),
    case("array_split", lambda m, x: m.array_split(x, 3), arr(7)),
    case("array_split_axis", lambda m, x: m.array_split(x, 4, axis=1), arr(3, 5)),
    case("array_split_more", lambda m, x: m.array_split(x, 4), arr(3)),
    case("hsplit", lambda m, x: m.hsplit(x, 2), arr(3, 4)),
    case("hsplit_1d", lambda m, x: m.hsplit(x, [1]), arr(4)),
    case("vsplit", lambda m, x: m.vsplit(x, [1]), arr(3, 2)),
    case("dsplit", lambda m, x: m.dsplit(x, 2), arr(2, 1, 4)),
    # tile / repeat
    case("tile", lambda m, x: m.tile(x, 2), arr(3)),
    case("tile_2d", lambda m, x: m.tile(x, (2, 1)), arr(2, 3)),
    case("tile_promote", lambda m, x: m.tile(x, (2, 1, 2)), arr(2, 3)),
    case("tile_short_reps", lambda m, x: m.tile(x, 2), arr(2, 3)),
    case("tile_scalar", lambda m, x: m.tile(x, (3,)), arr()),
    case("tile_ones", lambda m, x: m.tile(x, (1, 1, 1)), arr(2, 3)),
    case("tile_zero", lambda m, x: m.tile(x, (0, 2)), arr(2, 3)),
    case("repeat", lambda m, x: m.repeat(x, 2), arr(3)),
    case("repeat_flat", lambda m, x: m.repeat(x, 3), arr(2, 3)),
    case("repeat_axis", lambda m, x: m.repeat(x, 2, axis=-2), arr(2, 3)),
    case("repeat_array", lambda m, x: m.repeat(x, [1, 0, 2], axis=1), arr(2, 3)),
    case("repeat_array_flat", lambda m, x: m.repeat(x, [3, 1, 2, 0]), arr(2, 2)),
    case("repeat_array_one", lambda m, x: m.repeat(x, [2], axis=0), arr(4)),
    case("repeat_equal_array", lambda m, x: m.repeat(x, np.array([2, 2]), axis=0), arr(2, 3)),
    case("repeat_all_zero", lambda m, x: m.repeat(x, [0, 0, 0]), arr(3)),
    case("repeat_scalar", lambda m, x: m.repeat(x, 3), arr()),
    case("repeat_method", lambda m, x: x.repeat(2, axis=0), arr(2, 3)),
    # flips
    case("flip", lambda m, x: m.flip(x), arr(2, 3)),
    case("flip_axis", lambda m, x: m.flip(x, 0), arr(2, 3)),
    case("flip_negative", lambda m, x: m.flip(x, -1), arr(2, 3, 2)),
    case("flip_tuple", lambda m, x: m.flip(x, (0, 2)), arr(2, 3, 2)),
    case("flip_scalar", lambda m, x: m.flip(x), arr()),
    case("fliplr", lambda m, x: m.fliplr(x), arr(2, 3)),
    case("flipud", lambda m, x: m.flipud(x), arr(3)),
    # atleast_nd
    case("atleast_1d", lambda m, x: m.atleast_1d(x), arr()),
    case("atleast_1d_many", lambda m, x, y: m.atleast_1d(x, y), arr(), arr(2, 3)),
    case("atleast_2d", lambda m, x: m.atleast_2d(x), arr(3)),
    case("atleast_2d_scalar", lambda m, x: m.atleast_2d(x), arr()),
    case("atleast_3d_scalar", lambda m, x: m.atleast_3d(x), arr()),
    case("atleast_3d_1d", lambda m, x: m.atleast_3d(x), arr(3)),
    case("atleast_3d_2d", lambda m, x: m.atleast_3d(x), arr(2, 3)),
    case("atleast_3d_many", lambda m, x, y: m.atleast_3d(x, y), arr(2, 3, 4), arr(2)),
    # copies and array construction from Tensors mixed with numbers
    case("copy", lambda m, x: m.copy(x), arr(2, 3)),
    case("array_of_tensor", lambda m, x: m.array(x), arr(2, 3)),
    case("array_ndmin", lambda m, x: m.array(x, ndmin=3), arr(3)),
    case("array_rows", lambda m, x, y: m.array([x, y, x]), arr(3), arr(3)),
    case("array_mixed", lambda m, x: m.array([x[0], 2.0 * x[1], 1.0]), arr(2)),
    case("array_nested", lambda m, x, y: m.array([[x, 1.0], [y, x * y]]), arr(), arr()),
    case("array_tuple", lambda m, x: m.array(((x, x), (2.0 * x, 0.5))), arr()),
    case("asarray_of_tensor", lambda m, x: m.asarray(x), arr(2, 3)),
    case("asarray_list", lambda m, x: m.asarray([x, x * x]), arr(3)),
    # plain numpy code on tracers
    dispatched("np.reshape", lambda x: np.reshape(x, (3, 2)), arr(6)),
    dispatched("np.transpose", lambda x: np.transpose(x, (1, 0)), arr(2, 3)),
    dispatched("np.concatenate", lambda x, y: np.concatenate([x, y], axis=1), arr(2, 2), arr(2, 1)),
    dispatched("np.stack", lambda x: np.stack([x, 2.0 * x], axis=1), arr(3)),
    dispatched("np.split", lambda x: tuple(np.split(x, [1])), arr(3, 2)),
    dispatched("np.repeat", lambda x: np.repeat(x, [2, 1], axis=0), arr(2, 3)),
    dispatched("np.tile", lambda x: np.tile(x, (2, 2)), arr(3)),
    dispatched("np.flip", lambda x: np.flip(x), arr(3)),
    dispatched("np.squeeze", lambda x: np.squeeze(x), arr(1, 3)),
    dispatched("np.expand_dims", lambda x: np.expand_dims(x, 1), arr(3)),
    dispatched("np.moveaxis", lambda x: np.moveaxis(x, 0, 1), arr(2, 3)),
    dispatched("np.atleast_2d", lambda x: np.atleast_2d(x), arr(3)),
    dispatched("np.ravel", lambda x: np.ravel(x), arr(2, 2)),
]
