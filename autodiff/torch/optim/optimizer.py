"""`Optimizer`: parameter groups, per-parameter state, zero_grad, state_dict (torch.optim's base).

A subclass implements `step` with torch's update formulas, in place under no_grad: the
parameters keep their identity and memory, and their version counters count the updates
(as torch's), so a graph that saved a parameter before the step refuses a backward after it.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from autodiff.autograd._state import autograd_state
from autodiff.autograd.grad_mode import enable_grad
from autodiff.core.tensor import Tensor
from autodiff.torch.nn.module import zero_grads


class _RequiredParameter:
    """The default of a hyperparameter every group must give (torch.optim.optimizer.required)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required: Any = _RequiredParameter()


def scalar(value) -> float:
    """A hyperparameter given as a number or a one-element Tensor, as a Python float."""
    return float(value.item()) if isinstance(value, Tensor) else value


def check_hyperparameters(**values: float) -> None:
    """torch's checks of non-negative hyperparameters: `Invalid <name>: <value>`."""
    names = {"lr": "learning rate", "eps": "epsilon value"}
    for name, value in values.items():
        if isinstance(value, Tensor) and value.ndim and value.shape != (1,):
            raise ValueError(f"Tensor {name} must be 1-element")
        if not 0.0 <= scalar(value):
            raise ValueError(f"Invalid {names.get(name, name + ' value')}: {value}")


def check_flags(foreach, fused, differentiable: bool) -> None:
    """`foreach` and `fused` select torch kernels (the same formulas): accepted, and the one
    implementation runs. A differentiable step is not supported."""
    if differentiable:
        raise NotImplementedError(
            "differentiable=True is not supported: autodiff's optimizers update in place under "
            "no_grad (differentiate through an update written with autodiff ops instead)"
        )
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _group_params(group: dict) -> list:
    """A param group's parameters as a list, checked as torch's (and its `param_names`,
    where they come as (name, parameter) pairs, put in `group`)."""
    params = group["params"]
    if isinstance(params, Tensor):
        params = [params]
    elif isinstance(params, set):
        raise TypeError(
            "optimizer parameters need to be organized in ordered collections, but the "
            "ordering of tensors in sets will change between runs. Please use a list instead."
        )
    params = list(params)
    names = [p[0] for p in params if isinstance(p, tuple)]
    if names:
        if len(names) != len(params):
            raise ValueError(
                "all optimizer params should be with/without names. Some param names are missing"
            )
        group["param_names"] = names
        params = [p[1] for p in params]
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(
                "optimizer can only optimize Tensors, but one of the params is "
                f"{type(p).__module__}.{type(p).__qualname__}"
            )
        if not (p.is_leaf or p.retains_grad):
            raise ValueError("can't optimize a non-leaf Tensor")
    return params


def _cast_state(param: Tensor, value: Any, key: Any = None) -> Any:
    """A saved state value for `param`: tensors copied, cast to the parameter's dtype (but
    `step`), containers cast entry by entry, anything else deep-copied."""
    if isinstance(value, Tensor):
        data = np.array(value.detach()._value, copy=True)
        if key != "step" and np.dtype(param.dtype).kind in "fc":
            data = data.astype(param.dtype)
        return Tensor(data)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    return copy.deepcopy(value)


def _capturable(step: Callable) -> Callable:
    """An optimizer class's `step`, which a compiled training step stages in its own way while
    it stages (torch/compile_step.py)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        capture = autograd_state().step_capture
        if capture is not None:
            return capture.optimizer_step(self, *args, **kwargs)
        return step(self, *args, **kwargs)

    wrapper._captured = True  # type: ignore[attr-defined]
    return wrapper


class Optimizer:
    """Base class of optimizers: `param_groups` (dicts of "params" and hyperparameters),
    `state` (per parameter), `zero_grad`, `step`, `state_dict`/`load_state_dict`.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn, optim
        >>> model = nn.Linear(2, 1)
        >>> opt = optim.SGD([{"params": [model.weight]}, {"params": [model.bias], "lr": 0.5}],
        ...                 lr=0.1)
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.5]
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_captured", False):
            cls.step = _capturable(step)  # type: ignore[method-assign]

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__module__}.{type(params).__qualname__}"
            )
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        # (as torch: what defines the optimizer, not a schedule's wrapper of `step`)
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (the defaults fill the rest).

        Example:
            >>> import autodiff as ad
            >>> from autodiff import nn, optim
            >>> a, b = nn.Parameter(ad.zeros(1)), nn.Parameter(ad.zeros(1))
            >>> opt = optim.SGD([a], lr=0.1)
            >>> opt.add_param_group({"params": [b], "momentum": 0.9})
            >>> opt.param_groups[1]["lr"], opt.param_groups[1]["momentum"]
            (0.1, 0.9)
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        group = dict(param_group)
        params = group["params"] = _group_params(group)  # (a generator is read once: listed)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information",
                stacklevel=3,
            )
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def _params(self) -> Iterator[Tensor]:
        for group in self.param_groups:
            yield from group["params"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every optimized parameter: to None (the default), or to
        zeros in place."""
        zero_grads(self._params(), set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters once from their gradients (subclasses implement it)."""
        raise NotImplementedError

    def _closure_loss(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _gradients(self, group: dict[str, Any], name: str) -> Iterator[tuple[Tensor, Tensor]]:
        """(parameter, gradient) for each parameter of `group` that has a gradient, the
        gradient negated when the group maximizes."""
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if np.dtype(p.dtype).kind == "c" and name != "SGD":
                raise NotImplementedError(f"{name}: complex parameters are not supported")
            yield p, (-grad if group["maximize"] else grad)

    # ---- state ----
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state: per-parameter state keyed by the parameter's index (in group
        order), and the groups' hyperparameters with those indices as "params".

        Example:
            >>> import autodiff as ad
            >>> from autodiff import nn, optim
            >>> opt = optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
            >>> opt.state_dict()["param_groups"][0]["params"]
            [0, 1]
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: value for p, value in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the hyperparameters and per-parameter state of `state_dict` (matched to this
        optimizer's parameters by position; tensors copied, cast to the parameter's dtype
        except `step`). Checked before anything changes."""
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = {
            saved: p
            for g, s in zip(groups, saved_groups)
            for saved, p in zip(s["params"], g["params"])
        }

        state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                state[id_map[key]] = _cast_state(id_map[key], value)
            else:
                state[key] = copy.deepcopy(value)
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.state = state
        self.param_groups = new_groups

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


__all__ = ["Optimizer", "required"]
