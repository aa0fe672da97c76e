"""Histograms: histogram, histogram_bin_edges, histogram2d and histogramdd, as NumPy computes
them.

The counts are constants (which bin a value falls in does not change under a small
perturbation); the sums of `weights`, the densities and the bin edges computed from the
data's range (`linspace` between its min and max, as in JAX) are differentiable.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from autodiff.core.dtypes import dtype_of
from autodiff.core.tensor import Tensor
from autodiff.numpy._arguments import concrete_values
from autodiff.numpy._creation import linspace
from autodiff.numpy._cumulative import cumsum
from autodiff.numpy._sequences import diff
from autodiff.numpy._sorting import argsort, searchsorted
from autodiff.ops import reduce as red
from autodiff.ops import shape as shp
from autodiff.ops.elementwise import astype, where
from autodiff.ops.index import getitem
from autodiff.ops.sorting import scatter_add_along, take_along
from autodiff.ops.structural import ndim_of, shape_of

_operand = shp._operand  # arrays, Tensors, and lists holding Tensors as one differentiable value
_BLOCK = 65536  # NumPy's chunk of values counted at a time (its sums add chunk by chunk)


def _known(x):
    """The values of `x` where they are known, else None."""
    if not isinstance(x, Tensor):
        return np.asarray(x)
    try:
        return np.asarray(x.primal())
    except TypeError:
        return None


def _outer_edges(a, range_):
    """NumPy's `_get_outer_edges`: the range, or the data's min and max (an empty range
    widened by 0.5 on each side)."""
    if range_ is not None:
        first, last = range_
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif shape_of(a)[0] == 0:
        first, last = 0, 1
    else:
        first, last = red.min(a), red.max(a)
        known = _known(first), _known(last)
        if known[0] is not None and not (np.isfinite(known[0]) and np.isfinite(known[1])):
            raise ValueError(f"autodetected range of [{known[0]}, {known[1]}] is not finite")
    same = first == last
    if isinstance(same, (bool, np.bool_)):
        if same:
            first, last = first - 0.5, last + 0.5
    else:
        first, last = where(same, first - 0.5, first), where(same, last + 0.5, last)
    return first, last


def _bin_edges(a, bins, range_, weights):
    """(edges, whether they are evenly spaced), as NumPy's `_get_bin_edges`."""
    if isinstance(bins, str):
        if weights is not None:
            raise TypeError(
                "Automated estimation of the number of bins is not supported for weighted data"
            )
        values = concrete_values(a, "histogram")
        bins = np.histogram_bin_edges(values, bins, range_).shape[0] - 1
    if np.ndim(bins) == 0:
        try:
            n = operator.index(bins)
        except TypeError as e:
            raise TypeError("`bins` must be an integer, a string, or an array") from e
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first, last = _outer_edges(a, range_)
        bin_type = np.result_type(
            *(dtype_of(v) if isinstance(v, Tensor) else v for v in (first, last)), dtype_of(a)
        )
        if np.issubdtype(bin_type, np.integer):
            bin_type = np.result_type(bin_type, float)
        edges = linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
        known = _known(edges)
        if known is not None and np.any(known[:-1] >= known[1:]):
            raise ValueError(f"Too many bins for data range. Cannot create {n} finite-sized bins.")
        return edges, True
    if np.ndim(bins) == 1:
        edges = _operand(bins)
        known = _known(edges)
        if known is not None and np.any(known[:-1] > known[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return edges, False
    raise ValueError("`bins` must be 1d, when an array")


def _bins_of(a, edges):
    """The bin of each value (right edge inclusive), n_bins for those outside (constants)."""
    n = shape_of(edges)[0] - 1
    idx = searchsorted(edges, a, side="right") - 1
    last = getitem(edges, -1)
    idx = where(a == last, n - 1, idx)
    inside = (a >= getitem(edges, 0)) & (a <= last)
    return where(inside, idx, n)


def _sorted_sums(a, weights, edges):
    """NumPy's sums for uneven bins: differences of the cumulative sums of the weights sorted
    by value, at the edges (chunk by chunk)."""
    total = None
    for i in range(0, shape_of(a)[0], _BLOCK):
        tmp_a = getitem(a, slice(i, i + _BLOCK))
        order = argsort(tmp_a)
        sa = take_along(tmp_a, order, 0)
        sw = take_along(getitem(weights, slice(i, i + _BLOCK)), order, 0)
        cw = shp.concatenate([np.zeros(1, dtype_of(sw)), cumsum(sw)])
        right = getitem(edges, slice(-1, None))
        bin_index = shp.concatenate(
            [
                searchsorted(sa, getitem(edges, slice(None, -1)), "left"),
                searchsorted(sa, right, "right"),
            ]
        )
        part = getitem(cw, bin_index)
        total = part if total is None else total + part
    return diff(total)


def histogram(a, bins=10, range=None, density=None, weights=None):
    """`numpy.histogram`: the counts (constants) or weight sums of the flattened `a` in each
    bin, and the bin edges; differentiable in `weights` and, where the edges come from the
    data's range, in `a` through them (and the densities through both).

    Example:
        >>> import numpy as np, autodiff as ad
        >>> histogram(np.array([1.0, 2.0, 1.0]), bins=[0, 1, 2, 3])
        (array([0, 2, 1]), array([0, 1, 2, 3]))
        >>> ad.grad(lambda w: histogram(np.array([0.2, 0.7, 0.9]), 2, weights=w)[0][1])(np.ones(3))
        array([0., 1., 1.])
    """
    a = shp.ravel(_operand(a))
    if weights is not None:
        weights = _operand(weights)
        weights = shp.ravel(weights)
        if shape_of(weights) != shape_of(a):
            raise ValueError("weights should have the same shape as a.")
    edges, uniform = _bin_edges(a, bins, range, weights)
    n = shape_of(edges)[0] - 1
    ntype = np.dtype(np.intp) if weights is None else np.dtype(dtype_of(weights))
    if uniform or weights is None:
        hist = None
        for i in builtins.range(0, shape_of(a)[0], _BLOCK):
            tmp_a = astype(getitem(a, slice(i, i + _BLOCK)), dtype_of(edges))
            idx = _bins_of(tmp_a, edges)
            if weights is None:
                values = np.ones(shape_of(tmp_a), ntype)
            else:
                values = getitem(weights, slice(i, i + _BLOCK))
            part = getitem(scatter_add_along(values, idx, 0, (n + 1,)), slice(0, n))
            hist = part if hist is None else hist + part
        if hist is None:
            hist = np.zeros(n, ntype)
    else:
        hist = _sorted_sums(a, weights, edges)
    if density:
        db = astype(diff(edges), float)
        return hist / db / red.sum(hist), edges
    return hist, edges


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """`numpy.histogram_bin_edges`: the edges `histogram` uses, differentiable in `a` where
    they come from its range.

    Example:
        >>> import numpy as np
        >>> histogram_bin_edges(np.array([0.0, 1.0, 4.0]), 2)
        array([0., 2., 4.])
    """
    return _bin_edges(shp.ravel(_operand(a)), bins, range, weights)[0]


def _per_dimension(bins, range_, dims: int) -> tuple:
    """histogramdd's `bins` and `range` as one entry per dimension (NumPy's checks)."""
    try:
        if len(bins) != dims:
            raise ValueError(
                "The dimension of bins must be equal to the dimension of the sample x."
            )
    except TypeError:
        bins = dims * [bins]
    if range_ is None:
        range_ = (None,) * dims
    elif len(range_) != dims:
        raise ValueError("range argument must have one entry per dimension")
    return bins, range_


def _dimension_edges(column, bins_i, range_i, i: int):
    """The bin edges of dimension `i`: `bins_i` bins over the range of `column` (or
    `range_i`), or the edges `bins_i` themselves."""
    if np.ndim(bins_i) == 0:
        if bins_i < 1:
            raise ValueError(f"`bins[{i}]` must be positive, when an integer")
        first, last = _outer_edges(column, range_i)
        try:
            n = operator.index(bins_i)
        except TypeError as e:
            raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
        return linspace(first, last, n + 1)
    if np.ndim(bins_i) == 1:
        e_i = _operand(bins_i)
        known = _known(e_i)
        if known is not None and np.any(known[:-1] > known[1:]):
            raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
        return e_i
    raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")


def _density(hist, edges: list):
    """A histogram's counts divided by their total and by each bin's volume."""
    s = red.sum(hist)
    dims = len(edges)
    for i in builtins.range(dims):
        shape = [1] * dims
        shape[i] = shape_of(edges[i])[0] - 1
        hist = hist / shp.reshape(diff(edges[i]), tuple(shape))
    return hist / s


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """`numpy.histogramdd`: counts (constants, as floats) or weight sums over a grid of bins,
    and the edges of each dimension; differentiable as `histogram`.

    Example:
        >>> import numpy as np
        >>> h, edges = histogramdd(np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]]), bins=2)
        >>> h
        array([[1., 0.],
               [1., 1.]])
    """
    listed = isinstance(sample, (list, tuple))  # (a sequence of 1-d arrays, one per dimension)
    sample = _operand(sample)
    if listed or ndim_of(sample) != 2:
        sample = shp.transpose(shp.atleast_2d(sample))
    n_points, dims = shape_of(sample)
    if weights is not None:
        weights = _operand(weights)
    bins, range = _per_dimension(bins, range, dims)
    edges, nbin, flat = [], [], None
    for i in builtins.range(dims):
        column = getitem(sample, (slice(None), i))
        e_i = _dimension_edges(column, bins[i], range[i], i)
        edges.append(e_i)
        nbin.append(shape_of(e_i)[0] + 1)  # an outlier bin at each end
        count = searchsorted(e_i, column, side="right")
        count = where(column == getitem(e_i, -1), count - 1, count)
        flat = count if flat is None else flat * nbin[-1] + count
    total = int(np.prod(nbin))
    values = np.ones(n_points) if weights is None else astype(weights, np.float64)
    hist = scatter_add_along(values, flat, 0, (total,))
    hist = shp.reshape(hist, tuple(nbin))
    hist = getitem(hist, dims * (slice(1, -1),))
    return (_density(hist, edges) if density else hist), edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """`numpy.histogram2d`: `histogramdd` of the points (x, y), with the edges of x and y.

    Example:
        >>> import numpy as np
        >>> histogram2d(np.array([0.0, 1.0]), np.array([0.0, 1.0]), bins=2)[0]
        array([[1., 0.],
               [0., 1.]])
    """
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        xedges = yedges = _operand(bins)
        bins = [xedges, yedges]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


FUNCTIONS = {f.__name__: f for f in (histogram, histogram_bin_edges, histogramdd, histogram2d)}
