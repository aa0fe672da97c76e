"""The torch face's graph: level-0 recording of operations on Tensors that require grad.

`record` is level 0's recorder (core/trace.py's EvalTrace calls it for an operation on
Tensors that require grad while grad mode is on): one Node per operation, saving its inputs
as torch's SavedVariable does (through saved-tensor hooks, with version counters for the
in-place check). A leaf's gradient enters the graph at its AccumulateGrad node, made on
first use (`gradient_edge`).
"""

from __future__ import annotations

import threading
import weakref

from autodiff.autograd._nodes import pack
from autodiff.autograd._saved import SAVED_FOR_PARTNERS
from autodiff.autograd._state import autograd_state, next_sequence_number
from autodiff.core.graph import Node, new_node
from autodiff.core.primitive import NO_PARAMS
from autodiff.core.tensor import Tensor
from autodiff.core.trace import set_level0_recorder

_ACCUMULATOR_LOCK = threading.Lock()
_STATE = autograd_state()  # (a thread-local object: each thread reads its own attributes)


def gradient_edge(tensor: Tensor) -> tuple:
    """`(node, index)` where `tensor`'s gradient enters the graph: its producer's output, or for
    a leaf that requires grad its AccumulateGrad node (made on first use, once per leaf even
    across threads)."""
    edge = tensor._edge
    if edge is not None:  # (a functional trace's tracer may hold its node: graph.edge_pair)
        return edge if type(edge) is tuple else (edge, 0)
    if tensor._accumulator is None:
        with _ACCUMULATOR_LOCK:
            if tensor._accumulator is None:
                tensor._accumulator = leaf_node(tensor, next_sequence_number())
    return (tensor._accumulator, 0)


def leaf_node(tensor: Tensor, seq: int) -> Node:
    """The AccumulateGrad node of a leaf tensor (held weakly: no reference cycle)."""
    node = new_node(None, None, (), None, (), seq)
    node.versions = ()  # (a level-0 node: it takes its class AccumulateGrad when seen)
    node._extra().variable = weakref.ref(tensor)
    return node


def record(prim, args: tuple, params: dict, out):
    """Record a level-0 (torch-style) node for `prim` applied to `args` and wrap its outputs.

    Like torch's SavedVariable, a saved input is its raw array plus the edge it had
    (in `parents`), from which a `create_graph` backward rebuilds a Tensor linked to
    this graph; `versions` keeps `(tensor, version)` for the in-place check.
    """
    st = _STATE
    hooks = out_hooks = None
    if st.saved_tensors_hooks:  # (no hooks in use, the common case: no call)
        hooks, out_hooks = _saving_hooks(prim, st)
    if hooks is not None and prim in SAVED_FOR_PARTNERS:
        # (a product saves only the inputs its gradients read, as torch: those alone are
        # packed; the engine version-checks those alone, see check_versions)
        return _record_product_with_hooks(prim, args, params, out, hooks)
    saves = prim.saves_inputs
    primals = []
    parents = []
    versions = []
    for a in args:
        if isinstance(a, Tensor):
            edge = a._edge
            if edge is None and a._requires_grad:
                edge = gradient_edge(a)  # (a leaf's accumulator, made on first use)
            parents.append(edge)
            if saves:
                vc = a._vc
                versions.append((a, vc if type(vc) is int else vc.value))
            else:
                versions.append(None)
            primals.append(a._value if hooks is None else _pack(hooks, a))
        else:
            parents.append(None)
            versions.append(None)
            primals.append(a)
    table = SAVED_FOR_PARTNERS.get(prim)
    if table is not None:  # a product keeps no hold on an input it does not save (as torch)
        _drop_unsaved(table, parents, versions)
    st.seq = seq = st.seq + 1  # (next_sequence_number, inline: once per recorded op)
    node = Node()  # (new_node, inline; it takes its torch class when seen: autograd/_nodes.py)
    node.prim = prim
    node.params = params or NO_PARAMS
    node.set_inputs(parents, primals)
    node.out = out
    node.seq = seq
    node.versions = versions
    node.extra = None
    node.raw = hooks is None
    if hooks is not None:
        node._extra()  # packed residuals take the engine's general path
    if st.anomaly:
        import traceback  # (anomaly mode only: not at `import autodiff`)

        node._extra().anomaly_trace = "".join(traceback.format_stack()[:-3])
    if out_hooks is None and not prim.multiple_results:  # (`_outputs`' commonest case)
        return Tensor._from(out, (node, 0))
    return _outputs(node, out, out_hooks)


def _drop_unsaved(table: tuple, parents: list, versions: list) -> None:
    """Forget the version entries of a product's inputs that its gradients do not read: the
    node then does not keep those tensors alive (torch's `y / 2` does not save `y`)."""
    needed = table[(parents[0] is not None) + 2 * (parents[1] is not None)]
    for i in (0, 1):
        if not needed[i]:
            versions[i] = None


def _saving_hooks(prim, st) -> tuple:
    """The saved-tensor hooks that pack what a node of `prim` saves: `(for its inputs, for
    its output)`, each None when none do."""
    hooks = st.saved_tensors_hooks[-1] if st.saved_tensors_hooks else None
    if prim.saves_inputs or hooks is None:
        return hooks, None
    # A rule that reads only its output (exp, tanh, sqrt) saves the output, as torch does:
    # that is what saved_tensors_hooks pack.
    if prim.saves_output and not prim.multiple_results:
        return None, hooks
    return None, None


def _outputs(node, out, out_hooks):
    """The Tensors of a recorded node's outputs (its saved output packed by `out_hooks`)."""
    if node.prim.multiple_results:
        return tuple(Tensor._from(o, (node, i)) for i, o in enumerate(out))
    result = Tensor._from(out, (node, 0))
    if out_hooks is not None:
        node.out = _pack(out_hooks, result)
        node.raw = False
        node._extra()
    return result


def _record_product_with_hooks(prim, args: tuple, params: dict, out, hooks: tuple):
    """`record` for a product under saved-tensor hooks: only the inputs its gradients read
    are saved, so only those are packed (torch's pack hook sees them alone)."""
    x, y = args
    needed = SAVED_FOR_PARTNERS[prim][
        (isinstance(x, Tensor) and (x._edge is not None or x._requires_grad))
        + 2 * (isinstance(y, Tensor) and (y._edge is not None or y._requires_grad))
    ]
    st = autograd_state()
    saved = st.saved_tensors_hooks
    st.saved_tensors_hooks = []  # (record the node without hooks, then pack what it saves)
    try:
        result = record(prim, args, params, out)
    finally:
        st.saved_tensors_hooks = saved
    node = result._edge[0]
    primals = list(node.primals)
    for i, a in enumerate(args):
        if needed[i] and isinstance(a, Tensor):
            primals[i] = _pack(hooks, a)
    node.primals = primals
    node.raw = False
    node._extra()  # packed residuals take the engine's general path
    return result


def _pack(hooks: tuple, tensor):
    """`tensor` saved through `saved_tensors_hooks` (pack, unpack): the pack hook runs with grad
    mode off, as in torch (what it computes is not recorded, so saves nothing to pack again)."""
    return pack(hooks[0], hooks[1], tensor)


set_level0_recorder(record)
