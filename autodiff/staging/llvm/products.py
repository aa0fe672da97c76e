"""Matrix products in the LLVM translator: `product(ex, a, b)` writes `a @ b` into the
function `ex` (scalars.Expressions) is writing — loops for small products, gemm.py's kernel
for large ones (through its slot: NumPy's BLAS until the kernel is compiled), BLAS's gemv
for a matrix by a vector.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import numpy as np

from autodiff.staging.llvm import gemm
from autodiff.staging.llvm.values import I64, Array, c_strides, float_constant, ir_type

if TYPE_CHECKING:
    from autodiff.staging.llvm.scalars import Expressions

BLAS_PREFIX = "autodiff.blas."  # (NumPy's OpenBLAS functions, bound by engine.py)
# Products of at least this many multiply-adds call the kernel or BLAS; smaller ones are loops.
BLAS_MIN_WORK = 1 << 12


def product(ex: Expressions, a: Array, b: Array):
    """a @ b (1-d or 2-d operands), written by `ex` (the translator's expressions): the
    kernel or BLAS when large, else loops accumulating out[i, j] over k with j innermost
    (vectorized)."""
    shape = a.shape[:-1] + b.shape[1:]
    inner = a.shape[-1]
    m = a.shape[0] if len(a.shape) == 2 else 1
    n = b.shape[1] if len(b.shape) == 2 else 1
    a2 = a if len(a.shape) == 2 else a.view((1, inner), (inner * a.strides[0], a.strides[0]))
    b2 = b if len(b.shape) == 2 else b.view((inner, 1), (b.strides[0], 1))
    acc = ex.new_array(a.dtype, shape or (1,))
    out2 = acc.view((m, n), c_strides((m, n)))
    if m * n * inner >= BLAS_MIN_WORK and gemm.suits(m, n, inner):
        if ex.blas:
            _kernel_or_blas(ex, a2, b2, out2)
        else:
            _kernel(ex, a2, b2, out2)
    elif m * n * inner >= BLAS_MIN_WORK and ex.blas:
        if not _gemv(ex, a2, b2, out2):
            _gemm(ex, a2, b2, out2)
    else:
        ex.fill(out2, ex.const(0.0, a.dtype))

        def update(index):
            i, k, j = index
            x = ex.load_element(a2, [i, k])
            term = ex.binop(ast.Mult(), x, ex.load_element(b2, [k, j]))
            total = ex.binop(ast.Add(), ex.load_element(out2, [i, j]), term)
            ex.store_element(out2, [i, j], total)

        ex.nest((m, inner, n), update)
    if not shape:
        return ex.load_element(acc, [ex.const(0, I64)])
    return acc


def _blas_operand(ex: Expressions, x: Array) -> tuple[Array, str, int]:
    """(x or a contiguous copy, BLAS's transpose flag for it, its leading dimension),
    for the column-major product out^T = b^T a^T."""
    rows, cols = x.shape
    if x.strides[1] == 1 and x.strides[0] >= max(1, cols):
        return x, "N", x.strides[0]
    if x.strides[0] == 1 and x.strides[1] >= max(1, rows):
        return x, "T", x.strides[1]
    copy = ex.new_array(x.dtype, x.shape)
    ex.copy(copy, x)
    return copy, "N", max(1, cols)


def _kernel_or_blas(ex: Expressions, a: Array, b: Array, out: Array) -> None:
    """out = a @ b by gemm.py's kernel once the process has it (its slot, a pointer
    module.py sets when the kernel is compiled, is not null), by BLAS until then: a
    first compile in a process is not made to wait for the kernel's."""
    f = ex.f
    slot = gemm.slot_symbol(a.dtype)
    f.declare(slot, f'@"{slot}" = external global ptr')
    pointer = f.value(f'load atomic ptr, ptr @"{slot}" monotonic, align 8')
    ready = f.value(f"icmp ne ptr {pointer}, null")
    kernel, blas, done = f.label("kernel"), f.label("blas"), f.label("multiplied")
    f.branch(f"br i1 {ready}, label %{kernel}, label %{blas}")
    f.start(kernel)
    _kernel(ex, a, b, out, pointer)
    f.branch(f"br label %{done}")
    f.start(blas)
    if not _gemv(ex, a, b, out):
        _gemm(ex, a, b, out)
    f.start(done)


def _kernel(ex: Expressions, a: Array, b: Array, out: Array, pointer: str | None = None) -> None:
    """out = a @ b by gemm.py's kernel (operands of any strides, read in place; its
    packing buffer in the call's storage): through `pointer`, or the symbol module.py
    binds."""
    f = ex.f
    (m, k), n = a.shape, b.shape[1]
    name = gemm.symbol(a.dtype)
    if pointer is None:
        f.declare(
            name,
            f'declare void @"{name}"(i64, i64, i64, ptr, i64, i64, ptr, i64, i64, ptr, '
            "i64, ptr) nounwind",
        )
    work = f.storage(np.uint8, (gemm.workspace_bytes(m, n, k, a.dtype),))
    args = [
        ("i64", m),
        ("i64", n),
        ("i64", k),
        ("ptr", a.ptr),
        ("i64", a.strides[0]),
        ("i64", a.strides[1]),
        ("ptr", b.ptr),
        ("i64", b.strides[0]),
        ("i64", b.strides[1]),
        ("ptr", out.ptr),
        ("i64", out.strides[0]),
        ("ptr", work),
    ]
    callee = pointer or f'@"{name}"'
    f.emit(f"call void {callee}({', '.join(f'{t} {v}' for t, v in args)})")


def _gemv(ex: Expressions, a: Array, b: Array, out: Array) -> bool:
    """out = a @ b by BLAS's gemv when a or b is a single vector (its gemm would copy the
    matrix into panels for the one column), in its column-major terms: False when it is
    not such a product, or the vector's stride is not positive."""
    (m, k), n = a.shape, b.shape[1]
    if n == 1 and b.strides[0] > 0:
        matrix, vector, stride, rows = a, b, b.strides[0], m
    elif m == 1 and a.strides[1] > 0:  # (out^T = b^T a^T)
        matrix, vector, stride, rows = b.view((n, k), b.strides[::-1]), a, a.strides[1], n
    else:
        return False
    matrix, trans, ld = _blas_operand(ex, matrix)
    # (row-major `matrix` (rows x k) is the column-major k x rows matrix: transposed)
    flag, dims = ("T", (k, rows)) if trans == "N" else ("N", (rows, k))
    t = ir_type(a.dtype)
    values = [("i8", ord(flag)), ("i64", dims[0]), ("i64", dims[1])]
    values += [(t, float_constant(1.0, a.dtype)), ("i64", ld), ("i64", stride)]
    values += [(t, float_constant(0.0, a.dtype)), ("i64", 1)]
    flag, d0, d1, alpha, lda, inc, beta, one = _cells(ex, values)
    args = [flag, d0, d1, alpha, matrix.ptr, lda, vector.ptr, inc, beta, out.ptr, one]
    _blas_call(ex, "dgemv" if t == "double" else "sgemv", args)
    return True


def _cells(ex: Expressions, values: list) -> list:
    """Pointers to new stack cells holding `values` ((type, value) pairs): BLAS's
    Fortran interface takes every argument by reference."""
    cells = []
    for kind, value in values:
        cell = ex.f.new("c")
        ex.f.entry.append(f"  {cell} = alloca {kind}")
        ex.f.emit(f"store {kind} {value}, ptr {cell}")
        cells.append(cell)
    return cells


def _blas_call(ex: Expressions, function: str, args: list) -> None:
    name = BLAS_PREFIX + function
    ex.f.declare(name, f'declare void @"{name}"({", ".join(["ptr"] * len(args))}) nounwind')
    ex.f.emit(f'call void @"{name}"({", ".join("ptr " + x for x in args)})')


def _gemm(ex: Expressions, a: Array, b: Array, out: Array) -> None:
    """out = a @ b by BLAS's gemm (NumPy's OpenBLAS: its Fortran interface with 64-bit
    integers, bound to `BLAS_PREFIX` symbols by engine.py)."""
    (m, k), n = a.shape, b.shape[1]
    a, trans_a, lda = _blas_operand(ex, a)
    b, trans_b, ldb = _blas_operand(ex, b)
    t = ir_type(a.dtype)
    cells = _cells(
        ex,
        [
            ("i8", ord(trans_b)),
            ("i8", ord(trans_a)),
            ("i64", n),
            ("i64", m),
            ("i64", k),
            (t, float_constant(1.0, a.dtype)),
            ("i64", ldb),
            ("i64", lda),
            (t, float_constant(0.0, a.dtype)),
            ("i64", n),
        ],
    )
    tb, ta, nn, mm, kk, alpha, lb, la, beta, lc = cells
    args = [tb, ta, nn, mm, kk, alpha, b.ptr, lb, a.ptr, la, beta, out.ptr, lc]
    _blas_call(ex, "dgemm" if t == "double" else "sgemm", args)


__all__ = ["BLAS_MIN_WORK", "BLAS_PREFIX", "product"]
