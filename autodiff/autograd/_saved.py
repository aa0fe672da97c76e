"""Saved values of torch-face nodes as a backward pass reads them: torch's in-place checks.

A level-0 node keeps `(tensor, version)` for each tensor it saved (`node.versions`); a
tensor changed in place since, or detached in place, makes its node raise when it runs
(`check_versions`), as torch's SavedVariable. Products save an input only for the
gradients that read it (`SAVED_FOR_PARTNERS`). `node_residuals` gives a node's rule its
saved values: unpacked (saved-tensor hooks), checked, and as Tensors linked to the graph
they had when the pass creates a graph.
"""

from __future__ import annotations

import re
import weakref

from numpy import ndarray

from autodiff.core.graph import Packed, edge_pair
from autodiff.core.tensor import Tensor
from autodiff.ops.elementwise import divide_p, multiply_p
from autodiff.ops.products import dot_p, matmul_p
from autodiff.reverse.accumulate import RELEASED_MESSAGE
from autodiff.torch.conversions import tensor_type_name


def _which_saved(readers: tuple) -> tuple:
    """For a binary primitive whose input i is read by the gradients of the inputs in
    `readers[i]`: indexed by `(x needs a gradient) + 2 * (y needs one)`, (is x saved, is y)."""
    return tuple(
        tuple(any((rx, ry)[j] for j in readers[i]) for i in range(2))
        for ry in (False, True)
        for rx in (False, True)
    )


# Products whose torch nodes save an input only for the gradients that read it (`w * x` with
# `x` needing no gradient saves `x` only, so `w` may change in place before the backward
# pass): primitive -> `_which_saved` table. The torch face packs (saved-tensor hooks) and
# version-checks (`check_versions`) only what is saved.
SAVED_FOR_PARTNERS = {
    multiply_p: _which_saved(((1,), (0,))),
    matmul_p: _which_saved(((1,), (0,))),
    dot_p: _which_saved(((1,), (0,))),
    divide_p: _which_saved(((1,), (0, 1))),
}

# Tensors that had a graph and were detached in place (Tensor.detach_): a node that saved one
# raises when it runs, as torch's. id -> weakref (a Tensor's `==` is elementwise, so no
# WeakSet); empty unless detach_ was used.
DETACHED: dict = {}


def mark_detached(tensor) -> None:
    """Remember that `tensor` was detached in place (see DETACHED)."""
    key = id(tensor)
    DETACHED[key] = weakref.ref(tensor, lambda _, key=key: DETACHED.pop(key, None))


def check_versions(node, entries=None, anomaly: bool = False) -> None:
    """torch's error if a tensor `node` saved (its `versions`, or `entries` of them) has been
    modified in place since (`anomaly`: the pass runs in anomaly mode, which has reported the
    forward call of the failing node: the hint says so)."""
    if entries is None:
        entries = node.versions
        table = SAVED_FOR_PARTNERS.get(node.prim)
        if table is not None:  # (a product, of two inputs: only those its gradients read)
            saved0, saved1 = table[(node.p0 is not None) + 2 * (node.p1 is not None)]
            if not (saved0 and saved1):
                entries = (entries[0] if saved0 else None, entries[1] if saved1 else None)
    for saved in entries:
        if saved is None:
            continue
        tensor, version = saved
        if DETACHED and id(tensor) in DETACHED and tensor._edge is None:
            raise RuntimeError(
                "Trying to use a saved tensor that has been detached in-place, i.e. with "
                ".detach_().This is not supported, please use out-of-place `.detach()` instead"
            )
        if tensor._vc != version:
            producer = ""
            if tensor._edge is not None:  # torch names the op: "Mul" for MulBackward0
                op = re.sub(r"Backward\d*$", "", tensor._edge[0].name())
                producer = f", which is output {tensor._edge[1]} of {op},"
            hint = (
                "Hint: the backtrace further above shows the operation that failed to compute "
                "its gradient. The variable in question was changed in there or anywhere later. "
                "Good luck!"
                if anomaly
                else "Hint: enable anomaly detection to find the operation that failed to "
                "compute its gradient, with autodiff.autograd.set_detect_anomaly(True)."
            )
            kind = tensor_type_name(tensor.dtype)
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{kind} {list(tensor.shape)}]{producer} "
                f"is at version {tensor._vc}; expected version {version} instead. {hint}"
            )


def node_residuals(node, create: bool, anomaly: bool = False) -> tuple:
    """`(primals, out)`: a node's rule arguments from its saved values (unpacked, version
    checked); with `create`, a level-0 node's as Tensors linked to the graph they had, so that
    the rule is recorded (`create_graph`). Raises torch's error once they were freed (and,
    in `anomaly` mode, its error on a saved value changed in place with anomaly mode's hint)."""
    primals, out = node.primals, node.out
    if primals is None or out is None:
        raise RuntimeError(RELEASED_MESSAGE)
    if node.versions is None:  # functional-trace node: residuals are lower-level values
        return primals, out
    check_versions(node, anomaly=anomaly)
    if isinstance(out, Packed):  # a saved output (see record)
        out = unpacked(out)
        out = out._value if isinstance(out, Tensor) else out
    elif type(out) is tuple and any(isinstance(o, Packed) for o in out):
        out = tuple(_saved_input(o, None, False) for o in out)
    values = [_saved_input(p, edge, create) for p, edge in zip(primals, node.parents)]
    if create:
        if node.prim.multiple_results:
            out = tuple(Tensor._from(o, (node, i)) for i, o in enumerate(out))
        else:
            out = Tensor._from(out, (node, 0))
        dual = node.extra.dual if node.extra is not None else None
        if dual is not None and dual[0].alive:
            values, out = _dual_residuals(dual, values, out, node.prim.multiple_results)
    return values, out


def unpacked(packed: Packed):
    """A saved value's unpack hook applied (torch's check: it gives a Tensor; here a NumPy
    array, a Tensor's value, is accepted too)."""
    value = packed.unpack(packed.packed)
    if type(value) is ndarray:
        return Tensor._from(value)
    if not isinstance(value, Tensor):
        raise TypeError(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
            f"{type(value).__name__}"
        )
    return value


def _saved_input(p, edge, create: bool):
    """A level-0 node's saved input as its rule reads it: unpacked (saved_tensors_hooks), and
    linked to the graph it had (as torch puts back a saved variable's grad_fn) when the pass
    is recorded."""
    if isinstance(p, Packed):
        # The unpack hook's value, with the graph the saved input had: a pack hook runs with
        # grad mode off.
        p = unpacked(p)._value
    if create and edge is not None:
        p = Tensor._from(p, edge_pair(edge))
    return p


def _dual_residuals(dual, values, out, multi):
    """Residuals of a node recorded under a live dual level, with their tangents attached."""
    trace, args, t_out = dual
    values = [a if isinstance(a, Tensor) and a._trace is trace else v for a, v in zip(args, values)]
    if multi:
        out = tuple(trace.dual_value(o, t) for o, t in zip(out, t_out))
    else:
        out = trace.dual_value(out, t_out)
    return values, out


__all__ = ["DETACHED", "SAVED_FOR_PARTNERS", "check_versions", "mark_detached", "node_residuals"]
