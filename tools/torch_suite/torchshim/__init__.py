"""The name mapping that runs PyTorch's own autograd tests on autodiff (see ../README.md).

`install()` puts `autodiff` in `sys.modules["torch"]` and a finder first on `sys.meta_path`:

- `torch.testing._internal.<m>` is this package's module `<m>` (test utilities only:
  TestCase, parametrize, device instantiation, ...; the semantics under test are autodiff's);
- `torch.testing` is `torchshim.testing` (assert_close, make_tensor);
- a few modules autodiff does not have, all out of scope by design (`__torch_dispatch__`
  modes, the flop counter, profiler internals, `torch.fx`), are `torchshim.stand_ins`,
  whose names raise `OutOfScope` when used, so the files import and those tests are counted
  apart;
- any other `torch.<path>` is `autodiff.<path>`, the very module object; the names the test
  files import from it that autodiff lacks (`PLACEHOLDERS`) are set on it as placeholders
  that raise when used: `OutOfScope` for the by-design clusters, `Missing` (a failure, as
  any) for torch API autodiff does not have, so that one missing name fails the tests that
  use it and not the whole file's import.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from torchshim import stand_ins

OWN = {
    "torch.testing": "torchshim.testing",
    "torch.testing._internal": "torchshim",
}
STAND_IN_MODULES = (
    "torch.utils._python_dispatch",
    "torch.utils._mode_utils",
    "torch.utils.flop_counter",
    "torch.utils._pytree",
    "torch.autograd.profiler_util",
    "torch.autograd._functions",
    "torch.overrides",
    "torch._subclasses",
    "torch._subclasses.fake_tensor",
    "torch._dynamo",
    "torch.fx",
    "torch.fx.experimental",
    "torch.fx.experimental.proxy_tensor",
)


# module -> {name: the by-design category, or None: API autodiff lacks (counted as failures)}
PLACEHOLDERS = {
    "torch.autograd.profiler": {"emit_itt": "profiler", "emit_nvtx": "profiler"},
    "torch.utils.checkpoint": {
        "CheckpointPolicy": None,
        "create_selective_checkpoint_contexts": None,
    },
}


def _placeholders(name: str, module) -> None:
    for attr, category in PLACEHOLDERS.get(name, {}).items():
        if not hasattr(module, attr):
            setattr(module, attr, stand_ins.placeholder(category, f"{name}.{attr}"))


def target(name: str) -> str | None:
    """The module that gives `name`, if the shim maps it; else None."""
    if name in OWN:
        return OWN[name]
    if name.startswith("torch.testing._internal."):
        return "torchshim." + name.rsplit(".", 1)[1]
    if name in STAND_IN_MODULES:
        return "torchshim.stand_ins"
    if name.startswith("torch."):
        return "autodiff." + name[len("torch.") :]
    return None


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self) -> None:
        self._specs: dict[int, object] = {}

    def find_spec(self, fullname, path=None, target_=None):
        if target(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(target(spec.name))
        self._specs[id(module)] = module.__spec__
        _placeholders(spec.name, module)
        return module

    def exec_module(self, module) -> None:
        """Nothing to run (the module ran under its own name): give back its own spec."""
        module.__spec__ = self._specs.pop(id(module))


def install() -> None:
    """Map `torch` to autodiff (idempotent)."""
    import autodiff

    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    sys.modules["torch"] = autodiff
