"""Op table: numpy.fft (fft, ifft, rfft, irfft, hfft, ihfft, the n-dimensional transforms,
fftshift, ifftshift, fftfreq, rfftfreq).

Each case is written once as `f(m, *arrays)` and run with `autodiff.numpy` and with numpy.
The table's arguments are real: complex inputs are built inside from two of them, and
complex outputs leave through `_re`, a real-linear function that sees both their real and
imaginary parts. Outputs are squared (the transforms are linear). Lengths `n` and `s`
smaller and larger than the input (truncation and padding), odd and even, every `norm`.
"""

from functools import partial

import numpy as np
import optable
from optable import dispatched_case, squared_case

_rng = np.random.default_rng(2028)  # (the shared stream stays as it was for the other files)
arr = partial(optable.arr, rng=_rng)


def _re(m, z):
    """A real view of complex `z` that depends on both parts (Python scalars keep float32)."""
    return m.real(z) - 0.7 * m.imag(z)


def _c(x, y):
    return x + 1j * y


CASES = [
    squared_case("fft", lambda m, x: _re(m, m.fft.fft(x)), arr(5)),
    squared_case(
        "fft_pad_ortho", lambda m, x: _re(m, m.fft.fft(x, n=7, axis=0, norm="ortho")), arr(4, 3)
    ),
    squared_case(
        "ifft_complex_truncate",
        lambda m, x, y: _re(m, m.fft.ifft(_c(x, y), n=3, norm="forward")),
        arr(2, 5),
        arr(2, 5),
    ),
    squared_case(
        "rfft_truncate_forward",
        lambda m, x: _re(m, m.fft.rfft(x, n=5, axis=0, norm="forward")),
        arr(6, 2),
    ),
    squared_case("rfft_pad_ortho", lambda m, x: _re(m, m.fft.rfft(x, n=8, norm="ortho")), arr(5)),
    squared_case(
        "irfft", lambda m, x, y: m.fft.irfft(_c(x, y)), arr(2, 4), arr(2, 4)
    ),  # n = 6, even: the Nyquist term
    squared_case(
        "irfft_odd_ortho",
        lambda m, x, y: m.fft.irfft(_c(x, y), n=5, axis=0, norm="ortho"),
        arr(4, 2),
        arr(4, 2),
    ),
    squared_case(
        "irfft_truncate_forward",
        lambda m, x, y: m.fft.irfft(_c(x, y), n=4, norm="forward"),
        arr(5),
        arr(5),
    ),
    squared_case("hfft", lambda m, x, y: m.fft.hfft(_c(x, y), n=5), arr(4), arr(4)),
    squared_case("ihfft", lambda m, x: _re(m, m.fft.ihfft(x, norm="ortho")), arr(6)),
    squared_case(
        "fftn_s_axes",
        lambda m, x, y: _re(m, m.fft.fftn(_c(x, y), s=(3, 4), axes=(2, 0))),
        arr(2, 2, 4),
        arr(2, 2, 4),
    ),
    squared_case("ifft2", lambda m, x: _re(m, m.fft.ifft2(x, norm="ortho")), arr(3, 4)),
    squared_case("rfftn_s", lambda m, x: _re(m, m.fft.rfftn(x, s=(2, 5), axes=(0, 1))), arr(3, 4)),
    squared_case(
        "irfftn_odd",
        lambda m, x, y: m.fft.irfftn(_c(x, y), s=(3, 5), axes=(1, 0), norm="forward"),
        arr(3, 2),
        arr(3, 2),
    ),
    squared_case(
        "rfft2_irfft2",
        lambda m, x: m.fft.irfft2(m.fft.rfft2(x) * 0.5 + 1.0, s=(3, 4)),
        arr(3, 4),
    ),
    squared_case(
        "fftshift_ifftshift",
        lambda m, x: m.fft.fftshift(x) * m.fft.ifftshift(x, axes=1),
        arr(3, 5),
    ),
    squared_case(
        "fftfreq_rfftfreq",
        lambda m, d, x: m.concatenate([m.fft.fftfreq(5, d) * x[:5], m.fft.rfftfreq(4, d) * x[5:]]),
        optable.pos(rng=_rng),
        arr(8),
    ),
    dispatched_case("numpy_fft_dispatch", lambda x: np.fft.fft(x, n=4).real, arr(2, 3)),
]
