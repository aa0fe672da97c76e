"""Lazy, tiered Numba: kernels compile on their first call, never at import, and a
process starts using them only once they would have paid for loading Numba.

Importing Numba and loading a cached kernel costs ~0.3-0.5 s and ~120 MiB, whatever the
kernel; a kernel saves from ~0.5 ns (a fused elementwise formula against in-place NumPy)
to ~10 ns (a scatter-add against np.bincount) per element. So every kernel-eligible call
first runs its NumPy impl and adds what the kernel would have saved to a running total
(`kernels_ready`); when the total reaches TIER_UP_NS (about what loading Numba costs: the
ski-rental rule, never more than twice the best choice in hindsight), Numba is imported
and from then on the kernels run. A one-off gradient never waits for Numba; a loop
switches after its first fraction of a second. `AUTODIFF_NUMBA_EAGER=1` (or `tier_up()`)
switches at once.

`AUTODIFF_DISABLE_NUMBA=1` (or `set_numba_enabled(False)`) makes `numba_enabled()` false,
and callers then run their pure-NumPy impls; so does a missing Numba. Compiled code is
cached (`cache=True`): when `NUMBA_CACHE_DIR` is unset and the package directory is
read-only, a user cache directory is used instead, and caching is dropped altogether
rather than failing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import tempfile
import threading


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false")


_enabled = not _env_flag("AUTODIFF_DISABLE_NUMBA")
_eager = _env_flag("AUTODIFF_NUMBA_EAGER")
_EAGER_AT_START = _eager
_numba = None  # the module once imported; False when it cannot be imported
_lock = threading.RLock()

# The savings (ns) at which a process switches to the kernels: about the cost of importing
# Numba and loading the kernels from a warm cache on this class of machine.
TIER_UP_NS = 3e8


class _Savings(threading.local):
    ns = 0.0  # what the kernels would have saved this thread so far


_savings = _Savings()


def set_numba_enabled(enabled: bool) -> bool:
    """Switch the Numba kernels on (from the next eligible call, without tiering) or off
    for this process; returns the previous setting."""
    global _enabled, _eager
    previous = _enabled
    _enabled = bool(enabled)
    if _enabled:
        _eager = True
    return previous


def numba_enabled() -> bool:
    """True when kernels should run compiled: not disabled, and Numba can be imported."""
    return _enabled and _import_numba() is not None


def kernels_ready(elements: int, ns_per_element: float, ns_per_call: float = 0.0) -> bool:
    """Should a kernel-eligible call on `elements` values run its Numba kernel?

    True once Numba is loaded (and enabled). Before that, the call counts what the kernel
    would have saved (`ns_per_call` plus `ns_per_element` each, measured against the NumPy
    impl) and returns False, until the savings reach TIER_UP_NS: then Numba is imported
    here, and True.
    """
    if not _enabled:
        return False
    if _numba is not None:
        return _numba is not False
    if not _eager:
        total = _savings.ns + ns_per_call + elements * ns_per_element
        _savings.ns = total
        if total < TIER_UP_NS:
            return False
    return _import_numba() is not None


def tier_up() -> bool:
    """Load Numba now, so that kernels run from the next eligible call; True if available."""
    return numba_enabled()


def numba_eager() -> bool:
    """Should jit compile with Numba at a signature's first call (`AUTODIFF_NUMBA_EAGER=1`
    at startup), rather than once it has paid for itself? (`set_numba_enabled(True)` makes
    the kernels eager, not jit: it compiles what is called, each graph at a cost.)"""
    return _EAGER_AT_START and _enabled


def numba_disabled() -> bool:
    """Has `AUTODIFF_DISABLE_NUMBA=1` (or `set_numba_enabled(False)`) switched Numba off?"""
    return not _enabled


def numba_loaded() -> bool:
    """Has this process imported Numba (so that using it costs no import)?"""
    return bool(_numba)


@functools.cache
def _installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def numba_available() -> bool:
    """Not disabled, and installed — without importing Numba (see `numba_enabled`)."""
    return _enabled and _numba is not False and _installed()


def tiered_up() -> bool:
    """Has this process loaded Numba for the kernels?"""
    return bool(_numba)


def user_cache_dir() -> str:
    """autodiff's cache directory for compiled code (made if missing)."""
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
        return user_cache_dir()
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
