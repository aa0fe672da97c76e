"""torch.amp's autocast on autodiff: torch's API, as a context that casts nothing.

`torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)` (also
`torch.amp.autocast` and the deprecated `torch.cpu.amp.autocast`) works as a context manager
and as a decorator, and `torch.is_autocast_enabled(device_type)` / `get_autocast_dtype` /
`is_autocast_cache_enabled` report its state as torch does. autodiff computes on the CPU in
the inputs' own precision: inside the region no operation is cast to the autocast dtype
(torch casts matmul, linear and convolutions to bfloat16 there), so results are the
full-precision ones. CUDA and the other devices are unavailable, so autocast on them
disables itself with torch's warning, as torch does on a machine without the device.

The state is thread-local, as torch's.
"""

from __future__ import annotations

import builtins
import functools
import threading
import warnings

import numpy as np

from autodiff.torch import dtypes

__all__ = [
    "autocast",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_cache_enabled",
    "is_autocast_enabled",
    "set_autocast_enabled",
]

# torch's list of device types, for its error on an unknown one.
_DEVICE_TYPES = (
    "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, "
    "vulkan, mps, meta, hpu, mtia, privateuseone"
)
_DEFAULT_DTYPES = {"cpu": "bfloat16", "cuda": "float16", "mps": "float16", "xpu": "bfloat16"}
_CPU_DTYPES = ("bfloat16", "float16")


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled: dict[str, builtins.bool] = {}
        self.dtype: dict[str, object] = {}
        self.cache_enabled = True


_state = _State()


def _check_device(device_type) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"autocast: device_type must be a str, not {type(device_type).__name__}")
    if device_type not in _DEVICE_TYPES.split(", "):
        raise RuntimeError(
            f"Expected one of {_DEVICE_TYPES} device type at start of device string: {device_type}"
        )
    return device_type


def _dtype_name(dtype) -> str:
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)
    if name is None:
        try:
            return np.dtype(dtype).name
        except TypeError:
            raise TypeError(
                f"autocast: dtype must be a torch dtype, not {type(dtype).__name__}"
            ) from None
    return str(name)


def _default_dtype(device_type: str):
    # (the dtype object; its name where the torch face has none)
    name = _DEFAULT_DTYPES.get(device_type, "float16")
    return getattr(dtypes, name, name)


def is_autocast_available(device_type: str) -> builtins.bool:
    """Whether autocast can be enabled on `device_type`: only "cpu" here.

    Example:
        >>> import autodiff as torch
        >>> torch.amp.is_autocast_available("cpu"), torch.amp.is_autocast_available("cuda")
        (True, False)
    """
    return _check_device(device_type) == "cpu"


def is_autocast_enabled(device_type: str | None = None) -> builtins.bool:
    """Whether an autocast region is active on `device_type` (torch: "cuda" when omitted).

    Example:
        >>> import autodiff as torch
        >>> with torch.autocast("cpu"):
        ...     torch.is_autocast_enabled("cpu"), torch.is_autocast_enabled()
        (True, False)
    """
    device = "cuda" if device_type is None else _check_device(device_type)
    return _state.enabled.get(device, False)


def set_autocast_enabled(device_type: str, enabled: builtins.bool) -> None:
    """Set the autocast state of `device_type` (what `autocast` does on entry and exit).

    Example:
        >>> import autodiff as torch
        >>> torch.set_autocast_enabled("cpu", True); torch.is_autocast_enabled("cpu")
        True
        >>> torch.set_autocast_enabled("cpu", False)
    """
    _state.enabled[_check_device(device_type)] = builtins.bool(enabled)


def get_autocast_dtype(device_type: str):
    """The dtype autocast names for `device_type` (bfloat16 on the CPU by default).

    Example:
        >>> import autodiff as torch
        >>> with torch.autocast("cpu", dtype=torch.float16):
        ...     torch.get_autocast_dtype("cpu") == torch.float16
        True
    """
    device = _check_device(device_type)
    return _state.dtype.get(device, _default_dtype(device))


def is_autocast_cache_enabled() -> builtins.bool:
    """Whether autocast's weight-cast cache is on (nothing is cast, so nothing is cached).

    Example:
        >>> import autodiff as torch
        >>> torch.is_autocast_cache_enabled()
        True
    """
    return _state.cache_enabled


class autocast:
    """`torch.autocast`: a region of mixed precision, here one that casts nothing.

    Used as a context manager or as a decorator, with torch's arguments and checks; inside,
    `is_autocast_enabled(device_type)` is True and `get_autocast_dtype` gives `dtype`, while
    every operation keeps its inputs' dtype (full precision: no operation is cast). A dtype
    the CPU cannot autocast to (other than bfloat16 or float16), or a device autodiff does
    not compute on, disables the region with torch's warning.

    Example:
        >>> import autodiff as torch
        >>> x = torch.ones(2, 2, dtype=torch.float32)
        >>> with torch.autocast(device_type="cpu", dtype=torch.float16):
        ...     (x @ x).dtype == torch.float32, torch.is_autocast_enabled("cpu")
        (True, True)
    """

    def __init__(self, device_type: str, dtype=None, enabled: builtins.bool = True,
                 cache_enabled: builtins.bool | None = None) -> None:  # fmt: skip
        self.device = _check_device(device_type)
        if not isinstance(enabled, builtins.bool):
            raise TypeError(f"autocast: enabled must be a bool, not {type(enabled).__name__}")
        self.fast_dtype = _default_dtype(self.device) if dtype is None else dtype
        self._cache_enabled = _state.cache_enabled if cache_enabled is None else cache_enabled
        self._enabled = enabled and self._available()
        self._saved: list[tuple] = []

    def _available(self) -> builtins.bool:
        if self.device != "cpu":
            warnings.warn(
                f"{self.device.upper()} is not available or torch_xla is imported. "
                "Disabling autocast.",
                UserWarning,
                stacklevel=3,
            )
            return False
        if _dtype_name(self.fast_dtype) not in _CPU_DTYPES:
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling "
                "autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                "torch.float16 currently.",
                UserWarning,
                stacklevel=3,
            )
            return False
        return True

    def __enter__(self) -> autocast:
        device = self.device
        self._saved.append(
            (_state.enabled.get(device, False), get_autocast_dtype(device), _state.cache_enabled)
        )
        _state.enabled[device] = self._enabled
        _state.dtype[device] = self.fast_dtype
        _state.cache_enabled = builtins.bool(self._cache_enabled)
        return self

    def __exit__(self, *exc) -> None:
        enabled, dtype, cache = self._saved.pop()
        _state.enabled[self.device] = enabled
        _state.dtype[self.device] = dtype
        _state.cache_enabled = cache

    def __call__(self, func):
        @functools.wraps(func)
        def autocast_region(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return autocast_region


class _CpuAutocast(autocast):
    """`torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True)`: the
    deprecated spelling of `torch.autocast("cpu", ...)`, with torch's FutureWarning."""

    def __init__(self, enabled: builtins.bool = True, dtype=None,
                 cache_enabled: builtins.bool = True) -> None:  # fmt: skip
        warnings.warn(
            "`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
            "`torch.amp.autocast('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class _Namespace:
    def __init__(self, name: str, **members) -> None:
        self._name = name
        self.__dict__.update(members)

    def __repr__(self) -> str:
        return f"<autodiff stand-in for torch.{self._name}>"


def _one() -> builtins.int:
    return 1


def _true() -> builtins.bool:
    return True


# `torch.cpu`: the device autodiff computes on (available, one device), with its `amp`.
cpu = _Namespace(
    "cpu",
    is_available=_true,
    device_count=_one,
    amp=_Namespace("cpu.amp", autocast=_CpuAutocast),
)
