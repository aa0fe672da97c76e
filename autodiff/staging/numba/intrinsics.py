"""Numba intrinsics the generated code imports (this module imports Numba: load it only
from compiled code or the Numba backend)."""

from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic

# Bumped when an intrinsic's code changes: approx.SOURCE carries it, so cached modules
# compiled against an older intrinsic are not reused (cache.py keys on the source).
VERSION = 2


@intrinsic
def float_from_bits(typingctx, bits):
    """The float64 whose IEEE-754 bits are the int64 `bits` (a bit cast, no conversion)."""
    if not isinstance(bits, types.Integer) or bits.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(bits), codegen


@intrinsic
def float_to_bits(typingctx, value):
    """The int64 holding the IEEE-754 bits of the float64 `value` (a bit cast)."""
    if value != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(value), codegen


__all__ = ["VERSION", "float_from_bits", "float_to_bits"]
