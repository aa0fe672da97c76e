"""Forward mode: ForwardTrace (dual numbers on the level stack), jvp, linearize, hvp, dual
levels.
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
from autodiff.forward_ad.transforms import hvp, jvp, linearize

__all__ = [
    "ForwardTrace",
    "ForwardTracer",
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "hvp",
    "jvp",
    "linearize",
    "make_dual",
    "unpack_dual",
]
