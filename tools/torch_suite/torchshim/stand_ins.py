"""Names of modules autodiff does not have, all out of scope by design; using one raises.

`__torch_dispatch__` modes, the flop counter, profiler internals and torch's private
`overrides`/`fx`/`_dynamo` live here only so that the test files import: a test that
uses one raises `OutOfScope`, which the runner counts apart, under its category.
"""

from __future__ import annotations

import contextlib


class OutOfScope(Exception):
    """A test used a by-design exclusion: `category` names the cluster."""

    def __init__(self, category: str, what: str) -> None:
        super().__init__(f"out of scope ({category}): {what}")
        self.category = category


class Missing(Exception):
    """A test used torch API that autodiff does not have (counted as a failure)."""


class _Missing:
    """A torch name autodiff lacks: raises Missing when called or read further."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args, **kwargs):
        raise Missing(f"{self._name} is not provided by autodiff")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise Missing(f"{self._name} is not provided by autodiff")


def placeholder(category, name: str):
    """A stand-in for `name`: out of scope under `category`, or (None) missing."""
    return _Missing(name) if category is None else _Unavailable(category, name)


class _Unavailable:
    """A class or function that raises OutOfScope when constructed or called."""

    def __init__(self, category: str, name: str) -> None:
        self._category, self._name = category, name

    def __call__(self, *args, **kwargs):
        raise OutOfScope(self._category, self._name)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Unavailable(self._category, f"{self._name}.{attr}")

    def __mro_entries__(self, bases):
        # `class M(TorchDispatchMode)`: a base whose instances raise
        category, name = self._category, self._name

        class Base:
            def __init__(self, *args, **kwargs):
                raise OutOfScope(category, name)

        return (Base,)


TorchDispatchMode = _Unavailable("torch_dispatch", "TorchDispatchMode")
TorchFunctionMode = _Unavailable("torch_dispatch", "TorchFunctionMode")
_get_current_dispatch_mode = _Unavailable("torch_dispatch", "_get_current_dispatch_mode")
return_and_correct_aliasing = _Unavailable("torch_dispatch", "return_and_correct_aliasing")
no_dispatch = _Unavailable("torch_dispatch", "no_dispatch")
FlopCounterMode = _Unavailable("profiler", "FlopCounterMode")
EventList = _Unavailable("profiler", "EventList")
FunctionEvent = _Unavailable("profiler", "FunctionEvent")
FunctionEventAvg = _Unavailable("profiler", "FunctionEventAvg")
_format_time = _Unavailable("profiler", "_format_time")
FakeTensorMode = _Unavailable("torch_dispatch", "FakeTensorMode")
make_fx = _Unavailable("torch_dispatch", "make_fx")
has_torch_function = _Unavailable("torch_dispatch", "has_torch_function")
handle_torch_function = _Unavailable("torch_dispatch", "handle_torch_function")
tree_map = _Unavailable("private_module", "torch.utils._pytree.tree_map")
tree_map_only = _Unavailable("private_module", "torch.utils._pytree.tree_map_only")
optimize = _Unavailable("compile", "torch._dynamo.optimize")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Unavailable("private_module", name)


@contextlib.contextmanager
def _nullcontext(*args, **kwargs):
    yield
