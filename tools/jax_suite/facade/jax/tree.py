"""`jax.tree`: the short names of autodiff.tree_util."""

from autodiff.tree_util import tree_flatten as flatten
from autodiff.tree_util import tree_leaves as leaves
from autodiff.tree_util import tree_map as map
from autodiff.tree_util import tree_reduce as reduce
from autodiff.tree_util import tree_structure as structure
from autodiff.tree_util import tree_unflatten as unflatten

__all__ = ["flatten", "leaves", "map", "reduce", "structure", "unflatten"]
