"""Reverse mode: ReverseTrace, the backward engine, grad / value_and_grad / vjp, jacrev."""

from autodiff.core.graph import Node
from autodiff.reverse.engine import backward_pass
from autodiff.reverse.graph import ReverseTrace, ReverseTracer
from autodiff.reverse.transforms import grad, value_and_grad, vjp

__all__ = [
    "Node",
    "ReverseTrace",
    "ReverseTracer",
    "backward_pass",
    "grad",
    "value_and_grad",
    "vjp",
]
