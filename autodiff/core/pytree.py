"""Pytrees: nested containers of leaves (tuple, list, dict, namedtuple, None, registered types).

`tree_flatten` returns the leaves in a fixed order and a `TreeDef` that rebuilds
the structure; transforms use it at their API boundary so the core only ever sees
flat lists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

_registry: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(
    cls: type, flatten: Callable[[Any], tuple[list, Any]], unflatten: Callable[[Any, list], Any]
) -> None:
    """Teach the pytree utilities to look inside instances of `cls`.

    Arguments:
        cls: the container type.
        flatten: `obj -> (children, aux_data)`; `aux_data` must be hashable and comparable.
        unflatten: `(aux_data, children) -> obj`.

    Example:
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda _, c: Pair(*c))
        >>> tree_leaves(Pair(1.0, (2.0, 3.0)))
        [1.0, 2.0, 3.0]
    """
    _registry[cls] = (flatten, unflatten)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(x):
    """(kind, aux, children) for a container node, or None for a leaf."""
    cls = type(x)
    if cls is tuple or cls is list:
        return cls, None, list(x)
    if cls is dict:
        keys = sorted(x, key=_sort_key)
        return dict, tuple(keys), [x[k] for k in keys]
    if x is None:
        return type(None), None, []
    if cls in _registry:
        children, aux = _registry[cls][0](x)
        return cls, aux, list(children)
    if _is_namedtuple(x):
        return cls, None, list(x)
    return None


def _sort_key(k):
    return (type(k).__name__, k) if not isinstance(k, str) else ("str", k)


class TreeDef:
    """The structure of a pytree, without its leaves."""

    __slots__ = ("kind", "aux", "children", "num_leaves")

    def __init__(self, kind, aux, children: tuple[TreeDef, ...]):
        self.kind = kind
        self.aux = aux
        self.children = children
        self.num_leaves: int = 1 if kind is None else sum(c.num_leaves for c in children)

    def __eq__(self, other):
        return (
            isinstance(other, TreeDef)
            and self.kind is other.kind
            and self.aux == other.aux
            and self.children == other.children
        )

    def __hash__(self):
        return hash((self.kind, self.aux, self.children))

    def __repr__(self):
        if self.kind is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        name = "None" if self.kind is type(None) else self.kind.__name__
        return (
            f"PyTreeDef({name}[{inner}])"
            if self.aux is None
            else f"PyTreeDef({name}{self.aux}[{inner}])"
        )

    def unflatten(self, leaves) -> Any:
        return tree_unflatten(self, leaves)


_LEAF = TreeDef(None, None, ())
LEAF = _LEAF  # the structure of a lone leaf (what tree_flatten gives for an array)


def tree_flatten(tree) -> tuple[list, TreeDef]:
    """Flatten a pytree into its list of leaves and its structure.

    Example:
        >>> leaves, treedef = tree_flatten({"b": (1, 2), "a": [3]})
        >>> leaves
        [3, 1, 2]
        >>> tree_unflatten(treedef, [30, 10, 20])
        {'a': [30], 'b': (10, 20)}
    """
    leaves: list = []
    # Iterative post-order build: each frame holds a node and its finished child defs.
    root = _children(tree)
    if root is None:
        return [tree], _LEAF
    stack: list[tuple[tuple, Iterator, list[TreeDef]]] = [(root, iter(root[2]), [])]
    while True:
        (kind, aux, _), it, defs = stack[-1]
        for child in it:
            node = _children(child)
            if node is None:
                leaves.append(child)
                defs.append(_LEAF)
            else:
                stack.append((node, iter(node[2]), []))
                break
        else:
            stack.pop()
            done = TreeDef(kind, aux, tuple(defs))
            if not stack:
                return leaves, done
            stack[-1][2].append(done)


def tree_unflatten(treedef: TreeDef, leaves) -> Any:
    """Rebuild a pytree of structure `treedef` from `leaves` (see `tree_flatten`).

    Example:
        >>> leaves, treedef = tree_flatten({"a": 1, "b": (2, 3)})
        >>> tree_unflatten(treedef, [10 * v for v in leaves])
        {'a': 10, 'b': (20, 30)}
    """
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"tree_unflatten: structure {treedef} has {treedef.num_leaves} leaves, "
            f"got {len(leaves)}"
        )
    return _build(treedef, iter(leaves))


def _build(td: TreeDef, leaves):
    # A module-level function: a recursive closure would form a reference cycle that
    # keeps the leaves (possibly large arrays) alive until the cyclic GC runs.
    if td.kind is None:
        return next(leaves)
    return _rebuild(td, [_build(c, leaves) for c in td.children])


def _rebuild(td: TreeDef, children: list):
    kind = td.kind
    if kind is tuple:
        return tuple(children)
    if kind is list:
        return children
    if kind is dict:
        return dict(zip(td.aux, children))
    if kind is type(None):
        return None
    if kind in _registry:
        return _registry[kind][1](td.aux, children)
    return kind(*children)  # namedtuple


def tree_leaves(tree) -> list:
    """The leaves of a pytree, in flattening order.

    Example:
        >>> tree_leaves({"a": 1, "b": (2, [3, None])})
        [1, 2, 3]
    """
    return tree_flatten(tree)[0]


def tree_structure(tree) -> TreeDef:
    """The `TreeDef` of a pytree.

    Example:
        >>> td = tree_structure((1, [2, 3]))
        >>> td, td.num_leaves
        (PyTreeDef(tuple[*, PyTreeDef(list[*, *])]), 3)
    """
    return tree_flatten(tree)[1]


def tree_map(f: Callable, tree, *rest) -> Any:
    """Apply `f` leafwise to one or more pytrees of the same structure.

    Example:
        >>> tree_map(lambda a, b: a + b, (1, {"x": 2}), (10, {"x": 20}))
        (11, {'x': 22})
    """
    leaves, treedef = tree_flatten(tree)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r)
        if r_def != treedef:
            raise ValueError(f"tree_map: structures differ: {treedef} vs {r_def}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])
