"""torch's dtypes (`torch.float64`, `torch.long`, ...) and its default floating dtype.

Each constant is a `dtype` that stands for a NumPy dtype: NumPy accepts it wherever it
accepts a dtype (it has a `.dtype` attribute, as NumPy's protocol asks), it compares and
hashes equal to that NumPy dtype, and it prints as torch prints it. A Tensor's `.dtype`
stays the NumPy dtype of its value on both faces (the core and NumPy code read it), so
`x.dtype == autodiff.float64` holds while `str(x.dtype)` is NumPy's `'float64'`;
`autodiff.dtype_of_torch(x.dtype)` gives the constant back.

The default floating dtype (`get_default_dtype`, `set_default_dtype`) is float64, not torch's
float32: Python floats are doubles, and NumPy code computes in float64. It is per thread,
like grad mode, where torch's is per process; the torch face's factories read it.

This module defines the constants under torch's names, several of which (`float`, `int`,
`bool`) shadow Python's builtins here: its functions reach the builtins as `builtins.<name>`.

`bfloat16` is ml_dtypes' (core/dtypes.py), made on first use (this module's `__getattr__`,
and `to_numpy_dtype`/`dtype_of_torch` meeting its name or dtype), so that `import autodiff`
does not import ml_dtypes.
"""

from __future__ import annotations

import builtins
import importlib
import threading

import numpy as np

from autodiff.core.dtypes import bfloat16_dtype, float_kind, is_bfloat16
from autodiff.core.tensor import Tensor


class dtype:
    """A torch dtype: `autodiff.float64`, `autodiff.long`, ... standing for a NumPy dtype.

    Example:
        >>> import numpy as np, autodiff as torch
        >>> torch.float64, torch.float64 == np.float64, torch.zeros(2, dtype=torch.long).dtype
        (torch.float64, True, torch.int64)
        >>> torch.float32.is_floating_point, torch.int64.itemsize, torch.cfloat.to_real()
        (True, 8, torch.float32)
    """

    __slots__ = ("dtype", "_name")

    def __init__(self, numpy_dtype, name: str) -> None:
        self.dtype = np.dtype(numpy_dtype)  # (NumPy reads this: `np.dtype(torch.float32)`)
        self._name = name

    @property
    def is_floating_point(self) -> builtins.bool:
        return float_kind(self.dtype) == "f"

    @property
    def is_complex(self) -> builtins.bool:
        return self.dtype.kind == "c"

    @property
    def is_signed(self) -> builtins.bool:
        return float_kind(self.dtype) in "ifc"

    @property
    def itemsize(self) -> builtins.int:
        return self.dtype.itemsize

    def to_real(self) -> dtype:
        """The real dtype of a complex one (itself for a real dtype)."""
        if self.dtype.kind != "c":
            return self
        return _BY_NUMPY[np.dtype(f"f{self.dtype.itemsize // 2}")]

    def to_complex(self) -> dtype:
        """The complex dtype of a floating one."""
        if self.dtype.kind == "c":
            return self
        if not self.is_floating_point:
            raise RuntimeError(f"to_complex is not supported for {self}")
        return _BY_NUMPY[np.dtype(f"c{max(self.dtype.itemsize, 4) * 2}")]

    def __eq__(self, other) -> builtins.bool:
        if isinstance(other, dtype):
            return self.dtype == other.dtype
        if other is None:
            return False
        try:
            return builtins.bool(self.dtype == to_numpy_dtype(other))
        except TypeError:
            return False

    def __hash__(self) -> builtins.int:
        return hash(self.dtype)  # (a dict keyed by dtypes finds it by the NumPy dtype)

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self):
        return (_by_name, (self._name,))

    def __getattr__(self, name: str):  # (NumPy's dtype attributes: kind, char, type, ...)
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dtype, name)


def _by_name(name: str) -> dtype:
    return DTYPES[name]


# torch's names, aliases after the canonical name (float32 before float).
_CANONICAL = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "complex64": np.complex64,
    "complex128": np.complex128,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "bool": np.bool_,
}
_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "short": "int16",
    "int": "int32",
    "long": "int64",
}
DTYPES: dict[str, dtype] = {name: dtype(np_type, name) for name, np_type in _CANONICAL.items()}
DTYPES.update({alias: DTYPES[name] for alias, name in _ALIASES.items()})
_BY_NUMPY: dict[np.dtype, dtype] = {d.dtype: d for d in DTYPES.values()}
_BFLOAT16_LOCK = threading.Lock()  # (guards adding bfloat16 to the two tables above)


def _bfloat16() -> dtype:
    """`torch.bfloat16`: made, and entered in the tables, on first use."""
    with _BFLOAT16_LOCK:
        found = DTYPES.get("bfloat16")
        if found is None:
            found = dtype(bfloat16_dtype(), "bfloat16")
            DTYPES["bfloat16"] = found
            _BY_NUMPY[found.dtype] = found
        return found


def __getattr__(name: str):
    if name == "bfloat16":
        return _bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Python's types as torch reads them in `dtype=`: `float` is float64 (torch.float is float32).
_PYTHON_TYPES = {
    builtins.float: np.dtype(np.float64),
    builtins.int: np.dtype(np.int64),
    builtins.bool: np.dtype(np.bool_),
    builtins.complex: np.dtype(np.complex128),
}


def to_numpy_dtype(d) -> np.dtype | None:
    """The NumPy dtype `d` names: a torch dtype, a NumPy dtype or type, a Python type, a
    string (`'float64'`, `'torch.float64'`); None stays None.

    Example:
        >>> to_numpy_dtype(DTYPES["long"]), to_numpy_dtype(builtins.float)
        (dtype('int64'), dtype('float64'))
        >>> to_numpy_dtype("torch.half"), to_numpy_dtype(DTYPES["float"])
        (dtype('float16'), dtype('float32'))
    """
    if d is None:
        return None
    if type(d) is dtype:
        return d.dtype
    python = _PYTHON_TYPES.get(d) if isinstance(d, type) else None
    if python is not None:
        return python
    if isinstance(d, str) and d.startswith("torch."):
        name = d[len("torch.") :]
        if name == "bfloat16":
            return _bfloat16().dtype
        if name not in DTYPES:
            raise TypeError(f"invalid dtype: {d!r}")
        return DTYPES[name].dtype
    return np.dtype(d)


def dtype_of_torch(d) -> dtype:
    """The torch dtype constant of a NumPy dtype (`x.dtype`), for printing it as torch does.

    Example:
        >>> import numpy as np
        >>> dtype_of_torch(np.dtype("float64"))
        torch.float64
    """
    np_dtype = to_numpy_dtype(d)
    found = _BY_NUMPY.get(np_dtype) if np_dtype is not None else None
    if found is None and np_dtype is not None and is_bfloat16(np_dtype):
        found = _bfloat16()
    if found is None:
        raise TypeError(f"{d!r} has no torch dtype")
    return found


class _DefaultDtype(threading.local):
    def __init__(self) -> None:
        self.dtype = np.dtype(np.float64)


_default = _DefaultDtype()


def get_default_dtype() -> dtype:
    """The floating dtype the torch face's factories use when none is given (this thread's).

    Example:
        >>> get_default_dtype()
        torch.float64
    """
    return _BY_NUMPY[_default.dtype]


def set_default_dtype(d) -> None:
    """Set this thread's default floating dtype (float32 or float64, as torch allows also
    float16): `tensor([1.0])`, `zeros(2)`, `randn(2)` are then of that dtype.

    Example:
        >>> set_default_dtype(DTYPES["float32"]); get_default_dtype()
        torch.float32
        >>> set_default_dtype(DTYPES["float64"])
    """
    np_dtype = to_numpy_dtype(d)
    if np_dtype is None or float_kind(np_dtype) != "f":
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _default.dtype = np_dtype


def default_float() -> np.dtype:
    """This thread's default floating dtype, as a NumPy dtype (the factories' fast read)."""
    return _default.dtype


def default_complex() -> np.dtype:
    """The complex dtype matching the default floating dtype (complex128 for float64)."""
    return np.dtype(np.complex128) if _default.dtype.itemsize == 8 else np.dtype(np.complex64)


# The constants under torch's names (these shadow Python's float, int, bool in this module).
float32 = DTYPES["float32"]
float64 = DTYPES["float64"]
float16 = DTYPES["float16"]
complex64 = DTYPES["complex64"]
complex128 = DTYPES["complex128"]
int8 = DTYPES["int8"]
int16 = DTYPES["int16"]
int32 = DTYPES["int32"]
int64 = DTYPES["int64"]
uint8 = DTYPES["uint8"]
uint16 = DTYPES["uint16"]
uint32 = DTYPES["uint32"]
uint64 = DTYPES["uint64"]
bool = DTYPES["bool"]
float = DTYPES["float"]
double = DTYPES["double"]
half = DTYPES["half"]
cfloat = DTYPES["cfloat"]
cdouble = DTYPES["cdouble"]
short = DTYPES["short"]
int = DTYPES["int"]
long = DTYPES["long"]


def finfo(type=None):
    """`torch.finfo(dtype=default)`: NumPy's finfo of that dtype (eps, tiny, max, ...);
    ml_dtypes' for bfloat16 (NumPy's own does not know it)."""
    d = to_numpy_dtype(type) if type is not None else default_float()
    if d is not None and is_bfloat16(d):
        return importlib.import_module("ml_dtypes").finfo(d)
    return np.finfo(d)


def iinfo(type):
    """`torch.iinfo(dtype)`: NumPy's iinfo of that dtype."""
    return np.iinfo(to_numpy_dtype(type))


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """torch's promotion of two dtypes: NumPy's, except that an integer (or bool) meeting a
    floating or complex dtype gives that dtype (NumPy widens: int32 with float32 is float64)."""
    a_float, b_float = float_kind(a) in "fc", float_kind(b) in "fc"
    if a_float != b_float:
        return a if a_float else b
    return np.promote_types(a, b)


def promote_types(type1, type2) -> dtype:
    """`torch.promote_types(type1, type2)` (torch's rules: int32 with float32 is float32)."""
    a, b = to_numpy_dtype(type1), to_numpy_dtype(type2)
    return dtype_of_torch(_promote(a, b))


def result_type(tensor1, tensor2) -> dtype:
    """`torch.result_type(tensor1, tensor2)`: a Python number takes the tensor's dtype
    within its kind (torch's rule); two tensors promote as `promote_types`."""
    dtypes = [t.dtype for t in (tensor1, tensor2) if isinstance(t, Tensor)]
    scalars = [t for t in (tensor1, tensor2) if not isinstance(t, Tensor)]
    if not dtypes:
        return dtype_of_torch(np.result_type(*scalars))
    out = dtypes[0] if len(dtypes) == 1 else _promote(*dtypes)
    for scalar in scalars:  # (NEP 50: a Python number is weak, as in torch)
        out = np.result_type(np.zeros((), out), scalar)
    return dtype_of_torch(out)


def can_cast(from_, to) -> bool:
    """`torch.can_cast(from_, to)`: same-kind casting."""
    return builtins.bool(np.can_cast(to_numpy_dtype(from_), to_numpy_dtype(to), "same_kind"))
