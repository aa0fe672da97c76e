"""Calling compiled segments from Python: the argument tuple, and the object layout it is
read through.

A compiled segment is `void f(PyObject *args)` (translate.py's calling convention): the
Python callable `segment_function` makes for it takes the segment's inputs and buffers as
the Numba dispatcher did, makes each array input C-contiguous in its declared dtype and
each scalar a NumPy scalar of its dtype, allocates the array outputs, calls the code with
one tuple (ctypes, the GIL released) and returns the outputs (arrays, and NumPy scalars).
The memory of the code's large temporaries (its heap block) is an array the wrapper keeps
from one call to the next (a pool: each call running at once has its own): allocating and
freeing it in every call would fault its pages in every time, as the C library gives the
memory back to the system between calls.
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from autodiff.staging.llvm.values import KINDS, Layout, Translation, Unsupported

_lock = threading.Lock()
_layout: list = []  # [Layout or None], found once
_blas: list = []  # [NumPy's OpenBLAS library or None], found once


def layout() -> Layout:
    """Where CPython and NumPy keep a tuple's items, an ndarray's data pointer and a NumPy
    scalar's value in this process, checked by reading them back; raises Unsupported if
    they are not where expected (a build of another object layout)."""
    with _lock:
        if not _layout:
            _layout.append(_find_layout())
    if _layout[0] is None:
        raise Unsupported("an unexpected object layout")
    _layout[0].blas = blas_address("dgemm") is not None
    return _layout[0]


def _find_layout() -> Layout | None:
    head = object.__basicsize__
    found = Layout(tuple.__basicsize__, head, head)
    array = np.arange(3.0)
    pair = (array, 5)
    checks = [
        ctypes.c_void_p.from_address(id(pair) + found.tuple_items).value == id(array),
        ctypes.c_void_p.from_address(id(array) + found.array_data).value == array.ctypes.data,
    ]
    for dtype, ctype, value in (
        (np.float64, ctypes.c_double, 1.5),
        (np.float32, ctypes.c_float, -2.5),
        (np.int8, ctypes.c_int8, -3),
        (np.uint64, ctypes.c_uint64, 2**64 - 2),
        (np.bool_, ctypes.c_uint8, 1),
    ):
        scalar = dtype(value)
        checks.append(ctype.from_address(id(scalar) + found.scalar_value).value == value)
    return found if all(checks) else None


def blas_address(name: str) -> int | None:
    """The address of BLAS function `name` ("dgemm", "sgemm": the Fortran interface with
    64-bit integers) in the OpenBLAS that NumPy's wheels load, or None without it."""
    with _lock:
        if not _blas:
            _blas.append(_find_blas())
    library = _blas[0]
    if library is None:
        return None
    function = getattr(library, f"scipy_{name}_64_", None)
    return None if function is None else ctypes.cast(function, ctypes.c_void_p).value


def _find_blas():
    directory = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    try:
        names = [n for n in os.listdir(directory) if n.startswith("libscipy_openblas64_")]
    except OSError:
        return None
    for name in names:  # (already loaded by NumPy: opening it again costs nothing)
        try:
            library = ctypes.CDLL(os.path.join(directory, name))
        except OSError:
            continue
        if hasattr(library, "scipy_dgemm_64_") and hasattr(library, "scipy_sgemm_64_"):
            return library
    return None


def _fix(x, dtype, shape):
    """`x` as the C-contiguous array of `dtype` the code reads; the code reads `shape`'s
    elements, so any other shape is an error (never a read out of bounds)."""
    x = np.ascontiguousarray(np.asarray(x, dtype))
    if x.shape != shape:
        raise ValueError(f"a compiled segment takes an array of shape {shape}, got {x.shape}")
    return x


def _heap_block(nbytes: int):
    """A maker of (array, its address): the memory of a segment's heap block."""

    def make():
        block = np.empty(nbytes, np.uint8)
        return block, block.ctypes.data

    return make


def segment_function(translation: Translation, address: int):
    """The Python callable of a compiled segment (see the module docstring)."""
    params = translation.params
    names = [f"x{k}" for k in range(len(params))]
    globals_: dict = {"_fix": _fix, "_empty": np.empty, "_nd": np.ndarray}
    lines = [f"def {translation.name}({', '.join(names)}):"]
    for k, (name, param) in enumerate(zip(names, params)):
        globals_[f"_d{k}"] = param.dtype
        if param.shape is None:
            globals_[f"_t{k}"] = param.dtype.type
            lines.append(f"    if type({name}) is not _t{k}: {name} = _t{k}({name})")
        else:
            globals_[f"_h{k}"] = tuple(param.shape)
            lines.append(
                f"    if type({name}) is not _nd or {name}.dtype is not _d{k} or not "
                f"{name}.flags.c_contiguous or {name}.shape != _h{k}: "
                f"{name} = _fix({name}, _d{k}, _h{k})"
            )
    items, results, counts = list(names), [], dict.fromkeys(KINDS, 0)
    for k, (kind, detail) in enumerate(translation.outputs):
        if kind == "array":
            globals_[f"_o{k}"], globals_[f"_s{k}"] = translation.out_avals[k]
            lines.append(f"    y{k} = _empty(_s{k}, _o{k})")
            items.append(f"y{k}")
            results.append(f"y{k}")
        elif kind == "param":
            items.append("None")
            results.append(names[detail])
        else:
            items.append("None")
            results.append(f"w{detail}[{counts[detail]}]")
            counts[detail] += 1
    for kind, dtype in zip(KINDS, (np.float64, np.int64, np.uint64)):
        if counts[kind]:
            globals_[f"_w{kind}"] = np.dtype(dtype)
            lines.append(f"    w{kind} = _empty({counts[kind]}, _w{kind})")
            items.append(f"w{kind}")
    call = f"    _call(({''.join(i + ', ' for i in items)}))"
    if translation.arena:  # (the heap block: reused across calls, one per call at a time)
        signature = ctypes.CFUNCTYPE(None, ctypes.py_object, ctypes.c_void_p)
        globals_["_pool"], globals_["_block"] = [], _heap_block(translation.arena)
        lines += ["    try:", "        z = _pool.pop()", "    except IndexError:"]
        lines += ["        z = _block()", call[:-1] + ", z[1])", "    _pool.append(z)"]
    else:
        signature = ctypes.CFUNCTYPE(None, ctypes.py_object)
        lines.append(call)
    globals_["_call"] = signature(address)
    lines.append(f"    return ({''.join(r + ', ' for r in results)})")
    source = "\n".join(lines) + "\n"
    namespace: dict = {}
    exec(compile(source, f"<llvm segment {translation.name}>", "exec"), globals_, namespace)
    function = namespace[translation.name]
    function.source = source
    return function


__all__ = ["blas_address", "layout", "segment_function"]
