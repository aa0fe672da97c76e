"""Pytree utilities under JAX's names: `autodiff.tree_util` is `jax.tree_util`.

Example:
    >>> from autodiff import tree_util
    >>> tree_util.tree_map(lambda x: 2 * x, {"w": 1.0, "b": (2.0,)})
    {'b': (4.0,), 'w': 2.0}
    >>> [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path({"w": [1.0]})]
    ["['w'][0]"]
"""

from autodiff.core.pytree import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    SequenceKey,
    TreeDef,
    keystr,
    prefix_errors,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    tree_all,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_structure,
    tree_unflatten,
    treedef_is_leaf,
)

PyTreeDef = TreeDef

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "PyTreeDef",
    "SequenceKey",
    "keystr",
    "prefix_errors",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "tree_all",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_structure",
    "tree_unflatten",
    "treedef_is_leaf",
]
