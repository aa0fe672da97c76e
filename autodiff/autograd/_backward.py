"""torch.autograd.backward and torch.autograd.grad on the one engine."""

from __future__ import annotations

import math
import sys
import threading
import warnings
from collections.abc import Mapping

import numpy as np

from autodiff.autograd._pass import TorchPass
from autodiff.autograd._record import gradient_edge
from autodiff.autograd._state import autograd_state
from autodiff.autograd.graph import GradientEdge
from autodiff.core import trace as _trace
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.ops.elementwise import conj_complex
from autodiff.reverse import engine as _engine
from autodiff.reverse.engine import backward_pass
from autodiff.torch import dtypes as _dtypes
from autodiff.vmap import vmap


def current_pass() -> TorchPass | None:
    """The innermost torch-style backward pass running in this thread, if any."""
    passes = autograd_state().passes
    return passes[-1] if passes else None


def queue_callback(callback) -> None:
    """Run `callback()` when the backward pass running now has run every node (torch's
    `Variable._execution_engine.queue_callback`)."""
    st = autograd_state()
    if not st.passes:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    st.passes[-1].callbacks.append(callback)


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, Tensor) or _is_edge(x):
        return (x,)
    return tuple(x)


def _level0(t):
    """The level-0 Tensor under a dual tensor (its graph is the level-0 one), else `t`."""
    while isinstance(t, Tensor) and t._trace is not EVAL_TRACE and getattr(t._trace, "dual", False):
        t = t._value
    return t


def _is_edge(x) -> bool:

    return isinstance(x, GradientEdge)


def _size(shape) -> str:
    return f"[{', '.join(str(s) for s in shape)}]"


def _seeds(outputs: tuple, grad_outputs, create_graph: bool, batched: bool = False) -> list:
    """One cotangent per output: given, or ones for one-element outputs."""
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if isinstance(grad_outputs, Tensor):
        grads = (grad_outputs,)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        out_shape, out_dtype = _output_shape_dtype(i, out)
        if g is None:
            if math.prod(out_shape) != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = np.empty(out_shape, out_dtype)
            g.fill(1)  # (np.ones, without its Python-level wrapper: once per pass)
            # (a recorded pass computes with Tensors, as torch's: what its rules save of the
            # seed is saved as a tensor, through the saved-tensor hooks in use)
            seeds.append(Tensor._from(g) if create_graph and not batched else g)
            continue
        _check_grad_output(i, g, out_shape, out_dtype, batched)
        if isinstance(g, Tensor):
            g = g if create_graph or g._trace is not EVAL_TRACE else g._value
        else:
            g = np.asarray(g, dtype=out_dtype)
            if create_graph and not batched:
                g = Tensor._from(g)
        seeds.append(conj_complex(g))  # the engine's convention (see autograd/_pass.py)
    return seeds


def _output_shape_dtype(i: int, out) -> tuple:
    """The shape and dtype of output `i` of a pass (a Tensor that requires grad, or a
    GradientEdge: the gradient of that node output)."""
    if _is_edge(out):
        return _edge_shape_dtype(tuple(out), None)
    if not isinstance(out, Tensor):
        raise TypeError(f"element {i} of tensors is not a Tensor")
    if not out.requires_grad:
        raise RuntimeError(
            f"element {i} of tensors does not require grad and does not have a grad_fn"
        )
    return tuple(out.shape), out.dtype


def _check_grad_output(i: int, g, out_shape, out_dtype, batched: bool) -> None:
    """torch's checks of grad_output `i` against its output: both complex or neither, and
    the output's shape (after a leading batch axis when `batched`)."""
    g_dtype = g.dtype if isinstance(g, Tensor) else np.asarray(g).dtype
    if (g_dtype.kind == "c") != (np.dtype(out_dtype).kind == "c"):
        raise RuntimeError(
            "For complex Tensors, both grad_output and output are required to have the same "
            f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g_dtype} and "
            f"output[{i}] has a dtype of {np.dtype(out_dtype)}."
        )
    g_shape = tuple(g.shape) if isinstance(g, Tensor) else np.shape(g)
    want = ((g_shape[0],) if batched and g_shape else ()) + tuple(out_shape)
    if tuple(g_shape) == want:
        return
    s_out = _size(out_shape)
    s_g = _size(g_shape[1:] if batched and g_shape else g_shape)
    raise RuntimeError(
        f"Mismatch in shape: grad_output[{i}] has a shape of torch.Size({s_g}) and "
        f"output[{i}] has a shape of torch.Size({s_out})."
        if not batched
        else f"If `is_grads_batched=True`, we interpret the first dimension of each "
        f"grad_output as the batch dimension. The sizes of the remaining dimensions are "
        f"expected to match the shape of corresponding output, but a mismatch was "
        f"detected: grad_output[{i}] has a shape of torch.Size({s_g}) and output[{i}] "
        f"has a shape of torch.Size({s_out})."
    )


def _root_edge(output) -> tuple:
    """Where a backward pass starts for `output` (a Tensor, or a GradientEdge)."""
    if _is_edge(output):
        return tuple(output)
    return output._edge if output._edge is not None else gradient_edge(output)


def _input_edges(inputs, fname: str) -> list:
    if inputs is None:
        return []
    items = _as_tuple(inputs)
    if len(items) == 0:
        raise RuntimeError(f"`inputs` argument to `{fname}()` cannot be empty.")
    edges = []
    for t in items:
        if _is_edge(t):
            edges.append((tuple(t), None))
            continue
        t = _level0(t)
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs to {fname}() must be Tensors or GradientEdges, got {type(t)}")
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        edges.append((gradient_edge(t), t))
    return edges


def backward(
    tensors,
    grad_tensors=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Accumulate gradients of `tensors` into the `.grad` of graph leaves (or of `inputs`).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0, 2.0], requires_grad=True)
        >>> backward((x * x).sum()); x.grad
        tensor([2., 4.])
    """
    capture = autograd_state().step_capture
    if capture is not None:  # (a compiled training step stages it)
        seeds = grad_tensors if grad_variables is None else grad_variables
        return capture.backward(tensors, seeds, retain_graph, create_graph, inputs)
    if grad_variables is not None:
        warnings.warn(
            "`grad_variables` is deprecated. Use `grad_tensors` instead.",
            FutureWarning,
            stacklevel=2,
        )
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError(
                "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                "`backward()`. Please only use `grad_tensors`."
            )
    if inputs is not None and len(_as_tuple(inputs)) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    outputs = tuple(_level0(t) for t in _as_tuple(tensors))
    if retain_graph is None:
        retain_graph = create_graph
    seeds = _seeds(outputs, grad_tensors, create_graph)
    edges = _input_edges(inputs, "backward")
    task = _backward_pass(edges, create_graph)
    if create_graph:
        # (torch's TORCH_WARN_ONCE: from one place, so Python's default filter shows it once)
        warnings.warn(_CREATE_GRAPH_WARNING, UserWarning, stacklevel=1)
    _run_pass(
        [_root_edge(o) for o in outputs],
        seeds,
        retain_graph=retain_graph,
        hooks=task,
        prune=bool(edges),
    )


def _backward_pass(edges: list, create_graph: bool) -> TorchPass:
    """The pass of `backward` into every leaf, or into the `.grad` of `inputs` (their edges).

    As in torch: leaves (also given as their AccumulateGrad edge) accumulate into `.grad`; a
    non-leaf tensor input is made to retain_grad(), so its `.grad` is filled once, after its
    tensor hooks. The nodes of non-leaf inputs still run."""
    if not edges:
        return TorchPass(accumulate_all_leaves=True, create_graph=create_graph)
    into = {}
    targets = []
    for edge, t in edges:
        node = edge[0]
        if t is None and node.prim is None:
            t = node.variable
        if t is not None and t._edge is None:
            into[edge] = t
        else:
            if t is not None:
                t.retain_grad()
            targets.append(edge)
    return TorchPass(accumulate_into=into, must_run=targets, create_graph=create_graph)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """Gradients of `outputs` with respect to `inputs`, returned (never written to `.grad`).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0, 2.0], requires_grad=True)
        >>> grad((x ** 3).sum(), x)
        (tensor([ 3., 12.]),)
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
            "allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    outputs = tuple(_level0(t) for t in _as_tuple(outputs))
    keys = None
    if type(inputs) is dict:  # (torch's: the gradients come back in a dict of its keys)
        keys, inputs = tuple(inputs), tuple(inputs.values())
    elif type(inputs) not in (tuple, list) and isinstance(inputs, Mapping):
        # (an abstract class's isinstance walks its registry: the common sequences skip it)
        raise TypeError(
            f"`inputs` argument to `grad()` must be a dict, not {type(inputs).__name__}. "
            "Other Mapping types are not supported."
        )
    edges = _input_edges(inputs, "grad")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        results = _batched_grad(
            outputs,
            edges,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        )
    else:
        seeds = _seeds(outputs, grad_outputs, create_graph)
        results = _run_grad(
            outputs, edges, seeds, retain_graph, create_graph, allow_unused, materialize_grads
        )
    return results if keys is None else dict(zip(keys, results))


def _run_grad(outputs, edges, seeds, retain_graph, create_graph, allow_unused, materialize):
    task = TorchPass(capture=[e for e, _ in edges], create_graph=create_graph)
    _run_pass(
        [_root_edge(o) for o in outputs],
        seeds,
        retain_graph=retain_graph,
        hooks=task,
        prune=True,
    )
    results = []
    for i, (edge, t) in enumerate(edges):
        g = task.captured.get(edge)
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize:
                if t is None:
                    raise RuntimeError(
                        "materialize_grads cannot be used when the given input is a GradientEdge"
                    )
                # (as torch's zeros_like(input, requires_grad=create_graph))
                g = Tensor._from(np.zeros(t.shape, t.dtype))
                if create_graph:
                    g.requires_grad_()
                results.append(g)
                continue
            results.append(None)
            continue
        results.append(g if isinstance(g, Tensor) else Tensor._from(np.asarray(g)))
    return tuple(results)


_CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using autograd.grad "
    "when creating the graph to avoid this. If you have to use this function, make sure to "
    "reset the .grad fields of your parameters to None after use to break the cycle and avoid "
    "the leak."
)

# Reentrant backward passes (a backward pass started by a node of another: a custom
# Function's backward, checkpointing) nest on the Python stack. As torch's engine hands a
# deeply nested one to a worker thread, one started this deep in the stack runs on a new
# thread (a fresh stack) that carries on with this thread's state, while this one waits.
REENTRANT_STACK_DEPTH = 200


def _run_pass(roots, seeds, **kwargs) -> None:
    """`backward_pass`, on a fresh thread when it is nested deep in the stack."""
    if autograd_state().passes and _stack_depth(REENTRANT_STACK_DEPTH) >= REENTRANT_STACK_DEPTH:
        _on_fresh_stack(backward_pass, roots, seeds, **kwargs)
    else:
        backward_pass(roots, seeds, **kwargs)


def _stack_depth(limit: int) -> int:
    """The number of frames on this thread's stack (counted up to `limit`)."""
    frame = sys._getframe(1)
    depth = 0
    while frame is not None and depth < limit:
        frame = frame.f_back
        depth += 1
    return depth


def _thread_states() -> list:
    """This thread's state objects a pass reads (modes, trace stack, torch-face state)."""
    return [_trace._state, autograd_state(), _engine._choice, _dtypes._default]


def _on_fresh_stack(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` on a new thread that takes over this thread's state (grad modes,
    trace stack, the backward passes running, ...) and hands it back when done, while this
    thread waits: as if it ran here, on a fresh stack."""
    states = _thread_states()
    snapshot = [dict(vars(s)) for s in states]
    outcome: dict = {}

    def work():
        for s, values in zip(states, snapshot):
            vars(s).update(values)
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as error:  # (re-raised in the waiting thread)
            outcome["error"] = error
        finally:
            outcome["state"] = [dict(vars(s)) for s in states]

    worker = threading.Thread(target=work, name="autodiff-reentrant-backward")
    worker.start()
    worker.join()
    for s, values in zip(states, outcome["state"]):
        vars(s).update(values)
    if "error" in outcome:
        raise outcome.pop("error")
    return outcome.get("value")


def _edge_shape_dtype(edge, tensor):
    if tensor is not None:
        return tensor.shape, tensor.dtype
    node, index = edge
    if node.prim is None:
        v = node.variable
        return v.shape, v.dtype
    out = node.out[index] if node.prim.multiple_results else node.out
    return np.shape(out), np.asarray(out).dtype


def _batched_grad(
    outputs, edges, grad_outputs, retain_graph, create_graph, allow_unused, materialize
):
    """One backward pass under vmap over the leading axis of every grad_output."""

    grads = _as_tuple(grad_outputs) if not isinstance(grad_outputs, Tensor) else (grad_outputs,)
    _seeds(outputs, grad_outputs, create_graph, batched=True)  # validates shapes
    raw = [
        conj_complex(g._value if isinstance(g, Tensor) and not create_graph else g) for g in grads
    ]

    def one(*cts):
        return _run_grad(outputs, edges, list(cts), True, create_graph, allow_unused, materialize)

    results = vmap(one)(*raw)
    return tuple(
        None if r is None else (r if isinstance(r, Tensor) else Tensor._from(r)) for r in results
    )
