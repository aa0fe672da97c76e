"""The old import paths of the torch face's packages: `autodiff.nn` is `autodiff.torch.nn`.

`import autodiff.nn`, `import autodiff.nn.functional as F`, `from autodiff.optim import Adam`
and `autodiff.utils.checkpoint` keep working, and give the very module objects of
`autodiff.torch.nn`, ... (never a second copy of a module: a class has one identity, and
its `__module__`, `autodiff.torch.nn.layers`, is where pickle and the docs find it).

A finder on `sys.meta_path` resolves an old name, and any submodule under it, by importing
the new one, on first use: like the packages themselves, they load only when asked for
(`autodiff/__init__.py`'s `__getattr__`). Registering every submodule in `sys.modules` at
`import autodiff` would load them all; a package left at the old path would need a file
per submodule to keep `import autodiff.nn.functional` from loading a copy.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

# old name -> new name; a name covers its submodules.
OLD_PATHS = {
    "autodiff.nn": "autodiff.torch.nn",
    "autodiff.optim": "autodiff.torch.optim",
    "autodiff.utils": "autodiff.torch.utils",
    "autodiff._C": "autodiff.torch._C",
}


def new_name(name: str) -> str | None:
    """The module's name under autodiff.torch, if `name` is an old path; else None."""
    for old, new in OLD_PATHS.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path; loading it imports the new one and gives that module itself."""

    def __init__(self) -> None:
        self._specs: dict[str, object] = {}

    def find_spec(self, fullname, path=None, target=None):
        if new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec) -> ModuleType:
        module = importlib.import_module(new_name(spec.name))  # type: ignore[arg-type]
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module ran under its own name): give it back its own spec,
        which the import system replaced with the alias's."""
        module.__spec__ = self._specs.pop(module.__name__)  # type: ignore[assignment]


FINDER = _AliasFinder()


def install() -> None:
    """Put the finder first on `sys.meta_path` (before the path finder, which would find a
    submodule of an alias's package again, as a copy under the old name)."""
    if FINDER not in sys.meta_path:
        sys.meta_path.insert(0, FINDER)
