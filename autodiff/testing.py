"""Numerical checks of derivatives, public and used by autodiff's own tests.

`check_grads` compares reverse mode (and, when available, forward mode) with
central differences along random directions, checks the VJP/JVP inner-product
identity, and recurses to check higher orders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from autodiff.core.pytree import tree_flatten, tree_unflatten
from autodiff.core.tensor import Tensor
from autodiff.forward_ad.transforms import jvp
from autodiff.reverse.transforms import vjp

_DEFAULT_EPS = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 1e-3}
_DEFAULT_TOL = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 2e-3}


def _concrete(x):
    return x.primal() if isinstance(x, Tensor) else np.asarray(x)


def _dtype(x):
    return _concrete(x).dtype


def _real_dtype(dt):
    return np.finfo(dt).dtype if np.issubdtype(dt, np.inexact) else np.dtype(np.float64)


def _random_like(rng, x):
    x = _concrete(x)
    v = rng.standard_normal(x.shape)
    if np.iscomplexobj(x):
        v = v + 1j * rng.standard_normal(x.shape)
    return v.astype(x.dtype) if np.issubdtype(x.dtype, np.inexact) else v


def _upcast(x):
    """Finite differences run in double precision even when the check is about float32."""
    x = np.asarray(_concrete(x))
    if x.dtype == np.float32 or x.dtype == np.float16:
        return x.astype(np.float64)
    if x.dtype == np.complex64:
        return x.astype(np.complex128)
    return x


def _inner(xs, ys) -> float:
    """Real inner product of two flat lists of arrays."""
    total = 0.0
    for x, y in zip(xs, ys):
        total += float(np.real(np.sum(np.conj(_upcast(x)) * _upcast(y))))
    return total


def _adjoint(f_vjp, ct) -> tuple:
    """`conj(f_vjp(conj(ct)))`: the adjoint of the JVP under the real inner product `_inner`.
    `vjp` follows JAX's convention (the plain transpose of the JVP), so for complex values
    the pullback is conjugated on both sides to compare with `<ct, J t>`."""
    out_flat, out_def = tree_flatten(ct)
    in_cts = f_vjp(tree_unflatten(out_def, [_conj(c) for c in out_flat]))
    return tuple(_conj(c) for c in in_cts)


def _conj(x):
    return np.conj(x) if np.iscomplexobj(_concrete(x)) else x


def _flat_out(f, args):
    out = f(*args)
    flat, _ = tree_flatten(out)
    return [_upcast(o) for o in flat]


def numerical_jvp(f: Callable, args: Sequence, tangents: Sequence, eps: float) -> list:
    """Central-difference directional derivative of `f` at `args` along `tangents`."""
    plus = [_upcast(a) + eps * _upcast(t) for a, t in zip(args, tangents)]
    minus = [_upcast(a) - eps * _upcast(t) for a, t in zip(args, tangents)]
    f_plus = _flat_out(f, plus)
    f_minus = _flat_out(f, minus)
    return [(p - m) / (2 * eps) for p, m in zip(f_plus, f_minus)]


def _close(a: float, b: float, atol: float, rtol: float, what: str) -> None:
    if not abs(a - b) <= atol + rtol * max(abs(a), abs(b)):
        raise AssertionError(
            f"{what}: {a!r} vs {b!r} (diff {abs(a - b):.3g}, atol {atol}, rtol {rtol})"
        )


def check_grads(
    f: Callable,
    args: Sequence,
    order: int = 2,
    modes: Sequence[str] = ("rev",),
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    seed: int = 0,
) -> None:
    """Check the derivatives of `f` at `args` up to `order`, raising AssertionError on a mismatch.

    For each order, with random input directions `v` and output cotangents `u`:
    - "rev": `<u, J v>` from central differences equals `<vjp(u), v>`; also checks
      that each cotangent has its input's shape and dtype;
    - "fwd": the JVP equals central differences, and `<u, jvp(v)> = <vjp(u), v>`
      when both modes are checked.
    Order k + 1 checks the order-k derivative maps (`x -> vjp(f, x)(u)`,
    `x -> jvp(f, x, v)`) the same way. Differences run in float64.

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> check_grads(lambda x: anp.sin(x) * x, (np.linspace(0.1, 1.0, 4),), order=2)
    """
    args = tuple(np.asarray(a) if not isinstance(a, Tensor) else a for a in args)
    dt = _real_dtype(np.result_type(*[_dtype(a) for a in args]))
    eps = _DEFAULT_EPS.get(dt, 1e-5) if eps is None else eps
    atol = _DEFAULT_TOL.get(dt, 1e-5) if atol is None else atol
    rtol = _DEFAULT_TOL.get(dt, 1e-5) if rtol is None else rtol
    rng = np.random.default_rng(seed)
    tangents = [_random_like(rng, a) for a in args]
    numeric = numerical_jvp(f, args, tangents, eps)
    out = f(*args)
    out_flat, out_def = tree_flatten(out)
    cts_flat = [_random_like(rng, o) for o in out_flat]
    ct = tree_unflatten(out_def, cts_flat)
    numeric_ip = _inner(cts_flat, numeric)
    scale = max(1.0, float(np.sqrt(sum(np.sum(np.abs(n) ** 2) for n in numeric))))

    f_vjp = None
    if "rev" in modes:
        _, f_vjp = vjp(f, *args)
        in_cts = _adjoint(f_vjp, ct)
        _check_cotangent_types(args, in_cts)
        _close(
            _inner(in_cts, tangents), numeric_ip, atol * scale, rtol, "VJP vs central differences"
        )
    if "fwd" in modes:
        _, t_out = jvp(f, tuple(args), tuple(tangents))
        t_flat = tree_flatten(t_out)[0]
        for got, want in zip(t_flat, numeric):
            np.testing.assert_allclose(
                _upcast(got),
                want,
                rtol=rtol,
                atol=atol * scale,
                err_msg="JVP vs central differences",
            )
        if f_vjp is not None:
            _close(
                _inner(cts_flat, t_flat),
                _inner(_adjoint(f_vjp, ct), tangents),
                atol * scale,
                rtol,
                "JVP/VJP inner-product identity",
            )
    if order > 1:
        _check_next_order(f, args, tangents, cts_flat, order, modes, eps, atol, rtol, seed)


def _check_cotangent_types(args: tuple, in_cts) -> None:
    """Each cotangent has its input's shape and dtype."""
    for i, (a, c) in enumerate(zip(args, in_cts)):
        if np.shape(_concrete(c)) != np.shape(_concrete(a)):
            raise AssertionError(f"cotangent {i} has shape {np.shape(c)}, input {np.shape(a)}")
        if _dtype(c) != _dtype(a):
            raise AssertionError(f"cotangent {i} has dtype {_dtype(c)}, input {_dtype(a)}")


def _check_next_order(f, args, tangents, cts_flat, order, modes, eps, atol, rtol, seed) -> None:
    """`check_grads` of the order-1 derivative maps of `f` (`x -> vjp(f, x)(u)`,
    `x -> jvp(f, x, v)`) to `order - 1`."""
    if "rev" in modes:

        def f_vjp_ct(*xs):  # the cotangent follows the outputs' dtype (as tangents below)
            out, pull = vjp(f, *xs)
            o_flat, o_def = tree_flatten(out)
            return pull(
                tree_unflatten(
                    o_def, [np.asarray(c, dtype=_dtype(o)) for c, o in zip(cts_flat, o_flat)]
                )
            )

        check_grads(f_vjp_ct, args, order - 1, modes, eps, atol, rtol, seed + 1)
    if "fwd" in modes:

        def f_jvp(*xs):  # tangents follow the inputs' dtype (differences run in float64)
            ts = tuple(np.asarray(t, dtype=_dtype(x)) for t, x in zip(tangents, xs))
            return jvp(f, xs, ts)[1]

        check_grads(f_jvp, args, order - 1, modes, eps, atol, rtol, seed + 1)


__all__ = ["check_grads", "numerical_jvp"]
