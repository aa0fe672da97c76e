"""Module hooks as torch implements them: `RemovableHandle` (torch.utils.hooks') and the
machinery of full backward hooks (`BackwardHook`).

A full backward hook needs the gradients with respect to a module's inputs and outputs, but
a module's forward is arbitrary code, recorded as many nodes. As torch does, the module's
tensor inputs and its tensor outputs each pass through `BackwardHookFunction`, an identity
`autograd.Function`: the node on the outputs sees the grad_outputs first (a pre-hook stores
them and runs the backward pre-hooks), the node on the inputs then sees the grad_inputs (a
hook runs the user's hooks with both and may replace the grad_inputs).
"""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from typing import Any, NamedTuple

from autodiff.autograd.function import Function
from autodiff.autograd.grad_mode import is_grad_enabled
from autodiff.core.tensor import Tensor
from autodiff.torch.creation import zeros

_next_id = itertools.count()


class _Aval(NamedTuple):
    shape: tuple
    dtype: Any


class RemovableHandle:
    """Returned by a hook registration (torch.utils.hooks.RemovableHandle): `remove()`
    unregisters the hook; as a context manager it removes it on exit.

    Example:
        >>> hooks = OrderedDict()
        >>> handle = RemovableHandle(hooks)
        >>> hooks[handle.id] = print
        >>> handle.remove(); len(hooks)
        0
    """

    id: int

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_next_id)
        self.extra_dict_ref: tuple = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        """Unregister the hook (again: nothing happens)."""
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        extras = state[2] if len(state) > 2 else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class BackwardHookFunction(Function):
    """The identity on tensors, recorded as one node (`BackwardHookFunctionBackward`) that
    full backward hooks attach to; inputs that need no gradient come out non-differentiable.
    """

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """The full backward hooks and backward pre-hooks of one call of a module (torch's
    torch.utils.hooks.BackwardHook): wraps the call's tensor inputs and outputs in
    `BackwardHookFunction` and hooks its nodes."""

    def __init__(self, module, user_hooks: list, user_pre_hooks: list) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        # (the grad_outputs live here only between the two nodes' hooks: kept longer, a
        # create_graph backward would tie them to the graph in a cycle)
        self.grad_outputs: tuple | None = None
        self.n_outputs = -1
        self.output_tensors_index: list | None = None
        self.n_inputs = -1
        self.input_tensors_index: list | None = None
        self._no_grad_inputs: tuple = ()  # per tensor input: its aval if it needs no grad

    @staticmethod
    def _pack_with_none(indices, values, size: int) -> tuple:
        res: list = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values) -> tuple:
        return tuple(values[idx] for idx in indices)

    def _set_user_hook(self, grad_fn) -> None:
        def hook(grad_input, _):
            if self.grad_outputs is None:
                # The gradient reached the inputs without passing the outputs (a double
                # backward, say): the module's hooks do not run.
                return None
            # (torch's node hands zeros, not None, for a tensor input that needs no gradient)
            grad_input = tuple(
                zeros(*like.shape, dtype=like.dtype) if g is None and like is not None else g
                for g, like in zip(grad_input, self._no_grad_inputs)
            )
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError(
                        "Backward hook returned an invalid number of grad_input, "
                        f"got {len(out)}, but expected {len(res)}"
                    )
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args: tuple) -> tuple:
        tensors_idx = []
        tensors = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= bool(arg.requires_grad)
        if not (requires_grad and is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError(
                "Cannot set Module backward hook for a Module with no input Tensors."
            )
        grad_fns = [
            t.grad_fn
            for t in new_tensors
            if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"
        ]
        if not grad_fns:
            raise RuntimeError(
                "Error while setting up backward hooks. Please open an issue with a code "
                "sample to reproduce this."
            )
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args: tuple) -> tuple:
        """`args` with its tensors passed through a hooked `BackwardHookFunction`."""
        self._no_grad_inputs = tuple(
            None if a.requires_grad else _Aval(a.shape, a.dtype)
            for a in args
            if isinstance(a, Tensor)
        )
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def _run_pre_hooks(self) -> None:
        """The user's backward pre-hooks, each of which may replace the grad_outputs."""
        if not self.user_pre_hooks:
            return
        expected_len = len(self.grad_outputs)
        for user_pre_hook in self.user_pre_hooks:
            hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
            if hook_grad_outputs is None:
                continue
            actual_len = len(hook_grad_outputs)
            if actual_len != expected_len:
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, "
                    f"got {actual_len}, but expected {expected_len}"
                )
            self.grad_outputs = hook_grad_outputs

    def _run_hooks_without_inputs(self) -> None:
        """The user's backward hooks when no input needs a gradient (no grad_inputs)."""
        grad_inputs = self._pack_with_none([], [], self.n_inputs)
        for user_hook in self.user_hooks:
            res = user_hook(self.module, grad_inputs, self.grad_outputs)
            if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                raise RuntimeError(
                    "Backward hook for Modules where no input requires gradient "
                    "should always return None or None for all gradients."
                )

    def setup_output_hook(self, args):
        """The module's result with its tensors passed through a hooked
        `BackwardHookFunction` (whose pre-hook records the grad_outputs)."""

        def fn(grad_fn):
            def hook(grad_output):
                self.grad_outputs = self._pack_with_none(
                    self.output_tensors_index, grad_output, self.n_outputs
                )
                self._run_pre_hooks()
                local_grad_outputs = self.grad_outputs
                # No input needs a gradient: the user's hooks run here, with no grad_inputs.
                if self.input_tensors_index is None:
                    self._run_hooks_without_inputs()
                    self.grad_outputs = None
                if local_grad_outputs is not None:
                    assert self.output_tensors_index is not None
                    return tuple(local_grad_outputs[i] for i in self.output_tensors_index)
                return None

            grad_fn.register_prehook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]


class WrappedHook:
    """A hook called with a module (held weakly) as its first argument (torch's
    `_WrappedHook`, for legacy backward hooks on a grad_fn)."""

    def __init__(self, hook, module) -> None:
        self.hook = hook
        self.module = weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)


__all__ = ["BackwardHook", "BackwardHookFunction", "RemovableHandle", "WrappedHook"]
