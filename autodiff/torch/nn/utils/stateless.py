"""`functional_call`: a module called with other values for its parameters and buffers, so
that function transforms can differentiate and batch with respect to them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from autodiff.torch.nn.module import Module


def _merged(parameters_and_buffers) -> dict[str, Any]:
    if isinstance(parameters_and_buffers, Mapping):
        return dict(parameters_and_buffers)
    merged: dict[str, Any] = {}
    for mapping in parameters_and_buffers:
        repeated = set(mapping) & set(merged)
        if repeated:
            raise ValueError(f"{sorted(repeated)} appeared in multiple dictionaries")
        merged.update(mapping)
    return merged


def functional_call(
    module: Module,
    parameters_and_buffers: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """`module(*args, **kwargs)` with the given values (by dotted name) in place of its
    parameters and buffers; the module is unchanged afterwards (torch.func.functional_call).

    With `tie_weights`, a value given for one name of a parameter registered under several
    also replaces the others; with `strict`, every parameter and buffer must be given.

    Example:
        >>> import autodiff as ad, numpy as np
        >>> from autodiff import nn
        >>> model = nn.Linear(3, 1)
        >>> params = {k: v.detach() for k, v in model.named_parameters()}
        >>> def loss(params, x):
        ...     return functional_call(model, params, (x,)).sum()
        >>> per_example = ad.vmap(ad.grad(loss), in_axes=(None, 0))(params, np.ones((5, 3)))
        >>> per_example["weight"].shape
        (5, 1, 3)
    """
    values = _merged(parameters_and_buffers)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    named: list[tuple[str, Any]] = list(module.named_parameters(remove_duplicate=False))
    named += module.named_buffers(remove_duplicate=False)
    known = {name for name, _ in named}
    unexpected = [name for name in values if name not in known]
    if unexpected:
        raise RuntimeError(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if tie_weights:
        by_object: dict[int, Any] = {id(t): values[n] for n, t in named if n in values}
        values = {n: by_object[id(t)] for n, t in named if id(t) in by_object} | values
    if strict:
        missing = [name for name in known if name not in values]
        if missing:
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, sorted(missing)))}.")
    swapped = []
    try:
        for name, value in values.items():
            owner_path, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_path)
            registry: dict[str, Any] = (
                owner._parameters if attr in owner._parameters else owner._buffers
            )
            swapped.append((registry, attr, registry[attr]))
            registry[attr] = value
        return module(*args, **(kwargs or {}))
    finally:
        for registry, attr, original in reversed(swapped):
            registry[attr] = original


__all__ = ["functional_call"]
