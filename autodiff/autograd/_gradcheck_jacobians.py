"""gradcheck's Jacobians: central differences, the analytical ones by backward and by
forward mode, random directions (fast mode) and the real/imaginary splitting of complex
values."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd import forward_ad
from autodiff.autograd._backward import grad
from autodiff.core.tensor import Tensor

# ---- small helpers ----------------------------------------------------------------------------


class GradcheckError(RuntimeError):
    """Raised by `gradcheck` / `gradgradcheck` when a check fails (and `raise_exception`).

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> @ad.custom_jvp
        ... def f(x):
        ...     return anp.sin(x)
        >>> @f.defjvp
        ... def f_jvp(primals, tangents):
        ...     return f(primals[0]), 2.0 * tangents[0]  # wrong: sin' is cos
        >>> gradcheck(f, (ad.tensor([0.5], requires_grad=True),))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        autodiff.autograd.gradcheck.GradcheckError: Jacobian mismatch for output 0 with ...
    """

    # Its public home, where tracebacks, pickle and the docs name it (and its example runs).
    __module__ = "autodiff.autograd.gradcheck"


def _as_tuple(x) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_inexact_tensor(x) -> bool:
    return isinstance(x, Tensor) and np.issubdtype(x.dtype, np.inexact)


def _requires_grad(x) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


def _value(x) -> np.ndarray:
    """The concrete value of a Tensor (any level) or array, as an ndarray."""
    return np.asarray(x.primal() if isinstance(x, Tensor) else x)


def _show(array) -> str:
    return repr(Tensor._from(np.asarray(array)))


def _torch_size(shape) -> str:
    return f"torch.Size([{', '.join(str(s) for s in shape)}])"


def _real_dtype(dtype) -> np.dtype:
    return np.finfo(dtype).dtype if np.issubdtype(dtype, np.complexfloating) else np.dtype(dtype)


@contextmanager
def _holding(tensor: Tensor, value: np.ndarray):
    """`tensor` holds `value` for the duration of the block (no version bump, no graph)."""
    saved = tensor._value
    tensor._value = value
    try:
        yield
    finally:
        tensor._value = saved


def _grad(outputs, inputs, grad_outputs, **kwargs) -> tuple:

    return grad(outputs, inputs, grad_outputs, allow_unused=True, **kwargs)


def _seed(value) -> Tensor:
    return Tensor._from(np.asarray(value))


# ---- input and output checks ------------------------------------------------------------------


def _check_inputs(inputs: tuple) -> None:
    any_requires_grad = False
    for i, x in enumerate(inputs):
        if not _requires_grad(x):
            continue
        any_requires_grad = True
        if x.dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ",
                stacklevel=4,
            )
        value = _value(x)
        if value.size and any(st == 0 and n > 1 for st, n in zip(value.strides, value.shape)):
            raise RuntimeError(
                f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
                "that are non-overlapping to be able to compute the numerical gradients "
                "correctly. You should call .contiguous on the input before passing it to "
                "gradcheck."
            )
    if not any_requires_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them "
            "have requires_grad=True."
        )


# ---- numerical derivatives --------------------------------------------------------------------


def _outputs_at(func, inputs, positions) -> list:
    outs = _as_tuple(func(*inputs))
    return [np.array(_value(outs[p])) for p in positions]


def _central_difference(func, inputs, index: int, step, positions, eps: float, where) -> list:
    """`(f(x + step) - f(x - step)) / (2 eps)` for input `index`, flattened per output."""
    x = inputs[index]
    base = _value(x)
    with _holding(x, (base - step).astype(base.dtype)):
        before = _outputs_at(func, inputs, positions)
    with _holding(x, (base + step).astype(base.dtype)):
        after = _outputs_at(func, inputs, positions)
    result = []
    for a, b in zip(before, after):
        on = f"on index {where} " if where is not None else ""
        if a.shape != b.shape:
            raise AssertionError(
                f"Expected `func` to return outputs with the same shape when inputs are perturbed "
                f"{on}by {eps}, but got: shapes {_torch_size(a.shape)} and "
                f"{_torch_size(b.shape)}."
            )
        if a.dtype != b.dtype:
            raise AssertionError(
                f"Expected `func` to return outputs with the same dtype when inputs are perturbed "
                f"{on}by {eps}, but got: dtypes {a.dtype} and {b.dtype}."
            )
        result.append(((b - a) / (2 * eps)).reshape(-1))
    return result


def _numerical_jvp(func, inputs, index: int, direction, positions, eps: float, where=None):
    """Directional derivatives of the outputs along `direction` (a pair `(dx, dy)` for a
    complex input: the result is `D_dx f + i D_dy f`, the torch convention)."""
    base = _value(inputs[index])
    if np.iscomplexobj(base):
        dx, dy = direction
        d_re = _central_difference(func, inputs, index, eps * dx, positions, eps, where)
        d_im = _central_difference(func, inputs, index, eps * 1j * dy, positions, eps, where)
        return [r + 1j * i for r, i in zip(d_re, d_im)]
    return _central_difference(func, inputs, index, eps * direction, positions, eps, where)


def _numerical_jacobian(func, inputs, index: int, positions, eps: float) -> list:
    """One `(input numel, output numel)` array per output position (row k: d out / d x_k)."""
    base = _value(inputs[index])
    if base.size == 0:
        return [np.zeros((0, o.size)) for o in _outputs_at(func, inputs, positions)]
    rows = []
    for k in range(base.size):
        e = np.zeros(base.size, _real_dtype(base.dtype))
        e[k] = 1
        e = e.reshape(base.shape)
        where = tuple(int(i) for i in np.unravel_index(k, base.shape))
        rows.append(
            _numerical_jvp(
                func, inputs, index, (e, e) if np.iscomplexobj(base) else e, positions, eps, where
            )
        )
    return [np.stack([r[o] for r in rows]) for o in range(len(positions))]


# ---- analytical derivatives -------------------------------------------------------------------


def _vjp_rows(output: Tensor, diff_inputs: list, seeds) -> list:
    """`grad(output, diff_inputs, seed)` for each seed: rows[i][s] is a value or None."""
    rows = [[] for _ in diff_inputs]
    for seed in seeds:
        for i, g in enumerate(_grad((output,), diff_inputs, (seed,), retain_graph=True)):
            rows[i].append(None if g is None else np.array(_value(g)))
    return rows


def _one_hots(shape, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    for j in range(n):
        e = np.zeros(n, dtype)
        e[j] = 1
        yield _seed(e.reshape(shape))


def _jacobian_from_rows(rows: list, x: Tensor) -> np.ndarray:
    """`(input numel, len(rows))`: column j is the j-th gradient (zeros for None)."""
    jac = np.zeros((x.size, len(rows)), x.dtype)
    for j, g in enumerate(rows):
        if g is not None and g.shape == tuple(x.shape):
            jac[:, j] = g.reshape(-1)
    return jac


def _analytical_backward(
    output: Tensor, diff_inputs: list, nondet_tol: float, check_grad_dtypes: bool, v=None
) -> list:
    """Backward-mode Jacobian of `output` (or `v^T J` with `v`) per input, computed twice to
    check that backward is deterministic up to `nondet_tol`."""

    def run():
        seeds = _one_hots(output.shape, output.dtype) if v is None else [_seed(v)]
        return _vjp_rows(output, diff_inputs, seeds)

    first, second = run(), run()
    for rows, x in zip(first, diff_inputs):
        for g in rows:
            if g is None:
                continue
            if g.shape != tuple(x.shape):
                raise GradcheckError("Analytical gradient has incorrect size")
            if check_grad_dtypes and g.dtype != x.dtype:
                raise GradcheckError("Gradient has dtype mismatch")
    jacobians = [_jacobian_from_rows(rows, x) for rows, x in zip(first, diff_inputs)]
    for jac, rows, x in zip(jacobians, second, diff_inputs):
        again = _jacobian_from_rows(rows, x)
        if jac.size and np.max(np.abs(jac - again)) > nondet_tol:
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient. The tolerance for nondeterminism was "
                f"{nondet_tol}.\n\nNOTE: if backward relies on non-deterministic operations, "
                "pass `nondet_tol=<tol>` to gradcheck/gradgradcheck."
            )
    return jacobians


def _forward_tangents(func, inputs, dual_idx, tangents: dict, positions, check_grad_dtypes):
    """Output tangents (flattened) with every input in `dual_idx` made dual: the tangent in
    `tangents` (by input position) or zeros."""

    with forward_ad.dual_level():
        duals = list(inputs)
        for i in dual_idx:
            x = inputs[i].detach()
            duals[i] = forward_ad.make_dual(x, _seed(tangents.get(i, np.zeros(x.shape, x.dtype))))
        outs = _as_tuple(func(*duals))
        result = []
        for p in positions:
            primal, tangent = forward_ad.unpack_dual(outs[p])
            primal = _value(primal)
            if tangent is None:
                result.append(np.zeros(primal.size, primal.dtype))
                continue
            tangent = _value(tangent)
            if check_grad_dtypes and np.iscomplexobj(primal) != np.iscomplexobj(tangent):
                raise GradcheckError("Forward AD gradient has dtype mismatch.")
            result.append(tangent.reshape(-1))
    return result


def _analytical_forward(func, inputs, diff_idx, positions, check_grad_dtypes) -> list:
    """Forward-mode Jacobians: jac[i][o] is `(input numel, output numel)`, one jvp per column."""
    jacobians = []
    for i in diff_idx:
        x = _value(inputs[i])
        rows = []
        for k in range(x.size):
            e = np.zeros(x.size, x.dtype)
            e[k] = 1
            rows.append(
                _forward_tangents(
                    func, inputs, diff_idx, {i: e.reshape(x.shape)}, positions, check_grad_dtypes
                )
            )
        jacobians.append(
            [
                np.stack([r[o] for r in rows])
                if rows
                else np.zeros((0, _value(_as_tuple(func(*inputs))[p]).size))
                for o, p in enumerate(positions)
            ]
        )
    return jacobians


# ---- the Jacobian checks ----------------------------------------------------------------------


def _mismatch(
    analytical, numerical, out_idx, in_idx, complex_indices, test_imag, forward: bool
) -> str:
    index = in_idx if forward else out_idx
    prefix = ""
    if complex_indices and index in complex_indices:
        part = "imaginary" if test_imag else "real"
        element = "inputs" if forward else "outputs"
        prefix = f"While considering the {part} part of complex {element} only, "
    mode = "computed with forward mode " if forward else ""
    return (
        f"{prefix}Jacobian {mode}mismatch for output {out_idx:d} with respect to input "
        f"{in_idx:d},\nnumerical:{_show(numerical)}\nanalytical:{_show(analytical)}\n"
    )


def _allclose(a, b, rtol, atol) -> bool:
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _random_direction(rng, x: Tensor, real: bool = True):
    """A random unit vector shaped like `x` (a pair of them for a complex input)."""
    dtype = x.dtype

    def one(dt):
        u = rng.random(x.size)
        norm = np.linalg.norm(u)
        return (u / norm if norm else u).astype(dt).reshape(x.shape)

    if real and np.iscomplexobj(np.empty(0, dtype)):
        return one(_real_dtype(dtype)), one(_real_dtype(dtype))
    return one(_real_dtype(dtype) if real else dtype)


def _sum_direction(u) -> float:
    return float(np.sum(u[0]) + np.sum(u[1])) if isinstance(u, tuple) else float(np.sum(u))


def _project(vj: np.ndarray, u) -> complex | float:
    """`vj . u`, with torch's convention for a complex input: `Re(vj).ur + i Im(vj).ui`."""
    if isinstance(u, tuple):
        return np.real(vj) @ u[0].reshape(-1) + 1j * (np.imag(vj) @ u[1].reshape(-1))
    return vj @ u.reshape(-1)


# ---- real/imaginary splitting -----------------------------------------------------------------


def _real_and_imag_outputs(func):
    """`func` with each complex output replaced by its real (resp. imaginary) part."""

    def apply(part):
        def wrapped(*inputs):
            outs = _as_tuple(func(*inputs))
            return tuple(
                part(o) if isinstance(o, Tensor) and np.iscomplexobj(np.empty(0, o.dtype)) else o
                for o in outs
            )

        return wrapped

    return apply(anp.real), apply(anp.imag)


def _real_and_imag_inputs(func, complex_idx, inputs):
    """Functions of real inputs: `x -> func(x + i Im(z))` and `y -> func(Re(z) + i y)`."""

    def apply(rebuild):
        def wrapped(*args):
            args = list(args)
            for i in complex_idx:
                args[i] = rebuild(args[i], _value(inputs[i]))
            return _as_tuple(func(*args))

        return wrapped

    real_fn = apply(lambda x, orig: x + 1j * np.imag(orig))
    imag_fn = apply(lambda y, orig: np.real(orig) + 1j * y)
    return real_fn, imag_fn


def _part(inputs, complex_idx, part) -> tuple:
    return tuple(
        Tensor(part(_value(x)), requires_grad=x.requires_grad) if i in complex_idx else x
        for i, x in enumerate(inputs)
    )


def _is_complex(x) -> bool:
    return isinstance(x, Tensor) and np.issubdtype(x.dtype, np.complexfloating)
