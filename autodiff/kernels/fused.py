"""Fused cotangents: chains of elementwise derivative formulas, computed in one pass over memory.

Without fusion, a large elementwise backward pass makes one NumPy pass over memory per
arithmetic operation of every rule: `g * (1 - y*y)` is three, a product's two cotangents two
more, each sum of cotangents another, and every one of them reads and writes arrays far
larger than the caches. A `Lazy` cotangent instead records what to compute: its rules'
arithmetic (add, subtract, multiply, divide, negative) over arrays of one shape and dtype (the
residuals, and results of the transcendental ufuncs, which NumPy computes faster than any
loop here), constants, and other lazy cotangents. The engine passes lazy cotangents from rule
to rule (`Primitive.vjp_fused`) and sums them lazily too; when one leaves that world (a rule
without a fused form, a leaf, a hook), `evaluate` runs the whole expression block by block,
reading each input array once and writing the result once, its intermediates staying in
cache.

An expression compiles to a small register program. Until the program has a compiled loop,
NumPy ufuncs run it on blocks of NUMPY_BLOCK elements (a block per register, in cache). Once
the loop would have saved what compiling it costs (COMPILE_NS; Numba itself is tiered, see
kernels/_numba.py), the program gets a Numba loop of its own, generated as Python source
(registers become local variables) and cached on disk, so that later processes use it at
once. Both compute the rules' operations in the same order, with IEEE arithmetic and no
contraction: the results are bitwise those of the unfused rules.

An expression holds at most MAX_INPUTS distinct arrays and MAX_OPS operations (counted as a
tree): a larger one evaluates an operand first and goes on from its result.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import threading

import numpy as np

from autodiff.core import buffers
from autodiff.kernels._numba import _import_numba as _numba_module
from autodiff.kernels._numba import _lock as _numba_lock
from autodiff.kernels._numba import kernels_ready, user_cache_dir

# Cotangents from this many elements on are fused: below it, a NumPy pass is cheap and the
# bookkeeping of an expression is not.
FUSE_MIN_SIZE = 1 << 16
MAX_INPUTS = 8
MAX_OPS = 64
# A lazy cotangent passed to two parents may be evaluated twice (once in each of their
# expressions): one with more operations or inputs than these is evaluated once, before.
SHARED_MAX_OPS = 6
SHARED_MAX_INPUTS = 3
NUMPY_BLOCK = 1 << 14  # elements per register: ~20 of them stay in L2
# A program gets a compiled loop of its own once that loop would have saved about what
# compiling it costs (as Numba itself is loaded, kernels/_numba.py), or at once when an
# earlier process left it in the cache.
COMPILE_NS = 3e8
_FLOATS = frozenset(map(np.dtype, (np.float32, np.float64)))
_NUMBERS = frozenset((int, float))
# What a compiled loop saves per element and operation against the NumPy blocks, for tiering.
_NS_SAVED_PER_ELEMENT_OP = 0.35

ADD, SUBTRACT, MULTIPLY, DIVIDE, NEGATIVE = range(5)
_UFUNCS = (np.add, np.subtract, np.multiply, np.divide, np.negative)


class Lazy:
    """A cotangent not yet computed: `op` applied to `a` (and `b`), each a `Lazy`, an array of
    this shape and dtype (C-contiguous, or a broadcast scalar) or a number.

    Example:
        >>> g = multiply(np.full(4, 2.0), subtract(1, np.arange(4.0)))
        >>> g.shape, evaluate(g)
        ((4,), array([ 2.,  0., -2., -4.]))
    """

    __slots__ = ("op", "a", "b", "shape", "dtype", "size", "inputs", "ops")

    def __repr__(self):
        return f"Lazy({_UFUNCS[self.op].__name__}, shape={self.shape}, dtype={self.dtype})"


def add(a, b) -> Lazy | np.ndarray:
    """`a + b`, lazily (see `Lazy`)."""
    return _lazy(ADD, a, b)


def subtract(a, b) -> Lazy | np.ndarray:
    """`a - b`, lazily."""
    return _lazy(SUBTRACT, a, b)


def multiply(a, b) -> Lazy | np.ndarray:
    """`a * b`, lazily."""
    return _lazy(MULTIPLY, a, b)


def divide(a, b) -> Lazy | np.ndarray:
    """`a / b`, lazily."""
    return _lazy(DIVIDE, a, b)


def negative(a) -> Lazy | np.ndarray:
    """`-a`, lazily."""
    return _lazy(NEGATIVE, a, None)


def shared(g):
    """`g` as a rule passes it to two parents: evaluated first if it is a lazy cotangent that
    would cost more to compute twice than to store once."""
    if type(g) is Lazy and (g.ops > SHARED_MAX_OPS or len(g.inputs) > SHARED_MAX_INPUTS):
        return evaluate(g)
    return g


def fusable(ct, out, primals) -> bool:
    """May a rule combine `ct` (a cotangent, lazy or not) with `out` and `primals` lazily? All
    must be float arrays of one large shape and dtype, C-contiguous or broadcast scalars
    (every stride 0: a stand-in, or the cotangent of a sum), or numbers."""
    if (
        type(out) is not np.ndarray
        or out.size < FUSE_MIN_SIZE
        or not out.size
        or out.dtype not in _FLOATS
    ):
        return False
    shape, dtype = out.shape, out.dtype
    if not _operand_fits(ct, shape, dtype):
        return False
    for p in primals:
        if type(p) not in _NUMBERS and not _operand_fits(p, shape, dtype):
            return False
    return True


def accumulate(total, ct) -> Lazy | None:
    """`total + ct` for cotangents of one node, one of them lazy, lazily; None when they do not
    fit together (a number, another shape or dtype: the caller adds their values)."""
    lazy = total if type(total) is Lazy else ct
    if _operand_fits(total, lazy.shape, lazy.dtype) and _operand_fits(ct, lazy.shape, lazy.dtype):
        return add(total, ct)
    return None


def materialize(ct):
    """`ct` as an array if it is a lazy cotangent, else itself."""
    return evaluate(ct) if type(ct) is Lazy else ct


def _operand_fits(x, shape, dtype) -> bool:
    if type(x) is Lazy:
        return x.shape == shape and x.dtype == dtype
    return (
        type(x) is np.ndarray
        and x.shape == shape
        and x.dtype == dtype
        and (x.flags.c_contiguous or not any(x.strides))
    )


def _lazy(op: int, a, b) -> Lazy | np.ndarray:
    lead = a if type(a) is Lazy or type(a) is np.ndarray else b
    if not (_fits_lead(a, lead) and _fits_lead(b, lead)):
        # Operands of another shape or dtype: NumPy's broadcasting and promotion, now.
        operands = [materialize(x) for x in (a, b) if x is not None]
        return _UFUNCS[op](*operands)
    inputs = _merge(_inputs(a), _inputs(b))
    ops = 1 + _ops(a) + _ops(b)
    if len(inputs) > MAX_INPUTS or ops > MAX_OPS:  # evaluate the larger operand first
        if type(a) is Lazy and (type(b) is not Lazy or a.ops >= b.ops):
            return _lazy(op, evaluate(a), b)
        return _lazy(op, a, evaluate(b))
    node = Lazy()
    node.op, node.a, node.b = op, a, b
    node.shape, node.dtype, node.size = lead.shape, lead.dtype, lead.size
    node.inputs, node.ops = inputs, ops
    return node


def _fits_lead(x, lead) -> bool:
    """May `x` be an operand of an expression shaped as `lead` (a lazy cotangent or array)?"""
    if x is None or type(x) in _NUMBERS or x is lead:
        return True
    return _operand_fits(x, lead.shape, lead.dtype)


def _inputs(x) -> tuple:
    """The arrays an operand reads element by element (a broadcast scalar is a constant)."""
    if type(x) is Lazy:
        return x.inputs
    if type(x) is np.ndarray and any(x.strides):
        return (x,)
    return ()


def _ops(x) -> int:
    return x.ops if type(x) is Lazy else 0


def _merge(first: tuple, second: tuple) -> tuple:
    if not second or first is second:
        return first
    extra = tuple(a for a in second if not any(a is b for b in first))
    return first + extra if extra else first


# ---------------------------------------------------------------------------------------------
# Evaluation: the expression as a register program, run by blocks.


def evaluate(root: Lazy, refs: int | None = None) -> np.ndarray:
    """Compute a lazy cotangent: a new C-contiguous array (from recycled memory when there is
    some, core/buffers.py).

    With `refs` (how many references to `root` the caller holds, which it drops once this
    returns), the parts of the expression nothing else refers to are taken apart afterwards,
    and the arrays only they held go to the pool of recycled memory: the residuals a fused
    backward pass read, ready for the next call's forward pass.
    """
    nodes = _postorder(root)
    program, constants, const_regs, nregs = _compile(root, nodes)
    out = buffers.empty(root.shape, root.dtype)
    flat_out = out.reshape(-1)
    inputs = [a.reshape(-1) for a in root.inputs]
    key = (program, len(inputs), len(constants), root.dtype.char)
    kernel = _compiled_kernel(key, program, len(inputs), len(constants), root.size)
    if kernel is not None and not _errors_trapped():
        kernel(flat_out, *[_read_only(a) for a in inputs], *constants)
    else:
        _evaluate_numpy(flat_out, inputs, program, constants, const_regs, nregs)
    if refs is not None and buffers.EXACT_REFCOUNTS:
        inputs = None  # (the views refer to their arrays)
        arrays = list(root.inputs)  # (a tuple may be shared with a node that stays)
        root = None
        _take_apart(nodes, refs)
        nodes = None
        for a in arrays:
            buffers.give_if_unshared(a, 2)  # (`arrays`, `a`)
        a = None
    return out


def _errors_trapped() -> bool:
    """Does NumPy raise on (or call a handler for) floating-point errors here (`np.errstate`)?
    Then the NumPy blocks run, which report them as the rule-by-rule pass would; a compiled
    loop does not."""
    return any(mode in ("raise", "call") for mode in np.geterr().values())


def _take_apart(nodes: list, refs: int) -> None:
    """Clear the nodes of an evaluated expression that nothing outside it refers to, parents
    first (a node still referred to keeps its operands alive)."""
    expected = refs + 3  # the root: the caller's, `nodes`, `node`, getrefcount's argument
    for i in range(len(nodes) - 1, -1, -1):
        node = nodes[i]
        if sys.getrefcount(node) == expected:
            node.a = node.b = None
            node.inputs = ()
        expected = 3  # (`nodes`, `node`, getrefcount's argument)
    node = None


def _compile(root: Lazy, nodes: list):
    """The register program of `root`'s expression (`nodes`: its postorder): rows
    `(op, dest, a, b)` in an order where operands come first (root last), registers 0..k-1
    being the k input arrays, then the constants (their values, as NumPy scalars of the
    dtype, and registers), then temporaries reused once their last reader has run."""
    dtype = root.dtype
    inputs = root.inputs
    reg = {id(a): i for i, a in enumerate(inputs)}
    constants: list = []
    const_regs: list = []
    const_reg: dict = {}
    operands = []
    last_use: dict = {}
    for pc, node in enumerate(nodes):
        row = []
        for x in (node.a, node.b) if node.op != NEGATIVE else (node.a,):
            if type(x) is Lazy:
                last_use[id(x)] = pc
                row.append(x)
            elif type(x) is np.ndarray and any(x.strides):
                row.append(reg[id(x)])
            else:
                row.append(
                    _constant_register(x, dtype, len(inputs), constants, const_regs, const_reg)
                )
        operands.append(row)
    free: list = []
    nregs = len(inputs) + len(constants)
    program = []
    for pc, (node, row) in enumerate(zip(nodes, operands)):
        for i, x in enumerate(row):
            if type(x) is Lazy:
                row[i] = reg[id(x)]
                if last_use[id(x)] == pc and row[i] not in free:  # (add(g, g): once)
                    free.append(row[i])
        if free:
            dest = free.pop()
        else:
            dest = nregs
            nregs += 1
        reg[id(node)] = dest
        program.append((node.op, dest, row[0], row[-1]))
    return tuple(program), constants, const_regs, nregs


def _constant_register(x, dtype, ninputs: int, constants: list, regs: list, reg: dict) -> int:
    """The register of the constant `x` (a number, or a broadcast scalar array), added to
    `constants` (its value as a NumPy scalar of `dtype`) and `regs` when new."""
    value = dtype.type(x[(0,) * x.ndim] if type(x) is np.ndarray else x)
    key = value.tobytes()  # (-0.0 and nan are constants of their own)
    if key not in reg:
        reg[key] = ninputs + len(constants)
        constants.append(value)
        regs.append(reg[key])
    return reg[key]


def _postorder(root: Lazy) -> list:
    """The distinct lazy nodes of `root`'s expression, each after its operands (no recursion)."""
    order: list = []
    done: set = set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in done:
            continue
        if expanded:
            done.add(key)
            order.append(node)
            continue
        stack.append((node, True))
        for x in (node.b, node.a):
            if type(x) is Lazy and id(x) not in done:
                stack.append((x, False))
    return order


def _evaluate_numpy(out, inputs, program, constants, const_regs, nregs) -> None:
    n = out.shape[0]
    block = min(NUMPY_BLOCK, n)
    # The first temporary lives in the result's block: nothing else is live when the last
    # operation writes there, but that operation's operands, and an elementwise ufunc may
    # write over its operand. One block less of scratch, in cache already.
    first = len(inputs) + len(constants)
    scratch = np.empty((nregs - first - 1, block), out.dtype)
    views: list = [None] * nregs
    for value, r in zip(constants, const_regs):
        views[r] = value  # (a NumPy scalar of the dtype: NumPy keeps the array's dtype)
    last = len(program) - 1
    for start in range(0, n, block):
        stop = min(start + block, n)
        for j, a in enumerate(inputs):
            views[j] = a[start:stop]
        views[first] = out[start:stop]
        for r in range(first + 1, nregs):
            views[r] = scratch[r - first - 1, : stop - start]
        for pc, (op, dest, a, b) in enumerate(program):
            target = views[first] if pc == last else views[dest]
            if op == NEGATIVE:
                np.negative(views[a], out=target)
            else:
                _UFUNCS[op](views[a], views[b], out=target)


# ---------------------------------------------------------------------------------------------
# Compiled programs: a Numba loop of a program's own, once the program is hot.


class _Savings(threading.local):
    def __init__(self):
        self.ns: dict = {}  # program key -> what its compiled loop would have saved so far


_savings = _Savings()
_kernels: dict = {}  # program key -> its compiled loop (a cache shared by threads)
_sources: dict = {}  # program key -> what _kernel_source says of it


def _compiled_kernel(key: tuple, program, ninputs: int, nconstants: int, elements: int):
    """The compiled loop of `program`, or None while it has not paid for its compilation."""
    saved = elements * _NS_SAVED_PER_ELEMENT_OP * len(program)
    counts = _savings.ns
    if len(counts) > 4096:  # (a bound on what a thread remembers)
        counts.clear()
    total = counts[key] = counts.get(key, 0.0) + saved
    if not kernels_ready(elements, saved / elements):  # (Numba itself is tiered, or off)
        return None
    kernel = _kernels.get(key)
    if kernel is not None:
        return kernel
    source = _sources.get(key)
    if source is None:
        if len(_sources) > 4096:
            _sources.clear()
        source = _sources[key] = _kernel_source(program, ninputs, nconstants)
    text, name, path, cached = source
    if total < COMPILE_NS and not cached:
        return None
    with _numba_lock:
        kernel = _kernels.get(key)
        if kernel is None:
            kernel = _kernels[key] = _compile_kernel(text, name, path)
    return kernel


def _kernel_source(program, ninputs: int, nconstants: int) -> tuple:
    """Python source of one loop computing `program` element by element (registers become
    local variables), a name for it from a hash of the source, the file it is kept in (or
    None), and whether an earlier process left it there (so that Numba's cache has it)."""
    names = [f"x{j}" for j in range(ninputs)] + [f"c{j}" for j in range(nconstants)]
    params = ["out"] + [f"a{j}" for j in range(ninputs)] + names[ninputs:]
    lines = [f"def kernel({', '.join(params)}):", "    for i in range(out.shape[0]):"]
    lines += [f"        x{j} = a{j}[i]" for j in range(ninputs)]
    symbols = ("+", "-", "*", "/")
    for op, dest, a, b in program:
        while len(names) <= dest:
            names.append(f"r{len(names)}")
        if op == NEGATIVE:
            expression = f"-{names[a]}"
        else:
            expression = f"{names[a]} {symbols[op]} {names[b]}"
        lines.append(f"        {names[dest]} = {expression}")
    lines.append(f"        out[i] = {names[program[-1][1]]}")
    source = "\n".join(lines) + "\n"
    import hashlib  # (here: importing it loads OpenSSL, which `import autodiff` need not)

    name = "fused_" + hashlib.sha1(source.encode()).hexdigest()[:20]
    path = _source_path(name)
    return source, name, path, path is not None and os.path.exists(path)


def _source_path(name: str) -> str | None:
    """Where a compiled loop's source is kept, so that Numba's cache finds it in later
    processes; None when no cache directory is writable."""
    directory = _fused_source_dir()
    return None if directory is None else os.path.join(directory, name + ".py")


@functools.cache
def _fused_source_dir() -> str | None:
    try:
        directory = os.path.join(user_cache_dir(), "fused")
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return None
    return directory if os.access(directory, os.W_OK) else None


def _compile_kernel(source: str, name: str, path: str | None):
    numba = _numba_module()
    options = {"error_model": "numpy"}  # (division by zero gives inf/nan, as in NumPy)
    if path is not None:
        try:
            if not os.path.exists(path):
                temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
                with open(temporary, "w") as f:
                    f.write(source)
                os.replace(temporary, path)  # (atomic: processes may race)
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # (Numba's cache finds a kernel's module by its name)
            spec.loader.exec_module(module)
            return numba.njit(cache=True, **options)(module.kernel)
        except (OSError, RuntimeError):  # no writable file or usable cache: compile uncached
            pass
    namespace: dict = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return numba.njit(**options)(namespace["kernel"])


def _read_only(a: np.ndarray) -> np.ndarray:
    """`a`, as a read-only view if it is writable: one Numba type for every input."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a
