"""Reverse mode: ReverseTrace, the backward engine, grad / value_and_grad / vjp, linearize.

May import core, kernels and ops (the torch face plugs its pass in from above: PassHooks).
"""

from autodiff.core.graph import Node
from autodiff.reverse.engine import backward_pass
from autodiff.reverse.graph import ReverseTrace, ReverseTracer
from autodiff.reverse.transforms import grad, linear_transpose, linearize, value_and_grad, vjp

__all__ = [
    "Node",
    "ReverseTrace",
    "ReverseTracer",
    "backward_pass",
    "grad",
    "linear_transpose",
    "linearize",
    "value_and_grad",
    "vjp",
]
