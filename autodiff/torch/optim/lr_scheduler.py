"""Learning-rate schedules (torch.optim.lr_scheduler's): LambdaLR, StepLR, ExponentialLR,
CosineAnnealingLR. Each `step()` (once per epoch, after `optimizer.step()`) writes the next
learning rate into every parameter group, computed as torch computes it (the same recursive
forms), so a schedule gives torch's numbers."""

from __future__ import annotations

import functools
import math
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from autodiff.torch.optim.optimizer import Optimizer


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Mark the optimizer when its `step` runs (to warn about a schedule stepped first)."""
    step = optimizer.step
    if getattr(step, "_wrapped_by_lr_sched", False):
        return
    func = step.__func__  # type: ignore[attr-defined]
    owner = weakref.ref(optimizer)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        opt = owner()
        opt._opt_called = True  # type: ignore[union-attr]
        return func.__get__(opt, type(opt))(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    optimizer.step = wrapper  # type: ignore[method-assign]


class LRScheduler:
    """Base class of schedules: `step()`, `get_last_lr()`, `state_dict()`/`load_state_dict()`;
    subclasses define `get_lr()` (the next rates from the current ones)."""

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0."
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rates of the current epoch (subclasses compute them)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates the last `step()` set."""
        return self._last_lr

    def _warn_if_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use "
                "`get_last_lr()`.",
                UserWarning,
                stacklevel=3,
            )

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch and set each group's learning rate."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch "
                "1.1.0 and later, you should call them in the opposite order: "
                "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
                "result in PyTorch skipping the first value of the learning rate schedule. See "
                "more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                UserWarning,
                stacklevel=2,
            )
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(
                    "The epoch parameter in `scheduler.step()` was not necessary and is being "
                    "deprecated where possible. Please use `scheduler.step()` to step the "
                    "scheduler. During the deprecation, if epoch is different from None, the "
                    "closed form is used instead of the new chainable form, where available.",
                    UserWarning,
                    stacklevel=2,
                )
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """The schedule's state (everything but the optimizer)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state from `state_dict()`."""
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch) (one function, or one per group).

    Example:
        >>> from autodiff import nn, optim
        >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
        >>> schedule = optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.5 ** epoch)
        >>> opt.step(); schedule.step(); schedule.get_last_lr()
        [0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict[str, Any]:
        # (functions are not state: only callable objects' attributes are saved, as torch)
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(f, types.FunctionType) else f.__dict__.copy()
            for f in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for f, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                f.__dict__.update(saved)


class StepLR(LRScheduler):
    """Multiply the learning rate by `gamma` every `step_size` epochs.

    Example:
        >>> from autodiff import nn, optim
        >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
        >>> schedule = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
        >>> rates = []
        >>> for _ in range(4):
        ...     opt.step(); schedule.step(); rates.append(schedule.get_last_lr()[0])
        >>> [round(r, 12) for r in rates]
        [1.0, 0.1, 0.1, 0.01]
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by `gamma` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate down to `eta_min` over `T_max` epochs (and back
    up, periodically), in torch's recursive form.

    Example:
        >>> from autodiff import nn, optim
        >>> opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
        >>> schedule = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
        >>> for _ in range(2):
        ...     opt.step(); schedule.step()
        >>> schedule.get_last_lr()
        [0.0]
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_outside_step()
        groups = self.optimizer.param_groups
        epoch, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and epoch > 0:
            return [
                eta_min + (base - eta_min) * (1 + math.cos(epoch * math.pi / T)) / 2
                for base in self.base_lrs
            ]
        if (epoch - 1 - T) % (2 * T) == 0:
            return [
                group["lr"] + (base - eta_min) * (1 - math.cos(math.pi / T)) / 2
                for base, group in zip(self.base_lrs, groups)
            ]
        return [
            (1 + math.cos(math.pi * epoch / T))
            / (1 + math.cos(math.pi * (epoch - 1) / T))
            * (group["lr"] - eta_min)
            + eta_min
            for group in groups
        ]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            self.eta_min
            + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base in self.base_lrs
        ]


__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "StepLR"]
