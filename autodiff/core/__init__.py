"""The tracer layer: levels, traces, Tensor, Primitive and bind, pytrees, dtypes, errors.

Nothing here imports from the rest of the package; everything else builds on it.
"""

from autodiff.core.errors import EscapedTracerError, TracerConversionError
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import (
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EvalTrace, Trace, current_level, new_trace, trace_stack_depth

__all__ = [
    "EscapedTracerError",
    "EvalTrace",
    "Primitive",
    "Tensor",
    "Trace",
    "TracerConversionError",
    "bind",
    "current_level",
    "new_trace",
    "register_pytree_node",
    "trace_stack_depth",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]
