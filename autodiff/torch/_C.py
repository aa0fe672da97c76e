"""`torch._C`: the few private names of torch's C extension that torch code reaches for,
mapped onto autodiff's own (each is an alias or a thin query of autodiff's state).

Only names autodiff has the machinery for are here: grad mode, forward-grad mode, the
saved-tensor-hooks switch, weak references to tensors, the node and saved-tensor classes,
what a hook may ask of the backward pass running (`_current_graph_task_id`,
`_current_graph_task_execution_order`, `_will_engine_execute_node`,
`_current_autograd_node`), the multithreading mode, the cached-tensor registry, version
counters, and the two utility nodes `_functions.UndefinedGrad` (its backward gives undefined, i.e.
None, gradients) and `_functions.DelayedError` (its backward raises). A script that uses any
other `torch._C` name gets an AttributeError naming it.

Example:
    >>> import autodiff as torch
    >>> torch._C.is_grad_enabled(), torch._C._autograd._saved_tensors_hooks_is_enabled()
    (True, True)
    >>> t = torch.ones(2); ref = torch._C._WeakTensorRef(t); del t; ref.expired()
    True
"""

from __future__ import annotations

import threading
import types
import weakref

from autodiff.autograd._backward import current_pass
from autodiff.autograd._nodes import AccumulateGrad, SavedTensor, _LooseSavedTensor
from autodiff.autograd._record import gradient_edge
from autodiff.autograd._state import autograd_state
from autodiff.autograd.function import Function
from autodiff.autograd.grad_mode import is_grad_enabled
from autodiff.autograd.graph import Node, _unsafe_set_version_counter
from autodiff.core.graph import observed
from autodiff.core.tensor import Tensor
from autodiff.core.trace import state

__all__ = ["is_grad_enabled"]


def _set_fwd_grad_enabled(mode: bool) -> None:
    """Switch tangent propagation of dual levels on or off in this thread
    (`torch.autograd.forward_ad._set_fwd_grad_enabled` is the scoped form)."""
    state().fw_grad_enabled = bool(mode)


def _is_fwd_grad_enabled() -> bool:
    """Whether dual levels propagate tangents in this thread."""
    return state().fw_grad_enabled


def _set_multithreading_enabled(mode: bool) -> None:
    """Record whether backward passes may use worker threads (this thread's mode; autodiff's
    engine runs every pass on its calling thread)."""
    autograd_state().multithreading = bool(mode)


def _is_multithreading_enabled() -> bool:
    """The mode `set_multithreading_enabled` set in this thread (True by default)."""
    return autograd_state().multithreading


# ---- the backward pass running: what its hooks may ask ----


def _current_graph_task_id() -> int:
    """The id of the backward pass running in this thread (ids grow with each pass started
    in the process), or -1 outside of one.

    Example:
        >>> import autodiff as torch
        >>> torch._C._current_graph_task_id()
        -1
    """
    task = current_pass()
    return -1 if task is None else task.id


def _current_graph_task_execution_order() -> list:
    """The nodes the backward pass running will run, in the order it runs them (from a hook
    of that pass, with multithreading disabled, as torch requires).

    Example:
        >>> import autodiff as torch
        >>> x = torch.tensor(1.0, requires_grad=True)
        >>> y = x.sin().exp()
        >>> order = []
        >>> _ = y.register_hook(lambda g: order.extend(
        ...     n.name() for n in torch._C._current_graph_task_execution_order()))
        >>> with torch.autograd.set_multithreading_enabled(False):
        ...     y.backward()
        >>> order
        ['ExpBackward0', 'SinBackward0', 'torch::autograd::AccumulateGrad']
    """
    task = current_pass()
    if task is None:
        raise RuntimeError(
            "_current_graph_task_execution_order should only be called during the backward pass"
        )
    if autograd_state().multithreading:
        raise RuntimeError(
            "get_current_graph_task_execution_order expects the current backward to be executed "
            "with multithreading disabled, e.g. by running:\n\n>>> with "
            "torch.autograd.set_multithreading_enabled(False):\n...     torch.autograd.grad(...)\n"
        )
    return task.execution_order()


def _will_engine_execute_node(node) -> bool:
    """Whether the backward pass running will run `node` (a grad_fn or gradient accumulator).

    Example:
        >>> import autodiff as torch
        >>> x = torch.tensor(1.0, requires_grad=True)
        >>> y, z = x * 2, x * 3
        >>> seen = []
        >>> _ = y.register_hook(lambda g: seen.append(
        ...     (torch._C._will_engine_execute_node(y.grad_fn),
        ...      torch._C._will_engine_execute_node(z.grad_fn))))
        >>> y.backward(); seen
        [(True, False)]
    """
    if not isinstance(node, Node):
        raise RuntimeError(
            f"_will_engine_execute_node expects an grad_fn, but got {type(node).__name__}"
        )
    task = current_pass()
    if task is None:
        raise RuntimeError(
            "_get_should_execute_nodes should only be called during the backward pass"
        )
    return task.will_execute(node)


def _current_autograd_node():
    """The node the backward pass running in this thread is executing (from its hooks,
    saved-tensor unpack hooks or a custom Function's backward), else None.

    Example:
        >>> import autodiff as torch
        >>> x = torch.tensor(1.0, requires_grad=True)
        >>> y = x.exp()
        >>> _ = y.grad_fn.register_prehook(
        ...     lambda g: print(torch._C._current_autograd_node().name()))
        >>> y.backward()
        ExpBackward0
        >>> print(torch._C._current_autograd_node())
        None
    """
    task = current_pass()
    if task is None or task.run is None or task.run.current is None:
        return None
    return observed(task.run.current)


# ---- cached tensors (torch's registry for CUDA graph trees: a process-wide set) ----


class _CachedTensors:
    """The tensors marked cached, by id (weakly held: a Tensor's `==` is elementwise, so no
    WeakSet), and whether the registry is on. Process-wide, as torch's."""

    lock = threading.Lock()
    enabled = False
    refs: dict = {}


def _set_cached_tensors_enabled(enabled: bool) -> None:
    """Turn the cached-tensor registry on or off (off: no tensor counts as cached)."""
    _CachedTensors.enabled = bool(enabled)


def _check_cached_enabled(name: str) -> None:
    if not _CachedTensors.enabled:
        raise RuntimeError(
            f"{name}: cached tensors are not enabled; call "
            "torch._C._set_cached_tensors_enabled(True) first"
        )


def _add_cached_tensor(tensor) -> None:
    """Mark `tensor` as cached (the registry must be enabled)."""
    _check_cached_enabled("_add_cached_tensor")
    key = id(tensor)
    refs = _CachedTensors.refs
    with _CachedTensors.lock:
        refs[key] = weakref.ref(tensor, lambda _, key=key: refs.pop(key, None))


def _remove_cached_tensor(tensor) -> None:
    """Unmark `tensor` (the registry must be enabled; a tensor not marked is left alone)."""
    _check_cached_enabled("_remove_cached_tensor")
    with _CachedTensors.lock:
        ref = _CachedTensors.refs.get(id(tensor))
        if ref is not None and ref() is tensor:
            del _CachedTensors.refs[id(tensor)]


def _is_cached_tensor(tensor) -> bool:
    """Whether `tensor` is marked cached (always False while the registry is off).

    Example:
        >>> import autodiff as torch
        >>> torch._C._set_cached_tensors_enabled(True)
        >>> x = torch.zeros(2); torch._C._add_cached_tensor(x)
        >>> torch._C._is_cached_tensor(x), torch._C._is_cached_tensor(torch.zeros(2))
        (True, False)
        >>> torch._C._remove_cached_tensor(x); torch._C._set_cached_tensors_enabled(False)
        >>> torch._C._is_cached_tensor(x)
        False
    """
    if not _CachedTensors.enabled:
        return False
    ref = _CachedTensors.refs.get(id(tensor))
    return ref is not None and ref() is tensor


# ---- saved tensors and version counters ----


def _make_saved_tensor(tensor, is_output: bool, is_inplace_on_view: bool = False) -> SavedTensor:
    """A SavedTensor of `tensor`, saved as a node would save it now: through this thread's
    innermost saved-tensor hooks, if any, and checked against in-place changes on unpack.

    Example:
        >>> import autodiff as torch
        >>> a = torch.ones(2, requires_grad=True)
        >>> torch._C._autograd._make_saved_tensor(a, is_output=False).unpack() is a
        True
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(
            "_make_saved_tensor(): incompatible function arguments. The following argument types "
            "are supported:\n    1. (tensor: torch.Tensor, is_output: bool, is_inplace_on_view: "
            f"bool = False) -> torch._C._autograd.SavedTensor\n\nInvoked with: {tensor!r}"
        )
    st = autograd_state()
    hooks = st.saved_tensors_hooks[-1] if st.saved_tensors_hooks else None
    edge = gradient_edge(tensor) if tensor.requires_grad else None
    return _LooseSavedTensor._make(tensor, is_output, hooks, edge)


class _WeakTensorRef:
    """A weak reference to a tensor: `expired()` once the tensor has been freed."""

    __slots__ = ("_ref",)

    def __init__(self, tensor) -> None:
        self._ref = weakref.ref(tensor)

    def expired(self) -> bool:
        """True once the tensor no longer exists."""
        return self._ref() is None


def _saved_tensors_hooks_is_enabled() -> bool:
    """False inside `torch.autograd.graph.disable_saved_tensors_hooks`."""
    return autograd_state().saved_tensors_hooks_disabled is None


class _UndefinedGradFunction(Function):
    @staticmethod
    def forward(ctx, *tensors):
        return tensors[0] if len(tensors) == 1 else tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None,) * len(grads)


class UndefinedGrad:
    """`UndefinedGrad()(*tensors)`: the tensors, through a node whose backward gives each
    input an undefined (None) gradient, whatever gradient reaches it.

    Example:
        >>> import autodiff as torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> y = torch._C._functions.UndefinedGrad()(x * 2)
        >>> y.sum().backward(); x.grad is None
        True
    """

    def __call__(self, *tensors):
        return _UndefinedGradFunction.apply(*tensors)


class _DelayedErrorFunction(Function):
    @staticmethod
    def forward(ctx, message, *tensors):
        ctx.message = message
        return tensors[0] if len(tensors) == 1 else tensors

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.message)


class DelayedError:
    """`DelayedError(message, num_inputs)(*tensors)`: the tensors, through a node whose
    backward raises `RuntimeError(message)` (an error that only a backward pass reaching it
    reports).

    Example:
        >>> import autodiff as torch
        >>> y = torch._C._functions.DelayedError("no gradient here", 1)(
        ...     torch.ones(2, requires_grad=True))
        >>> try:
        ...     y.sum().backward()
        ... except RuntimeError as e:
        ...     print(e)
        no gradient here
    """

    def __init__(self, message: str, num_inputs: int) -> None:
        self._message = message
        self._num_inputs = num_inputs

    def __call__(self, *tensors):
        if len(tensors) != self._num_inputs:
            raise TypeError(f"expected {self._num_inputs} arguments, got {len(tensors)} instead")
        return _DelayedErrorFunction.apply(self._message, *tensors)


# As in torch, both are node types (torch constructs the node, then applies it to tensors).
Node.register(UndefinedGrad)
Node.register(DelayedError)


class _Namespace(types.SimpleNamespace):
    """One of torch._C's submodules: the names autodiff maps, and a clear error for others."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"torch._C.{self._path}.{name} has no counterpart in autodiff (mapped: "
            f"{', '.join(sorted(k for k in vars(self) if not k.startswith('_path')))})"
        )


# torch._C._functions: node classes.
_functions = _Namespace(
    _path="_functions",
    AccumulateGrad=AccumulateGrad,
    DelayedError=DelayedError,
    UndefinedGrad=UndefinedGrad,
)

# torch._C._autograd: the saved-tensor class and the hooks switch.
_autograd = _Namespace(
    _path="_autograd",
    SavedTensor=SavedTensor,
    _make_saved_tensor=_make_saved_tensor,
    _saved_tensors_hooks_is_enabled=_saved_tensors_hooks_is_enabled,
    _unsafe_set_version_counter=_unsafe_set_version_counter,
)
