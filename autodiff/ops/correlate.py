"""1-D correlation without conjugation, `correlate_p`: bilinear, its transposes correlations again.

out[k] = sum_j a[k + j - (m-1)] w[j] in "full" mode; "same" and "valid" are windows of it.
`autodiff.numpy`'s correlate (which conjugates a complex `v`) and convolve bind it.
"""

from __future__ import annotations

import numpy as np

from autodiff.core.abstract import ShapedArray, array_result_type
from autodiff.core.dtypes import dtype_of
from autodiff.core.primitive import Primitive, bind
from autodiff.ops import series
from autodiff.ops import shape as shp
from autodiff.ops import sparsity as sp
from autodiff.ops.elementwise import cotangent_of
from autodiff.ops.index import getitem
from autodiff.ops.products import einsum
from autodiff.ops.structural import apply_linear, batch_in_front, shape_of


def _correlate_window(n: int, m: int, mode: str) -> tuple[int, int]:
    """(start, length) of NumPy's `mode` result inside the full correlation of lengths n, m."""
    full = n + m - 1
    if mode == "full":
        return 0, full
    if mode == "same":
        length = max(n, m)
        return ((full - length) // 2 if n >= m else (full - length + 1) // 2), length
    return min(n, m) - 1, max(n, m) - min(n, m) + 1


def _correlate_impl(a, w, *, mode):
    return np.correlate(a, np.conj(w) if np.iscomplexobj(w) else w, mode)


def _correlate_jvp(primals, tangents, *, out, mode):
    a, w = primals
    ta, tw = tangents
    d_a = apply_linear(correlate_1d, ta, w, mode)
    d_w = None if tw is None else correlate_1d(a, tw, mode)
    return d_w if d_a is None else d_a if d_w is None else d_a + d_w


def _correlate_vjp(g, a, w, *, out, mode, needs=(True, True)):
    n, m = shape_of(a)[0], shape_of(w)[0]
    start, length = _correlate_window(n, m, mode)
    full = n + m - 1
    if length != full:  # the full-mode cotangent: zeros outside the window
        dt = dtype_of(g)
        g = shp.concatenate([np.zeros(start, dt), g, np.zeros(full - start - length, dt)], 0)
    ct_a = ct_w = None
    if needs[0]:  # a full convolution of g with w, at a's positions
        ct_a = getitem(correlate_1d(g, shp.flip(w, 0), "full"), slice(m - 1, m - 1 + n))
    if needs[1]:
        ct_w = getitem(correlate_1d(a, g, "full"), slice(n - 1, n - 1 + m))
    return tuple(cotangent_of(ct, x) for ct, x in ((ct_a, a), (ct_w, w)))


def _correlate_batch(values, dims, *, mode):
    # Every example at once: windows of the zero-padded `a`, contracted with `w`.
    a, w = batch_in_front(values, dims)
    (size, n), m = shape_of(a), shape_of(w)[1]
    zeros = np.zeros((size, m - 1), dtype_of(a))
    padded = shp.concatenate([zeros, a, zeros], 1)
    windows = getitem(padded, (slice(None), np.arange(n + m - 1)[:, None] + np.arange(m)))
    full = einsum("bkj,bj->bk", windows, w)
    start, length = _correlate_window(n, m, mode)
    return getitem(full, (slice(None), slice(start, start + length))), 0


correlate_p = Primitive("correlate")
correlate_p.impl = _correlate_impl
correlate_p.abstract_eval = lambda a, w, *, mode: ShapedArray(
    (_correlate_window(a.shape[0], w.shape[0], mode)[1],), array_result_type(a, w)
)
correlate_p.jvp = _correlate_jvp
correlate_p.vjp = _correlate_vjp
correlate_p.vjp_takes_needs = True
correlate_p.batch = _correlate_batch
correlate_p.taylor = series.multilinear_rule(correlate_p)


def _correlate_parts(ctx, ins, mode: str) -> list:
    """The patterns of out[k] through a and through w: the pairs (a[i], w[j]) of its sum, but
    those with a known zero factor."""
    (n,), (m,) = ins[0].shape, ins[1].shape
    start, length = _correlate_window(n, m, mode)
    k, j = np.divmod(np.arange(length * m), m)
    i = k + start + j - (m - 1)
    valid = (i >= 0) & (i < n)
    k, j, i = k[valid], j[valid], i[valid]
    parts = []
    for p, own, other, other_at in ((ins[0], i, ins[1], j), (ins[1], j, ins[0], i)):
        keep = slice(None) if other.value is None else np.asarray(other.value)[other_at] != 0
        parts.append(sp.combine([(p, k[keep], own[keep])], (length,), ctx.n))
    return parts


correlate_p.sparsity = sp.SparsityRule(
    lambda ctx, ins, *, mode: [
        sp.union(_correlate_parts(ctx, ins, mode), ctx.out_avals[0].shape, ctx.n)
    ],
    lambda ctx, ins, outs, *, mode: [tuple(_correlate_parts(ctx, ins, mode))],
    exact=True,
)


def correlate_1d(a, w, mode: str):
    """`numpy.correlate(a, w, mode)` without conjugating `w` (so bilinear); `mode` is "valid",
    "same" or "full".

    Example:
        >>> import numpy as np
        >>> correlate_1d(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1j]), "valid")
        array([1.+2.j, 2.+3.j])
    """
    return bind(correlate_p, a, w, mode=mode)
