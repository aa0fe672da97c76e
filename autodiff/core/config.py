"""Runtime switches of the JAX face: `config.update(...)`, `disable_jit()`, `checking_leaks()`.

Two switches, with JAX's names: "jax_disable_jit" (jitted functions run as plain Python) and
"jax_check_tracer_leaks" (a transform that ends while one of its tracers is still held
somewhere raises `EscapedTracerError`). `config.update` sets a process-wide default (under a
lock); the context managers override it for the current thread, as JAX's do.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar, cast

import numpy as np

from autodiff.core.errors import EscapedTracerError
from autodiff.core.trace import TENSOR_TYPES, Trace, state

F = TypeVar("F", bound=Callable)

_lock = threading.Lock()
_defaults = {"jax_disable_jit": False, "jax_check_tracer_leaks": False}


class _Overrides(threading.local):
    """This thread's values set by the context managers (None: the process default)."""

    def __init__(self):
        self.jax_disable_jit: bool | None = None
        self.jax_check_tracer_leaks: bool | None = None


_overrides = _Overrides()


class Config:
    """The switches: `config.update(name, value)` sets one for the process; `config.<name>`
    reads it as this thread sees it.

    Example:
        >>> import autodiff as ad
        >>> ad.config.update("jax_disable_jit", True)
        >>> ad.config.jax_disable_jit
        True
        >>> ad.config.update("jax_disable_jit", False)
    """

    def update(self, name: str, value) -> None:
        """Set switch `name` for every thread (a context manager's override still wins).
        "jax_enable_x64" is accepted as True only: autodiff computes in NumPy's dtypes."""
        if name == "jax_enable_x64":
            if not value:
                raise ValueError(
                    "jax_enable_x64=False is not supported: autodiff keeps NumPy's dtypes "
                    "(float64 by default); pass float32 arrays to compute in float32."
                )
            return
        if name not in _defaults:
            raise AttributeError(f"Unrecognized config option: {name}")
        if not isinstance(value, bool):
            raise TypeError(f"config option {name} takes a bool, got {type(value).__name__}")
        with _lock:
            _defaults[name] = value

    def __getattr__(self, name: str):
        if name == "jax_enable_x64":
            return True
        if name not in _defaults:
            raise AttributeError(f"Unrecognized config option: {name}")
        override = getattr(_overrides, name)
        return _defaults[name] if override is None else override


config = Config()


def jit_disabled() -> bool:
    """Do jitted functions run as plain Python in this thread?"""
    override = _overrides.jax_disable_jit
    return _defaults["jax_disable_jit"] if override is None else override


def leaks_checked() -> bool:
    """Does this thread check, at the end of each transform, that none of its tracers leaked?"""
    override = _overrides.jax_check_tracer_leaks
    return _defaults["jax_check_tracer_leaks"] if override is None else override


@contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Within the block (this thread), `jit` runs its function as plain Python at each call:
    Python side effects happen every time and values are concrete (print them, step
    through them in a debugger). Control flow (`scan`, `cond`, ...) already runs as Python
    outside transforms.

    Example:
        >>> import autodiff as ad
        >>> f = ad.jit(lambda x: print("x is", x) or x * 2)
        >>> with ad.disable_jit():
        ...     float(f(1.0))
        x is 1.0
        2.0
    """
    previous = _overrides.jax_disable_jit
    _overrides.jax_disable_jit = bool(disable)
    try:
        yield
    finally:
        _overrides.jax_disable_jit = previous


@contextmanager
def checking_leaks() -> Iterator[None]:
    """Within the block (this thread), each transform checks when it ends that none of its
    tracers is still referenced (stored in a global, a closure, a list of the caller) and
    raises `EscapedTracerError` ("Leaked trace ...") naming the transform if one is. Slow
    (a garbage collection per transform): a debugging aid, as JAX's.

    Example:
        >>> import autodiff as ad
        >>> kept = []
        >>> with ad.checking_leaks():
        ...     ad.jit(lambda x: kept.append(x) or x)(1.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        autodiff.core.errors.EscapedTracerError: Leaked trace of staging ...
    """
    previous = _overrides.jax_check_tracer_leaks
    _overrides.jax_check_tracer_leaks = True
    try:
        yield
    finally:
        _overrides.jax_check_tracer_leaks = previous


def checks_leaks(transform: str) -> Callable[[F], F]:
    """Decorator of a transform's function: while leaks are checked, once it returns (its
    own references to the tracers gone with its frame), raise `EscapedTracerError` if a
    trace that ended during the call still has tracers referenced from somewhere."""

    def decorate(fun: F) -> F:
        @functools.wraps(fun)
        def checked(*args, **kwargs):
            if not leaks_checked():
                return fun(*args, **kwargs)
            thread = state()
            outer, thread.popped = thread.popped, []
            try:
                result = fun(*args, **kwargs)
            finally:
                mine, thread.popped = thread.popped, outer
                if outer is not None:
                    outer.extend(mine)
            _check(mine, transform)
            return result

        return cast(F, checked)

    return decorate


def _check(popped: list, transform: str) -> None:
    gc.collect()
    tracers = []
    for ref in popped:
        dead: Trace | None = ref()
        if dead is not None:
            tracers.extend(r for r in gc.get_referrers(dead) if type(r) in TENSOR_TYPES)
        del dead
    if tracers:
        kinds = ", ".join(sorted({f"{np.dtype(t.dtype).name}{list(t.shape)}" for t in tracers}))
        raise EscapedTracerError(
            f"Leaked trace of {transform}: {len(tracers)} of its tracers ({kinds}) are still "
            f"referenced after {transform} finished. Encountered an unexpected tracer: values "
            "computed inside a transform must be returned from the transformed function, not "
            "stored outside it (a global, a closure, a list of the caller)."
        )


__all__ = [
    "Config",
    "checks_leaks",
    "checking_leaks",
    "config",
    "disable_jit",
    "jit_disabled",
    "leaks_checked",
]
