"""Lazy Numba: kernels compile on their first call, never at import.

`AUTODIFF_DISABLE_NUMBA=1` (or `set_numba_enabled(False)`) makes `numba_enabled()` false,
and callers then run their pure-NumPy impls; so does a missing Numba. Compiled code is
cached (`cache=True`): when `NUMBA_CACHE_DIR` is unset and the package directory is
read-only, a user cache directory is used instead, and caching is dropped altogether
rather than failing.
"""

from __future__ import annotations

import functools
import os
import tempfile
import threading

_enabled = os.environ.get("AUTODIFF_DISABLE_NUMBA", "").strip().lower() in ("", "0", "false")
_numba = None  # the module once imported; False when it cannot be imported
_lock = threading.RLock()


def set_numba_enabled(enabled: bool) -> bool:
    """Switch the Numba kernels on or off for this process; returns the previous setting."""
    global _enabled
    previous = _enabled
    _enabled = bool(enabled)
    return previous


def numba_enabled() -> bool:
    """True when kernels should run compiled: not disabled, and Numba can be imported."""
    return _enabled and _import_numba() is not None


def _user_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "autodiff", "numba")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        path = os.path.join(tempfile.gettempdir(), f"autodiff-numba-{os.getuid()}")
        os.makedirs(path, exist_ok=True)
    return path


def _fallback_cache_dir() -> str | None:
    """A user cache dir when NUMBA_CACHE_DIR is unset and Numba's in-tree cache is not writable."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    pycache = os.path.join(here, "__pycache__")
    if os.access(pycache if os.path.isdir(pycache) else here, os.W_OK):
        return None
    try:
        return _user_cache_dir()
    except OSError:
        return None


def _import_numba():
    global _numba
    if _numba is None:
        with _lock:
            if _numba is None:
                cache_dir = _fallback_cache_dir()
                if cache_dir is not None:
                    os.environ["NUMBA_CACHE_DIR"] = cache_dir
                try:
                    import numba
                except ImportError:
                    _numba = False
                else:
                    if cache_dir is not None:  # in case Numba was imported before us
                        numba.config.CACHE_DIR = cache_dir
                    _numba = numba
    return _numba or None


class LazyKernel:
    """A function compiled with `numba.njit(cache=True, **options)` on its first call."""

    def __init__(self, py_func, options: dict):
        self.py_func = py_func
        self.options = options
        self._compiled = None
        functools.update_wrapper(self, py_func)

    def __call__(self, *args):
        compiled = self._compiled
        if compiled is None:
            compiled = self._compile()
        return compiled(*args)

    def _compile(self):
        with _lock:
            if self._compiled is None:
                numba = _import_numba()
                if numba is None:
                    raise RuntimeError(f"{self.py_func.__name__}: Numba is not available")
                try:
                    self._compiled = numba.njit(cache=True, **self.options)(self.py_func)
                except RuntimeError:  # no usable cache locator: compile without caching
                    self._compiled = numba.njit(**self.options)(self.py_func)
        return self._compiled


def njit_lazy(**options):
    """Decorator: `numba.njit(cache=True, **options)`, deferred to the first call.

    Callers check `numba_enabled()` first and otherwise run their NumPy impl.
    """

    def decorate(py_func):
        return LazyKernel(py_func, options)

    return decorate
