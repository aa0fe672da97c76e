"""autodiff.numpy.fft: `numpy.fft`'s names and semantics, differentiable and batchable.

Every transform is one of three linear primitives of `autodiff.ops.fft` (the complex
transform, the real one and its inverse) after padding or truncating the input to the
lengths `n` or `s` ask for; the multi-axis transforms are one primitive over all their axes,
hfft and ihfft are irfft and rfft of conjugates, fftshift and ifftshift are rolls, and
fftfreq and rfftfreq are constants (differentiable in the spacing `d`). Dtypes are NumPy's:
float32 and complex64 compute in single precision, integers in double. `numpy.fft.X`
called on a Tensor or tracer dispatches to `FUNCTIONS["X"]`.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from autodiff.core.dtypes import dtype_of
from autodiff.numpy._rearranging import roll
from autodiff.ops import fft as _fft
from autodiff.ops.elementwise import conj, divide, multiply
from autodiff.ops.index import getitem
from autodiff.ops.shape import _operand, concatenate
from autodiff.ops.structural import shape_of

_NORMS = ("backward", "ortho", "forward")


def _norm(norm) -> str:
    """`norm` checked, None as "backward" (NumPy's message for any other value)."""
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return norm


def _swap_direction(norm) -> str:
    """The norm of the opposite direction (hfft is an irfft with the forward scaling)."""
    return _fft.DUAL_NORM[_norm(norm)]


def _no_out(name: str, out) -> None:
    if out is not None:
        raise NotImplementedError(f"autodiff.numpy.fft.{name} does not support out=")


def _points(n) -> int:
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _resize(a, axis: int, n: int):
    """`a` truncated or padded with zeros to length `n` along `axis`, as NumPy's `n` does."""
    shape = shape_of(a)
    if shape[axis] > n:
        return getitem(a, (slice(None),) * axis + (slice(0, n),))
    if shape[axis] < n:
        zeros = np.zeros(shape[:axis] + (n - shape[axis],) + shape[axis + 1 :], dtype_of(a))
        return concatenate([a, zeros], axis)
    return a


def _axes(a, axes) -> list:
    ndim = len(shape_of(a))
    return [normalize_axis_index(ax, ndim) for ax in axes]


def _nd_args(a, s, axes, inverse_real: bool = False) -> tuple[list, list]:
    """NumPy's `s` and `axes` of the n-dimensional transforms: the lengths (None: the 1-d
    transform's default) and the axes, normalized, with NumPy's deprecation warnings."""
    shape = shape_of(a)
    shapeless = s is None
    if shapeless:
        s = list(shape) if axes is None else [shape[ax] for ax in axes]
    s = list(s)
    if axes is None:
        if not shapeless:
            warnings.warn(
                "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). "
                "To retain the current behaviour, pass a sequence [0, ..., k-1] to `axes` "
                "for an array of dimension k.",
                DeprecationWarning,
                stacklevel=3,
            )
        axes = list(range(-len(s), 0))
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    axes = _axes(a, axes)
    if inverse_real and shapeless:
        s[-1] = (shape[axes[-1]] - 1) * 2
    if None in s:
        warnings.warn(
            "Passing an array containing `None` values to `s` is deprecated in NumPy 2.0: "
            "pass the value matching the default of the 1-d transform's `n` instead.",
            DeprecationWarning,
            stacklevel=3,
        )
    s = [shape[ax] if n is not None and n == -1 else n for n, ax in zip(s, axes)]
    return s, axes


def _complex_transform(a, s: list, axes: list, norm, inverse: bool):
    """fftn or ifftn: each axis resized to its length in `s`, then one transform over all
    (axes named twice are transformed twice, in NumPy's order)."""
    norm = _norm(norm)
    if len(set(axes)) < len(axes):
        for n, ax in reversed(list(zip(s, axes))):
            a = _complex_transform(a, [n], [ax], norm, inverse)
        return a
    if not axes:
        return a
    for n, ax in zip(s, axes):
        a = _resize(a, ax, _points(shape_of(a)[ax] if n is None else n))
    return _fft.fft(a, tuple(axes), inverse, norm)


def _real_transform(a, s: list, axes: list, norm):
    """rfftn: the real transform over the last axis, the complex one over the others."""
    norm = _norm(norm)
    if dtype_of(a).kind == "c":
        raise TypeError(f"rfft takes real input, got {dtype_of(a)}: use fft for complex input")
    if not axes:
        raise ValueError("rfftn needs at least one axis to transform")
    if len(set(axes)) < len(axes):
        a = _real_transform(a, s[-1:], axes[-1:], norm)
        return _complex_transform(a, s[:-1], axes[:-1], norm, inverse=False)
    for n, ax in zip(s, axes):
        a = _resize(a, ax, _points(shape_of(a)[ax] if n is None else n))
    return _fft.rfft(a, tuple(axes), norm)


def _inverse_real_transform(a, s: list, axes: list, norm):
    """irfftn: the inverse complex transform over all axes but the last, then the inverse
    real one over it, `s[-1]` long (by default twice the half spectrum's length less one)."""
    norm = _norm(norm)
    if not axes:
        raise ValueError("irfftn needs at least one axis to transform")
    if len(set(axes)) < len(axes):
        for n, ax in zip(s[:-1], axes[:-1]):
            a = _complex_transform(a, [n], [ax], norm, inverse=True)
        return _inverse_real_transform(a, s[-1:], axes[-1:], norm)
    for n, ax in zip(s[:-1], axes[:-1]):
        a = _resize(a, ax, _points(shape_of(a)[ax] if n is None else n))
    last = axes[-1]
    n = _points((shape_of(a)[last] - 1) * 2 if s[-1] is None else s[-1])
    a = _resize(a, last, n // 2 + 1)
    return _fft.irfft(a, tuple(axes), n, norm)


# ---------------------------------------------------------------------------------------------
# One axis.


def fft(a, n=None, axis=-1, norm=None, out=None):
    """`numpy.fft.fft`: the discrete Fourier transform along `axis`, padded or truncated to
    `n` points; differentiable (complex cotangents follow JAX's convention).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> fft(np.array([1.0, 2.0, 3.0, 4.0]))
        array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
        >>> ad.grad(lambda x: anp.sum(anp.abs(fft(x)) ** 2))(np.array([1.0, 2.0]))
        array([4., 8.])
    """
    _no_out("fft", out)
    a = _operand(a)
    return _complex_transform(a, [n], _axes(a, [axis]), norm, inverse=False)


def ifft(a, n=None, axis=-1, norm=None, out=None):
    """`numpy.fft.ifft`: the inverse of `fft` along `axis`, from `n` points; differentiable.

    Example:
        >>> import numpy as np
        >>> ifft(np.array([10.0, -2 + 2j, -2.0, -2 - 2j])).real
        array([1., 2., 3., 4.])
    """
    _no_out("ifft", out)
    a = _operand(a)
    return _complex_transform(a, [n], _axes(a, [axis]), norm, inverse=True)


def rfft(a, n=None, axis=-1, norm=None, out=None):
    """`numpy.fft.rfft`: the transform of real input along `axis`, its `n // 2 + 1`
    non-negative frequency terms; differentiable.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> rfft(np.array([1.0, 2.0, 3.0, 4.0]))
        array([10.+0.j, -2.+2.j, -2.+0.j])
        >>> ad.grad(lambda x: anp.sum(anp.real(rfft(x, n=2))))(np.array([1.0, 2.0, 3.0]))
        array([2., 0., 0.])
    """
    _no_out("rfft", out)
    a = _operand(a)
    return _real_transform(a, [n], _axes(a, [axis]), norm)


def irfft(a, n=None, axis=-1, norm=None, out=None):
    """`numpy.fft.irfft`: the inverse of `rfft`, `n` real points along `axis` (by default
    `2 * (m - 1)` for `m` input terms); differentiable.

    Example:
        >>> import numpy as np
        >>> irfft(np.array([10.0, -2 + 2j, -2.0]))
        array([1., 2., 3., 4.])
    """
    _no_out("irfft", out)
    a = _operand(a)
    return _inverse_real_transform(a, [n], _axes(a, [axis]), norm)


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """`numpy.fft.hfft`: the (real) transform of a signal with Hermitian symmetry, given by
    its first half; differentiable.

    Example:
        >>> import numpy as np
        >>> hfft(np.array([1.0, 2.0, 3.0]))
        array([ 8., -2.,  0., -2.])
    """
    _no_out("hfft", out)
    a = _operand(a)
    return _inverse_real_transform(conj(a), [n], _axes(a, [axis]), _swap_direction(norm))


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """`numpy.fft.ihfft`: the inverse of `hfft`, the half spectrum of real input;
    differentiable.

    Example:
        >>> import numpy as np
        >>> ihfft(np.array([8.0, -2.0, 0.0, -2.0]))
        array([1.-0.j, 2.-0.j, 3.-0.j])
    """
    _no_out("ihfft", out)
    a = _operand(a)
    return conj(_real_transform(a, [n], _axes(a, [axis]), _swap_direction(norm)))


# ---------------------------------------------------------------------------------------------
# Several axes.


def fftn(a, s=None, axes=None, norm=None, out=None):
    """`numpy.fft.fftn`: the transform over `axes` (by default all), each resized to its
    length in `s`; differentiable.

    Example:
        >>> import numpy as np
        >>> fftn(np.ones((2, 3)))
        array([[6.+0.j, 0.+0.j, 0.+0.j],
               [0.+0.j, 0.+0.j, 0.+0.j]])
    """
    _no_out("fftn", out)
    a = _operand(a)
    return _complex_transform(a, *_nd_args(a, s, axes), norm, inverse=False)


def ifftn(a, s=None, axes=None, norm=None, out=None):
    """`numpy.fft.ifftn`: the inverse of `fftn`; differentiable.

    Example:
        >>> import numpy as np
        >>> ifftn(np.array([[6.0, 0.0, 0.0], [0.0, 0.0, 0.0]])).real
        array([[1., 1., 1.],
               [1., 1., 1.]])
    """
    _no_out("ifftn", out)
    a = _operand(a)
    return _complex_transform(a, *_nd_args(a, s, axes), norm, inverse=True)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """`numpy.fft.fft2`: `fftn` over the last two axes by default; differentiable.

    Example:
        >>> import numpy as np
        >>> fft2(np.eye(2))
        array([[2.+0.j, 0.+0.j],
               [0.+0.j, 2.+0.j]])
    """
    _no_out("fft2", out)
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """`numpy.fft.ifft2`: `ifftn` over the last two axes by default; differentiable.

    Example:
        >>> import numpy as np
        >>> ifft2(np.array([[2.0, 0.0], [0.0, 2.0]])).real
        array([[1., 0.],
               [0., 1.]])
    """
    _no_out("ifft2", out)
    return ifftn(a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None, out=None):
    """`numpy.fft.rfftn`: the transform of real input over `axes`, with the half spectrum
    of the last one; differentiable.

    Example:
        >>> import numpy as np
        >>> rfftn(np.ones((2, 4)))
        array([[8.+0.j, 0.+0.j, 0.+0.j],
               [0.+0.j, 0.+0.j, 0.+0.j]])
    """
    _no_out("rfftn", out)
    a = _operand(a)
    return _real_transform(a, *_nd_args(a, s, axes), norm)


def irfftn(a, s=None, axes=None, norm=None, out=None):
    """`numpy.fft.irfftn`: the inverse of `rfftn`, `s[-1]` real points along the last axis
    (by default `2 * (m - 1)`); differentiable.

    Example:
        >>> import numpy as np
        >>> irfftn(np.array([[8.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
        array([[1., 1., 1., 1.],
               [1., 1., 1., 1.]])
    """
    _no_out("irfftn", out)
    a = _operand(a)
    return _inverse_real_transform(a, *_nd_args(a, s, axes, inverse_real=True), norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """`numpy.fft.rfft2`: `rfftn` over the last two axes by default; differentiable.

    Example:
        >>> import numpy as np
        >>> rfft2(np.ones((2, 2)))
        array([[4.+0.j, 0.+0.j],
               [0.+0.j, 0.+0.j]])
    """
    _no_out("rfft2", out)
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """`numpy.fft.irfft2`: `irfftn` over the last two axes by default; differentiable.

    Example:
        >>> import numpy as np
        >>> irfft2(np.array([[4.0, 0.0], [0.0, 0.0]]))
        array([[1., 1.],
               [1., 1.]])
    """
    _no_out("irfft2", out)
    return irfftn(a, s, axes, norm)


# ---------------------------------------------------------------------------------------------
# Helpers: shifts and sample frequencies.


def _shifts(x, axes, sign: int):
    shape = shape_of(x)
    if axes is None:
        axes = tuple(range(len(shape)))
        return [sign * (n // 2) for n in shape], axes
    if isinstance(axes, (int, np.integer)):
        return sign * (shape[axes] // 2), axes
    return [sign * (shape[ax] // 2) for ax in axes], axes


def fftshift(x, axes=None):
    """`numpy.fft.fftshift`: the zero-frequency term moved to the middle of `axes` (by
    default all); differentiable.

    Example:
        >>> import numpy as np
        >>> fftshift(np.array([0.0, 1.0, 2.0, -2.0, -1.0]))
        array([-2., -1.,  0.,  1.,  2.])
    """
    x = _operand(x)
    return roll(x, *_shifts(x, axes, 1))


def ifftshift(x, axes=None):
    """`numpy.fft.ifftshift`: the inverse of `fftshift`; differentiable.

    Example:
        >>> import numpy as np
        >>> ifftshift(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]))
        array([ 0.,  1.,  2., -2., -1.])
    """
    x = _operand(x)
    return roll(x, *_shifts(x, axes, -1))


def _check_length(n) -> None:
    if not isinstance(n, (int, np.integer)):
        raise ValueError("n should be an integer")


def fftfreq(n, d=1.0, device=None):
    """`numpy.fft.fftfreq`: the sample frequencies of an `n`-point transform with sample
    spacing `d` (differentiable in `d`).

    Example:
        >>> import autodiff as ad
        >>> fftfreq(4, 0.5)
        array([ 0. ,  0.5, -1. , -0.5])
        >>> ad.jacfwd(lambda d: fftfreq(4, d))(0.5)
        array([-0., -1.,  2.,  1.])
    """
    _check_length(n)
    k = (n - 1) // 2 + 1
    results = np.empty(n, int, device=device)
    results[:k] = np.arange(0, k, dtype=int, device=device)
    results[k:] = np.arange(-(n // 2), 0, dtype=int, device=device)
    return multiply(results, divide(1.0, multiply(n, d)))


def rfftfreq(n, d=1.0, device=None):
    """`numpy.fft.rfftfreq`: the non-negative sample frequencies of an `n`-point `rfft`
    with sample spacing `d` (differentiable in `d`).

    Example:
        >>> rfftfreq(4, 0.5)
        array([0. , 0.5, 1. ])
    """
    _check_length(n)
    results = np.arange(0, n // 2 + 1, dtype=int, device=device)
    return multiply(results, divide(1.0, multiply(n, d)))


FUNCTIONS: dict = {
    f.__name__: f
    for f in (
        fft,
        ifft,
        rfft,
        irfft,
        hfft,
        ihfft,
        fftn,
        ifftn,
        fft2,
        ifft2,
        rfftn,
        irfftn,
        rfft2,
        irfft2,
        fftshift,
        ifftshift,
        fftfreq,
        rfftfreq,
    )
}

__all__ = sorted(FUNCTIONS)
