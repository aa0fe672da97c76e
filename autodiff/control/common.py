"""What the control-flow primitives share: argument checks, staging helpers, batch axes."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import autodiff.numpy as anp
from autodiff.core.abstract import ShapedArray, aval_of
from autodiff.core.errors import type_str
from autodiff.core.pytree import (
    _children,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_unflatten,
)
from autodiff.core.trace import current_level
from autodiff.ops.structural import move_to_front


def _eager() -> bool:
    """Outside every transform: control flow is Python's (Tensors record at level 0)."""
    return current_level() == 0


def _avals(leaves: list) -> list:
    """The operands' types; Python numbers stay weakly typed, as they are in eager code (a
    fori_loop's index: `x * i` keeps a float32 `x`'s dtype)."""
    return [aval_of(x) for x in leaves]


def _same_types(a: Sequence[ShapedArray], b: Sequence[ShapedArray]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype for x, y in zip(a, b))


def _name(fun: Callable, default: str) -> str:
    return getattr(fun, "__name__", default)


def _check_callable(where: str, what: str, *funs) -> None:
    """JAX's TypeError for a function argument that is not callable (its phrase kept)."""
    if not all(callable(f) for f in funs):
        raise TypeError(f"lax.{where}: {what} should be callable.")


def _describe(avals) -> str:
    return "(" + ", ".join(str(a.strengthened()) for a in avals) + ")"


class _Leaf:
    """A placeholder leaf for describing a tree's structure (JAX's words: "pytree leaf")."""

    def __repr__(self) -> str:
        return "pytree leaf"


class _LeafType(type):
    def __str__(cls) -> str:
        return "pytree leaf"


_PLACEHOLDER = _LeafType("_PytreeLeaf", (_Leaf,), {})()


def _node_children(x) -> list | None:
    """(key path text, child) for each child of a container; None for a leaf."""
    node = _children(x)
    if node is None:
        return None
    kind, aux, kids = node
    if kind is dict:
        keys = [f"[{k!r}]" for k in aux]
    elif isinstance(x, tuple) and hasattr(kind, "_fields"):
        keys = [f".{f}" for f in kind._fields]
    elif kind in (list, tuple):
        keys = [f"[{i}]" for i in range(len(kids))]
    else:
        keys = [f"[<flat index {i}>]" for i in range(len(kids))]
    return list(zip(keys, kids))


def _tree_differences(tree1, tree2) -> list:
    """(path, thing1, thing2, why) for each place two tree structures differ, in JAX's words
    (tree_util.equality_errors)."""
    out, stack = (
        [],
        [
            (
                "",
                tree_unflatten(tree1, [_PLACEHOLDER] * tree1.num_leaves),
                tree_unflatten(tree2, [_PLACEHOLDER] * tree2.num_leaves),
            )
        ],
    )
    while stack:
        path, a, b = stack.pop()
        kids_a, kids_b = _node_children(a), _node_children(b)
        if kids_a is None and kids_b is None:
            continue
        if type(a) is not type(b):
            out.append((path, str(type(a)), str(type(b)), "their Python types differ"))
        elif isinstance(a, (list, tuple)) and len(a) != len(b):
            n_a, n_b = f"{type(a).__name__} of length {len(a)}", f"{type(b).__name__} of length"
            out.append((path, n_a, f"{n_b} {len(b)}", "the lengths do not match"))
        elif len(kids_a) != len(kids_b):
            n_a, n_b = len(kids_a), len(kids_b)
            out.append(
                (
                    path,
                    f"{type(a)} with {n_a} child{'ren' if n_a > 1 else ''}",
                    f"{type(b)} with {n_b} child{'ren' if n_b > 1 else ''}",
                    "the numbers of children do not match" + _key_difference(a, b),
                )
            )
        elif _children(a)[1] != _children(b)[1]:
            meta_a, meta_b = _children(a)[1], _children(b)[1]
            out.append(
                (
                    path,
                    f"{type(a)} with pytree metadata {meta_a}",
                    f"{type(b)} with pytree metadata {meta_b}",
                    "the pytree node metadata does not match",
                )
            )
        else:
            stack.extend(
                (path + ka, ca, cb) for (ka, ca), (_, cb) in reversed(list(zip(kids_a, kids_b)))
            )
    return out


def _key_difference(a, b) -> str:
    if not isinstance(a, dict):
        return ""
    diff = " ".join(repr(k) for k in set(a).symmetric_difference(b))
    return f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""


def _listing(diffs: list) -> str:
    """One difference as a sentence, several as a bulleted list (JAX's layout)."""
    if len(diffs) == 1:
        return diffs[0][0].upper() + diffs[0][1:] + ".\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def _carry_name(fun) -> str:
    try:
        return next(iter(inspect.signature(fun).parameters), "")
    except (TypeError, ValueError):
        return ""


def _mismatch(a, b) -> str:
    why = [
        f"the {w} do not match"
        for w, bad in (("dtypes", a.dtype != b.dtype), ("shapes", a.shape != b.shape))
        if bad
    ]
    return ", so " + ", and ".join(why) if why else ""


def _carry_error(where: str, tree, in_avals, out_tree, out_avals, fun=None) -> TypeError:
    """JAX's message for a body whose output carry differs from its input carry (`fun`: the
    body, whose first parameter names the carry)."""
    name = _carry_name(fun) if fun is not None else ""
    component = lambda p: (
        f"the input carry component {name}{p}" if p else f"the input carry {name}".rstrip()
    )
    if out_tree != tree:
        diffs = [
            f"{component(p)} is a {a} but the corresponding component of the carry output is "
            f"a {b}, so {why}"
            for p, a, b, why in _tree_differences(tree, out_tree)
        ] or [f"the input tree structure is {tree} but the output tree structure is {out_tree}"]
        return TypeError(
            f"{where} body function carry input and carry output must have the same pytree "
            f"structure, but they differ:\n\n{_listing(diffs)}\nRevise the function so that "
            "the carry output has the same pytree structure as the carry input."
        )
    paths = [keystr(p) for p, _ in tree_flatten_with_path(tree_unflatten(tree, in_avals))[0]]
    diffs = [
        f"{component(p)} has type {type_str(a)} but the corresponding output carry component "
        f"has type {type_str(b)}{_mismatch(a, b)}"
        for p, a, b in zip(paths, in_avals, out_avals)
        if a.shape != b.shape or a.dtype != b.dtype
    ]
    return TypeError(
        f"{where} body function carry input and carry output must have equal types, but they "
        f"differ:\n\n{_listing(diffs)}\nRevise the function so that all output types match "
        "the corresponding input types."
    )


def _check_carry(where: str, fun, init, out) -> None:
    """JAX's check of an eagerly run body's first output carry against its input carry (a
    Python number's dtype may change, as JAX promotes weakly typed carries)."""
    in_flat, in_tree = tree_flatten(init)
    out_flat, out_tree = tree_flatten(out)
    if out_tree != in_tree:
        raise _carry_error(where, in_tree, _avals(in_flat), out_tree, _avals(out_flat), fun)
    in_avals, out_avals = _avals(in_flat), _avals(out_flat)
    for a, b in zip(in_avals, out_avals):
        if a.shape != b.shape or (a.dtype != b.dtype and not a.weak_type):
            raise _carry_error(where, in_tree, in_avals, out_tree, out_avals, fun)


def _forward_unchanged(outs, graphs, operands: list, same_position: bool = False) -> list:
    """`outs` with each output that every graph returns as one of its inputs, unchanged,
    replaced by that operand itself (JAX's forwarding: such an output keeps its operand's
    batching, so vmap leaves it unbatched). With `same_position` (a loop's carry), only an
    output in its input's position."""
    outs = list(outs)
    ins = graphs[0].in_vars[: len(operands)]
    for j, var in enumerate(graphs[0].out_vars):
        k = next((i for i, v in enumerate(ins) if v is var), None)
        if k is None or (same_position and k != j) or type(operands[k]) in _PYTHON_NUMBERS:
            continue
        if all(g.out_vars[j] is g.in_vars[k] for g in graphs):
            outs[j] = operands[k]
    return outs


_PYTHON_NUMBERS = (bool, int, float, complex)


def _promoted(flat: list, avals: list, out_avals: list) -> list | None:
    """The carry with each weakly typed leaf (a Python number) converted to the dtype the
    body gives it, as JAX does (`init=0.0` with a float32 body); None if none changes."""
    if len(out_avals) != len(avals):
        return None
    changed = False
    out = list(flat)
    for i, (a, b) in enumerate(zip(avals, out_avals)):
        if a.weak_type and a.shape == b.shape and a.dtype != b.dtype:
            out[i] = anp.asarray(flat[i], dtype=b.dtype)
            changed = True
    return out if changed else None


def _moved(values, dims) -> list:
    return [v if d is None else move_to_front(v, d) for v, d in zip(values, dims)]


def _batch_size(values, dims) -> int:
    return next(v.shape[d] for v, d in zip(values, dims) if d is not None)
