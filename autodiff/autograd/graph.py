"""torch.autograd.graph: Node, GradientEdge, hooks across tensors, saved-tensor hooks, versions."""

from __future__ import annotations

import abc
import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import NamedTuple

from autodiff.autograd._nodes import SavedTensor
from autodiff.autograd._record import gradient_edge
from autodiff.autograd._state import autograd_state
from autodiff.core import graph as _core_graph
from autodiff.core.tensor import Tensor


class Node(abc.ABC):
    """A node of the backward graph, as `tensor.grad_fn` is (torch's virtual base class).

    Every graph node is an instance (`isinstance(y.grad_fn, Node)`), of a class named as torch
    names its node (MulBackward0, AccumulateGrad, MyFnBackward), with `name()`,
    `next_functions`, `metadata`, `register_hook`, `register_prehook`; a custom Function's
    ctx is one too, as in torch.

    Example:
        >>> import autodiff as ad
        >>> y = ad.tensor([1.0], requires_grad=True) * 2
        >>> isinstance(y.grad_fn, Node), type(y.grad_fn).__name__
        (True, 'MulBackward0')
    """

    @abc.abstractmethod
    def name(self) -> str:
        """torch's name of the node (`MulBackward0`)."""

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple:
        """One `(node, output_index)` per input."""

    @property
    @abc.abstractmethod
    def metadata(self) -> dict:
        """A dict for the user's annotations of the node."""

    @abc.abstractmethod
    def register_hook(self, fn):
        """`fn(grad_inputs, grad_outputs)` runs after the node."""

    @abc.abstractmethod
    def register_prehook(self, fn):
        """`fn(grad_outputs)` runs before the node."""

    @classmethod
    def __subclasshook__(cls, subclass):
        if cls is Node and subclass is not None and issubclass(subclass, _core_graph.Node):
            return True
        return NotImplemented


class GradientEdge(NamedTuple):
    """Where a tensor's gradient enters the graph: a node and one of its outputs.

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0], requires_grad=True)
        >>> edge = get_gradient_edge(x * 2)
        >>> edge.node.name(), edge.output_nr
        ('MulBackward0', 0)
    """

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The GradientEdge of `tensor` (usable as an `inputs` entry of backward/grad).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0], requires_grad=True)
        >>> get_gradient_edge(x * 2).node.name()
        'MulBackward0'
    """
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    node, index = gradient_edge(tensor)
    return GradientEdge(_core_graph.observed(node), index)


def increment_version(tensor: Tensor) -> None:
    """Bump `tensor._version`, as an in-place modification would.

    Example:
        >>> import autodiff as ad
        >>> x = ad.zeros(2)
        >>> before = x._version
        >>> increment_version(x)
        >>> x._version - before
        1
    """
    tensor._vc += 1


def _unsafe_set_version_counter(tensors, versions) -> None:
    """Set each tensor's version counter to a version (what
    `torch.autograd._unsafe_preserve_version_counter` restores).

    Example:
        >>> import autodiff as torch
        >>> x = torch.zeros(2); _ = x.add_(1); x._version
        1
        >>> _unsafe_set_version_counter((x,), (0,)); x._version
        0
    """
    if isinstance(tensors, Tensor) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(
            "_unsafe_set_version_counter(): incompatible function arguments. The following "
            "argument types are supported:\n    1. (arg0: Sequence[torch.Tensor], arg1: "
            f"Sequence[SupportsInt]) -> None\n\nInvoked with: {tensors!r}, {versions!r}"
        )
    tensors, versions = list(tensors), [int(v) for v in versions]
    if len(tensors) != len(versions):
        raise RuntimeError(f"tensors_len={len(tensors)}, versions_len={len(versions)}")
    for version in versions:
        if version < 0:
            raise RuntimeError(f"Cannot set a version_counter to a value below 0: {version}")
    for tensor, version in zip(tensors, versions):
        vc = tensor._vc
        if type(vc) is _core_graph.VersionCounter:  # (shared with aliases: all see it, as torch's)
            vc.value = version
        else:
            tensor._vc = version


class _unsafe_preserve_version_counter(contextlib.ContextDecorator):
    """Within it, in-place changes of `tensors` (one tensor or a tuple) leave their version
    counters as they were on entry (torch's escape hatch: autograd then cannot tell that a
    saved tensor changed; use it only to hide a change the backward pass must not see).

    Example:
        >>> import autodiff as torch
        >>> x = torch.zeros(2)
        >>> with _unsafe_preserve_version_counter(x):
        ...     _ = x.add_(1)
        >>> x._version
        0
    """

    def __init__(self, tensors) -> None:
        self.tensors = (tensors,) if isinstance(tensors, Tensor) else tensors
        if not isinstance(self.tensors, tuple):
            raise AssertionError("Expected tensors to be a tuple")
        self.prev_versions = tuple(t._version for t in self.tensors)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        _unsafe_set_version_counter(self.tensors, self.prev_versions)
        return False


class saved_tensors_hooks:
    """Transform tensors saved for backward: `pack_hook(t)` when saved, `unpack_hook(p)` when used.

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([2.0], requires_grad=True)
        >>> with saved_tensors_hooks(lambda t: t.detach() * 1, lambda p: p):
        ...     y = x * x
        >>> y.backward(ad.tensor([1.0])); x.grad
        tensor([4.])
    """

    def __init__(self, pack_hook: Callable, unpack_hook: Callable):
        self.hooks = (pack_hook, unpack_hook)

    def __enter__(self):
        st = autograd_state()
        if st.saved_tensors_hooks_disabled is not None:  # (see disable_saved_tensors_hooks)
            raise RuntimeError(st.saved_tensors_hooks_disabled)
        st.saved_tensors_hooks.append(self.hooks)

    def __exit__(self, *exc):
        stack = autograd_state().saved_tensors_hooks
        if not stack:
            raise RuntimeError(
                "saved_tensors_hooks: exiting a context that is not active (no saved-tensor "
                "hooks are set on this thread): each __exit__ must match an __enter__."
            )
        stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Save tensors for backward as copies in CPU memory (torch's, for code that uses it: here
    every tensor is in CPU memory already, so this only copies them, as torch does).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([2.0], requires_grad=True)
        >>> with save_on_cpu():
        ...     y = x * x
        >>> y.backward(ad.tensor([1.0])); x.grad
        tensor([4.])
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        super().__init__(lambda t: t.detach().copy(), lambda packed: packed)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Within it, using saved-tensor hooks (entering `saved_tensors_hooks` or `save_on_cpu`)
    raises RuntimeError(error_message); so does entering it while some are in use.

    Example:
        >>> with disable_saved_tensors_hooks("no hooks here"):
        ...     try:
        ...         save_on_cpu().__enter__()
        ...     except RuntimeError as e:
        ...         print(e)
        no hooks here
    """
    st = autograd_state()
    if st.saved_tensors_hooks:
        raise RuntimeError(error_message)
    previous = st.saved_tensors_hooks_disabled
    st.saved_tensors_hooks_disabled = error_message
    try:
        yield
    finally:
        st.saved_tensors_hooks_disabled = previous


class _MultiHandle:
    def __init__(self, handles):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable, *, mode: str = "all"):
    """Call `fn` once per backward pass with the gradients of `tensors`.

    mode "all": after every tensor of `tensors` that the pass reaches has its
    gradient; `fn(grads)` gets None for the others. mode "any": `fn(grad)` on the
    first gradient computed in the pass.

    Example:
        >>> import autodiff as ad
        >>> a = ad.tensor([1.0], requires_grad=True)
        >>> b = ad.tensor([2.0], requires_grad=True)
        >>> seen = []
        >>> def hook(grads):
        ...     seen.append([g.tolist() for g in grads])
        >>> handle = register_multi_grad_hook((a, b), hook)
        >>> (a * b).sum().backward()
        >>> seen
        [[[2.0], [1.0]]]
        >>> handle.remove()
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = list(tensors)
    lock = threading.Lock()
    passes: dict = {}

    def make_hook(i):
        def hook(grad):
            st = autograd_state()
            pass_id = st.backward_pass_id
            with lock:
                entry = passes.setdefault(
                    pass_id, {"grads": [None] * len(tensors), "seen": 0, "fired": False}
                )
                if mode == "any":
                    if entry["fired"]:
                        return None
                    entry["fired"] = True
                    call = True
                else:
                    entry["grads"][i] = grad
                    entry["seen"] += 1
                    expected = sum(
                        1
                        for t in tensors
                        if t.requires_grad and gradient_edge(t)[0] in st.pass_nodes
                    )
                    call = entry["seen"] >= expected
            if mode == "any":
                fn(grad)
            elif call:
                passes.pop(pass_id, None)
                fn(tuple(entry["grads"]))
            return None

        return hook

    return _MultiHandle(
        [t.register_hook(make_hook(i)) for i, t in enumerate(tensors) if t.requires_grad]
    )


__all__ = [
    "GradientEdge",
    "Node",
    "SavedTensor",
    "disable_saved_tensors_hooks",
    "get_gradient_edge",
    "increment_version",
    "register_multi_grad_hook",
    "save_on_cpu",
    "saved_tensors_hooks",
]
