"""`jax.lax`: autodiff's control flow and the lax operations JAX's tests use, by their lax names."""

# ruff: noqa: F401 (a namespace: what it imports, it re-exports)

import enum

import autodiff.numpy as _anp
from autodiff import (
    associative_scan,
    cond,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    fori_loop,
    map,
    scan,
    stop_gradient,
    switch,
    while_loop,
)
from autodiff.numpy import (
    add,
    bitwise_and,
    bitwise_xor,
    conj,
    cos,
    exp,
    full_like,
    sign,
    sin,
    tanh,
)
from autodiff.numpy import equal as eq
from autodiff.numpy import greater as gt
from autodiff.numpy import greater_equal as ge
from autodiff.numpy import less as lt
from autodiff.numpy import less_equal as le
from autodiff.numpy import maximum as max
from autodiff.numpy import minimum as min
from autodiff.numpy import multiply as mul
from autodiff.numpy import negative as neg
from autodiff.numpy import not_equal as ne
from autodiff.numpy import subtract as sub
from autodiff.numpy import where as select
from jax import _stubs


class Precision(enum.Enum):
    """Matmul precision: a hint without effect on the CPU."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


# Argument-order adapters: lax spells these with other parameter names than NumPy.
def convert_element_type(operand, new_dtype):
    return _anp.asarray(operand).astype(new_dtype)


def reshape(operand, new_sizes, dimensions=None):
    operand = operand if dimensions is None else _anp.transpose(operand, dimensions)
    return _anp.reshape(operand, tuple(new_sizes))


def concatenate(operands, dimension):
    return _anp.concatenate(operands, axis=dimension)


def reduce_sum(operand, axes):
    return _anp.sum(operand, axis=tuple(axes))


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    return _anp.dot(lhs, rhs)


def __getattr__(name):
    return _stubs.Missing(f"jax.lax.{name}")


def platform_dependent(*args, default=None, **per_platform):
    """The CPU's branch (or the default): this is the only platform."""
    return (per_platform.get("cpu") or default)(*args)
