"""torch.autograd.gradcheck and gradgradcheck: analytical derivatives against central differences.

`gradcheck` compares, for every output and every input that requires grad, the
Jacobian that backward (and, with `check_forward_ad`, forward mode) computes with
the one central differences give. The numerical Jacobian perturbs each input in
turn (its value is swapped for a perturbed copy, as torch perturbs `.data`), so
`func` is called with the very Tensors it was given. Like torch, complex outputs
are checked through their real and imaginary parts, complex inputs (in forward
mode) through real perturbations of each part, and derivatives of real-valued
functions of complex inputs follow the conjugate-Wirtinger convention
(`dL/dx + i dL/dy`).

`fast_mode=True` checks one random projection `v^T J u` per input/output pair
instead of whole Jacobians, and recomputes the full (slow) Jacobians only to
explain a failure.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from autodiff.autograd import forward_ad
from autodiff.autograd.function import Function
from autodiff.autograd.grad_mode import enable_grad
from autodiff.core.tensor import Tensor
from autodiff.core.trace import EVAL_TRACE
from autodiff.reverse.transforms import pullback as _functional_pullback
from autodiff.torch.creation import zeros_like
from autodiff.vmap import vmap

__all__ = [
    "GradcheckError",
    "get_analytical_jacobian",
    "get_numerical_jacobian",
    "gradcheck",
    "gradgradcheck",
]
from autodiff.autograd._gradcheck_jacobians import (
    GradcheckError,
    _allclose,
    _analytical_backward,
    _analytical_forward,
    _as_tuple,
    _check_inputs,
    _forward_tangents,
    _grad,
    _is_complex,
    _is_inexact_tensor,
    _jacobian_from_rows,
    _mismatch,
    _numerical_jacobian,
    _numerical_jvp,
    _one_hots,
    _part,
    _project,
    _random_direction,
    _real_and_imag_inputs,
    _real_and_imag_outputs,
    _requires_grad,
    _seed,
    _show,
    _sum_direction,
    _value,
    _vjp_rows,
)


class _Check:
    """One run of the Jacobian comparison for `func` at `inputs` (one real/imag variant)."""

    def __init__(
        self,
        func,
        inputs,
        opts: dict,
        *,
        forward: bool,
        complex_indices=(),
        test_imag: bool = False,
    ):
        self.func, self.inputs, self.opts = func, inputs, opts
        self.forward, self.complex_indices, self.test_imag = forward, complex_indices, test_imag
        self.diff_idx = [i for i, x in enumerate(inputs) if _requires_grad(x)]
        self.diff_inputs = [inputs[i] for i in self.diff_idx]
        self.func_out = _as_tuple(func(*inputs))
        self.positions = [p for p, o in enumerate(self.func_out) if _requires_grad(o)]
        self.outputs = [self.func_out[p] for p in self.positions]

    def fail(self, analytical, numerical, out_idx, in_idx, extra: str = ""):
        raise GradcheckError(
            _mismatch(
                analytical,
                numerical,
                out_idx,
                in_idx,
                self.complex_indices,
                self.test_imag,
                self.forward,
            )
            + extra
        )

    def numerical(self) -> list:
        """num[i][o]: (input numel, output numel) for differentiable input i, output o."""
        eps = self.opts["eps"]
        return [
            _numerical_jacobian(self.func, self.inputs, i, self.positions, eps)
            for i in self.diff_idx
        ]

    def analytical(self) -> list:
        """ana[i][o], like `numerical`."""
        if self.forward:
            return _analytical_forward(
                self.func,
                self.inputs,
                self.diff_idx,
                self.positions,
                self.opts["check_grad_dtypes"],
            )
        per_output = [
            _analytical_backward(
                o, self.diff_inputs, self.opts["nondet_tol"], self.opts["check_grad_dtypes"]
            )
            for o in self.outputs
        ]
        return [
            [per_output[o][i] for o in range(len(self.outputs))]
            for i in range(len(self.diff_inputs))
        ]

    def no_differentiable_outputs(self) -> None:
        """Without differentiable outputs, the inexact outputs must not change numerically."""
        positions = [p for p, o in enumerate(self.func_out) if _is_inexact_tensor(o)]
        eps = self.opts["eps"]
        for i in self.diff_idx:
            for jac in _numerical_jacobian(self.func, self.inputs, i, positions, eps):
                if np.any(jac != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")

    def slow(self) -> None:
        if not self.outputs:
            return self.no_differentiable_outputs()
        rtol, atol = self.opts["rtol"], self.opts["atol"]
        numerical, analytical = self.numerical(), self.analytical()
        if self.forward:
            pairs = ((o, i) for i in range(len(self.diff_idx)) for o in range(len(self.outputs)))
        else:
            pairs = ((o, i) for o in range(len(self.outputs)) for i in range(len(self.diff_idx)))
        for o, i in pairs:
            a, n = analytical[i][o], numerical[i][o]
            if not _allclose(a, n, rtol, atol):
                self.fail(a, n, o, i)

    def fast(self, rng) -> None:
        eps = self.opts["eps"]
        all_u = [_random_direction(rng, x) for x in self.diff_inputs]
        if not self.forward and not self.outputs:
            self._fast_no_outputs(all_u)
            return
        numerical_ju = [
            _numerical_jvp(self.func, self.inputs, i, u, self.positions, eps)
            for i, u in zip(self.diff_idx, all_u)
        ]
        if self.forward:
            self._fast_forward(all_u, numerical_ju)
        else:
            self._fast_backward(rng, all_u, numerical_ju)

    def _fast_no_outputs(self, all_u) -> None:
        """Fast mode without differentiable outputs: the numerical derivative must be zero."""
        for i, u in zip(self.diff_idx, all_u):
            positions = [p for p, o in enumerate(self.func_out) if _is_inexact_tensor(o)]
            for jv in _numerical_jvp(self.func, self.inputs, i, u, positions, self.opts["eps"]):
                if jv.size and np.max(np.abs(jv)) > self.opts["nondet_tol"]:
                    raise GradcheckError("Numerical gradient for function expected to be zero")

    def _fast_forward(self, all_u, numerical_ju) -> None:
        """Fast mode, forward: `J u` by forward AD against central differences."""
        rtol, atol = self.opts["rtol"], self.opts["atol"]
        for k, (i, u) in enumerate(zip(self.diff_idx, all_u)):
            analytical = _forward_tangents(
                self.func,
                self.inputs,
                self.diff_idx,
                {i: u},
                self.positions,
                self.opts["check_grad_dtypes"],
            )
            for o, (a, n) in enumerate(zip(analytical, numerical_ju[k])):
                if not _allclose(a, n, rtol, atol * _sum_direction(u)):
                    self.fail(a, n, o, k, self.slow_mode_report(k, o))

    def _fast_backward(self, rng, all_u, numerical_ju) -> None:
        """Fast mode, backward: `v^T J u` by backward against central differences."""
        rtol, atol = self.opts["rtol"], self.opts["atol"]
        all_v = [_random_direction(rng, o, real=False) for o in self.outputs]
        for o, (out, v) in enumerate(zip(self.outputs, all_v)):
            vjs = _analytical_backward(
                out, self.diff_inputs, self.opts["nondet_tol"], self.opts["check_grad_dtypes"], v=v
            )
            for k, (vj, u) in enumerate(zip(vjs, all_u)):
                a = _project(vj[:, 0], u)
                n = np.sum(v.reshape(-1) * numerical_ju[k][o])
                if not _allclose(a, n, rtol, atol * _sum_direction(u) * float(np.sum(v))):
                    self.fail(a, n, o, k, self.slow_mode_report(k, o))

    def slow_mode_report(self, i: int, o: int) -> str:
        """Full Jacobians for one pair, to tell a real error from fast mode's tolerance."""
        numerical = _numerical_jacobian(
            self.func, self.inputs, self.diff_idx[i], [self.positions[o]], self.opts["eps"]
        )[0]
        if self.forward:
            analytical = _analytical_forward(
                self.func, self.inputs, self.diff_idx, [self.positions[o]], False
            )[i][0]
        else:
            analytical = _analytical_backward(
                self.outputs[o], self.diff_inputs, float("inf"), False
            )[i]
        diff = np.max(np.abs(numerical - analytical)) if numerical.size else 0.0
        report = (
            "\nThe above quantities relating the numerical and analytical jacobians are computed "
            "\nin fast mode. Below, we recompute numerical and analytical jacobians in slow "
            f"mode:\n\nNumerical:\n {_show(numerical)}\nAnalytical:\n{_show(analytical)}\n\n"
            f"The max per-element difference (slow mode) is: {diff}.\n"
        )
        if _allclose(analytical, numerical, self.opts["rtol"], self.opts["atol"]):
            report += (
                "\nFast gradcheck failed but element-wise differences are small. This means that "
                "the test might've passed in slow_mode!\n\nIf so, call gradcheck/gradgradcheck "
                "with `fast_mode=False`."
            )
        return report


def _check_jacobians(func, inputs, opts: dict, rng) -> None:
    def run(check: _Check):
        if opts["fast_mode"]:
            check.fast(rng)
        else:
            check.slow()

    if opts["check_backward_ad"]:
        out = _as_tuple(func(*inputs))
        differentiable = [o for o in out if _requires_grad(o)]
        complex_outputs = [k for k, o in enumerate(differentiable) if _is_complex(o)]
        if any(_is_complex(o) for o in out):
            real_fn, imag_fn = _real_and_imag_outputs(func)
            run(
                _Check(
                    imag_fn,
                    inputs,
                    opts,
                    forward=False,
                    complex_indices=complex_outputs,
                    test_imag=True,
                )
            )
            run(_Check(real_fn, inputs, opts, forward=False, complex_indices=complex_outputs))
        else:
            run(_Check(func, inputs, opts, forward=False))
    if opts["check_forward_ad"]:
        complex_idx = [i for i, x in enumerate(inputs) if _is_complex(x)]
        if complex_idx:
            real_fn, imag_fn = _real_and_imag_inputs(func, complex_idx, inputs)
            diff_idx = [i for i, x in enumerate(inputs) if _requires_grad(x)]
            diff = [k for k, i in enumerate(diff_idx) if i in complex_idx]
            imag_inputs = _part(inputs, complex_idx, np.imag)
            real_inputs = _part(inputs, complex_idx, np.real)
            run(
                _Check(
                    imag_fn, imag_inputs, opts, forward=True, complex_indices=diff, test_imag=True
                )
            )
            run(_Check(real_fn, real_inputs, opts, forward=True, complex_indices=diff))
            if opts["check_undefined_grad"]:
                _check_undefined_forward(imag_fn, imag_inputs, rng)
                _check_undefined_forward(real_fn, real_inputs, rng)
        else:
            run(_Check(func, inputs, opts, forward=True))
            if opts["check_undefined_grad"]:
                _check_undefined_forward(func, inputs, rng)


# ---- the other checks -------------------------------------------------------------------------

_BATCHED_NOTE = (
    "gradcheck or gradgradcheck failed while testing batched gradient computation "
    "({how}). Batched gradients run the derivative rules under vmap: every rule they use must "
    "have a batching rule and must not convert its values to NumPy. Pass "
    "`{flag}=False` to skip this check."
)


def _batched_failure(out_idx, in_idx, got, expected, forward: bool) -> str:
    how = "forward-mode AD over a batch of tangents" if forward else "is_grads_batched=True"
    flag = "check_batched_forward_grad" if forward else "check_batched_grad"
    return (
        f"For output {out_idx} and input {in_idx}:\n\n"
        f"{_BATCHED_NOTE.format(how=how, flag=flag)}\n\nGot:\n{_show(got)}\n\n"
        f"Expected:\n{_show(expected)}"
    )


def _check_batched_grad(inputs: tuple, output: Tensor, out_idx: int, rng) -> None:
    """`grad(..., is_grads_batched=True)` over two cotangents equals two separate calls."""
    diff = [x for x in inputs if _requires_grad(x)]
    cts = [rng.standard_normal(output.shape).astype(output.dtype) for _ in range(2)]

    def one(ct):
        grads = _grad((output,), diff, (_seed(ct),), retain_graph=True)
        return [np.zeros(x.shape, x.dtype) if g is None else _value(g) for g, x in zip(grads, diff)]

    expected = [np.stack(pair) for pair in zip(*(one(ct) for ct in cts))]
    try:
        got = _grad(
            (output,), diff, (_seed(np.stack(cts)),), retain_graph=True, is_grads_batched=True
        )
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as ex:
        note = _BATCHED_NOTE.format(how="is_grads_batched=True", flag="check_batched_grad")
        raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{note}") from ex
    for i, (g, e, x) in enumerate(zip(got, expected, diff)):
        g = np.zeros((2,) + tuple(x.shape), x.dtype) if g is None else _value(g)
        if g.shape != e.shape or not np.allclose(g, e):
            raise GradcheckError(_batched_failure(out_idx, i, g, e, forward=False))


def _check_batched_forward_grad(func, inputs: tuple, rng) -> None:
    """vmap of a jvp over two tangents equals two separate jvps, for each input."""

    for index, current in enumerate(inputs):
        if not (_requires_grad(current) and _is_inexact_tensor(current)):
            continue

        def jvp(tangent, index=index, current=current):
            with forward_ad.dual_level():
                args = tuple(
                    forward_ad.make_dual(current.detach(), tangent)
                    if i == index
                    else (x.detach() if isinstance(x, Tensor) else x)
                    for i, x in enumerate(inputs)
                )
                result = []
                for out in _as_tuple(func(*args)):
                    if out is None:
                        continue
                    primal, t = forward_ad.unpack_dual(out)
                    result.append(
                        t
                        if t is not None
                        else np.zeros(np.shape(_value(primal)), _value(primal).dtype)
                    )
                return tuple(result)

        tangents = [rng.standard_normal(current.shape).astype(current.dtype) for _ in range(2)]
        expected = [
            np.stack([_value(a), _value(b)]) for a, b in zip(*(jvp(_seed(t)) for t in tangents))
        ]
        try:
            got = vmap(jvp)(_seed(np.stack(tangents)))
        except (RuntimeError, NotImplementedError, TypeError, ValueError) as ex:
            note = _BATCHED_NOTE.format(
                how="forward-mode AD over a batch of tangents", flag="check_batched_forward_grad"
            )
            raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{note}") from ex
        for o, (g, e) in enumerate(zip(got, expected)):
            g = _value(g)
            if g.shape != e.shape or not np.allclose(g, e):
                raise GradcheckError(_batched_failure(o, index, g, e, forward=True))


def _check_backward_mul_by_grad_output(outputs, inputs: tuple, masked: bool) -> None:
    """Zero cotangents must give zero gradients of the right dtype and shape."""
    diff = [x for x in inputs if _requires_grad(x)]
    if not diff:
        raise GradcheckError("no Tensors requiring grad found in input")
    zeros = tuple(_seed(np.zeros(o.shape, o.dtype)) for o in outputs)
    for g, x in zip(_grad(tuple(outputs), diff, zeros) if outputs else (), diff):
        if g is None:
            continue
        g = _value(g)
        if not (np.allclose(g, 0) if masked else np.all(g == 0)):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.shape != tuple(x.shape):
            raise GradcheckError("grad is incorrect size")


class _UndefinedGrad(Function):
    """The tensors, through a node whose backward gives undefined (None) gradients (torch's
    `_C._functions.UndefinedGrad`)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return None


def _check_undefined_backward(func, inputs: tuple) -> None:
    """Backward must treat an undefined (None) output gradient as zeros, as torch checks it:
    every differentiable output behind a node that gives it an undefined gradient, then (with
    several outputs) one output at a time; the input gradients must be undefined or zero."""
    diff = [x for x in inputs if _requires_grad(x)]
    if not diff:
        raise GradcheckError("no Tensors requiring grad found in input")

    def outputs() -> list:
        return [o for o in _as_tuple(func(*inputs)) if _requires_grad(o)]

    checks = [[_UndefinedGrad.apply(o) for o in outputs()]]
    if len(checks[0]) > 1:
        for k in range(len(checks[0])):
            outs = outputs()
            checks.append([_UndefinedGrad.apply(o) if j == k else o for j, o in enumerate(outs)])
    for outs in checks:
        zeros = tuple(_seed(np.zeros(o.shape, o.dtype)) for o in outs)
        try:
            grads = _grad(tuple(outs), diff, zeros)
        except (RuntimeError, TypeError, ValueError) as e:
            _warn_undefined()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. A backward (vjp) "
                "rule may get None (an undefined gradient, a symbolic zero) for an output and "
                f"must treat it as zeros; here backward failed with: {e}"
            ) from e
        if any(g is not None and np.any(_value(g) != 0) for g in grads):
            _warn_undefined()
            raise GradcheckError(
                "Expected all input grads to be undefined or zero when all output grads are "
                "undefined or zero."
            )


def _warn_undefined() -> None:
    warnings.warn(
        "Backwards compatibility: New undefined gradient support checking feature is enabled by "
        "default, but it may break existing callers of this function. If this is true for you, "
        'you can call this function with "check_undefined_grad=False" to disable the feature',
        stacklevel=5,
    )


def _check_undefined_forward(func, inputs: tuple, rng) -> None:
    """A zero tangent and no tangent (a symbolic zero) must give the same output tangents."""
    diff_idx = [i for i, x in enumerate(inputs) if _requires_grad(x)]
    tangents = {i: _random_direction(rng, inputs[i]) for i in diff_idx}
    out = _as_tuple(func(*inputs))
    positions = [p for p, o in enumerate(out) if _is_inexact_tensor(o)]
    for i in diff_idx:
        zero = dict(tangents)
        zero[i] = np.zeros(inputs[i].shape, inputs[i].dtype)
        with_zero = _forward_tangents(func, inputs, diff_idx, zero, positions, False)
        plain = inputs[:i] + (inputs[i].detach(),) + inputs[i + 1 :]
        try:
            absent = _forward_tangents(
                func, plain, [j for j in diff_idx if j != i], tangents, positions, False
            )
        except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
            raise GradcheckError(
                f"Expected forward-mode (jvp) rules to handle an undefined tangent (a symbolic "
                f"zero, None) for input {i}, but computing the tangents failed with: {e}"
            ) from e
        for o, (a, b) in enumerate(zip(with_zero, absent)):
            if not np.allclose(a, b):
                raise GradcheckError(
                    f"Mismatch in tangent values for output with index: {o} when input: "
                    f"{inputs[i]} has an undefined tangent value. Got: {_show(a)} but "
                    f"expected: {_show(b)}"
                )


# ---- the deprecated Jacobian functions ---------------------------------------------------------


class _PrivateAPIWarning(FutureWarning, UserWarning):
    """torch 2.x warns with a FutureWarning where torch 1.x warned with a UserWarning: this
    one is both (filters and checks written for either see it)."""


def _warn_private(name: str) -> None:
    warnings.warn(
        f"{name} was part of PyTorch's private API and not meant to be exposed. We are "
        "deprecating it and it will be removed in a future version of PyTorch. If you have a "
        "specific use for this or feature request for this to be a stable API, please file us "
        "an issue at https://github.com/pytorch/pytorch/issues/new",
        _PrivateAPIWarning,
        stacklevel=3,
    )


def get_numerical_jacobian(fn, inputs, target=None, eps: float = 1e-3, grad_out: float = 1.0):
    """Deprecated (torch's): central-difference Jacobians of the first output of
    `fn(inputs)` (`fn` takes the inputs as one tuple) with respect to each Tensor of `target`
    (default `inputs`) that requires grad, each of shape `(input numel, output numel)`.

    Example:
        >>> import warnings, autodiff as ad
        >>> x = ad.tensor([1.0, 2.0], dtype=ad.float64, requires_grad=True)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     (j,) = get_numerical_jacobian(lambda xs: xs[0] ** 2, (x,), eps=1e-6)
        >>> j.round(4)
        tensor([[2., 0.],
                [0., 4.]])
    """
    _warn_private("get_numerical_jacobian")
    if grad_out != 1.0:  # (kept for backward compatibility only)
        raise ValueError(
            "Expected grad_out to be 1.0. get_numerical_jacobian no longer supports values of "
            "grad_out != 1.0."
        )
    inputs = _as_tuple(inputs)
    targets = [t for t in _as_tuple(inputs if target is None else target) if _requires_grad(t)]
    result = []
    for t in targets:
        # (a target need not be an input: it is perturbed in place all the same)
        index = next((i for i, x in enumerate(inputs) if x is t), None)
        if index is None:
            args, index = (*inputs, t), len(inputs)
            result.append(_numerical_jacobian(lambda *xs: fn(xs[:-1]), args, index, [0], eps)[0])
        else:
            result.append(_numerical_jacobian(lambda *xs: fn(xs), inputs, index, [0], eps)[0])
    return tuple(Tensor._from(j) for j in result)


def get_analytical_jacobian(inputs, output, nondet_tol: float = 0.0, grad_out: float = 1.0):
    """Deprecated (torch's): the backward-mode Jacobians of `output` with respect to each
    Tensor of `inputs` that requires grad (`(input numel, output numel)` each), computed
    twice; returns `(jacobians, reentrant, correct_grad_sizes, correct_grad_types)`.

    Example:
        >>> import warnings, autodiff as ad
        >>> x = ad.tensor([1.0, 2.0], dtype=ad.float64, requires_grad=True)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     (j,), reentrant, sizes_ok, types_ok = get_analytical_jacobian((x,), x * 3)
        >>> j, reentrant, sizes_ok, types_ok
        (tensor([[3., 0.],
                [0., 3.]]), True, True, True)
    """
    _warn_private("get_analytical_jacobian")
    if grad_out != 1.0:
        raise ValueError(
            "Expected grad_out to be 1.0. get_analytical_jacobian no longer supports values of "
            "grad_out != 1.0."
        )
    if np.iscomplexobj(_value(output)):
        raise ValueError(
            "Expected output to be non-complex. get_analytical_jacobian no longer supports "
            "functions that return complex outputs."
        )
    diff = [x for x in _as_tuple(inputs) if _requires_grad(x)]

    def run() -> list:
        return _vjp_rows(output, diff, _one_hots(output.shape, output.dtype))

    first, second = run(), run()
    sizes_ok = all(
        g is None or g.shape == tuple(x.shape) for rows, x in zip(first, diff) for g in rows
    )
    types_ok = all(g is None or g.dtype == x.dtype for rows, x in zip(first, diff) for g in rows)
    jacobians = [_jacobian_from_rows(rows, x) for rows, x in zip(first, diff)]
    again = [_jacobian_from_rows(rows, x) for rows, x in zip(second, diff)]
    reentrant = all(
        a.size == 0 or float(np.max(np.abs(a - b))) <= nondet_tol for a, b in zip(jacobians, again)
    )
    return tuple(Tensor._from(j) for j in jacobians), reentrant, sizes_ok, types_ok


# ---- public API -------------------------------------------------------------------------------


def gradcheck(
    func: Callable,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check the derivatives of `func` at `inputs` against central differences.

    For every input Tensor that requires grad and every output that requires
    grad, the Jacobian from backward (`check_backward_ad`) and/or forward mode
    (`check_forward_ad`) must be `allclose` (`rtol`, `atol`) to the numerical one
    with step `eps`. Also checked: backward is deterministic up to `nondet_tol`;
    zero cotangents give zero gradients of the input's dtype and shape; undefined
    (symbolic-zero) cotangents and tangents are handled (`check_undefined_grad`);
    batched gradients (`is_grads_batched`) and batched tangents (vmap of forward
    mode) match unbatched ones when asked. Inputs should be float64/complex128
    (a warning says so otherwise). `masked` only concerns sparse tensors in torch
    and only relaxes the zero-gradient test here.

    Returns:
        True; on a failure raises `GradcheckError` (a RuntimeError), or returns False
        when `raise_exception=False`.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> x = ad.tensor([0.1, 0.7, 1.3], requires_grad=True)
        >>> gradcheck(lambda x: anp.sin(x) * x, (x,))
        True
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    if check_batched_grad and not check_backward_ad:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_backward_ad to be True"
        )
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
        )
    opts = dict(
        eps=eps,
        atol=atol,
        rtol=rtol,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        check_batched_forward_grad=check_batched_forward_grad,
        check_forward_ad=check_forward_ad,
        check_backward_ad=check_backward_ad,
        fast_mode=fast_mode,
        masked=bool(masked),
    )
    try:
        return _gradcheck(func, _as_tuple(inputs), opts)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func, inputs: tuple, opts: dict) -> bool:

    rng = np.random.default_rng(0)
    with enable_grad():
        _check_inputs(inputs)
        _check_jacobians(func, inputs, opts, rng)
        if opts["check_batched_forward_grad"]:
            _check_batched_forward_grad(func, inputs, rng)
        if not opts["check_backward_ad"]:
            return True
        outputs = [o for o in _as_tuple(func(*inputs)) if _requires_grad(o)]
        if opts["check_batched_grad"]:
            for i, o in enumerate(outputs):
                _check_batched_grad(inputs, o, i, rng)
        _check_backward_mul_by_grad_output(outputs, inputs, opts["masked"])
        if opts["check_undefined_grad"]:
            _check_undefined_backward(func, inputs)
    return True


def gradgradcheck(
    func: Callable,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second derivatives: `gradcheck` of `(inputs, grad_outputs) -> vjp`.

    The gradients of `func`'s differentiable outputs with respect to its inputs
    that require grad, contracted with `grad_outputs` (random in [-1, 1] when not
    given, non-contiguous with `gen_non_contig_grad_outputs`), are computed with
    `create_graph=True` and checked like any function by `gradcheck`: reverse over
    reverse (`check_rev_over_rev`) and/or forward over reverse (`check_fwd_over_rev`,
    which differentiates the functional `autodiff.vjp`, since forward-mode tangents
    do not flow through a recorded graph). An input no output depends on gets a
    constant zero gradient (torch leaves it out of the checked outputs).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([0.5, -1.5], requires_grad=True)
        >>> gradgradcheck(lambda x: x ** 3, (x,))
        True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_undefined_grad=True requires check_rev_over_rev to be True"
        )
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_rev_over_rev to be True"
        )

    inputs = _as_tuple(inputs)
    with enable_grad():
        out = _as_tuple(func(*inputs))
    positions = [p for p, o in enumerate(out) if _requires_grad(o)]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            _random_grad_output(rng, out[p], gen_non_contig_grad_outputs) for p in positions
        )
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_out = len(grad_outputs)
    diff_idx = [i for i, x in enumerate(inputs) if _requires_grad(x)]

    def vjp_of_func(*args):
        xs, cts = args[: len(args) - n_out], args[len(args) - n_out :]
        return _vjp(func, xs, diff_idx, cts)

    return gradcheck(
        vjp_of_func,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )


def _random_grad_output(rng, out: Tensor, non_contiguous: bool) -> Tensor:
    dtype = out.dtype if np.issubdtype(out.dtype, np.inexact) else np.dtype(np.float64)
    shape = tuple(out.shape)
    value = rng.uniform(-1, 1, shape)
    if np.issubdtype(dtype, np.complexfloating):
        value = value + 1j * rng.uniform(-1, 1, shape)
    value = value.astype(dtype)
    if non_contiguous and value.size > 1:
        holder = np.zeros(shape + (2,), dtype)
        holder[..., 0] = value
        value = holder[..., 0]
    return Tensor(value, requires_grad=True)  # np.asarray keeps a non-contiguous layout


def _vjp(func, xs: tuple, diff_idx: list, cts: tuple) -> tuple:
    """Gradients of `func(*xs)`'s differentiable outputs, contracted with `cts`, with respect to
    the inputs in `diff_idx`, as a differentiable computation. Level-0 Tensors go through
    `autograd.grad(create_graph=True)`; forward-mode duals (the fwd-over-rev check) through
    the functional `autodiff.vjp`, whose pullback forward mode can see."""

    diff = [xs[i] for i in diff_idx]
    if all(x._trace is EVAL_TRACE for x in diff):
        # as torch does: the checks may pass detached copies of the differentiable inputs
        diff = [x if x.requires_grad else x.requires_grad_() for x in diff]
        outputs = tuple(o for o in _as_tuple(func(*xs)) if _requires_grad(o))
        grads = _grad(outputs, diff, tuple(cts), create_graph=True)
        return tuple(zeros_like(x) if g is None else g for g, x in zip(grads, diff))

    def of_diff(*ds):
        args = list(xs)
        for i, d in zip(diff_idx, ds):
            args[i] = d
        outs = _as_tuple(func(*args))
        return tuple(o for o in outs if isinstance(o, Tensor) and o._trace is not EVAL_TRACE)

    # torch's convention for complex values (the functional vjp is JAX's: its conjugate)
    _, pullback = _functional_pullback(of_diff, diff, False, conjugate=True)
    return tuple(pullback(tuple(cts)))
