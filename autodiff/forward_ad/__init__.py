"""Forward mode: ForwardTrace (dual numbers on the level stack), jvp, torch-style dual levels.

May import core and ops.
"""

from autodiff.forward_ad.dual import (
    UnpackedDualTensor,
    dual_level,
    enter_dual_level,
    exit_dual_level,
    make_dual,
    unpack_dual,
)
from autodiff.forward_ad.trace import ForwardTrace, ForwardTracer
from autodiff.forward_ad.transforms import jvp

__all__ = [
    "ForwardTrace",
    "ForwardTracer",
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "jvp",
    "make_dual",
    "unpack_dual",
]
