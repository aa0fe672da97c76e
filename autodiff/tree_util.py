"""Pytree utilities under JAX's names: `autodiff.tree_util` is `jax.tree_util`.

Example:
    >>> from autodiff import tree_util
    >>> tree_util.tree_map(lambda x: 2 * x, {"w": 1.0, "b": (2.0,)})
    {'b': (4.0,), 'w': 2.0}
    >>> [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path({"w": [1.0]})]
    ["['w'][0]"]
"""

import numpy as np

import autodiff.numpy as anp
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


def ravel_pytree(pytree):
    """Flatten a pytree of arrays into one 1-D array, and a function that undoes it.

    JAX's `jax.flatten_util.ravel_pytree` (HIPS autograd's `autograd.misc.flatten`): the
    leaves, raveled in `tree_flatten`'s order, concatenated in their common dtype;
    `unravel(v)` splits a vector of that length back into the tree, each leaf in its shape
    and dtype. Both directions are differentiable, so the flat vector may be a traced value.

    Example:
        >>> import numpy as np
        >>> from autodiff.tree_util import ravel_pytree
        >>> flat, unravel = ravel_pytree({"w": np.array([[1.0, 2.0]]), "b": 3.0})
        >>> flat
        array([3., 1., 2.])
        >>> unravel(2 * flat)
        {'b': array(6.), 'w': array([[2., 4.]])}
    """
    leaves, treedef = tree_flatten(pytree)
    shapes = [anp.shape(leaf) for leaf in leaves]
    dtypes = [anp.result_type(leaf) for leaf in leaves]
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    if leaves:
        flat = anp.concatenate([anp.ravel(anp.asarray(leaf, dtype=dtype)) for leaf in leaves])
    else:
        flat = np.zeros(0, dtype)
    total = sum(sizes)

    def unravel(vector):
        if anp.shape(vector) != (total,):
            raise ValueError(
                f"unravel expected a vector of shape ({total},), got shape {anp.shape(vector)}"
            )
        pieces, start = [], 0
        for shape, size, leaf_dtype in zip(shapes, sizes, dtypes, strict=True):
            piece = anp.reshape(vector[start : start + size], shape)
            pieces.append(anp.asarray(piece, dtype=leaf_dtype))
            start += size
        return tree_unflatten(treedef, pieces)

    return flat, unravel


__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "PyTreeDef",
    "SequenceKey",
    "keystr",
    "prefix_errors",
    "ravel_pytree",
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
