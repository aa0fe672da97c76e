"""Pytrees: nested containers of leaves (tuple, list, dict, OrderedDict, defaultdict,
namedtuple, None, registered types).

`tree_flatten` returns the leaves in a fixed order and a `TreeDef` that rebuilds
the structure; transforms use it at their API boundary so the core only ever sees
flat lists. The names and semantics are JAX's (`jax.tree_util`): `is_leaf=`, key paths
(`tree_flatten_with_path`, `keystr`, `SequenceKey`/`DictKey`/`GetAttrKey`), and
`register_pytree_node_class`/`register_pytree_with_keys`/`register_dataclass`.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any


class _Node:
    """How to take a registered container type apart and put it back together."""

    __slots__ = ("flatten", "unflatten", "flatten_with_keys")

    def __init__(self, flatten, unflatten, flatten_with_keys=None):
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys


_registry: dict[type, _Node] = {}

# Whether dicts flatten in their insertion order (torch.func's, for the torch face's
# transforms in autodiff.func) rather than by sorted keys (JAX's): per thread, so that one
# thread's torch.func call leaves another's JAX-face flattening alone.
_dict_order = threading.local()
_BUILTIN = (tuple, list, dict, type(None), collections.OrderedDict, collections.defaultdict)


def _check_new(cls: type) -> None:
    if cls in _registry or cls in _BUILTIN:
        raise ValueError(f"Duplicate pytree node registration for {cls}.")


def register_pytree_node(
    cls: type,
    flatten: Callable[[Any], tuple[Any, Any]],
    unflatten: Callable[[Any, Any], Any],
    flatten_with_keys: Callable[[Any], tuple[Any, Any]] | None = None,
) -> None:
    """Teach the pytree utilities to look inside instances of `cls`.

    Arguments:
        cls: the container type.
        flatten: `obj -> (children, aux_data)`; `aux_data` must be hashable and comparable.
        unflatten: `(aux_data, children) -> obj`.
        flatten_with_keys: optional `obj -> ([(key, child), ...], aux_data)`, giving the
            key path entries of the children (`tree_flatten_with_path`); without it the
            children are keyed by position (`FlattenedIndexKey`).

    Example:
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda _, c: Pair(*c))
        >>> tree_leaves(Pair(1.0, (2.0, 3.0)))
        [1.0, 2.0, 3.0]
    """
    _check_new(cls)
    _registry[cls] = _Node(flatten, unflatten, flatten_with_keys)


def register_pytree_with_keys(
    cls: type,
    flatten_with_keys: Callable[[Any], tuple[Any, Any]],
    unflatten: Callable[[Any, Any], Any],
    flatten_func: Callable[[Any], tuple[Any, Any]] | None = None,
) -> None:
    """`register_pytree_node` with key paths: `flatten_with_keys(obj)` returns
    `([(key, child), ...], aux_data)`.

    Example:
        >>> class Box:
        ...     def __init__(self, v): self.v = v
        >>> register_pytree_with_keys(
        ...     Box, lambda b: (((GetAttrKey("v"), b.v),), None), lambda _, c: Box(*c))
        >>> [keystr(p) for p, _ in tree_flatten_with_path(Box([1.0, 2.0]))[0]]
        ['.v[0]', '.v[1]']
    """
    if flatten_func is None:

        def flatten_func(obj):
            pairs, aux = flatten_with_keys(obj)
            return [c for _, c in pairs], aux

    register_pytree_node(cls, flatten_func, unflatten, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: register `cls` with its `tree_flatten()` method and its
    `tree_unflatten(aux_data, children)` classmethod.

    Example:
        >>> @register_pytree_node_class
        ... class Scaled:
        ...     def __init__(self, x, scale): self.x, self.scale = x, scale
        ...     def tree_flatten(self): return (self.x,), self.scale
        ...     @classmethod
        ...     def tree_unflatten(cls, scale, children): return cls(children[0], scale)
        >>> tree_map(lambda v: v + 1, Scaled(1.0, "m")).x
        2.0
    """
    unflatten: Callable = cls.tree_unflatten  # type: ignore[attr-defined]
    register_pytree_node(cls, lambda obj: obj.tree_flatten(), unflatten)
    return cls


def register_dataclass(
    nodetype: type,
    data_fields: list[str] | None = None,
    meta_fields: list[str] | None = None,
    drop_fields: tuple[str, ...] = (),
) -> type:
    """Register a dataclass: `data_fields` are children (keyed by attribute name),
    `meta_fields` static data (part of the structure); by default every init field of a
    dataclass is a child unless its `metadata` has `static=True`. Usable as a decorator.

    Example:
        >>> @register_dataclass
        ... @dataclasses.dataclass
        ... class Params:
        ...     w: float
        ...     b: float
        >>> tree_leaves(Params(1.0, 2.0))
        [1.0, 2.0]
    """
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when the "
                f"nodetype is not a dataclass, got {nodetype}."
            )
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        if data_fields is None:
            data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        if meta_fields is None:
            meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data, meta = tuple(data_fields), tuple(meta_fields)

    def flatten_with_keys(obj):
        return (
            [(GetAttrKey(n), getattr(obj, n)) for n in data],
            tuple(getattr(obj, n) for n in meta),
        )

    def flatten(obj):
        return [getattr(obj, n) for n in data], tuple(getattr(obj, n) for n in meta)

    def unflatten(aux, children):
        return nodetype(**dict(zip(data, children)), **dict(zip(meta, aux)))

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


# ------------------------------------------------------------------------------ key paths


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The key of a tuple or list element: `[idx]`."""

    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The key of a dict entry: `['key']`."""

    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The key of an attribute (namedtuple field, dataclass field): `.name`."""

    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The key of the i-th child of a node registered without keys."""

    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """A key path as a string, as in JAX.

    Example:
        >>> keystr((DictKey("a"), SequenceKey(0), GetAttrKey("w")))
        "['a'][0].w"
        >>> keystr((DictKey("a"), SequenceKey(0)), simple=True, separator="/")
        'a/0'
    """
    if not simple:
        return separator.join(str(k) for k in keys)
    parts = []
    for k in keys:
        for attr in ("idx", "key", "name"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
        else:
            parts.append(str(k))
    return separator.join(parts)


# ------------------------------------------------------------------------------ nodes


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(x):
    """(kind, aux, children) for a container node, or None for a leaf."""
    cls = type(x)
    if cls is tuple or cls is list:
        return cls, None, list(x)
    if cls is dict:
        keys = tuple(x) if getattr(_dict_order, "insertion", False) else sorted(x, key=_sort_key)
        return dict, tuple(keys), [x[k] for k in keys]
    if x is None:
        return type(None), None, []
    node = _registry.get(cls)
    if node is not None:
        children, aux = node.flatten(x)
        return cls, aux, list(children)
    if cls is collections.OrderedDict:
        order = tuple(x)
        return cls, order, [x[k] for k in order]
    if cls is collections.defaultdict:
        ordered = sorted(x, key=_sort_key)
        return cls, (x.default_factory, tuple(ordered)), [x[k] for k in ordered]
    if _is_namedtuple(x):
        return cls, None, list(x)
    return None


@contextlib.contextmanager
def dict_insertion_order():
    """Within the block (on this thread), dicts flatten in their insertion order, as
    torch's pytrees do, rather than by sorted keys as JAX's: the torch face's transforms
    (`autodiff.func`) run under it, so that their results keep their dicts' order.

    Example:
        >>> with dict_insertion_order():
        ...     tree_leaves({"w": 1.0, "b": 2.0})
        [1.0, 2.0]
        >>> tree_leaves({"w": 1.0, "b": 2.0})
        [2.0, 1.0]
    """
    before = getattr(_dict_order, "insertion", False)
    _dict_order.insertion = True
    try:
        yield
    finally:
        _dict_order.insertion = before


def _child_keys(x, kind, aux, n: int) -> list:
    """The key path entries of the `n` children of node `x`."""
    if kind is tuple or kind is list:
        return [SequenceKey(i) for i in range(n)]
    if kind is dict or kind is collections.OrderedDict:
        return [DictKey(k) for k in aux]
    if kind is collections.defaultdict:
        return [DictKey(k) for k in aux[1]]
    node = _registry.get(kind)
    if node is not None:
        if node.flatten_with_keys is not None:
            return [k for k, _ in node.flatten_with_keys(x)[0]]
        return [FlattenedIndexKey(i) for i in range(n)]
    if _is_namedtuple(x):
        return [GetAttrKey(f) for f in type(x)._fields]
    return [FlattenedIndexKey(i) for i in range(n)]


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

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves) -> Any:
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of `tree` at this structure's leaves (`tree` must have this
        structure down to them); raises ValueError naming the first mismatch."""
        return _flatten_up_to(self, tree)


_LEAF = TreeDef(None, None, ())
LEAF = _LEAF  # the structure of a lone leaf (what tree_flatten gives for an array)


def _flatten(tree, is_leaf, with_path: bool):
    """(leaves, treedef), and the leaves' key paths with `with_path`."""
    leaves: list = []
    paths: list = []
    if is_leaf is not None and is_leaf(tree):
        return [tree], _LEAF, [()]
    root = _children(tree)
    if root is None:
        return [tree], _LEAF, [()]

    # Iterative post-order build: each frame holds a node, an iterator over its
    # (key, child) pairs and its finished child defs.
    def frame(node, x, path):
        kind, aux, kids = node
        keys = _child_keys(x, kind, aux, len(kids)) if with_path else [None] * len(kids)
        return (node, iter(zip(keys, kids)), [], path)

    stack: list[tuple[tuple, Iterator, list[TreeDef], tuple]] = [frame(root, tree, ())]
    while True:
        (kind, aux, _), it, defs, path = stack[-1]
        for key, child in it:
            node = None if is_leaf is not None and is_leaf(child) else _children(child)
            if node is None:
                leaves.append(child)
                defs.append(_LEAF)
                if with_path:
                    paths.append(path + (key,))
            else:
                stack.append(frame(node, child, path + (key,) if with_path else ()))
                break
        else:
            stack.pop()
            done = TreeDef(kind, aux, tuple(defs))
            if not stack:
                return leaves, done, paths
            stack[-1][2].append(done)


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeDef]:
    """Flatten a pytree into its list of leaves and its structure. `is_leaf(x)` true
    makes `x` a leaf even if it is a container.

    Example:
        >>> leaves, treedef = tree_flatten({"b": (1, 2), "a": [3]})
        >>> leaves
        [3, 1, 2]
        >>> tree_unflatten(treedef, [30, 10, 20])
        {'a': [30], 'b': (10, 20)}
        >>> tree_flatten([1, None, (2, None)], is_leaf=lambda x: x is None)[0]
        [1, None, 2, None]
    """
    leaves, treedef, _ = _flatten(tree, is_leaf, False)
    return leaves, treedef


def tree_flatten_with_path(
    tree, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[tuple, Any]], TreeDef]:
    """`tree_flatten` with each leaf's key path: `([(path, leaf), ...], treedef)`.

    Example:
        >>> pairs, _ = tree_flatten_with_path({"a": [1.0, 2.0], "b": 3.0})
        >>> [(keystr(p), v) for p, v in pairs]
        [("['a'][0]", 1.0), ("['a'][1]", 2.0), ("['b']", 3.0)]
    """
    leaves, treedef, paths = _flatten(tree, is_leaf, True)
    return list(zip(paths, leaves)), treedef


def tree_leaves_with_path(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The `(key path, leaf)` pairs of a pytree, in flattening order.

    Example:
        >>> [keystr(p) for p, _ in tree_leaves_with_path((1.0, {"x": 2.0}))]
        ['[0]', "[1]['x']"]
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


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
    node = _registry.get(kind)
    if node is not None:
        return node.unflatten(td.aux, children)
    if kind is collections.OrderedDict:
        return collections.OrderedDict(zip(td.aux, children))
    if kind is collections.defaultdict:
        return collections.defaultdict(td.aux[0], zip(td.aux[1], children))
    return kind(*children)  # namedtuple


def _flatten_up_to(treedef: TreeDef, tree) -> list:
    """The subtrees of `tree` sitting where `treedef` has leaves (a prefix match)."""
    out: list = []
    stack: list[tuple[TreeDef, Any, tuple]] = [(treedef, tree, ())]
    while stack:
        td, x, path = stack.pop()
        if td.kind is None:
            out.append(x)
            continue
        node = _children(x)
        kind = None if node is None else node[0]
        if kind is not td.kind:
            raise ValueError(
                f"pytree structure error: different types at key path\n    tree{keystr(path)}\n"
                f"At that key path, the first pytree has a subtree of type\n    {td.kind}\n"
                f"but the other pytree has a subtree of different type\n    {type(x)}."
            )
        _, aux, kids = node
        if len(kids) != len(td.children) or (aux != td.aux and kind is not tuple):
            raise ValueError(
                f"pytree structure error: different numbers of pytree children or different "
                f"pytree metadata at key path\n    tree{keystr(path)}\nAt that key path the "
                f"first pytree has a {kind.__name__} with {len(td.children)} children "
                f"(metadata {td.aux!r}), the other {len(kids)} children (metadata {aux!r})."
            )
        keys = _child_keys(x, kind, aux, len(kids))
        for c_td, c, k in reversed(list(zip(td.children, kids, keys))):
            stack.append((c_td, c, path + (k,)))
    return out


def prefix_errors(prefix, full, name: str = "tree", is_leaf=None) -> list[str]:
    """Why `prefix` is not a tree prefix of `full`: one message per mismatch, in JAX's
    words ("pytree structure error: different types at key path ..."); empty if it is.

    Example:
        >>> prefix_errors((0, [1]), (1.0, 2.0), "in_axes")[0].splitlines()[0]
        'pytree structure error: different types at key path'
    """
    errors: list[str] = []
    stack: list[tuple[tuple, Any, Any]] = [((), prefix, full)]
    while stack:
        path, p, f = stack.pop()
        if (is_leaf is not None and is_leaf(p)) or _children(p) is None:
            continue  # a leaf is a prefix of any tree
        where = f"    {name}{keystr(path)}\n"
        if type(p) is not type(f):
            errors.append(
                "pytree structure error: different types at key path\n"
                + where
                + f"At that key path, the prefix pytree {name} has a subtree of type\n"
                f"    {type(p)}\nbut at the same key path the full pytree has a subtree of "
                f"different type\n    {type(f)}."
            )
            continue
        kind, p_aux, p_kids = _children(p)
        _, f_aux, f_kids = _children(f)
        if isinstance(p, (list, tuple)) and len(p) != len(f):
            errors.append(
                f"pytree structure error: different lengths of {kind.__name__} at key path\n"
                + where
                + f"At that key path, the prefix pytree {name} has a subtree of type "
                f"{kind.__name__} of length {len(p)}, but the full pytree has a subtree of the "
                f"same type but of length {len(f)}."
            )
            continue
        p_keys = _child_keys(p, kind, p_aux, len(p_kids))
        f_keys = _child_keys(f, kind, f_aux, len(f_kids))
        if len(p_kids) != len(f_kids) or p_keys != f_keys:
            errors.append(
                "pytree structure error: different numbers of pytree children at key path\n"
                + where
                + f"At that key path, the prefix pytree {name} has a subtree of type\n"
                f"    {type(p)}\nwith {len(p_kids)} child keys\n"
                f"    {' '.join(str(k) for k in p_keys)}\nbut at the same key path the full "
                f"pytree has a subtree of the same type but with {len(f_kids)} child keys\n"
                f"    {' '.join(str(k) for k in f_keys)}"
            )
            continue
        if p_aux != f_aux and not isinstance(p, (list, tuple)):
            errors.append(
                "pytree structure error: different pytree metadata at key path\n"
                + where
                + f"At that key path, the prefix pytree {name} has a subtree of type\n"
                f"    {type(p)}\nwith metadata\n    {p_aux}\nbut at the same key path the "
                f"full pytree has a subtree of the same type but with metadata\n    {f_aux}"
            )
            continue
        for k, pc, fc in reversed(list(zip(p_keys, p_kids, f_kids))):
            stack.append((path + (k,), pc, fc))
    return errors


def tree_leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of a pytree, in flattening order.

    Example:
        >>> tree_leaves({"a": 1, "b": (2, [3, None])})
        [1, 2, 3]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable[[Any], bool] | None = None) -> TreeDef:
    """The `TreeDef` of a pytree.

    Example:
        >>> td = tree_structure((1, [2, 3]))
        >>> td, td.num_leaves
        (PyTreeDef(tuple[*, PyTreeDef(list[*, *])]), 3)
    """
    return tree_flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: TreeDef) -> bool:
    """Whether `treedef` is the structure of a lone leaf (or of an empty container).

    Example:
        >>> treedef_is_leaf(tree_structure(1.0)), treedef_is_leaf(tree_structure([1.0]))
        (True, False)
    """
    return treedef.num_nodes == 1


def tree_map(f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply `f` leafwise to one or more pytrees. Each tree in `rest` must have the
    structure of `tree`, or `tree`'s structure as a prefix (its subtrees at `tree`'s leaves
    are passed whole).

    Example:
        >>> tree_map(lambda a, b: a + b, (1, {"x": 2}), (10, {"x": 20}))
        (11, {'x': 22})
        >>> tree_map(lambda x: x is None, [1, None], is_leaf=lambda x: x is None)
        [False, True]
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(
    f: Callable, tree, *rest, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """`tree_map` whose `f` also receives each leaf's key path first.

    Example:
        >>> tree_map_with_path(lambda p, v: f"{keystr(p)}={v}", {"a": 1, "b": (2,)})
        {'a': "['a']=1", 'b': ("['b'][0]=2",)}
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]
    return tree_unflatten(treedef, [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def tree_reduce(function: Callable, tree, *initializer, is_leaf=None) -> Any:
    """`functools.reduce` over the leaves of a pytree.

    Example:
        >>> tree_reduce(lambda a, b: a + b, {"a": 1, "b": (2, 3)})
        6
    """
    return functools.reduce(function, tree_leaves(tree, is_leaf), *initializer)


def tree_all(tree, is_leaf=None) -> bool:
    """Whether every leaf of `tree` is truthy.

    Example:
        >>> tree_all([True, (1, 2)]), tree_all({"a": 0})
        (True, False)
    """
    return all(tree_leaves(tree, is_leaf))
