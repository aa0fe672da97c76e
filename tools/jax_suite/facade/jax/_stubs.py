"""Placeholders for what JAX's tests import but autodiff has no counterpart for.

A `jax.*` module with no file here is made on import: each of its attributes is a `Missing`.
A Missing can be named, called and subscripted (module-level setup in JAX's test files does so),
but using it as a value raises NotImplementedError, and a function it decorates raises when
called: a test that needs one fails, it never passes by accident.
"""

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
import types

import autodiff as _ad


class Missing:
    """A JAX name with no autodiff counterpart."""

    def __init__(self, name):
        self._name = name
        self.__name__ = name.rsplit(".", 1)[-1]

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Missing(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and isinstance(args[0], types.FunctionType) and not kwargs:
            return self._unusable
        return Missing(f"{self._name}(...)")

    def _unusable(self, *args, **kwargs):
        raise NotImplementedError(f"jax facade: {self._name} has no autodiff counterpart")

    def __getitem__(self, key):
        return Missing(f"{self._name}[...]")

    def __setitem__(self, key, value):
        pass

    __bool__ = __iter__ = __len__ = __array__ = __float__ = __index__ = __enter__ = _unusable


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Missing(f"{self.__name__}.{attr}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes a `_StubModule` for a `jax.*` module the facade has no file for."""

    def find_spec(self, name, path, target=None):
        if not name.startswith("jax."):
            return None
        if importlib.machinery.PathFinder.find_spec(name, path) is not None:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []


sys.meta_path.append(_StubFinder())


class _Flag:
    """A JAX config flag: `.value`, and a no-op context manager or decorator to set it."""

    def __init__(self, name):
        self.name = name

    @property
    def value(self):
        return getattr(config, "jax_" + self.name)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Missing(f"{self.name}.{attr}")

    def __call__(self, *args):
        return args[0] if args and callable(args[0]) else _NoOp()


class _NoOp(contextlib.ContextDecorator):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Config:
    """`jax.config`: autodiff.config, with JAX's other flags read as their defaults."""

    def update(self, name, value):
        with contextlib.suppress(AttributeError):
            _ad.config.update(name, value)

    def parse_flags_with_absl(self):
        pass

    def __getattr__(self, name):
        if name.startswith("jax_"):
            try:
                return getattr(_ad.config, name)
            except AttributeError:
                return False
        return _Flag(name)


config = _Config()
JIT = os.environ.get("JAX_SUITE_JIT") == "1"
