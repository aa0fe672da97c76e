"""Products: matmul, dot, tensordot, einsum, inner, outer, vdot.

Three product primitives:

- `matmul_p` (impl `np.matmul`) is the hot path of `@` and `dot`: its vjp is two
  matmuls with a matrix transpose (plus `sum_to_shape` for broadcast batch dims
  and reshapes for 1-D operands), so a 2-D product costs two matmuls backward.
- `einsum_p` (impl `np.einsum`, canonical explicit subscripts as a param) is the
  general contraction: the cotangent of an operand is the einsum of the output
  cotangent with the other operands, producing that operand's subscripts.
- `dot_p` (impl `np.dot`) covers `dot` and `inner` of N-D arrays and of mixed
  dtypes, where NumPy's summation order differs from matmul's.

`tensordot`, `inner`, `outer` and `vdot` are composites following NumPy's own
algorithms, so that values match NumPy's exactly.

Complex values: the vjp rules are the plain linear transpose (cotangent of `a`
in `a @ b` is `g @ b.T`, no conjugation); the public API conjugates at its
boundary (see `elementwise.conj_complex`). Linear algebra (solves, decompositions) is in
`linalg`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from autodiff.core import buffers
from autodiff.core.abstract import array_result_type, result_aval, ufunc_result_dtype
from autodiff.core.dtypes import dtype_of, in_float32, in_float32_dtype, is_inexact
from autodiff.core.primitive import Primitive, bind
from autodiff.core.tensor import Tensor
from autodiff.kernels.products import matmul_vjp
from autodiff.ops import series
from autodiff.ops import shape as _shape
from autodiff.ops.elementwise import add, astype, conj, multiply_p, unbroadcast
from autodiff.ops.sparsity import contraction, dot_letters, einsum_letters, matmul_letters
from autodiff.ops.structural import (
    broadcast_to,
    matrix_transpose,
    moveaxis,
    reshape,
    reshape_p,
    shape_of,
    transpose,
)


def _array(x):
    """Lists and Python or NumPy scalars become arrays (NumPy's products do the same); a list
    holding Tensors is stacked into one differentiable array."""
    return x if isinstance(x, (Tensor, np.ndarray)) else _shape._operand(x)


def _differentiable(x) -> bool:
    return is_inexact(dtype_of(x))


def add_terms(a, b):
    """`a + b`, where None is a (symbolic) zero."""
    return b if a is None else a if b is None else add(a, b)


def tangent_in_dtype_of(t, out):
    """Tangent `t` cast to the dtype of output `out` (None stays a symbolic zero)."""
    return t if t is None or dtype_of(t) == dtype_of(out) else astype(t, dtype_of(out))


def _no_extras(name: str, **kwargs) -> None:
    given = sorted(k for k, v in kwargs.items() if v is not None)
    if given:
        raise NotImplementedError(f"autodiff.numpy.{name} does not support the arguments {given}")


def _ravel(x):
    return reshape(x, (int(np.prod(shape_of(x), dtype=np.int64)),))


# ---------------------------------------------------------------------------------------------
# matmul: NumPy's matmul, 1-D operands and broadcast batch dims included. Batch rules (vmap)
# here get `dims[i]`, the batch axis of `values[i]` (None: unbatched), and are written with the
# primitives themselves (and transpose/reshape), so vmap nests with every transform.


def _matmul_batch(values, dims):
    (a, b), (da, db) = values, dims
    nda, ndb = len(shape_of(a)), len(shape_of(b))
    # One operand batched, the other at most a matrix: the batch axis rides along as a stack
    # (or row) axis of the batched operand. The stack is folded into the rows, so the product
    # is one matrix-matrix call, not a stack of (often vector-matrix) ones.
    if db is None and ndb <= 2 and da < nda - 1:
        if nda >= 2:
            a_shape = shape_of(a)
            rows = reshape(a, (-1, a_shape[-1]))
            out = bind(matmul_p, rows, b)
            return reshape(out, a_shape[:-1] + shape_of(out)[1:]), da
        return bind(matmul_p, a, b), da
    # An unbatched matrix times per-example vectors: one product of the vectors, as rows, with
    # the matrix's transpose; the result keeps the batch first, the layout the cotangents and
    # tangents around it have (mixed layouts make NumPy's elementwise loops slow).
    if da is None and nda == 2 and ndb == 2:
        rows = b if db == 0 else matrix_transpose(b)
        return bind(matmul_p, rows, matrix_transpose(a)), 0
    # An unbatched matrix times a batched stack of matrices: fold the batch into the columns.
    if da is None and nda == 2 and ndb == 3 and db != 1:
        k, n = _drop(shape_of(b), db)
        size = shape_of(b)[db]
        cols = reshape(moveaxis(b, db, -1), (k, n * size))
        out = bind(matmul_p, a, cols)
        return reshape(out, (shape_of(a)[0], n, size)), 2
    if da is None and nda <= 2 and db < ndb - 2:
        return bind(matmul_p, a, b), db
    # General case: batch axes first; a per-example vector becomes a row (left) or a column
    # (right) matrix; batched operands are padded with 1-axes so that NumPy's broadcasting of
    # stack dims lines the batch axes up; the added row/column axes are dropped at the end.
    size = shape_of(a)[da] if da is not None else shape_of(b)[db]
    pa = shape_of(a) if da is None else _drop(shape_of(a), da)
    pb = shape_of(b) if db is None else _drop(shape_of(b), db)
    rank = max(len(pa), len(pb), 2)
    if da is not None:
        ma = pa if len(pa) > 1 else (1,) + pa  # a row
        a = reshape(moveaxis(a, da, 0), (size,) + (1,) * (rank - len(ma)) + ma)
    if db is not None:
        mb = pb if len(pb) > 1 else pb + (1,)  # a column
        b = reshape(moveaxis(b, db, 0), (size,) + (1,) * (rank - len(mb)) + mb)
    out = bind(matmul_p, a, b)
    return reshape(out, (size,) + _matmul_out_shape(pa, pb)), 0


def _drop(shape: tuple, axis: int) -> tuple:
    return shape[:axis] + shape[axis + 1 :]


def _matmul_vjp(g, a, b, *, out, needs=(True, True)):
    # `needs` (from the engine): constant operands, e.g. a weight matrix held fixed or the
    # data in an MLP's first layer, get no cotangent, saving a whole matmul.
    a_shape, b_shape = shape_of(a), shape_of(b)
    a_vec, b_vec = len(a_shape) == 1, len(b_shape) == 1
    need_a, need_b = needs[0] and _differentiable(a), needs[1] and _differentiable(b)
    if not (a_vec or b_vec):  # matrices (batched, maybe broadcast): the hot path
        return (
            unbroadcast(bind(matmul_p, g, matrix_transpose(b)), a) if need_a else None,
            unbroadcast(bind(matmul_p, matrix_transpose(a), g), b) if need_b else None,
        )
    if a_vec and b_vec:  # inner product of vectors: g is a scalar
        return (
            unbroadcast(bind(multiply_p, g, b), a) if need_a else None,
            unbroadcast(bind(multiply_p, g, a), b) if need_b else None,
        )
    # Matrix-vector and vector-matrix products: vector-matrix products and outer products,
    # with no reshapes (under vmap these become one matrix product each).
    if b_vec and len(a_shape) == 2:  # (m, k) @ (k,) -> (m,)
        return (
            unbroadcast(bind(multiply_p, reshape(g, (a_shape[0], 1)), b), a) if need_a else None,
            unbroadcast(bind(matmul_p, g, a), b) if need_b else None,
        )
    if a_vec and len(b_shape) == 2:  # (k,) @ (k, n) -> (n,)
        return (
            unbroadcast(bind(matmul_p, b, g), a) if need_a else None,
            unbroadcast(bind(multiply_p, reshape(a, (a_shape[0], 1)), g), b) if need_b else None,
        )
    # A vector operand is a row (on the left) or a column (on the right); so is g's last axis.
    g_shape = shape_of(g)
    if a_vec:
        a, g = reshape(a, (1, *a_shape)), reshape(g, (*g_shape[:-1], 1, g_shape[-1]))
    else:
        b, g = reshape(b, (*b_shape, 1)), reshape(g, (*g_shape, 1))
    ga, gb = _matmul_vjp(g, a, b, out=out, needs=(need_a, need_b))
    return (
        None if ga is None else reshape(ga, a_shape),
        None if gb is None else reshape(gb, b_shape),
    )


matmul_p = Primitive("matmul")
matmul_p.sparsity = contraction(matmul_letters)
# (np.matmul, into recycled memory when there is some; bfloat16 in float32)
matmul_p.impl = in_float32(buffers.matmul_into, binary=True)
matmul_p.vjp = _matmul_vjp
matmul_p.vjp_takes_needs = True
matmul_p.fast.vjp = matmul_vjp(matmul_p, _matmul_vjp)  # (on plain arrays, directly)


matmul_p.batch = _matmul_batch


def _matmul_out_shape(a_shape: tuple, b_shape: tuple) -> tuple:
    """np.matmul's output shape (shapes already checked by NumPy)."""
    stack = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    return stack + a_shape[-2:-1] + b_shape[-1:] if len(b_shape) > 1 else stack + a_shape[-2:-1]


def _matmul_abstract_eval(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    k = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if a.shape[-1] != k:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 ({k} is different "
            f"from {a.shape[-1]})"
        )
    shape = _matmul_out_shape(a.shape, b.shape)
    dtype = in_float32_dtype(ufunc_result_dtype(np.matmul, a, b), a.dtype, b.dtype)
    return result_aval(shape, dtype, a, b)


matmul_p.abstract_eval = _matmul_abstract_eval


def _bilinear_jvp(prim):
    """The jvp of a bilinear product p(a, b): p(ta, b) + p(a, tb), in the output's dtype."""

    def jvp(primals, tangents, *, out):
        a, b = primals
        ta, tb = tangents
        t = add_terms(
            None if ta is None else bind(prim, ta, b), None if tb is None else bind(prim, a, tb)
        )
        return tangent_in_dtype_of(t, out)

    return jvp


matmul_p.jvp = _bilinear_jvp(matmul_p)
matmul_p.taylor = series.multilinear_rule(matmul_p)


# ---------------------------------------------------------------------------------------------
# dot_p: NumPy's dot where it is not a matmul (an operand with more than 2 dims). Its impl is
# np.dot itself, whose per-element summation order matmul would not reproduce.


def _dot_batch(values, dims):
    """One batched operand: the batch axis rides along as a free axis of np.dot (no data
    movement when it is not the contracted axis). Both batched: a batched matmul of the
    operands flattened to (batch, rows, k) and (batch, k, cols)."""
    (a, b), (da, db) = values, dims
    nda, ndb = len(shape_of(a)), len(shape_of(b))
    if db is None:
        if da == nda - 1:  # the contracted axis: put the batch axis first
            a, da = moveaxis(a, da, 0), 0
        return bind(dot_p, a, b), da
    if da is None:
        if ndb == 2:  # per-example vector: (k, batch), contracted on its first axis
            return bind(dot_p, a, moveaxis(b, db, 1)), nda - 1
        if db >= ndb - 2:
            b, db = moveaxis(b, db, 0), 0
        return bind(dot_p, a, b), nda - 1 + db
    a, b = moveaxis(a, da, 0), moveaxis(b, db, 0)
    sa, sb = shape_of(a), shape_of(b)
    size, k = sa[0], sa[-1]
    rows = int(np.prod(sa[1:-1], dtype=np.int64))
    a = reshape(a, (size, rows, k))
    if ndb == 2:
        b, out_shape = reshape(b, (size, k, 1)), sa[:-1]
    else:  # (batch, *lead, k, n) -> (batch, k, lead * n)
        b = transpose(b, (0, ndb - 2, *range(1, ndb - 2), ndb - 1))
        cols = int(np.prod(sb[1:-2], dtype=np.int64)) * sb[-1]
        b, out_shape = reshape(b, (size, k, cols)), sa[:-1] + sb[1:-2] + sb[-1:]
    return reshape(bind(matmul_p, a, b), out_shape), 0


dot_p = Primitive("dot")
dot_p.sparsity = contraction(dot_letters)
dot_p.impl = in_float32(np.dot, binary=True)
dot_p.vjp_takes_needs = True
dot_p.jvp = _bilinear_jvp(dot_p)


def _dot_vjp(g, a, b, *, out, needs=(True, True)):
    nda, ndb = len(shape_of(a)), len(shape_of(b))
    kb = max(ndb - 2, 0)  # b's contracted axis
    free_b = [j for j in range(ndb) if j != kb]
    lead = list(range(nda - 1))  # a's free axes, also the leading axes of g
    ga = gb = None
    if needs[0] and _differentiable(a):
        ga = unbroadcast(tensordot(g, b, axes=(list(range(nda - 1, len(shape_of(g)))), free_b)), a)
    if needs[1] and _differentiable(b):
        gb = tensordot(a, g, axes=(lead, lead))  # b's contracted axis first, then its free axes
        gb = transpose(gb, [0 if j == kb else 1 + free_b.index(j) for j in range(ndb)])
        gb = unbroadcast(gb, b)
    return ga, gb


dot_p.vjp = _dot_vjp


def _dot_abstract_eval(a, b):
    if a.ndim == 0 or b.ndim == 0:
        shape = b.shape if a.ndim == 0 else a.shape
    else:
        k = b.shape[0] if b.ndim == 1 else b.shape[-2]
        if a.shape[-1] != k:
            raise ValueError(
                f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim {a.ndim - 1}) "
                f"!= {k} (dim {max(b.ndim - 2, 0)})"
            )
        shape = a.shape[:-1] + b.shape[:-2] + b.shape[-1:] if b.ndim > 1 else a.shape[:-1]
    return result_aval(shape, array_result_type(a, b), a, b)


dot_p.abstract_eval = _dot_abstract_eval
dot_p.batch = _dot_batch
dot_p.taylor = series.multilinear_rule(dot_p)


def matmul(x1, x2, /, out=None, **kwargs):
    """`numpy.matmul` (the `@` operator), differentiable.

    Example:
        >>> import numpy as np
        >>> matmul(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
        array([3., 7.])
    """
    _no_extras("matmul", out=out, **kwargs)
    return bind(matmul_p, _array(x1), _array(x2))


# ---------------------------------------------------------------------------------------------
# einsum: one general contraction primitive on canonical subscripts.

# NumPy's label alphabet, in the order of its integer sublist labels (0-25 'A'-'Z', 26-51 'a'-'z').
_LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _fresh_labels(used, n: int) -> str:
    free = [c for c in _LABELS if c not in used]
    if len(free) < n:
        raise ValueError("einsum: too many subscript labels (at most 52 distinct labels)")
    return "".join(free[:n])


def _split_subscripts(subscripts: str, n_operands: int) -> tuple[list, str, str | None]:
    """The input terms and the output of einsum subscripts (None when implicit), checked."""
    s = subscripts.replace(" ", "")
    lhs, arrow, rhs = s.partition("->")
    if "->" in rhs or "-" in lhs or ">" in lhs:
        raise ValueError(f"einsum: invalid subscripts {subscripts!r}")
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise ValueError(f"einsum: {len(terms)} subscript terms given for {n_operands} operands")
    bad = set(s) - set(_LABELS) - set(",.->")
    if bad:
        raise ValueError(f"einsum: invalid subscript characters {sorted(bad)} in {subscripts!r}")
    if "." in rhs.replace("...", "", 1):
        raise ValueError(f"einsum: subscripts {subscripts!r} contain a '.' outside of '...'")
    return terms, s, rhs if arrow else None


def _ellipsis_dims(term: str, shape: tuple, subscripts: str) -> int:
    """How many axes of an operand of `shape` its term's '...' stands for."""
    rest = term.replace("...", "", 1)
    if "." in rest:
        raise ValueError(f"einsum: subscripts {subscripts!r} contain a '.' outside of '...'")
    n = len(shape) - len(rest) if "..." in term else 0
    if n < 0 or ("..." not in term and len(rest) != len(shape)):
        raise ValueError(f"einsum: operand of shape {shape} does not match its subscripts {term!r}")
    return n


def _output_term(rhs: str | None, ins: list, ell: str, terms: list) -> str:
    """The explicit output labels: `rhs` with '...' as the labels `ell` (checked), or NumPy's
    implicit output (the ellipsis labels, then the labels used once, sorted)."""
    if rhs is None:
        counts = "".join(t.replace("...", "", 1) for t in terms)
        return ell + "".join(sorted(c for c in set(counts) if counts.count(c) == 1))
    if "..." not in rhs and ell:
        raise ValueError(
            "einsum: output has more dimensions than subscripts given in einstein sum, "
            "but no '...' ellipsis provided to broadcast the extra dimensions."
        )
    out = rhs.replace("...", ell)
    for c in out:
        if out.count(c) > 1:
            raise ValueError(f"einsum: output subscript '{c}' appears more than once")
        if not any(c in t for t in ins):
            raise ValueError(f"einsum: output subscript '{c}' does not appear in the input")
    return out


def _label_sizes(ins: list, shapes: tuple) -> dict:
    """Each label's size, broadcast over the operands (size-1 axes stretch)."""
    sizes: dict = {}
    for term, shape in zip(ins, shapes):
        mine: dict = {}
        for c, d in zip(term, shape):
            if mine.setdefault(c, d) != d:
                raise ValueError(
                    f"einsum: dimensions in single operand for collapsing index '{c}' "
                    f"don't match ({mine[c]} != {d})"
                )
            known = sizes.get(c)
            if known is None or known == 1:
                sizes[c] = d
            elif d != 1 and d != known:
                raise ValueError(
                    f"einsum: operands could not be broadcast together: label '{c}' has size "
                    f"{known} and {d}"
                )
    return sizes


@lru_cache(maxsize=512)
def _einsum_spec(subscripts: str, shapes: tuple) -> tuple[str, tuple]:
    """Canonical subscripts (explicit output, no ellipsis or spaces) and each operand's shape
    once broadcast so that a label has one size everywhere."""
    terms, s, rhs = _split_subscripts(subscripts, len(shapes))
    ell_dims = [_ellipsis_dims(t, shape, subscripts) for t, shape in zip(terms, shapes)]
    n_ell = max(ell_dims, default=0)
    ell = _fresh_labels(set(s), n_ell)
    ins = [t.replace("...", ell[n_ell - n :]) for t, n in zip(terms, ell_dims)]
    out = _output_term(rhs, ins, ell, terms)
    sizes = _label_sizes(ins, shapes)
    targets = tuple(tuple(sizes[c] for c in term) for term in ins)
    return ",".join(ins) + "->" + out, targets


@lru_cache(maxsize=512)
def _einsum_transpose_spec(subscripts: str, i: int) -> tuple[str, tuple, str]:
    """How operand `i`'s cotangent is an einsum of (g, other operands, constants).

    A label repeated on operand `i` (a diagonal) gets a fresh label per repeat, tied to
    the original by an identity-matrix operand; labels of operand `i` found nowhere else
    (summed over it alone) come from an all-ones operand. Returns the subscripts, the
    (label, fresh label) pairs of the identity operands and the labels of the ones operand.
    """
    lhs, _, out = subscripts.partition("->")
    ins = lhs.split(",")
    term = ins[i]
    fresh = iter(_fresh_labels(set(subscripts), len(term)))
    ct_labels = ""
    eyes = []
    for c in term:
        if c in ct_labels:
            f = next(fresh)
            eyes.append((c, f))
            ct_labels += f
        else:
            ct_labels += c
    others = [t for j, t in enumerate(ins) if j != i]
    present = set(out).union(*others, *eyes)
    missing = "".join(c for c in ct_labels if c not in present)
    terms = [out, *others, *(c + f for c, f in eyes)] + ([missing] if missing else [])
    return ",".join(terms) + "->" + ct_labels, tuple(eyes), missing


def _backward_optimize(optimize):
    """An explicit contraction path fits only the forward operands."""
    return True if isinstance(optimize, tuple) else optimize


def _einsum_vjp(g, *operands, out, subscripts, optimize, needs=None):
    ins = subscripts.partition("->")[0].split(",")
    dt = dtype_of(g)
    cts = []
    for i, x in enumerate(operands):
        if not _differentiable(x) or (needs is not None and not needs[i]):
            cts.append(None)
            continue
        spec, eyes, missing = _einsum_transpose_spec(subscripts, i)
        size = dict(zip(ins[i], shape_of(x)))
        consts = [np.eye(size[c], dtype=dt) for c, _ in eyes]
        if missing:
            consts.append(np.ones(tuple(size[c] for c in missing), dtype=dt))
        others = [y for j, y in enumerate(operands) if j != i]
        ct = bind(
            einsum_p, g, *others, *consts, subscripts=spec, optimize=_backward_optimize(optimize)
        )
        cts.append(unbroadcast(ct, x))
    return tuple(cts)


def _einsum_jvp(primals, tangents, *, out, subscripts, optimize):
    t_out = None
    for i, t in enumerate(tangents):
        if t is not None:
            ops = (*primals[:i], t, *primals[i + 1 :])
            t_out = add_terms(t_out, bind(einsum_p, *ops, subscripts=subscripts, optimize=optimize))
    return tangent_in_dtype_of(t_out, out)


def _einsum_impl(*operands, subscripts, optimize):
    if isinstance(optimize, tuple):
        optimize = list(optimize)
    return np.einsum(subscripts, *operands, optimize=optimize)


einsum_p = Primitive("einsum")
einsum_p.sparsity = contraction(einsum_letters)
einsum_p.impl = in_float32(_einsum_impl)
einsum_p.vjp = _einsum_vjp
einsum_p.vjp_takes_needs = True
einsum_p.jvp = _einsum_jvp


def _einsum_abstract_eval(*operands, subscripts, optimize):
    # (np.einsum makes an array of every operand: Python scalars take their default dtype)
    canonical, targets = _einsum_spec(subscripts, tuple(x.shape for x in operands))
    lhs, _, out = canonical.partition("->")
    size = {c: n for term, shape in zip(lhs.split(","), targets) for c, n in zip(term, shape)}
    return result_aval(tuple(size[c] for c in out), array_result_type(*operands), *operands)


einsum_p.abstract_eval = _einsum_abstract_eval


def _einsum_batch(values, dims, *, subscripts, optimize):
    """The batch axis gets a fresh label on each batched operand, where it already is, and
    comes first in the output. An explicit contraction path still fits (same operands)."""
    (z,) = _fresh_labels(set(subscripts), 1)
    lhs, _, out = subscripts.partition("->")
    terms = [t if d is None else t[:d] + z + t[d:] for t, d in zip(lhs.split(","), dims)]
    spec = ",".join(terms) + "->" + z + out
    return bind(einsum_p, *values, subscripts=spec, optimize=optimize), 0


einsum_p.batch = _einsum_batch
einsum_p.taylor = series.multilinear_rule(einsum_p)


def _sublist_subscripts(sublist) -> str:
    out = ""
    for s in sublist:
        if s is Ellipsis:
            out += "..."
        elif isinstance(s, (int, np.integer)) and 0 <= s < len(_LABELS):
            out += _LABELS[s]
        else:
            raise ValueError(f"einsum: subscript {s!r} is not an int in [0, 52) or Ellipsis")
    return out


def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """`numpy.einsum`, differentiable: explicit or implicit output, '...', repeated labels.

    Both call forms work: `einsum("ij,jk->ik", a, b)` and `einsum(a, [0, 1], b, [1, 2])`.
    `optimize` is passed to `numpy.einsum`.

    Example:
        >>> import numpy as np
        >>> einsum("ii", np.array([[1.0, 2.0], [3.0, 4.0]]))
        np.float64(5.0)
    """
    _no_extras("einsum", out=out, dtype=dtype)
    if order != "K" or casting != "safe":
        raise NotImplementedError("autodiff.numpy.einsum supports only order='K', casting='safe'")
    if not operands:
        raise TypeError("einsum() missing the subscripts and operands")
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], operands[1:]
    else:  # einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])
        ops = operands[0::2][: len(operands) // 2]
        subscripts = ",".join(_sublist_subscripts(s) for s in operands[1::2][: len(ops)])
        if len(operands) % 2:
            subscripts += "->" + _sublist_subscripts(operands[-1])
    ops = [_array(x) for x in ops]
    canonical, targets = _einsum_spec(subscripts, tuple(shape_of(x) for x in ops))
    ops = [broadcast_to(x, t) for x, t in zip(ops, targets)]
    if isinstance(optimize, list):
        optimize = tuple(tuple(p) if isinstance(p, list) else p for p in optimize)
    return bind(einsum_p, *ops, subscripts=canonical, optimize=optimize)


# ---------------------------------------------------------------------------------------------
# Composites: NumPy's dot, tensordot, inner, outer, vdot.


def tensordot(a, b, axes=2):
    """`numpy.tensordot`, differentiable: `axes` an int or a pair of axis sequences.

    Example:
        >>> import numpy as np
        >>> tensordot(np.ones((2, 3)), np.ones((3, 4)), axes=1).shape
        (2, 4)
    """
    a, b = _array(a), _array(b)
    a_shape, b_shape = shape_of(a), shape_of(b)
    try:
        iter(axes)
    except TypeError:
        axes_a, axes_b = list(range(-axes, 0)), list(range(axes))
    else:
        axes_a, axes_b = axes
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b) or any(a_shape[i] != b_shape[j] for i, j in zip(axes_a, axes_b)):
        raise ValueError("shape-mismatch for sum")
    axes_a = [int(i) % len(a_shape) for i in axes_a]
    axes_b = [int(j) % len(b_shape) for j in axes_b]
    free_a = [i for i in range(len(a_shape)) if i not in axes_a]
    free_b = [j for j in range(len(b_shape)) if j not in axes_b]
    k = int(np.prod([a_shape[i] for i in axes_a], dtype=np.int64))
    m = int(np.prod([a_shape[i] for i in free_a], dtype=np.int64))
    n = int(np.prod([b_shape[j] for j in free_b], dtype=np.int64))
    at = reshape(transpose(a, free_a + axes_a), (m, k))
    bt = reshape(transpose(b, axes_b + free_b), (k, n))
    out_shape = tuple(a_shape[i] for i in free_a) + tuple(b_shape[j] for j in free_b)
    return bind(reshape_p, _dot(at, bt), shape=out_shape, order="C")


def _dot(a, b):
    """np.dot of arrays with at least 1 dim. Same-dtype vectors and matrices take the matmul
    hot path (np.matmul gives np.dot's values there); mixed dtypes and N-D use np.dot."""
    if len(shape_of(a)) <= 2 and len(shape_of(b)) <= 2 and dtype_of(a) == dtype_of(b):
        return bind(matmul_p, a, b)
    return bind(dot_p, a, b)


def dot(a, b, out=None):
    """`numpy.dot`, differentiable (scalars, vectors, matrices and N-D arrays).

    Example:
        >>> import numpy as np
        >>> dot(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
        np.float64(11.0)
    """
    _no_extras("dot", out=out)
    a, b = _array(a), _array(b)
    nda, ndb = len(shape_of(a)), len(shape_of(b))
    if nda == 0 or ndb == 0:
        return bind(multiply_p, a, b)
    return _dot(a, b)


def inner(a, b, /):
    """`numpy.inner`, differentiable: sums over the last axes of `a` and `b`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
        >>> float(inner(a, b)), ad.grad(inner)(a, b)
        (11.0, array([3., 4.]))
    """
    a, b = _array(a), _array(b)
    nda, ndb = len(shape_of(a)), len(shape_of(b))
    if nda == 0 or ndb == 0:
        return bind(multiply_p, a, b)
    return _dot(a, b if ndb == 1 else matrix_transpose(b))


def outer(a, b, out=None):
    """`numpy.outer`, differentiable: inputs are flattened first.

    Example:
        >>> import numpy as np
        >>> outer(np.array([1.0, 2.0]), np.array([1.0, 10.0, 100.0])).shape
        (2, 3)
    """
    _no_extras("outer", out=out)
    a, b = _ravel(_array(a)), _ravel(_array(b))
    return bind(multiply_p, reshape(a, (*shape_of(a), 1)), reshape(b, (1, *shape_of(b))))


def vdot(a, b, /):
    """`numpy.vdot`, differentiable: flattened inner product, conjugating a complex `a`.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> float(vdot(a, a)), ad.grad(lambda x: vdot(x, x))(a)
        (30.0, array([[2., 4.],
               [6., 8.]]))
        >>> complex(vdot(np.array([1j]), np.array([1j])))  # conj(1j) * 1j
        (1+0j)
    """
    a, b = _ravel(_array(a)), _ravel(_array(b))
    if np.issubdtype(dtype_of(a), np.complexfloating):
        a = conj(a)
    return bind(matmul_p, a, b)


FUNCTIONS = {
    "matmul": matmul,
    "dot": dot,
    "tensordot": tensordot,
    "einsum": einsum,
    "inner": inner,
    "outer": outer,
    "vdot": vdot,
}
