"""Containers of modules: Sequential (a pipeline), ModuleList and ModuleDict (registered
collections)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from autodiff.torch.nn.module import Module, _addindent


def _absolute_index(idx: Any, size: int) -> int:
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


class Sequential(Module):
    """Modules applied in order: `Sequential(a, b)(x) == b(a(x))`; also from an OrderedDict of
    named modules.

    Example:
        >>> import autodiff as ad
        >>> from autodiff import nn
        >>> model = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
        >>> model(ad.ones(3, 2)).shape, len(model), model[1]
        ((3, 1), 3, ReLU())
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_absolute_index(idx, len(self))]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_absolute_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        if isinstance(idx, slice):
            for key in keys[idx]:
                delattr(self, key)
        else:
            delattr(self, keys[_absolute_index(idx, len(self))])
        # (torch renumbers the remaining modules 0, 1, ...)
        object.__setattr__(
            self, "_modules", dict(zip(map(str, range(len(self._modules))), self._modules.values()))
        )

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                "add operator supports only objects of Sequential class, but "
                f"{type(other)} is given."
            )
        return type(self)(*self, *other)

    def append(self, module: Module) -> Sequential:
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert `module` before position `index`; returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        modules = list(self._modules.values())
        modules.insert(index, module)
        object.__setattr__(self, "_modules", dict(zip(map(str, range(n + 1)), modules)))
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Append each module of `sequential`; returns self."""
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key: int) -> Module:
        """Remove and return the module at `key`."""
        module = self[key]
        del self[key]
        return module

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules whose parameters the owner registers (no forward of its own).

    Example:
        >>> from autodiff import nn
        >>> layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        >>> len(list(layers.parameters()))
        6
        >>> layers
        ModuleList(
          (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)
        )
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self)[idx])
        return self._modules[str(_absolute_index(idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_absolute_index(idx, len(self))), module)

    def __delitem__(self, idx) -> None:
        keys = list(self._modules)
        if isinstance(idx, slice):
            for key in keys[idx]:
                delattr(self, key)
        else:
            delattr(self, keys[_absolute_index(idx, len(self))])
        object.__setattr__(
            self, "_modules", dict(zip(map(str, range(len(self._modules))), self._modules.values()))
        )

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return type(self)([*self, *other])

    def append(self, module: Module) -> ModuleList:
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert `module` before position `index`."""
        modules = list(self)
        modules.insert(index, module)
        object.__setattr__(self, "_modules", {})
        self.extend(modules)

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append each module of `modules`; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for module in modules:
            self.append(module)
        return self

    def pop(self, key: int) -> Module:
        """Remove and return the module at `key`."""
        module = self[key]
        del self[key]
        return module

    def __repr__(self) -> str:
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list[list] = []  # [first index, last index, repr] of runs of equal reprs
        for i, text in enumerate(reprs):
            if blocks and blocks[-1][2] == text:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, text])
        lines = []
        for start, end, text in blocks:
            head = f"({start})" if start == end else f"({start}-{end})"
            count = "" if start == end else f"{end - start + 1} x "
            lines.append(_addindent(f"{head}: {count}{text}", 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules whose parameters the owner registers, in insertion order.

    Example:
        >>> from autodiff import nn
        >>> heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Tanh()})
        >>> list(heads), "a" in heads
        (['a', 'b'], True)
    """

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module under `key`."""
        module = self[key]
        del self[key]
        return module

    def keys(self):
        """The names."""
        return self._modules.keys()

    def items(self):
        """(name, module) pairs."""
        return self._modules.items()

    def values(self):
        """The modules."""
        return self._modules.values()

    def update(self, modules) -> None:
        """Add modules from a mapping or an iterable of (name, module) pairs."""
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                + type(modules).__name__
            )
        for j, pair in enumerate(modules):
            if not isinstance(pair, Iterable):
                raise TypeError(
                    f"ModuleDict update sequence element #{j} should be Iterable; is "
                    + type(pair).__name__
                )
            pair = list(pair)
            if len(pair) != 2:
                raise ValueError(
                    f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required"
                )
            self[pair[0]] = pair[1]


__all__ = ["ModuleDict", "ModuleList", "Sequential"]
