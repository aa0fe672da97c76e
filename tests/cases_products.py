"""Op table: products (matmul, dot, tensordot, einsum, inner, outer, vdot)."""

from functools import partial

import numpy as np
from optable import OpCase, arr

import autodiff.numpy as anp

CASES = []


def _pairs(name, shapes):
    for sa, sb in shapes:
        CASES.append(
            OpCase(
                f"{name}{sa}{sb}", getattr(anp, name), (arr(*sa), arr(*sb)), ref=getattr(np, name)
            )
        )


# matmul: vector/matrix combinations, batches, broadcast batch dims.
_pairs(
    "matmul",
    [
        ((4,), (4,)),
        ((3, 4), (4, 5)),
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((1, 1), (1, 1)),
        ((2, 3, 4), (2, 4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((3, 4), (2, 4, 5)),
        ((2, 3, 4), (4, 5)),
        ((4,), (2, 4, 5)),
        ((2, 3, 4), (4,)),
        ((2, 1, 1, 3), (4, 3, 2)),
    ],
)
CASES.append(
    OpCase("matmul_operator", lambda a, b: a @ b, (arr(3, 4), arr(4, 2)), ref=lambda a, b: a @ b)
)
CASES.append(
    OpCase(
        "matmul_chain",
        lambda a, b: anp.tanh(a @ b) @ b,
        (arr(3, 4), arr(4, 4)),
        ref=lambda a, b: np.tanh(a @ b) @ b,
    )
)

# dot: scalars, vectors, matrices, N-D.
_pairs(
    "dot",
    [
        ((), ()),
        ((), (3, 4)),
        ((3,), ()),
        ((4,), (4,)),
        ((3, 4), (4,)),
        ((4,), (4, 3)),
        ((3, 4), (4, 5)),
        ((2, 3, 4), (4,)),
        ((4,), (2, 4, 3)),
        ((2, 3, 4), (5, 4, 2)),
        ((3, 4), (2, 4, 5)),
        ((2, 3, 4), (4, 5)),
    ],
)

# tensordot: int axes (default 2, 1, 0) and pairs of sequences / ints, negative axes.
for axes, sa, sb in [
    (2, (2, 3, 4), (3, 4, 5)),
    (1, (3, 4), (4, 5)),
    (0, (2, 3), (4,)),
    (0, (), (3,)),
    (([1, 0], [0, 1]), (3, 2, 4), (2, 3, 5)),
    ((1, 0), (3, 4), (4, 5)),
    (([-1], [-2]), (2, 3, 4), (5, 4, 2)),
    (([0, 2], [2, 0]), (2, 3, 4), (4, 5, 2)),
    (1, (4,), (4,)),
]:
    CASES.append(
        OpCase(
            f"tensordot{axes}{sa}{sb}",
            partial(anp.tensordot, axes=axes),
            (arr(*sa), arr(*sb)),
            ref=partial(np.tensordot, axes=axes),
        )
    )

# einsum: explicit and implicit outputs, ellipsis, diagonals, sums, broadcasting, 1-3 operands.
for spec, shapes in [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("iij->ij", [(3, 3, 2)]),
    ("iii->i", [(2, 2, 2)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("i,i", [(4,), (4,)]),
    ("i,i->i", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    (",i->i", [(), (3,)]),
    ("i,->", [(3,), ()]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,jk", [(2, 3, 4), (4, 5)]),
    ("ij...->...", [(3, 4, 2)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("i...,i...->...", [(3, 2, 4), (3, 1, 4)]),
    ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 3)]),
    ("ij,ij->ij", [(3, 1), (1, 4)]),
    ("ij,jk->ik", [(3, 1), (4, 5)]),
    ("ij,kl->ijkl", [(2, 3), (3, 2)]),
    ("Ab,bC->AC", [(3, 4), (4, 2)]),
    ("b a -> a b", [(3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
]:
    CASES.append(
        OpCase(
            f"einsum[{spec}]{tuple(shapes)}",
            partial(anp.einsum, spec),
            tuple(arr(*s) for s in shapes),
            ref=partial(np.einsum, spec),
        )
    )
CASES += [
    OpCase(
        "einsum_optimize",
        lambda a, b, c: anp.einsum("ij,jk,kl->il", a, b, c, optimize=True),
        (arr(3, 4), arr(4, 5), arr(5, 2)),
        ref=lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c, optimize=True),
    ),
    OpCase(
        "einsum_optimize_greedy",
        lambda a, b: anp.einsum("ij,jk", a, b, optimize="greedy"),
        (arr(3, 4), arr(4, 5)),
        ref=lambda a, b: np.einsum("ij,jk", a, b, optimize="greedy"),
    ),
    OpCase(
        "einsum_sublists",
        lambda a, b: anp.einsum(a, [0, 1], b, [1, 2], [0, 2]),
        (arr(3, 4), arr(4, 5)),
        ref=lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]),
    ),
    OpCase(
        "einsum_sublists_ellipsis",
        lambda a, b: anp.einsum(a, [Ellipsis, 0], b, [0]),
        (arr(2, 3, 4), arr(4)),
        ref=lambda a, b: np.einsum(a, [Ellipsis, 0], b, [0]),
    ),
]

_pairs(
    "inner",
    [
        ((), (3,)),
        ((4,), (4,)),
        ((3, 4), (4,)),
        ((4,), (3, 4)),
        ((3, 4), (2, 4)),
        ((2, 3, 4), (5, 4)),
        ((3, 4), (2, 5, 4)),
    ],
)
_pairs("outer", [((3,), (4,)), ((2, 3), (4,)), ((), (3,)), ((2, 2), (1, 3))])
_pairs("vdot", [((4,), (4,)), ((2, 3), (3, 2)), ((), ())])
