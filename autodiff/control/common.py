"""What the control-flow primitives share: argument checks, staging helpers, batch axes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import autodiff.numpy as anp
from autodiff.core.abstract import ShapedArray, aval_of
from autodiff.core.errors import type_str
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
        got = ", ".join(type(f).__name__ for f in funs)
        raise TypeError(f"{where}: {what} should be callable, got {got}.")


def _describe(avals) -> str:
    return "(" + ", ".join(str(a.strengthened()) for a in avals) + ")"


def _carry_error(where: str, tree, in_avals, out_tree, out_avals) -> TypeError:
    """JAX's message for a body whose output carry differs from its input carry."""
    if out_tree != tree:
        detail = (
            f"the input carry has structure {tree} but the output carry has structure {out_tree}"
        )
    else:
        detail = "; ".join(
            f"the input carry{name} has type {type_str(a)} but the corresponding output "
            f"carry component has type {type_str(b)}"
            for name, a, b in zip(_carry_names(len(in_avals)), in_avals, out_avals)
            if a.shape != b.shape or a.dtype != b.dtype
        )
    return TypeError(
        f"{where} body function carry input and carry output must have equal types, but they "
        f"differ: {detail}. (The body_fun output and input must have identical types: the "
        f"same structure and types, got output {out_tree} {_describe(out_avals)} for input "
        f"{tree} {_describe(in_avals)}.)"
    )


def _carry_names(n: int) -> list:
    return [""] if n == 1 else [f" component {i}" for i in range(n)]


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
