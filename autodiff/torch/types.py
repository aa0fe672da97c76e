"""torch's types: `device`, `return_types`, storages, memory-format markers, the
accelerator modules autodiff does not compute on (`cuda`, `mps`, `xpu`, `backends`) and
torch's numeric constants."""

from __future__ import annotations

import builtins
import math

import numpy as np

from autodiff.torch import dtypes as torch_dtypes


class device:
    """`torch.device`: autodiff computes on the CPU; other devices can be named, not used.

    Example:
        >>> device("cpu"), str(device("cpu:0")), device("cpu") == device("cpu")
        (device(type='cpu'), 'cpu:0', True)
    """

    __slots__ = ("type", "index")

    def __init__(self, type: str | device = "cpu", index: int | None = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, builtins.int) and not isinstance(type, builtins.bool):
            type, index = "cuda", type  # (torch reads a bare int as a CUDA ordinal)
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid argument: {type!r}")
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index: {type}")
            type, _, number = type.partition(":")
            index = builtins.int(number)
        self.type = type
        self.index = index

    def __eq__(self, other) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")
META = device("meta")


def _no_data() -> RuntimeError:
    return RuntimeError(
        "Tensor on device meta is not on the expected device cpu!: a tensor on the 'meta' "
        "device has a shape and a dtype but no data (give a meta module values with "
        "torch.func.functional_call)"
    )


class MetaArray(np.ndarray):
    """The data of a tensor on the 'meta' device: a shape and a dtype, no values. Computing
    with it raises (NumPy's ufuncs and functions reach it through its overrides), so that a
    meta module called with its own parameters fails rather than compute with zeros."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise _no_data()

    def __array_function__(self, func, types, args, kwargs):
        raise _no_data()


def meta_array(shape: tuple, dtype) -> MetaArray:
    """Shape-only data for a 'meta' tensor (one element of memory, broadcast).

    Example:
        >>> a = meta_array((2, 3), np.float32)
        >>> a.shape, a.dtype
        ((2, 3), dtype('float32'))
    """
    return np.broadcast_to(np.zeros((), dtype), shape).view(MetaArray)


def is_meta_device(where) -> bool:
    """Whether `where` (a device, a string or None) names the 'meta' device."""
    if where is None or isinstance(where, builtins.int):
        return False
    return device(where).type == "meta"


def check_device(where) -> None:
    """Accept `device=None`/'cpu'/`device('cpu')`; raise clearly for any other device."""
    if where is None:
        return
    d = where if isinstance(where, device) else device(where)
    if d.type != "cpu":
        raise RuntimeError(
            f"autodiff computes on the CPU only: device {str(d)!r} is not available "
            "(use device='cpu' or leave device out)"
        )


def set_default_device(device) -> None:
    """`torch.set_default_device(device)`: autodiff computes on the CPU, so only 'cpu' (or
    None, torch's way back to the default) is accepted; any other device raises.

    Example:
        >>> set_default_device("cpu")
        >>> get_default_device()
        device(type='cpu')
    """
    check_device(device)


def get_default_device() -> device:
    """`torch.get_default_device()`: the CPU."""
    return CPU


class _ReturnType(tuple):
    """A torch.return_types named tuple: `values, indices = x.max(1)`, or `.values`."""

    __slots__ = ()
    _name = "return_type"
    _fields = ("values", "indices")

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self) -> str:
        return f"torch.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"

    def __reduce__(self):
        return (type(self), tuple(self))


def _return_type(name: str) -> type:
    return type(name, (_ReturnType,), {"__slots__": (), "_name": name})


class return_types:
    """torch.return_types: the named tuples of `max(dim)`, `sort`, `topk`, ..."""

    max = _return_type("max")
    min = _return_type("min")
    sort = _return_type("sort")
    topk = _return_type("topk")
    kthvalue = _return_type("kthvalue")
    median = _return_type("median")
    mode = _return_type("mode")
    aminmax = None  # (not provided)


class UntypedStorage:
    """The memory a tensor's data lives in (`x.untyped_storage()`): views of one tensor share
    it, so `x[1:].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()`."""

    def __init__(self, array: np.ndarray) -> None:
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        self._array = root

    def data_ptr(self) -> int:
        return self._array.__array_interface__["data"][0]

    def nbytes(self) -> int:
        return self._array.nbytes

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return 1


class TypedStorage(UntypedStorage):
    """`x.storage()`: the storage counted in elements of the tensor's dtype."""

    def __init__(self, array: np.ndarray) -> None:
        super().__init__(array)
        self.dtype = array.dtype

    def size(self) -> int:
        return self._array.nbytes // self.dtype.itemsize

    def element_size(self) -> int:
        return self.dtype.itemsize

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._array)


dtype = torch_dtypes.dtype
get_default_dtype = torch_dtypes.get_default_dtype
set_default_dtype = torch_dtypes.set_default_dtype


class _Marker:
    """A named constant torch code passes along (`torch.strided`, `torch.contiguous_format`)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"


strided = _Marker("strided")
contiguous_format = _Marker("contiguous_format")
preserve_format = _Marker("preserve_format")
channels_last = _Marker("channels_last")


# ---- torch's numeric constants ----

inf = math.inf
nan = math.nan
e = math.e
pi = math.pi


# ---- devices autodiff does not compute on: torch.cuda, torch.mps, torch.xpu, torch.backends ----


class _Accelerator:
    """`torch.cuda` (and `torch.mps`, `torch.xpu`): a device autodiff does not compute on.

    The availability queries answer as torch does on a machine without that device, so the
    common `device = "cuda" if torch.cuda.is_available() else "cpu"` picks the CPU; seeding
    it does nothing (there is no device to seed, as in torch without one); anything that
    needs the device raises.

    Example:
        >>> import autodiff as torch
        >>> torch.cuda.is_available(), torch.cuda.device_count(), torch.backends.mps.is_available()
        (False, 0, False)
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def is_available(self) -> builtins.bool:
        """False: autodiff computes on the CPU only."""
        return False

    def device_count(self) -> builtins.int:
        """0."""
        return 0

    def is_bf16_supported(self, *args, **kwargs) -> builtins.bool:
        """False."""
        return False

    def is_initialized(self) -> builtins.bool:
        """False."""
        return False

    def manual_seed(self, seed) -> None:
        """Nothing to seed: there is no such device (torch ignores it too)."""

    manual_seed_all = manual_seed

    def _unavailable(self, *args, **kwargs):
        raise RuntimeError(
            f"torch.{self._name} is not available: autodiff computes on the CPU only "
            f"(check torch.{self._name}.is_available() first)"
        )

    current_device = synchronize = get_device_name = set_device = empty_cache = _unavailable

    def __repr__(self) -> str:
        return f"<autodiff stand-in for torch.{self._name} (not available)>"


cuda = _Accelerator("cuda")
mps = _Accelerator("mps")
xpu = _Accelerator("xpu")


class _Backend:
    """One of `torch.backends.*`: not available; its flags can be set (they change nothing)."""

    def __init__(self, name: str, **flags) -> None:
        self._name = name
        self.__dict__.update(flags)

    def is_available(self) -> builtins.bool:
        """False: autodiff computes with NumPy on the CPU."""
        return False

    def is_built(self) -> builtins.bool:
        """False."""
        return False

    def __repr__(self) -> str:
        return f"<autodiff stand-in for torch.backends.{self._name} (not available)>"


class _Backends:
    """`torch.backends`: `mps`, `cuda`, `cudnn`, `mkldnn` report unavailable; flags such as
    `torch.backends.cudnn.deterministic = True` are accepted and have no effect."""

    def __init__(self) -> None:
        self.mps = _Backend("mps")
        self.cuda = _Backend("cuda", matmul=_Backend("cuda.matmul", allow_tf32=False))
        self.cudnn = _Backend(
            "cudnn", enabled=True, benchmark=False, deterministic=False, allow_tf32=True
        )
        self.mkldnn = _Backend("mkldnn", enabled=False)


backends = _Backends()
