"""autodiff.func: torch.func's function transforms, with torch's names, signatures and results.

`import autodiff as torch` then `torch.func.grad`, `torch.func.vmap(f, in_dims=...)`, ...:
each transform is the core one (`autodiff.grad`, `vjp`, `jvp`, `linearize`, `jacrev`,
`jacfwd`, `hessian`, `vmap`) read through torch.func's conventions:

- results are torch-faced Tensors (a Jacobian block that does not depend on the input comes
  out of the core as a NumPy array; here it is a Tensor, so `jac.flatten(2)` is torch's);
- dicts keep their insertion order, as torch's pytrees do (JAX's, and the core's, sort the
  keys): a gradient over `dict(model.named_parameters())` zips with `named_parameters()`;
- `grad_and_value` returns `(grad, value)` (`(grad, (value, aux))` with `has_aux`), where
  JAX's value_and_grad returns `(value, grad)`;
- `vmap` takes `in_dims`/`out_dims`, maps positional arguments only (keyword arguments are
  passed through unmapped, as torch does), and checks `randomness`.

`functional_call`, `stack_module_state` and `replace_all_batch_norm_modules_` work on
autodiff.nn modules. The module loads on first use (`autodiff.func`), with autodiff.nn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any

import numpy as np

from autodiff.core.dtypes import float0
from autodiff.core.pytree import dict_insertion_order, tree_map
from autodiff.core.tensor import Tensor
from autodiff.forward_ad import jvp as _jvp
from autodiff.jacobians import hessian as _hessian
from autodiff.jacobians import jacfwd as _jacfwd
from autodiff.jacobians import jacrev as _jacrev
from autodiff.reverse import grad as _grad
from autodiff.reverse import linearize as _linearize
from autodiff.reverse import value_and_grad as _value_and_grad
from autodiff.reverse import vjp as _vjp
from autodiff.torch.generator import default_generator
from autodiff.torch.joining import stack
from autodiff.torch.nn.module import Module
from autodiff.torch.nn.normalization import _BatchNorm
from autodiff.torch.nn.utils.stateless import functional_call
from autodiff.vmap import vmap as _vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "replace_all_batch_norm_modules_",
    "stack_module_state",
    "vjp",
    "vmap",
]

_RANDOMNESS = ("error", "different", "same")


# ---- torch's conventions around the core transforms ------------------------------------------


def _torch_leaf(x):
    """A result leaf as torch.func gives it: a NumPy array (a block the core computed without
    the traced input, e.g. an identity) becomes a Tensor; `float0` zeros stay as they are."""
    if type(x) is np.ndarray or isinstance(x, np.generic):
        if x.dtype == float0:
            return x
        return Tensor._from(np.asarray(x))
    return x


def _torch_faced(tree):
    return tree_map(_torch_leaf, tree)


def _in_torch_order(fn: Callable, convert: Callable = _torch_faced) -> Callable:
    """`fn` run with dicts in insertion order, its results torch-faced (`convert`)."""

    @wraps(fn)
    def run(*args, **kwargs):
        with dict_insertion_order():
            return convert(fn(*args, **kwargs))

    return run


def _with_aux(convert_main: Callable) -> Callable:
    """A converter for `(main, aux)` results: `main` by `convert_main`, aux unchanged (torch
    returns auxiliary objects as the function gave them)."""

    def convert(result):
        main, aux = result
        return convert_main(main), aux

    return convert


def _check_randomness(randomness: str, api: str) -> None:
    if randomness not in _RANDOMNESS:
        raise RuntimeError(
            f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )
    if randomness == "different":
        raise NotImplementedError(
            f"{api}(randomness='different') is not supported: autodiff's vmap draws one "
            "random sample shared by the whole batch (randomness='same'). Draw the batch's "
            "random values outside the vmapped function and map over them instead."
        )


def _randomness_checked(fn: Callable, randomness: str, api: str) -> Callable:
    """With randomness='error' (torch's default), a random draw from the default generator
    inside `fn` raises torch's error: autodiff would otherwise share one sample."""
    if randomness != "error":
        return fn

    @wraps(fn)
    def run(*args, **kwargs):
        before = default_generator.get_state()
        result = fn(*args, **kwargs)
        if default_generator.get_state() != before:
            raise RuntimeError(
                f"{api}: called random operation while in randomness error mode. Please "
                "either use the 'same' or 'different' randomness flags on vmap or perform "
                "the randomness operation out of vmap"
            )
        return result

    return run


# ---- the transforms ---------------------------------------------------------------------------


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """torch.func.grad: the gradient of scalar-valued `func` with respect to `argnums` (a
    tuple of argnums gives a tuple of gradients), `(grad, aux)` with `has_aux`.

    Example:
        >>> import autodiff as torch
        >>> g = grad(lambda p: (p["w"] * p["b"]).sum())
        >>> list(g({"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([3.0, 4.0])}))
        ['w', 'b']
    """
    convert = _with_aux(_torch_faced) if has_aux else _torch_faced
    return _in_torch_order(_grad(func, argnums=argnums, has_aux=has_aux), convert)


def grad_and_value(
    func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable:
    """torch.func.grad_and_value: `(grad, value)`, or `(grad, (value, aux))` with `has_aux`.

    Example:
        >>> import autodiff as torch
        >>> g, value = grad_and_value(lambda x: (x**2).sum())(torch.tensor([1.0, 2.0]))
        >>> g, value
        (tensor([2., 4.]), tensor(5.))
    """
    value_and_grad_f = _value_and_grad(func, argnums=argnums, has_aux=has_aux)

    @wraps(func)
    def grad_and_value_f(*args, **kwargs):
        value, g = value_and_grad_f(*args, **kwargs)
        if has_aux:
            value, aux = value
            return _torch_faced(g), (_torch_faced(value), aux)
        return _torch_faced(g), _torch_faced(value)

    return _in_torch_order(grad_and_value_f, lambda result: result)


def vjp(func: Callable, *primals, has_aux: bool = False) -> tuple:
    """torch.func.vjp: `(output, vjp_fn)` (`(output, vjp_fn, aux)` with `has_aux`);
    `vjp_fn(cotangents)` returns a tuple with one cotangent per primal.

    Example:
        >>> import autodiff as torch
        >>> out, vjp_fn = vjp(torch.sin, torch.tensor([0.0, 1.0]))
        >>> vjp_fn(torch.ones(2))
        (tensor([1.        , 0.54030231]),)
    """
    with dict_insertion_order():
        result = _vjp(func, *primals, has_aux=has_aux)
    pullback = result[1]

    @wraps(pullback)
    def vjp_fn(cotangents, *, retain_graph: bool = True, create_graph: bool | None = None):
        with dict_insertion_order():
            return _torch_faced(pullback(cotangents))

    return (_torch_faced(result[0]), vjp_fn, *result[2:])


def jvp(
    func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False, has_aux: bool = False
) -> tuple:
    """torch.func.jvp: `(output, jvp_out)` (`(output, jvp_out, aux)` with `has_aux`);
    `primals` must be a tuple (`func(*primals)`), `tangents` of the same structure.

    Example:
        >>> import autodiff as torch
        >>> jvp(torch.sin, (torch.tensor(0.0),), (torch.tensor(2.0),))
        (tensor(0.), tensor(2.))
    """
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be "
            "valid to call f(*primals)."
        )
    with dict_insertion_order():
        result = _jvp(func, primals, tangents, has_aux=has_aux)
    return (_torch_faced(result[0]), _torch_faced(result[1]), *result[2:])


def linearize(func: Callable, *primals) -> tuple[Any, Callable]:
    """torch.func.linearize: `(output, jvp_fn)`, where `jvp_fn(*tangents)` is the JVP of
    `func` at `primals`, evaluated without running `func` again.

    Example:
        >>> import autodiff as torch
        >>> out, jvp_fn = linearize(torch.sin, torch.tensor(0.0))
        >>> jvp_fn(torch.tensor(3.0))
        tensor(3.)
    """
    with dict_insertion_order():
        out, pushforward = _linearize(func, *primals)
    return _torch_faced(out), _in_torch_order(pushforward)


def _check_chunk_size(chunk_size: int | None, api: str) -> None:
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"{api}: `chunk_size` should be greater than 0.")


def jacrev(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
) -> Callable:
    """torch.func.jacrev: the Jacobian of `func` by reverse mode, each block shaped
    `output.shape + input.shape` (`(jacobian, aux)` with `has_aux`).

    Example:
        >>> import autodiff as torch
        >>> jacrev(torch.sin)(torch.tensor([0.0, 0.0]))
        tensor([[1., 0.],
                [0., 1.]])
    """
    _check_chunk_size(chunk_size, "jacrev")
    convert = _with_aux(_torch_faced) if has_aux else _torch_faced
    jac = _jacrev(func, argnums=argnums, has_aux=has_aux, chunk_size=chunk_size)
    return _in_torch_order(jac, convert)


def jacfwd(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable:
    """torch.func.jacfwd: the Jacobian of `func` by forward mode, each block shaped
    `output.shape + input.shape` (`(jacobian, aux)` with `has_aux`).

    Example:
        >>> import autodiff as torch
        >>> jacfwd(lambda x: x**2)(torch.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    _check_randomness(randomness, "jacfwd")
    convert = _with_aux(_torch_faced) if has_aux else _torch_faced
    jac = _jacfwd(func, argnums=argnums, has_aux=has_aux)
    return _in_torch_order(_randomness_checked(jac, randomness, "jacfwd"), convert)


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """torch.func.hessian: `jacfwd(jacrev(func, argnums), argnums)`.

    Example:
        >>> import autodiff as torch
        >>> hessian(lambda x: (x**3).sum())(torch.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    return _in_torch_order(_hessian(func, argnums=argnums))


def vmap(
    func: Callable,
    in_dims: int | tuple | None = 0,
    out_dims: int | tuple | None = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """torch.func.vmap: `func` mapped over dimension `in_dims` of its positional arguments
    (None: not mapped), the mapped dimension at `out_dims` of its outputs. Keyword arguments
    are passed through unmapped, as torch does. `randomness`: 'error' (torch's default: a
    random draw inside `func` raises) or 'same' (one draw shared by the batch).

    Example:
        >>> import autodiff as torch
        >>> vmap(torch.dot, in_dims=(0, None))(torch.ones(3, 2), torch.tensor([1.0, 2.0]))
        tensor([3., 3., 3.])
    """
    if not callable(func):
        raise RuntimeError(f"vmap(func): Expected func to be callable, got {type(func)}")
    _check_randomness(randomness, "vmap")
    _check_chunk_size(chunk_size, "vmap")
    fname = getattr(func, "__name__", type(func).__name__)

    @wraps(func)
    def vmapped(*args, **kwargs):
        def positional(*mapped):
            return func(*mapped, **kwargs)

        positional.__name__ = fname
        batched = _vmap(positional, in_axes=in_dims, out_axes=out_dims, chunk_size=chunk_size)
        return _randomness_checked(batched, randomness, "vmap")(*args)

    return _in_torch_order(vmapped)


# ---- modules ----------------------------------------------------------------------------------


def _stacked(tensors: Sequence[Tensor], name: str) -> Tensor:
    all_grad = all(t.requires_grad for t in tensors)
    if not all_grad and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack([t.detach() for t in tensors])
    return result.requires_grad_() if all_grad else result


def stack_module_state(models: Sequence[Module]) -> tuple[dict, dict]:
    """torch.func.stack_module_state: `(params, buffers)`, dicts (in the modules' order of
    names) of each parameter and buffer stacked over `models` along a new dimension 0, for
    `vmap` over `functional_call`. Stacked parameters require grad when the models' do.

    Example:
        >>> import autodiff as torch
        >>> from autodiff import nn
        >>> params, buffers = stack_module_state([nn.Linear(3, 2) for _ in range(4)])
        >>> {k: tuple(v.shape) for k, v in params.items()}
        {'weight': (4, 2, 3), 'bias': (4, 2)}
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked([p[k] for p in all_params], k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """`torch.func.replace_all_batch_norm_modules_`: every batch norm under `root` (itself
    included) stops tracking running statistics (its running mean and variance become
    None), so that it can run under `vmap`; returns `root`, changed in place.

    Example:
        >>> from autodiff import nn
        >>> net = replace_all_batch_norm_modules_(nn.Sequential(nn.BatchNorm1d(3)))
        >>> net[0].running_mean is None, net[0].track_running_stats
        (True, False)
    """
    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
