"""The values of the LLVM translator: scalar and array values, parameters, and the IR text of
one function being written (its entry block, body lines, declarations and storage)."""

from __future__ import annotations

import ast
import struct

import numpy as np

from autodiff.staging.numba.lower import SUPPORTED


class Unsupported(Exception):
    """A construct the translator does not handle: the segment compiles with Numba."""


_IR = {
    "b": {1: "i1"},
    "i": {1: "i8", 2: "i16", 4: "i32", 8: "i64"},
    "u": {1: "i8", 2: "i16", 4: "i32", 8: "i64"},
    "f": {4: "float", 8: "double"},
}
F64, I64, BOOL = np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_)
U64 = np.dtype(np.uint64)
# The dtypes the generated code names (np.float32(...)): the code generator's, but complex.
_DTYPES = {d.type.__name__: d for d in SUPPORTED if d.kind != "c"}
# Stack storage for arrays up to this many bytes; larger ones go in the call's heap block.
_STACK_BYTES = 4096
_STACK_TOTAL = 1 << 16  # (and at most this much in all: a thread's stack may be small)
# jit(fastmath=True)'s flags, for both compilers: LLVM's fast-math flags but reassociation,
# which would fold away the rounding `(t + 1.5 * 2**52) - 1.5 * 2**52` of approx.py and mathlib.
FAST_FLAGS = "nnan ninf nsz arcp contract afn"


def ir_type(dtype) -> str:
    """The LLVM type of a scalar of `dtype` in registers (bool: i1)."""
    dtype = np.dtype(dtype)
    try:
        return _IR[dtype.kind][dtype.itemsize]
    except KeyError:
        raise Unsupported(f"dtype {dtype}") from None


def mem_type(dtype) -> str:
    """The LLVM type of an array element of `dtype` in memory (bool: i8)."""
    return "i8" if np.dtype(dtype).kind == "b" else ir_type(dtype)


def float_constant(value: float, dtype) -> str:
    """A float as an IR constant (hex: exact, and NaN and the infinities included)."""
    if np.dtype(dtype) == np.float32:
        value = float(np.float32(value))
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


class Scalar:
    __slots__ = ("ref", "dtype")

    def __init__(self, ref: str, dtype):
        self.ref = ref
        self.dtype = np.dtype(dtype)


class Array:
    __slots__ = ("ptr", "dtype", "shape", "strides")

    def __init__(self, ptr: str, dtype, shape: tuple, strides: tuple | None = None):
        self.ptr = ptr
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.strides = tuple(strides) if strides is not None else c_strides(self.shape)

    @property
    def contiguous(self) -> bool:
        return self.strides == c_strides(self.shape) or int(np.prod(self.shape)) <= 1

    def view(self, shape: tuple, strides: tuple | None = None) -> Array:
        return Array(self.ptr, self.dtype, shape, strides)


def c_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class Param:
    """A parameter: an array (`shape` a tuple) or a scalar (`shape` None)."""

    __slots__ = ("dtype", "shape")

    def __init__(self, dtype, shape: tuple | None):
        self.dtype = np.dtype(dtype)
        self.shape = shape


KINDS = ("f", "i", "u")  # the kinds of scalar outputs: float64, int64, uint64 words


class Layout:
    """Where the objects the code reads keep their contents (byte offsets): the items of a
    tuple, the data pointer of an ndarray, the value of a NumPy scalar; whether the BLAS of
    NumPy's wheels is there to call (`blas`); and the width of the host's vector registers in
    bits (`vector_bits`, 0 if unknown: no call is mapped to a vector version)."""

    __slots__ = ("tuple_items", "array_data", "scalar_value", "blas", "vector_bits")

    def __init__(self, tuple_items: int, array_data: int, scalar_value: int):
        self.tuple_items = tuple_items
        self.array_data = array_data
        self.scalar_value = scalar_value
        self.blas = False
        self.vector_bits = 0


class Translation:
    """The IR of one segment and its calling convention.

    `outputs[k]` is ("array", None) for an array the caller allocates, ("param", j) for an
    array parameter returned as it is (the caller returns its own object), or ("scalar",
    kind) for a scalar written into its slot as a double ("f"), int64 ("i") or uint64 ("u").
    """

    def __init__(
        self, ir: str, name: str, params: list, outputs: list, statements: int, declarations
    ):
        self.ir = ir
        self.declarations = declarations
        self.out_avals: list = []
        self.name = name
        self.params = params
        self.outputs = outputs
        self.statements = statements
        self.hinted_loops = 0  # (loops whose back edge ends with a `LOOP_HINT`)


def assigned_names(tree: ast.FunctionDef) -> dict:
    counts: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    counts[target.id] = counts.get(target.id, 0) + 1
    return counts


def constant_int(node) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -constant_int(node.operand)
    raise Unsupported(f"not a constant integer: {ast.dump(node)}")


def constant_shape(node) -> tuple:
    if not isinstance(node, ast.Tuple):
        raise Unsupported("shape not a tuple")
    return tuple(constant_int(e) for e in node.elts)


def dtype_of(node) -> np.dtype:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "np"
        and node.attr in _DTYPES
    ):
        return _DTYPES[node.attr]
    raise Unsupported(f"not a dtype: {ast.dump(node)}")


def np_attr(node) -> str | None:
    """`name` for `np.name`, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "np":
            return node.attr
    return None


# A loop's metadata in a function's IR, numbered from 0 in each function (LLVM numbers
# metadata per module: module.py's `module_text` renumbers).
LOOP_HINT = "!loop.hint."


class Function:
    """The IR being written for one function: its entry block's allocas, its body's lines,
    fresh names, the declarations it needs, and the storage it frees on return."""

    def __init__(self, fastmath: bool):
        self.entry: list = []
        self.lines: list = []
        self.count = 0
        self.declarations: dict = {}
        self.stack = 0  # bytes of arrays on the stack
        self.arena = 0  # bytes of arrays in the heap block
        self.arena_lines: list = []
        self.flags = FAST_FLAGS + " " if fastmath else ""
        self.terminated = False
        self.current = "entry"  # the label of the block being written
        self.mapped_calls = 0  # calls with a vector version, in the loop being written
        self.hinted_loops = 0  # loops asked to vectorize (`LOOP_HINT`: module.py numbers them)

    def new(self, prefix: str = "t") -> str:
        self.count += 1
        return f"%{prefix}{self.count}"

    def label(self, prefix: str = "L") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def emit(self, text: str) -> None:
        if self.terminated:  # (code after a break: unreachable, in a block of its own)
            self.current = self.label("dead")
            self.lines.append(f"{self.current}:")
            self.terminated = False
        self.lines.append("  " + text)

    def value(self, text: str, prefix: str = "t") -> str:
        name = self.new(prefix)
        self.emit(f"{name} = {text}")
        return name

    def start(self, label: str) -> None:
        if not self.terminated:
            self.lines.append(f"  br label %{label}")
        self.lines.append(f"{label}:")
        self.current = label
        self.terminated = False

    def branch(self, text: str) -> None:
        self.emit(text)
        self.terminated = True

    def loop_hint(self) -> str:
        """The metadata attachment asking LLVM to vectorize the loop whose back edge it ends:
        a placeholder numbered per function, which module.py renumbers per module."""
        self.hinted_loops += 1
        return f", !llvm.loop {LOOP_HINT}{self.hinted_loops - 1}"

    def entry_lines(self) -> list:
        """The entry block's lines: the arrays in the heap block (if any: the function's
        second parameter, `%arena`, memory the caller keeps), the allocas."""
        return [*self.arena_lines, *self.entry]

    def declare(self, name: str, text: str) -> None:
        """Record a module-level line (a `declare`, or a definition the code calls) under the
        symbol it names, quotes dropped: two declarations of one function (the translator's
        and a math library definition's) are one line of the module."""
        self.declarations[name.strip('@"')] = text

    def storage(self, dtype, shape: tuple) -> str:
        """A pointer to new memory for an array, live for the whole call: on the stack if
        small, else in the call's heap block (`entry_lines`)."""
        size = max(int(np.prod(shape)), 1)
        nbytes = size * max(np.dtype(dtype).itemsize, 1)
        name = self.new("s")
        if nbytes <= _STACK_BYTES and self.stack + nbytes <= _STACK_TOTAL:
            self.stack += nbytes
            self.entry.append(f"  {name} = alloca {mem_type(dtype)}, i64 {size}, align 16")
        else:  # (in one heap block per call, the caller's: arrays at constant offsets)
            offset = -(-self.arena // 64) * 64
            self.arena = offset + nbytes
            self.arena_lines.append(
                f"  {name} = getelementptr inbounds i8, ptr %arena, i64 {offset}"
            )
        return name


__all__ = [
    "LOOP_HINT",
    "Array",
    "Function",
    "KINDS",
    "Layout",
    "Param",
    "Scalar",
    "Translation",
    "Unsupported",
    "assigned_names",
    "constant_int",
    "constant_shape",
    "dtype_of",
    "ir_type",
    "mem_type",
    "np_attr",
]
