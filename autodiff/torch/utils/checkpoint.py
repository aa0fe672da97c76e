"""`torch.utils.checkpoint`: activation checkpointing on the torch face.

`checkpoint(fn, *args, use_reentrant=...)` runs `fn` keeping fewer of its intermediate values
for backward and recomputes them when the backward pass needs them. Both of torch's variants:

- `use_reentrant=False` (recommended): the forward pass is recorded as usual, but the tensors
  its operations save for backward go through `saved_tensors_hooks` that keep only a handle;
  the first backward use of one re-runs `fn` (grad mode on) to get them all back. Gradients
  flow to everything `fn` uses — its arguments and the parameters it closes over — and it
  works with `backward()`, `autograd.grad()` and double backward.
- `use_reentrant=True` (torch's default, with its warning when `use_reentrant` is not
  passed): an `autograd.Function` that runs `fn` under no_grad, and in its backward re-runs it
  on detached inputs and calls `autograd.backward` on that graph, which accumulates into the
  `.grad` of the parameters `fn` uses. As in torch it needs a tensor argument that requires
  grad, and supports `.backward()` (not `autograd.grad`).

The memory the non-reentrant variant saves is what the level-0 graph hands to saved-tensor
hooks: the inputs its nodes save; the reentrant variant keeps only `fn`'s arguments. The
functional face has its own: `autodiff.checkpoint(fun)` (JAX's remat).
"""

from __future__ import annotations

import contextlib
import os
import threading
import traceback
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.autograd._backward import backward as autograd_backward
from autodiff.autograd._backward import current_pass
from autodiff.autograd._state import autograd_state
from autodiff.autograd.function import Function
from autodiff.autograd.grad_mode import enable_grad, no_grad
from autodiff.autograd.graph import saved_tensors_hooks
from autodiff.core.tensor import Tensor
from autodiff.core.trace import state
from autodiff.torch.generator import get_rng_state, set_rng_state


class CheckpointError(RuntimeError):
    """The recomputation of a checkpointed function did not reproduce its forward pass."""


def _warn_use_reentrant(name: str) -> None:
    if name == "checkpoint":
        text = (
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants."
        )
    else:
        text = (
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is "
            "not passed. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants."
        )
    warnings.warn(text, UserWarning, stacklevel=3)


class _RNGReplay:
    """The default generator's state at the forward pass, put back while the recomputation
    runs (so dropout draws the same masks) and restored after it (`preserve_rng_state`)."""

    def __init__(self, preserve: bool) -> None:
        self.state = get_rng_state() if preserve else None
        self.outer: dict | None = None

    def __enter__(self) -> None:
        if self.state is not None:
            self.outer = get_rng_state()
            set_rng_state(self.state)

    def __exit__(self, *exc) -> None:
        if self.outer is not None:
            set_rng_state(self.outer)
            self.outer = None


# ------------------------------------------------------------------------------ reentrant


class CheckpointFunction(Function):
    """The reentrant variant: forward under no_grad; backward recomputes and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn(
                "None of the inputs have requires_grad=True. Gradients will be None",
                stacklevel=5,
            )
        ctx.run_function = run_function
        ctx.rng = _RNGReplay(preserve_rng_state)
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        passes = autograd_state().passes
        if not passes or not passes[-1].accumulate_all_leaves:
            # (the inner backward would fill `.grad`s that autograd.grad does not ask for)
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you "
                "can either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor
        detached = [
            a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
            for a in inputs
        ]
        with ctx.rng, enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [
            (out, g)
            for out, g in zip(outputs, grads)
            if isinstance(out, Tensor) and out.requires_grad and g is not None
        ]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        autograd_backward([out for out, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in detached)


# ------------------------------------------------------------------------------ non-reentrant
#
# As torch's: the forward pass runs under saved-tensor hooks whose pack hook keeps, for each
# tensor an operation saves, only a `_Holder` (and the tensor's metadata). The first unpack
# in a backward pass (a "graph task", or a `GraphExecGroup`) re-runs the function under hooks
# that hand each saved tensor to its holder for that pass, stopping as soon as the last one
# is made (early stop); each recomputed tensor is handed out once, then dropped.

_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""

_DEBUG_TEMPLATE = """ \
An error happened while unpacking tensors; dumping logs of latest computation
because you passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.
Scroll all the way down for guidance on how to navigate these logs.

+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|    1. Stack traces of the tensors saved for backward in the original forward |
+------------------------------------------------------------------------------+

{forward_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|    2. Stack traces of the tensors saved for backward during recomputation    |
+------------------------------------------------------------------------------+

{recompute_traces}
+~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~+
|    3. Log of the tensors saved in the original forward and recomputation     |
+------------------------------------------------------------------------------+
(Scroll up to correlate stack traces with each tensor listed below. This
 helps identify their source in the code.)

Tensors saved during the original forward:

{forward_ops}

Tensors saved during recomputation:

{recompute_ops}

+------------------------------------------------------------------------------+
 ERROR: Detected non-determinism while running activation checkpointing

 You are seeing this error because you passed `debug=True` to checkpoint and
 tensors to be saved during the original forward and differ between those saved
 during recomputation. This can happen if different operators were ran in the
 original forward and in the recomputation.

 To identify where the mismatch may be coming from, you can do the following:

 1) Compare the tensors saved during original forward and recomputation to
    see where they differ. They are printed above in the order they were saved,
    each with the operation that produced it.

 2) Review the stack trace of each saved tensor to locate the code that saved it.

 Note that the logs can be quite long. Here's how they are structured:
 (Tip: you can Ctrl-f for these headers)

 1. Stack traces of the tensors saved for backward in the original forward
 2. Stack traces of the tensors saved for backward during recomputation
 3. Log of the tensors saved in the original forward and recomputation
 4. Error message                                             <--- You are here
--------------------------------------------------------------------------------
"""


class _Settings(threading.local):
    def __init__(self) -> None:
        self.debug: bool | None = None  # set_checkpoint_debug_enabled
        self.early_stop: bool | None = None  # set_checkpoint_early_stop
        self.group: GraphExecGroup | None = None  # the GraphExecGroup entered


_SETTINGS = _Settings()


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Within the context, `checkpoint` runs in debug mode (True) or not (False) whatever its
    `debug` argument says; None defers to the argument (in this thread).

    Example:
        >>> with set_checkpoint_debug_enabled(True):
        ...     pass
    """
    previous = _SETTINGS.debug
    _SETTINGS.debug = enabled
    try:
        yield
    finally:
        _SETTINGS.debug = previous


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Whether non-reentrant checkpoints run within the context stop their recomputation as
    soon as it has made every tensor the backward pass needs (the default: True). It acts on
    the checkpoints' forward pass; their backward may run outside.

    Example:
        >>> import autodiff as ad
        >>> x = ad.ones(2, requires_grad=True)
        >>> with set_checkpoint_early_stop(False):
        ...     y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False)
        >>> y.sum().backward()
    """
    previous = _SETTINGS.early_stop
    _SETTINGS.early_stop = enable
    try:
        yield
    finally:
        _SETTINGS.early_stop = previous


class GraphExecGroup:
    """Backward calls made within one instance of this context recompute each checkpointed
    region at most once, even across several backward calls; they must then use disjoint
    parts of the graph (a saved activation is handed out once), even with retain_graph=True.
    Contexts do not nest. Only the non-reentrant checkpoint uses it.

    Example:
        >>> import autodiff as ad
        >>> x = ad.ones(2, requires_grad=True)
        >>> y = checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)
        >>> with GraphExecGroup():
        ...     y.sum().backward()
    """

    def __enter__(self) -> GraphExecGroup:
        if _SETTINGS.group is not None:
            raise RuntimeError(
                f"GraphExecGroup contexts cannot be nested. Already inside group {_SETTINGS.group}"
            )
        _SETTINGS.group = self
        return self

    def __exit__(self, *exc) -> None:
        _SETTINGS.group = None

    @classmethod
    def _get_current_group(cls) -> GraphExecGroup | None:
        return _SETTINGS.group


def noop_context_fn() -> tuple:
    """The default `context_fn` of `checkpoint`: no context for forward nor recomputation.

    Example:
        >>> noop_context_fn()[0].__class__.__name__
        'nullcontext'
    """
    return contextlib.nullcontext(), contextlib.nullcontext()


def _default_metadata(t) -> dict:
    return {
        "shape": tuple(np.shape(t)),
        "dtype": getattr(t, "dtype", None),
        "device": getattr(t, "device", "cpu"),
    }


_METADATA_FNS: dict[str, Callable] = {"default": _default_metadata, "none": lambda t: None}


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once the last needed tensor is made."""


class _Handle:
    """What a holder gives a recomputed tensor for one backward pass (a weak key)."""


class _Holder:
    """What the forward pass saves in place of a tensor: per backward pass (id), the handle
    of its recomputed value, None once handed out."""

    def __init__(self) -> None:
        self.handles: dict = {}


class _SavedLog:
    """Debug mode: per saved tensor, a line (metadata, the operation that made it) and the
    user-code stack where it was saved."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.stacks: list[list[str]] = []

    def add(self, tensor: Tensor) -> None:
        node = tensor.grad_fn
        made_by = "an input" if node is None else f"output of {node.name()}"
        meta = _default_metadata(tensor)
        self.lines.append(
            f"saved tensor {len(self.lines)}: shape={list(meta['shape'])}, "
            f"dtype={meta['dtype']}, {made_by}"
        )
        frames = traceback.extract_stack()[:-1]
        self.stacks.append(
            [
                f"{f.filename}:{f.lineno}:{f.name}"
                for f in frames
                if f"{os.sep}autodiff{os.sep}" not in f.filename
                and not f.filename.startswith("<frozen")
            ]
        )

    def traces(self, label: str) -> str:
        out = ""
        for i, (line, stack) in enumerate(zip(self.lines, self.stacks)):
            out += f"{line}   ({i + 1} of {len(self.lines)} in {label})\n\n"
            out += "".join(f"{entry}\n" for entry in stack) + "\n\n"
        return out


class _Frame:
    """One checkpointed call: the holders its forward pass saved, and per backward pass the
    values a recomputation made for them."""

    def __init__(
        self,
        fn: Callable,
        args: tuple,
        kwargs: dict,
        metadata_fn: Callable,
        preserve: bool,
        early_stop: bool,
        recompute_context: Callable,
        debug: bool,
    ) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.metadata_fn = metadata_fn
        self.rng = _RNGReplay(preserve)
        self.early_stop = early_stop
        self.recompute_context = recompute_context
        self.weak_holders: list = []
        self.metadata: list = []
        self.recomputed: dict = defaultdict(weakref.WeakKeyDictionary)
        self.counter: dict = defaultdict(int)
        self.is_recomputed: dict = defaultdict(bool)
        self.forward_completed = False
        self.ignore_mismatch = False
        self.logs = (_SavedLog(), _SavedLog()) if debug else None

    # ---- the forward pass's hooks
    def pack(self, tensor: Tensor) -> _Holder:
        holder = _Holder()
        self.weak_holders.append(weakref.ref(holder))
        self.metadata.append(self.metadata_fn(tensor))
        if self.logs is not None:
            self.logs[0].add(tensor)
        return holder

    def unpack(self, holder: _Holder):
        try:
            return self._unpack(holder)
        except CheckpointError as e:
            if self.logs is None:
                raise
            forward, recompute = self.logs
            raise CheckpointError(
                _DEBUG_TEMPLATE.format(
                    forward_traces=forward.traces("original"),
                    recompute_traces=recompute.traces("recompute"),
                    forward_ops="\n".join(forward.lines),
                    recompute_ops="\n".join(recompute.lines),
                )
            ) from e

    def _unpack(self, holder: _Holder):
        gid: Any = _SETTINGS.group
        if gid is None:
            task = current_pass()
            # (outside a backward pass, every unpack recomputes: a fresh id)
            gid = task.id if task is not None else object()
        if not self.is_recomputed[gid]:
            self._recompute(gid)
            self.is_recomputed[gid] = True
            self._check(gid)
        handle = holder.handles.get(gid)
        if handle is None:
            extra = ""
            if _SETTINGS.group is not None:
                extra = (
                    "Performing two backward calls that overlap (i.e. require the same saved "
                    "activation in order to compute gradients) is not allowed while under the "
                    "torch.utils.checkpoint.GraphExecGroup context. "
                )
            raise CheckpointError(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                f"already unpacked once. {extra}If you are calling ctx.saved_tensors in "
                "backward, make sure to do so only once. Otherwise please open an issue with "
                "details on your use case."
            )
        value = self.recomputed[gid].pop(handle)
        holder.handles[gid] = None
        return value

    # ---- the recomputation
    def _recompute(self, gid) -> None:
        def pack(tensor: Tensor):
            tensor = tensor.detach() if tensor.requires_grad else tensor
            if self.logs is not None:
                self.logs[1].add(tensor)
            index = self.counter[gid]
            self.counter[gid] += 1
            if index >= len(self.weak_holders):
                if not self.forward_completed:  # (a backward inside the checkpointed forward)
                    self.ignore_mismatch = True
                    return tensor
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during recomputation "
                    f"than during the original forward pass.\n{_TIP}"
                )
            holder = self.weak_holders[index]()
            if holder is not None:  # (else its node is gone: nothing needs it)
                handle = holder.handles[gid] = _Handle()
                self.recomputed[gid][handle] = tensor
            if self.early_stop and self.counter[gid] == len(self.weak_holders):
                raise _StopRecomputation
            return tensor

        def unpack(tensor):  # (the recomputed graph may be run backward inside the function)
            return tensor

        try:
            with self.rng, enable_grad(), saved_tensors_hooks(pack, unpack):
                with self.recompute_context():
                    self.fn(*self.args, **self.kwargs)
        except _StopRecomputation:
            pass

    def _check(self, gid) -> None:
        if self.ignore_mismatch:
            return
        if self.counter[gid] != len(self.weak_holders):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{len(self.weak_holders)}\nNumber of tensors saved during recomputation: "
                f"{self.counter[gid]}.\n{_TIP}"
            )
        different = []
        for i, ref in enumerate(self.weak_holders):
            holder = ref()
            if holder is None:
                continue
            value = self.recomputed[gid][holder.handles[gid]]
            recomputed = self.metadata_fn(value)
            if recomputed != self.metadata[i]:
                different.append((i, self.metadata[i], recomputed))
        if different:
            listed = "".join(
                f"tensor at position {i}:\nsaved metadata: {saved}\n"
                f"recomputed metadata: {recomputed}\n"
                for i, saved, recomputed in different
            )
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{listed}.\n{_TIP}"
            )


def _checkpoint_without_reentrant(
    function: Callable,
    preserve: bool,
    context_fn: Callable,
    determinism_check: str,
    debug: bool,
    early_stop: bool,
    args: tuple,
    kwargs: dict,
):
    metadata_fn = _METADATA_FNS.get(determinism_check)
    if metadata_fn is None:
        raise ValueError(
            f"determinism_check should be one of {list(_METADATA_FNS)}, but got {determinism_check}"
        )
    debug = debug if _SETTINGS.debug is None else _SETTINGS.debug
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    forward_context, recompute_context = context_fn()
    if not state().grad_enabled:  # (nothing is saved: torch enters no context either)
        return function(*args, **kwargs)
    early_stop = early_stop if _SETTINGS.early_stop is None else _SETTINGS.early_stop
    frame = _Frame(
        function, args, kwargs, metadata_fn, preserve, early_stop, lambda: recompute_context, debug
    )
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        out = function(*args, **kwargs)
    frame.forward_completed = True
    return out


# ------------------------------------------------------------------------------ public


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """`function(*args, **kwargs)`, recomputed during backward instead of keeping the
    tensors its operations save (see the module docstring for the two variants).

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn
        >>> block = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
        >>> x = ad.randn(2, 3, requires_grad=True)
        >>> checkpoint(block, x, use_reentrant=False).sum().backward()
        >>> x.grad.shape, block[0].weight.grad.shape
        ((2, 3), (3, 3))
    """
    if use_reentrant is None:
        _warn_use_reentrant("checkpoint")
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(
        function,
        preserve_rng_state,
        context_fn,
        determinism_check,
        debug,
        early_stop,
        args,
        kwargs,
    )


def checkpoint_sequential(
    functions: Sequence[Callable] | Any,
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run a Sequential (or a list of modules/functions) in `segments` chunks, checkpointing
    all but the last.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn
        >>> model = nn.Sequential(*[nn.Linear(2, 2) for _ in range(4)])
        >>> x = ad.randn(1, 2, requires_grad=True)
        >>> out = checkpoint_sequential(model, 2, x, use_reentrant=False)
        >>> bool(ad.numpy.allclose(out.detach(), model(x).detach()))
        True
    """
    if use_reentrant is None:
        _warn_use_reentrant("checkpoint_sequential")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)

    def run(start: int, end: int) -> Callable:
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(
            run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve
        )
    return run(end + 1, len(functions) - 1)(input)


__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "GraphExecGroup",
    "checkpoint",
    "checkpoint_sequential",
    "noop_context_fn",
    "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop",
]
