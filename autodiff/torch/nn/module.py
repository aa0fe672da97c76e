"""`Module`: the base class of layers and models — parameters, buffers and submodules by name.

As torch.nn.Module: assigning a Parameter, a Module or a registered buffer as an attribute
registers it; `parameters()`, `named_modules()`, `state_dict()`, `train()`/`eval()`, `to()`
walk the tree of submodules in registration order.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from autodiff.autograd._state import autograd_state
from autodiff.autograd.grad_mode import no_grad
from autodiff.core.dtypes import bfloat16_dtype, float_kind
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.torch.dtypes import dtype_of_torch, to_numpy_dtype
from autodiff.torch.nn._hooks import BackwardHook, RemovableHandle, WrappedHook
from autodiff.torch.nn.parameter import Parameter
from autodiff.torch.types import check_device, device, is_meta_device, meta_array

_HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_hooks",
    "_backward_pre_hooks",
)

_TENSOR_TYPE_NAMES = {
    "float64": "Double", "float32": "Float", "float16": "Half", "int64": "Long",
    "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
    "complex128": "ComplexDouble", "complex64": "ComplexFloat",
}  # fmt: skip


def _typename(value: Any) -> str:
    """torch.typename: `torch.DoubleTensor` for a float64 tensor, else the type's name."""
    if isinstance(value, Tensor):
        return f"torch.{_TENSOR_TYPE_NAMES.get(np.dtype(value.dtype).name, '')}Tensor"
    return type(value).__qualname__


def _check_name(kind: str, name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return "\n".join([first] + [(" " * spaces + line) if line.strip() else "" for line in lines])


def zero_grads(params, set_to_none: bool = True) -> None:
    """torch's `zero_grad` of Module and Optimizer: each gradient set to None, or to zeros in
    place (first cut from any graph a `create_graph` backward gave it)."""
    capture = autograd_state().step_capture
    if capture is not None:  # (a compiled training step stages it)
        capture.zero_grads(params, set_to_none)
        return
    for p in params:
        grad = p.grad
        if grad is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if grad.grad_fn is not None:
            grad = grad.detach()
            p.grad = grad
        else:
            grad.requires_grad_(False)
        with no_grad():
            grad.zero_()


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (
            f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
            f"unexpected_keys={self.unexpected_keys})"
        )

    def __str__(self) -> str:
        return self.__repr__()


def _device_and_dtype(args: tuple, kwargs: dict) -> tuple:
    """`(device, dtype)` from `to()`'s forms: to(dtype), to(device, dtype), to(tensor),
    to(device=..., dtype=...); the device must be the CPU."""
    where = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    for name in ("non_blocking", "copy", "memory_format"):
        kwargs.pop(name, None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for arg in args:
        if isinstance(arg, Tensor):
            dtype = arg.dtype
        elif isinstance(arg, (str, device)):
            where = arg
        elif not isinstance(arg, bool):  # (non_blocking, positionally)
            dtype = arg
    if not is_meta_device(where):
        check_device(where)
    dtype = to_numpy_dtype(dtype)
    if dtype is not None and float_kind(dtype) not in "fc":
        raise TypeError(
            "nn.Module.to only accepts floating point or complex dtypes, but got desired "
            f"dtype={dtype_of_torch(dtype)}"
        )
    return where, dtype


def _key_errors(missing: list, unexpected: list) -> list:
    """load_state_dict's errors for missing and unexpected keys (strict=True), as torch's."""
    errors = []
    if missing:
        errors.append(
            "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". "
        )
    if unexpected:
        errors.append(
            "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". "
        )
    return errors


def _loadable(key: str, target, source) -> tuple:
    """(source, None) if `source` can be loaded into `target`, else (None, torch's error)."""
    if not isinstance(source, (Tensor, np.ndarray)):
        return None, (
            f'While copying the parameter named "{key}", expected torch.Tensor or '
            f"Tensor-like object from checkpoint but received {type(source)}"
        )
    shape = tuple(np.shape(source))
    if target.ndim == 0 and shape == (1,):  # (torch's backward compatibility)
        source = source[0]
        shape = ()
    if shape != target.shape:
        return None, (
            f"size mismatch for {key}: copying a param with shape "
            f"torch.Size({list(shape)}) from checkpoint, the shape in current model is "
            f"torch.Size({list(target.shape)})."
        )
    return source, None


class Module:
    """Base class of neural-network layers and models (torch.nn.Module).

    Subclasses call `super().__init__()`, assign parameters and submodules as attributes,
    and define `forward`; calling the module calls `forward`.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn
        >>> class Affine(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.scale = nn.Parameter(ad.ones(2))
        ...         self.inner = nn.Linear(2, 2)
        ...     def forward(self, x):
        ...         return self.inner(x) * self.scale
        >>> m = Affine()
        >>> [name for name, _ in m.named_parameters()]
        ['scale', 'inner.weight', 'inner.bias']
        >>> m(ad.ones(3, 2)).shape
        (3, 2)
    """

    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _modules: dict[str, Module | None]

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments: Module.__init__ "
                "takes none"
            )
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_is_full_backward_hook", None)
        for name in _HOOK_DICTS:
            object.__setattr__(self, name, OrderedDict())

    forward: Callable[..., Any]

    def __call__(self, *args, **kwargs) -> Any:
        d = self.__dict__
        if not (
            d.get("_forward_pre_hooks")
            or d.get("_forward_hooks")
            or d.get("_backward_hooks")
            or d.get("_backward_pre_hooks")
        ):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        """`forward` with the module's hooks, in torch's order: forward pre-hooks, backward
        hooks on the inputs, forward, forward hooks, backward hooks on the outputs."""
        result = None
        called_always: set = set()
        try:
            full_hooks, legacy_hooks = [], []
            if self._backward_hooks:
                if self._is_full_backward_hook:
                    full_hooks = list(self._backward_hooks.values())
                else:
                    legacy_hooks = list(self._backward_hooks.values())
            pre_hooks = list(self._backward_pre_hooks.values())
            args, kwargs = self._run_forward_pre_hooks(args, kwargs)
            bw_hook = None
            if full_hooks or pre_hooks:
                bw_hook = BackwardHook(self, full_hooks, pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            result = self._run_forward_hooks(args, kwargs, result, called_always)
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn(
                        "For backward hooks to be called, module output should be a Tensor or "
                        f"a tuple of Tensors but received {type(result)}",
                        stacklevel=3,
                    )
                result = bw_hook.setup_output_hook(result)
            if legacy_hooks:
                self._hook_result_node(result, legacy_hooks)
            return result
        except Exception:
            self._run_always_called_hooks(args, kwargs, result, called_always)
            raise

    def _run_forward_pre_hooks(self, args: tuple, kwargs: dict) -> tuple:
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                new = hook(self, args, kwargs)
                if new is not None:
                    if not (isinstance(new, tuple) and len(new) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of "
                            f"(new_args, new_kwargs), but got {new}."
                        )
                    args, kwargs = new
            else:
                new = hook(self, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
        return args, kwargs

    def _run_forward_hooks(self, args: tuple, kwargs: dict, result, called_always: set):
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_always_called:
                called_always.add(hook_id)
            if hook_id in self._forward_hooks_with_kwargs:
                new = hook(self, args, kwargs, result)
            else:
                new = hook(self, args, result)
            if new is not None:
                result = new
        return result

    def _run_always_called_hooks(self, args: tuple, kwargs: dict, result, called: set) -> None:
        """The `always_call` forward hooks not yet run, after forward raised (their own errors
        become warnings: the first error is the one raised)."""
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id not in self._forward_hooks_always_called or hook_id in called:
                continue
            try:
                if hook_id in self._forward_hooks_with_kwargs:
                    new = hook(self, args, kwargs, result)
                else:
                    new = hook(self, args, result)
                if new is not None:
                    result = new
            except Exception as e:
                warnings.warn(
                    "module forward hook with ``always_call=True`` raised an exception that "
                    f"was silenced as another error was raised in forward: {e}",
                    stacklevel=4,
                )

    def _hook_result_node(self, result, legacy_hooks: list) -> None:
        """Legacy backward hooks: on the node that made the result's first tensor."""
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is not None:
            for hook in legacy_hooks:
                grad_fn.register_hook(WrappedHook(hook, self))

    # ---- hooks ----
    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """`hook(module, args)` runs before `forward`; it may return new args (a tuple, or
        one value). With `with_kwargs=True`: `hook(module, args, kwargs)` returning None or
        `(args, kwargs)`."""
        handle = RemovableHandle(
            self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs
        )
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """`hook(module, args, output)` runs after `forward`; it may return a new output.
        With `with_kwargs=True`: `hook(module, args, kwargs, output)`; with
        `always_call=True` it also runs when forward raises."""
        handle = RemovableHandle(
            self._forward_hooks,
            extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` runs once the gradients with respect to
        the module's inputs are computed; it may return new grad_input (one entry per
        positional argument, None for non-tensors).

        Example:
            >>> import autodiff as ad
            >>> from autodiff import nn
            >>> m = nn.Linear(2, 1)
            >>> seen = []
            >>> h = m.register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].shape))
            >>> m(ad.ones(3, 2, requires_grad=True)).sum().backward(); seen
            [(3, 1)]
        """
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them."
            )
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """`hook(module, grad_output)` runs when the gradients with respect to the module's
        outputs are known, before the module's backward; it may return new grad_output."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The legacy backward hook (torch's, deprecated): `hook(module, grad_input,
        grad_output)` on the node that made the module's (first) output only; use
        `register_full_backward_hook`."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them."
            )
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def _forward_unimplemented(self, *args, **kwargs) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    forward = _forward_unimplemented

    # ---- registration ----
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add `param` (a Parameter, or None for an absent one) under `name`."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method."
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a Tensor that is state but not a parameter (e.g. running statistics);
        `persistent=False` leaves it out of `state_dict()`."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under `name`."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` (`""` is this module)."""
        module = self
        if target == "":
            return module
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def _owner_of(self, target: str) -> tuple[Module, str]:
        """The submodule holding the attribute at dotted path `target`, and its name."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        return module, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target` (e.g. `"net.0.weight"`)."""
        module, name = self._owner_of(target)
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target` (e.g. `"bn.running_mean"`)."""
        module, name = self._owner_of(target)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(module, name)

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put `module` at dotted path `target` (its parent must exist; with `strict`, so
        must the attribute)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(f"{parent._get_name()} has no attribute `{atoms[-1]}`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError(f"`{atoms[-1]}` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter) or (params is not None and name in params):
            self._assign_parameter(name, value, params)
        elif isinstance(value, Module) or name in self.__dict__.get("_modules", ()):
            self._assign_module(name, value)
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as buffer '{name}' "
                    "(torch.nn.Buffer, torch.Tensor or None expected)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _assign_parameter(self, name: str, value: Any, params) -> None:
        """`self.<name> = value` for a Parameter value or a parameter's name."""
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove(name, keep="_parameters")
        elif value is not None:
            raise TypeError(
                f"cannot assign '{_typename(value)}' as parameter '{name}' "
                "(torch.nn.Parameter or None expected)"
            )
        self.register_parameter(name, value)

    def _assign_module(self, name: str, value: Any) -> None:
        """`self.<name> = value` for a Module value or a child module's name."""
        if isinstance(value, Module):
            if self.__dict__.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove(name, keep="_modules")
        elif value is not None:
            raise TypeError(
                f"cannot assign '{_typename(value)}' as child module '{name}' "
                "(torch.nn.Module or None expected)"
            )
        self._modules[name] = value

    def _remove(self, name: str, keep: str) -> None:
        """Forget `name` everywhere but in the `keep` registry (an attribute changes kind)."""
        self.__dict__.pop(name, None)
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry != keep:
                self.__dict__[registry].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        # (called only when normal lookup fails: registered members live in the registries)
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for registry in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(registry, ()):
                del self.__dict__[registry][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list:
        names = list(super().__dir__())
        names += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted({n for n in names if not n[0].isdigit()})

    # ---- walking the tree ----
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) for this module and every submodule, depth first in
        registration order; a module reachable twice is given once unless
        `remove_duplicate=False`."""
        seen = memo if memo is not None else set()
        pending: list[tuple[str, Module]] = [(prefix, self)]
        while pending:
            name, module = pending.pop()
            if remove_duplicate:
                if module in seen:
                    continue
                seen.add(module)
            yield name, module
            children = [
                (f"{name}.{child_name}" if name else child_name, child)
                for child_name, child in module._modules.items()
                if child is not None
            ]
            pending.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        """This module and every submodule."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) for the immediate submodules."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        """The immediate submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool):
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        seen: set[int] = set()
        for module_prefix, module in modules:
            for name, value in module.__dict__[registry].items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) for every parameter (each shared one once)."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter, as `named_parameters` orders them (what an optimizer takes)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) for every buffer."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # ---- modes and gradients ----
    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops) on this module and its submodules; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (`train(False)`); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set `requires_grad` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient: to None (the default) or to zeros."""
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every submodule (children first) and on this module; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- state ----
    def state_dict(
        self, *, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Tensor]:
        """Parameters and persistent buffers by dotted name, as Tensors sharing their memory
        (the Parameters themselves with `keep_vars=True`).

        Example:
            >>> from autodiff import nn
            >>> list(nn.Linear(2, 1).state_dict())
            ['weight', 'bias']
        """
        out: dict = OrderedDict() if destination is None else destination
        modules = self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False)
        for module_prefix, module in modules:
            head = f"{module_prefix}." if module_prefix else ""
            for name, param in module._parameters.items():
                if param is not None:
                    out[head + name] = param if keep_vars else param.detach()
            for name, buffer in module._buffers.items():
                if buffer is not None and name not in module._non_persistent_buffers_set:
                    out[head + name] = buffer if keep_vars else buffer.detach()
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from `state_dict` (in place, under no_grad; with
        `assign=True` the state dict's tensors become them). Returns (missing_keys,
        unexpected_keys); with `strict=True` either raises. Every entry is checked before
        anything is copied, so an error leaves the module unchanged.

        Example:
            >>> from autodiff import nn
            >>> a, b = nn.Linear(2, 1), nn.Linear(2, 1)
            >>> b.load_state_dict(a.state_dict())
            <All keys matched successfully>
        """
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = _key_errors(missing, unexpected) if strict else []
        updates = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            source, error = _loadable(key, target, state_dict[key])
            if error is None:
                updates.append((key, target, source))
            else:
                errors.append(error)
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors)
            )
        with no_grad():
            for key, target, source in updates:
                if assign:
                    self._assign_entry(key, target, source)
                else:
                    target.copy_(source)
        return _IncompatibleKeys(missing, unexpected)

    def _assign_entry(self, key: str, target: Tensor, source) -> None:
        owner_path, _, name = key.rpartition(".")
        owner = self.get_submodule(owner_path)
        if isinstance(target, Parameter):
            value = (
                source
                if isinstance(source, Parameter)
                else Parameter(source, requires_grad=target.requires_grad)
            )
            owner._parameters[name] = value
        else:
            owner._buffers[name] = source if isinstance(source, Tensor) else Tensor(source)

    # ---- dtype and device ----
    def _apply_dtype(self, convert: Callable[[np.dtype], np.dtype | None]) -> Module:
        """Cast every parameter, gradient and buffer whose dtype `convert` maps to a new one,
        keeping each Parameter object (so optimizers holding it stay valid)."""
        for module in self.modules():
            for registry in (module._parameters, module._buffers):
                for tensor in registry.values():
                    if tensor is None or tensor._trace is not EVAL_TRACE:
                        continue
                    dtype = convert(tensor.dtype)
                    if dtype is None or dtype == tensor.dtype:
                        continue
                    grad = tensor.grad
                    tensor._value = np.asarray(tensor._value).astype(dtype)
                    if grad is not None:
                        tensor.grad = Tensor(np.asarray(grad._value).astype(dtype))
        return self

    def to(self, *args, **kwargs) -> Module:
        """Cast floating-point and complex parameters and buffers to a dtype:
        `to(dtype)`, `to(device, dtype)`, `to(tensor)`; the device must be the CPU, or
        'meta': then every parameter and buffer keeps its shape and dtype but no data (a
        template for `torch.func.functional_call`, as in `stack_module_state`'s recipe)."""
        where, dtype = _device_and_dtype(args, dict(kwargs))
        if dtype is not None:
            self._apply_dtype(lambda d: dtype if float_kind(d) in "fc" else None)
        if is_meta_device(where):
            self._apply_meta()
        return self

    def _apply_meta(self) -> None:
        """Every parameter and buffer to the 'meta' device (same objects, their data gone,
        their gradients dropped)."""
        for module in self.modules():
            for registry in (module._parameters, module._buffers):
                for tensor in registry.values():
                    if tensor is not None and tensor._trace is EVAL_TRACE:
                        tensor._value = meta_array(tensor.shape, tensor.dtype)
                        tensor.grad = None

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64."""
        return self._apply_dtype(lambda d: np.dtype(np.float64) if float_kind(d) == "f" else None)

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self._apply_dtype(lambda d: np.dtype(np.float32) if float_kind(d) == "f" else None)

    def half(self) -> Module:
        """Cast floating-point parameters and buffers to float16."""
        return self._apply_dtype(lambda d: np.dtype(np.float16) if float_kind(d) == "f" else None)

    def bfloat16(self) -> Module:
        """Cast floating-point parameters and buffers to bfloat16 (ml_dtypes')."""
        bf16 = bfloat16_dtype()
        return self._apply_dtype(lambda d: bf16 if float_kind(d) == "f" else None)

    def cuda(self, device=None) -> Module:
        """Raises: autodiff computes on the CPU only (a script should keep its module on
        the CPU, e.g. behind `torch.cuda.is_available()`)."""
        check_device("cuda" if device is None else device)
        return self

    def cpu(self) -> Module:
        """The module itself (autodiff runs on the CPU)."""
        return self

    # ---- printing ----
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module's own settings, shown inside its repr (subclasses override)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): " + _addindent(repr(module), 2) for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


__all__ = ["Module"]
