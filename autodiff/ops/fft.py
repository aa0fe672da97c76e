"""The discrete Fourier transforms: three linear primitives, each transposed by one of the three.

- `fft_p`: the complex transform over `axes`, forward or `inverse`, scaled as `norm` says
  ("backward": the inverse divides by N; "ortho": both by sqrt(N); "forward": the forward
  divides by N). The DFT matrix is symmetric, so the transpose of each is itself.
- `rfft_p`: the forward transform of real data over `axes`, keeping the half spectrum
  (n // 2 + 1 terms) of the last axis; `irfft_p`: its inverse, a real result of length `n`
  along the last axis. Each one's transpose is the other's, with the Hermitian weights:
  the half spectrum stands for the full one, every term but the zero-frequency one (and the
  Nyquist one, for even n) twice. The transpose of rfft is `irfft(conj(ct) / w)` and that
  of irfft `conj(w * rfft(ct))` (w: those multiplicities), each at the dual `norm`, which
  turns the inverse's scaling into the forward's.

Rules follow the bilinear (JAX) convention for complex values: each vjp is the plain
transpose of its jvp (see `elementwise.conj_complex`). The functions with NumPy's
signatures (`n` and `s` padding or truncating, axes, dtypes, the composites hfft, fft2,
fftshift, ...) are in `autodiff.numpy.fft`; the ones here take checked parameters: axes
non-negative and distinct, every length at least 1, the input already of the length it is
transformed at (for irfft, `n // 2 + 1` along the last axis).
"""

from __future__ import annotations

import numpy as np

from autodiff.core.abstract import ShapedArray
from autodiff.core.dtypes import dtype_of
from autodiff.core.primitive import Primitive, bind
from autodiff.ops import series
from autodiff.ops.elementwise import astype, conj, multiply
from autodiff.ops.sparsity import along_axes
from autodiff.ops.structural import apply_linear, axis_in_batched, ndim_of, shape_of

# The norm whose forward scaling is a norm's inverse scaling (and the other way round).
DUAL_NORM = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype NumPy's transforms compute a `dtype` input in (float32 -> complex64)."""
    return np.result_type(dtype, 1j)


def real_dtype(dtype) -> np.dtype:
    """The real dtype of the same precision (complex64 -> float32; int64 -> float64)."""
    return np.finfo(complex_dtype(dtype)).dtype


def _irfft_dtype(dtype, axes: tuple) -> np.dtype:
    """NumPy's irfft result dtype: the input's real precision (float16 stays float16), but
    irfftn's inverse complex transforms over the other axes first compute in complex."""
    dtype = np.dtype(dtype)
    if len(axes) > 1 or dtype.kind == "c":
        return real_dtype(dtype)
    return np.result_type(dtype, 1.0)


def _resized(shape: tuple, axis: int, n: int) -> tuple:
    return shape[:axis] + (n,) + shape[axis + 1 :]


def _axes_batch_rule(prim):
    """The batch axis stays where it is; the transformed axes shift past it."""

    def rule(values, dims, *, axes, **params):
        d = dims[0]
        moved = tuple(axis_in_batched(a, d) for a in axes)
        return bind(prim, values[0], axes=moved, **params), d

    return rule


def _hermitian_weights(n: int, axis: int, ndim: int, dtype, twice: bool) -> np.ndarray:
    """How many times each term of a half spectrum of length `n // 2 + 1` stands in the full
    one (`twice`: 1, 2, ..., 2 and 1 for an even n's Nyquist term) or its reciprocal, shaped
    to broadcast along `axis` of an `ndim`-axis array (trailing axes only, so that a batch
    axis in front broadcasts too)."""
    w = np.full(n // 2 + 1, 2.0 if twice else 0.5, dtype=dtype)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w.reshape((n // 2 + 1,) + (1,) * (ndim - 1 - axis))


# ---------------------------------------------------------------------------------------------
# fft: complex to complex. `np.fft` is looked up at call time: NumPy imports it lazily, and
# `import autodiff` need not load it.


def _fft_impl(x, *, axes, inverse, norm):
    transform = np.fft.ifftn if inverse else np.fft.fftn
    return transform(x, axes=axes, norm=norm)


def _fft(x, axes: tuple, inverse: bool, norm: str):
    return bind(fft_p, x, axes=axes, inverse=inverse, norm=norm)


def _fft_vjp(g, x, *, out, axes, inverse, norm):
    return (astype(_fft(g, axes, inverse, norm), dtype_of(x)),)


# Each output element depends on the input's elements along the transformed axes.
FFT_AXES = along_axes(lambda shape, *, axes, **params: axes)

fft_p = Primitive("fft")
fft_p.sparsity = FFT_AXES
fft_p.saves_inputs = False  # its vjp reads only shapes and dtypes
fft_p.saves_output = False
fft_p.impl = _fft_impl
fft_p.abstract_eval = lambda x, *, axes, inverse, norm: ShapedArray(x.shape, complex_dtype(x.dtype))
fft_p.jvp = lambda primals, tangents, *, out, axes, inverse, norm: apply_linear(
    _fft, tangents[0], axes, inverse, norm
)
fft_p.vjp = _fft_vjp
fft_p.batch = _axes_batch_rule(fft_p)
fft_p.taylor = series.linear_rule(fft_p)


# ---------------------------------------------------------------------------------------------
# rfft and irfft: real to half spectrum and back, each the other's transpose.


def _rfft_impl(x, *, axes, norm):
    return np.fft.rfftn(x, axes=axes, norm=norm)


def _rfft_abstract_eval(x, *, axes, norm):
    if x.dtype.kind == "c":
        raise TypeError(f"rfft takes real input, got {x.dtype}")
    n = x.shape[axes[-1]]
    return ShapedArray(_resized(x.shape, axes[-1], n // 2 + 1), complex_dtype(x.dtype))


def _irfft_impl(x, *, axes, n, norm):
    s = [x.shape[a] for a in axes[:-1]] + [n]
    return np.fft.irfftn(x, s=s, axes=axes, norm=norm)


def _irfft_abstract_eval(x, *, axes, n, norm):
    return ShapedArray(_resized(x.shape, axes[-1], n), _irfft_dtype(x.dtype, axes))


def _rfft(x, axes: tuple, norm: str):
    return bind(rfft_p, x, axes=axes, norm=norm)


def _irfft(x, axes: tuple, n: int, norm: str):
    return bind(irfft_p, x, axes=axes, n=n, norm=norm)


def _rfft_vjp(g, x, *, out, axes, norm):
    n = shape_of(x)[axes[-1]]
    w = _hermitian_weights(n, axes[-1], ndim_of(g), real_dtype(dtype_of(g)), twice=False)
    return (astype(_irfft(multiply(conj(g), w), axes, n, DUAL_NORM[norm]), dtype_of(x)),)


def _irfft_vjp(g, x, *, out, axes, n, norm):
    spectrum = _rfft(g, axes, DUAL_NORM[norm])
    w = _hermitian_weights(n, axes[-1], ndim_of(g), real_dtype(dtype_of(g)), twice=True)
    return (astype(conj(multiply(spectrum, w)), dtype_of(x)),)


rfft_p = Primitive("rfft")
rfft_p.sparsity = FFT_AXES
rfft_p.saves_inputs = False  # its vjp reads only shapes and dtypes
rfft_p.saves_output = False
rfft_p.impl = _rfft_impl
rfft_p.abstract_eval = _rfft_abstract_eval
rfft_p.jvp = lambda primals, tangents, *, out, axes, norm: apply_linear(
    _rfft, tangents[0], axes, norm
)
rfft_p.vjp = _rfft_vjp
rfft_p.batch = _axes_batch_rule(rfft_p)
rfft_p.taylor = series.linear_rule(rfft_p)

irfft_p = Primitive("irfft")
irfft_p.sparsity = FFT_AXES
irfft_p.saves_inputs = False  # its vjp reads only shapes and dtypes
irfft_p.saves_output = False
irfft_p.impl = _irfft_impl
irfft_p.abstract_eval = _irfft_abstract_eval
irfft_p.jvp = lambda primals, tangents, *, out, axes, n, norm: apply_linear(
    _irfft, tangents[0], axes, n, norm
)
irfft_p.vjp = _irfft_vjp
irfft_p.batch = _axes_batch_rule(irfft_p)
irfft_p.taylor = series.linear_rule(irfft_p)


# ---------------------------------------------------------------------------------------------
# The transforms on checked parameters (autodiff.numpy.fft adds NumPy's argument handling).


def fft(x, axes: tuple, inverse: bool = False, norm: str = "backward"):
    """The complex DFT of `x` over `axes` (distinct, non-negative), or its inverse. Real
    input goes in as it is: NumPy casts it to complex inside, as `numpy.fft.fft` does.

    Example:
        >>> import numpy as np
        >>> fft(np.array([1.0, 2.0, 3.0, 4.0]), (0,))
        array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    return _fft(x, tuple(axes), inverse, norm)


def rfft(x, axes: tuple, norm: str = "backward"):
    """The DFT of real `x` over `axes`, with the half spectrum of the last one.

    Example:
        >>> import numpy as np
        >>> rfft(np.array([1.0, 2.0, 3.0, 4.0]), (0,))
        array([10.+0.j, -2.+2.j, -2.+0.j])
    """
    if dtype_of(x).kind == "c":
        raise TypeError(f"rfft takes real input, got {dtype_of(x)}")
    return _rfft(x, tuple(axes), norm)


def irfft(x, axes: tuple, n: int, norm: str = "backward"):
    """The inverse of `rfft` over `axes`: `n` real values along the last axis, from `x`'s
    `n // 2 + 1` there.

    Example:
        >>> import numpy as np
        >>> irfft(np.array([10.0, -2 + 2j, -2.0]), (0,), 4)
        array([1., 2., 3., 4.])
    """
    return _irfft(x, tuple(axes), n, norm)
