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

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.autograd._backward import backward as autograd_backward
from autodiff.autograd._state import autograd_state
from autodiff.autograd.function import Function
from autodiff.autograd.grad_mode import enable_grad, no_grad
from autodiff.autograd.graph import saved_tensors_hooks
from autodiff.core.tensor import Tensor
from autodiff.torch_functions import get_rng_state, set_rng_state


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


def _metadata(t) -> tuple:
    return (tuple(np.shape(t)), np.dtype(t.dtype) if hasattr(t, "dtype") else None)


class _Frame:
    """One checkpointed call: the handles its forward pass saved, and the values a
    recomputation gives for them (made on the first unpack)."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, determinism_check: str, preserve):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.determinism_check = determinism_check
        self.rng = _RNGReplay(preserve)
        self.metadata: list[tuple] = []  # per saved tensor, in saving order
        self.recomputed: list | None = None

    def pack(self, tensor: Tensor) -> int:
        self.metadata.append(_metadata(tensor))
        return len(self.metadata) - 1

    def unpack(self, index: int):
        if self.recomputed is None:
            self.recomputed = self._recompute()
        return self.recomputed[index]

    def _recompute(self) -> list:
        values: list = []

        def pack(tensor: Tensor) -> None:
            values.append(tensor.detach())

        def unpack(_):  # (the recomputed graph is never run backward)
            raise CheckpointError("torch.utils.checkpoint: the recomputed graph was unpacked")

        with self.rng, enable_grad(), saved_tensors_hooks(pack, unpack):
            self.fn(*self.args, **self.kwargs)
        if len(values) != len(self.metadata):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{len(self.metadata)}\nNumber of tensors saved during recomputation: "
                f"{len(values)}.\n"
            )
        if self.determinism_check == "default":
            for i, (saved, value) in enumerate(zip(self.metadata, values)):
                if _metadata(value) != saved:
                    raise CheckpointError(
                        "torch.utils.checkpoint: Recomputed values for the following tensors "
                        f"have different metadata than during the forward pass.\ntensor at "
                        f"position {i}:\nsaved metadata: {saved}\nrecomputed metadata: "
                        f"{_metadata(value)}\n"
                    )
        return values


def _checkpoint_without_reentrant(
    function: Callable, preserve: bool, determinism_check: str, args: tuple, kwargs: dict
):
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    frame = _Frame(function, args, kwargs, determinism_check, preserve)
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


# ------------------------------------------------------------------------------ public


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable | None = None,
    determinism_check: str = "default",
    debug: bool = False,
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
        if context_fn is not None or debug:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if context_fn is not None:
        raise NotImplementedError("checkpoint: context_fn is not supported")
    return _checkpoint_without_reentrant(
        function, preserve_rng_state, determinism_check, args, kwargs
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


__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential"]
