"""`autodiff.lax`: JAX's `jax.lax` API, for code ported from JAX (`import autodiff.lax as lax`).

JAX's names, signatures and semantics: the control flow (`cond`, `scan`, `while_loop`, ...),
the elementwise and structural operations, reductions, sorting, `dot_general`,
`conv_general_dilated`, `reduce_window`, `gather` / `scatter` with XLA's dimension numbers,
and `lax.linalg`. Every function is a composite of autodiff's operations, so it
differentiates, batches under `vmap` and stages under `jit` like them.
"""

from autodiff.control import (
    associative_scan,
    cond,
    fori_loop,
    map,
    scan,
    switch,
    while_loop,
)
from autodiff.implicit import custom_linear_solve, custom_root
from autodiff.lax import linalg
from autodiff.lax._basic import (
    add,
    argmax,
    argmin,
    batch_matmul,
    broadcast,
    broadcast_in_dim,
    broadcasted_iota,
    clamp,
    concatenate,
    convert_element_type,
    cumlogsumexp,
    cummax,
    cummin,
    cumprod,
    cumsum,
    div,
    dot,
    dot_general,
    empty,
    expand_dims,
    full,
    full_like,
    index_in_dim,
    integer_pow,
    iota,
    logistic,
    max,
    min,
    mul,
    neg,
    pad,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    rem,
    reshape,
    rev,
    rsqrt,
    select,
    select_n,
    slice,
    slice_in_dim,
    sort,
    sort_key_val,
    squeeze,
    sub,
    top_k,
    transpose,
)
from autodiff.lax._gather import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    scatter,
    scatter_add,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_sub,
)
from autodiff.lax._windows import (
    ConvDimensionNumbers,
    conv,
    conv_dimension_numbers,
    conv_general_dilated,
    padtype_to_pads,
    reduce,
    reduce_window,
)
from autodiff.numpy import (
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cbrt,
    ceil,
    conj,
    cos,
    cosh,
    exp,
    exp2,
    expm1,
    floor,
    imag,
    log,
    log1p,
    real,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    tan,
    tanh,
)
from autodiff.numpy import bitwise_and as and_
from autodiff.numpy import bitwise_not as not_
from autodiff.numpy import bitwise_or as or_
from autodiff.numpy import bitwise_xor as xor
from autodiff.numpy import equal as eq
from autodiff.numpy import greater as gt
from autodiff.numpy import greater_equal as ge
from autodiff.numpy import isfinite as is_finite
from autodiff.numpy import less as lt
from autodiff.numpy import less_equal as le
from autodiff.numpy import not_equal as ne
from autodiff.numpy import power as pow
from autodiff.ops.elementwise import stop_gradient
from autodiff.ops.index import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
)
from autodiff.scipy.special import digamma, erf, erfc
from autodiff.scipy.special import erfinv as erf_inv
from autodiff.scipy.special import gammaln as lgamma

__all__ = sorted(name for name in globals() if not name.startswith("_"))
