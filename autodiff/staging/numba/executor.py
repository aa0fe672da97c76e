"""The Numba executor: a staged graph as compiled segments between NumPy calls.

`compile_numba(graph)` splits the graph's equations into *steps*: maximal runs of
equations that lower (lower.py) become one `@njit` function each (a *segment*, written by
codegen.py), and the others run as NumPy calls, as in the NumPy executor. A Python driver
calls them in order. The cost model keeps two kinds of work in NumPy on purpose:

- transcendental ufuncs (tan, arcsin, ...) on arrays of at least `SIMD_MIN_SIZE` elements,
  where NumPy has its AVX-512 loops (`numpy_simd()`): those beat a compiled loop calling
  the scalar libm 5-10x (the PyPI llvmlite has no SVML). The functions the LLVM backend has
  vectorized versions of (llvm/mathlib.py: exp, log, sin, cos, tanh, ...) are as fast and
  fuse, so they stay in the loops while it is on. Without AVX-512, NumPy's float64 loops are
  libm too, and the fused loop wins by not writing the result to memory.
  `benchmarks/bench_crossover.py` measures both sides per function;
- a run of pure data movement (getitem, transpose, reshape, ...) with nothing to compute:
  NumPy makes views of it for free, a segment would pay a call.

A gather of a vector by constant positions that are all in bounds (a sparse Jacobian's
decompression) becomes `gather_known`, read by a loop (`known_gathers`), where NumPy would
check every position at every call.

Shape-() values cross into segments as scalars (`_scalar`) and come out as NumPy scalars
of their dtype. Each segment's source is compiled by LLVM directly when the translator of
autodiff/staging/llvm/ handles it (at once, or from its disk cache), else by Numba (at the
first call, or from cache.py's disk cache): one lowering, two compilers, per segment.
`AUTODIFF_LLVM=0` (or `set_llvm_enabled(False)`) leaves every segment to Numba. The driver
says where its segments went (`llvm_segments`, `numba_segments`, and why each Numba one is
not LLVM's: `llvm_fallbacks`); a graph whose segments all translate never imports Numba.
A segment Numba cannot compile makes the whole graph fall back to the NumPy executor, with
the reason kept in `graph.numba_failure` (tests assert there is none on the op table).
"""

from __future__ import annotations

import os
import threading
import time
import warnings

import numpy as np
from numpy import ndarray

from autodiff.core.abstract import ShapedArray
from autodiff.core.primitive import Primitive, all_primitives
from autodiff.ops.gather_scatter import ARG, getitem_p
from autodiff.staging.executor import compile_graph
from autodiff.staging.ir import Equation, Graph, Literal, Var
from autodiff.staging.llvm import engine as llvm_engine
from autodiff.staging.llvm import mathlib, runtime
from autodiff.staging.llvm import module as llvm_module
from autodiff.staging.llvm.translate import Param, translate
from autodiff.staging.llvm.values import FAST_FLAGS
from autodiff.staging.numba import approx, cache
from autodiff.staging.numba.codegen import Band, write_function
from autodiff.staging.numba.lower import ELEMENTWISE, define_ufuncs, lowering_of
from autodiff.staging.numba.statements import STATEMENTS
from autodiff.staging.passes import _map_sub_graphs, _replace

try:
    from numpy._core._multiarray_umath import __cpu_features__ as _CPU_FEATURES
except ImportError:  # (another NumPy layout: assume its SIMD loops are there)
    _CPU_FEATURES = {}

# Elementwise primitives NumPy computes with SIMD loops (see the module docstring).
TRANSCENDENTAL = frozenset(
    "exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh "
    "arcsinh arccosh arctanh arctan2 hypot logaddexp logaddexp2 power cbrt".split()
)
SIMD_MIN_SIZE = 1 << 14
_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64))
# Arrays of at least this many elements are allocated by the driver (and reused across calls
# when nothing keeps them): see codegen.Writer.buffers.
BUFFER_MIN_SIZE = 1 << 14
# Pure data movement: a run of only these stays in NumPy (views, no copies).
_MOVEMENT = frozenset(
    "getitem transpose reshape broadcast_to copy stop_gradient unstack expand_reduced".split()
)
# Written-out constant inputs up to this many elements are checked for one repeated value
# (and for a band: below).
UNIFORM_CHECK_SIZE = 1 << 20
# Constant inputs of at least this many elements are checked for a diagonal band (_band).
BAND_MIN_SIZE = 64
# Views that end a segment's run of equations run in NumPy after it, on its output.
_TRAILING_VIEWS = frozenset("transpose reshape broadcast_to".split())
OPTIONS = {"error_model": "numpy", "boundscheck": False}
# AUTODIFF_LLVM=0: every segment compiles with Numba (read once; set_llvm_enabled switches).
_LLVM = [os.environ.get("AUTODIFF_LLVM", "1") != "0"]
_LLVM_LOCK = threading.Lock()
# jit(fastmath=True) under Numba: the LLVM backend's flags (llvm/values.py: why no reassoc).
FASTMATH = set(FAST_FLAGS.split())


def _ready() -> None:
    if not ELEMENTWISE.get("sin"):  # (every primitive is defined by the first compile)
        define_ufuncs(all_primitives())


def numpy_simd() -> bool:
    """Does NumPy run its float64 transcendental loops with AVX-512 here (X86_V4)? Without
    it they are scalar libm loops, no faster than Numba's (benchmarks/bench_crossover.py)."""
    return bool(_CPU_FEATURES.get("AVX512_SKX", True))


def kind_of(eqn) -> str | None:
    """How the Numba backend runs `eqn`: "elementwise", "reduction", "statement", or None
    (a NumPy call)."""
    _ready()
    kind = lowering_of(eqn, STATEMENTS)
    if (
        kind == "elementwise"
        and eqn.prim.name in TRANSCENDENTAL
        and eqn.outputs[0].aval.size >= SIMD_MIN_SIZE
        and numpy_simd()
        and not _vectorized(eqn)
    ):
        return None
    return kind


def _vectorized(eqn) -> bool:
    """Does the LLVM backend compute `eqn` with a vectorized function of its own (mathlib.py:
    as fast as NumPy's SIMD loops, and fused with its neighbours)?"""
    return (
        llvm_enabled()
        and eqn.prim.name in mathlib.NAMES
        and all(v.aval.dtype in _FLOATS for v in eqn.outputs)
        and all(x.aval.dtype in _FLOATS for x in eqn.inputs)
    )


def split_as_slices(graph: Graph) -> Graph:
    """`graph` with each `split` written as one basic-slice `getitem` per part: those lower
    as elementwise reads (lower.py) and fuse into the loops that use them, where a `split`
    would run in NumPy between two segments (`roll` is a split and a concatenate)."""
    graph = _map_sub_graphs(graph, split_as_slices)
    equations, changed = [], False
    for eqn in graph.equations:
        x = eqn.inputs[0] if eqn.inputs else None
        if eqn.prim.name != "split" or type(x) is not Var:
            equations.append(eqn)
            continue
        ndim = x.aval.ndim
        axis = eqn.params["axis"] % ndim
        for (start, stop), out in zip(eqn.params["ranges"], eqn.outputs):
            index = tuple(slice(start, stop) if k == axis else slice(None) for k in range(ndim))
            equations.append(Equation(getitem_p, [x], [out], {"index": index}))
        changed = True
    return _replace(graph, equations) if changed else graph


# A vector read at the positions a constant lists, every one in bounds (checked once, when
# the graph compiles: `known_gathers`): a loop reads it (lower.py), where NumPy's indexing
# checks each position at every call. Only compiled graphs have it.
gather_known_p = Primitive("gather_known", differentiable=False)
gather_known_p.impl = lambda x, positions: x[positions]
gather_known_p.abstract_eval = lambda x, positions: ShapedArray(positions.shape, x.dtype)


def scalar_consts_inlined(graph: Graph) -> Graph:
    """`graph` (and its sub-graphs) with its shape-() constants written into the equations
    that read them (as literals of their dtype): compiled code then holds them as numbers,
    where each would be one more argument of every call (a Taylor series' scaled
    coefficients are hundreds of them). Constants that are also outputs stay."""
    graph = _map_sub_graphs(graph, scalar_consts_inlined)
    outputs = {v for v in graph.out_vars if type(v) is Var}
    inline = {
        var: Literal(np.asarray(value)[()])
        for var, value in graph.consts
        if isinstance(value, (ndarray, np.generic))
        and np.shape(value) == ()
        and np.asarray(value).dtype.kind in "biuf"
        and var not in outputs
    }
    if not inline:
        return graph
    equations = [
        Equation(eqn.prim, [inline.get(x, x) for x in eqn.inputs], eqn.outputs, eqn.params)
        for eqn in graph.equations
    ]
    consts = [(var, value) for var, value in graph.consts if var not in inline]
    return _replace(graph, equations, consts=consts)


def sub_graph_consts_lifted(graph: Graph) -> Graph:
    """`graph` with the constants of its loops' bodies (scan, while: arrays their functions
    closed over) passed in as operands, constants of `graph` itself: a body with constants
    of its own is not written inline (codegen.graph_lowerable), and its loop would run in
    NumPy, step by step."""
    graph = _map_sub_graphs(graph, sub_graph_consts_lifted)
    consts = list(graph.consts)
    equations, changed = [], False
    for eqn in graph.equations:
        lifted = _lifted(eqn)
        if lifted is not None:
            eqn, new_consts = lifted
            consts.extend(new_consts)
            changed = True
        equations.append(eqn)
    return _replace(graph, equations, consts=consts) if changed else graph


def _without_consts(graph: Graph, position: int) -> Graph:
    """`graph` taking its constants as inputs, inserted at `position` among its inputs."""
    in_vars = list(graph.in_vars)
    in_vars[position:position] = [var for var, _ in graph.consts]
    return Graph(
        in_vars, [], graph.equations, graph.out_vars, graph.in_tree, graph.out_tree, graph.name
    )


def _lifted(eqn):
    """A scan or while equation with its bodies' constants as operands, and those constants
    ((var, value) pairs, for the graph holding it); None when there are none."""
    params, inputs = dict(eqn.params), list(eqn.inputs)
    if eqn.prim.name == "scan" and eqn.params["body"].consts:
        body = params["body"]
        params["body"] = _without_consts(body, len(body.in_vars))
        return Equation(eqn.prim, inputs + [v for v, _ in body.consts], eqn.outputs, params), list(
            body.consts
        )
    if eqn.prim.name != "while":
        return None
    cond, body = params["cond_graph"], params["body_graph"]
    if not (cond.consts or body.consts):
        return None
    n_carry, n_cond = params["n_carry"], params["n_cond"]
    params["cond_graph"] = _without_consts(cond, len(cond.in_vars))
    params["body_graph"] = _without_consts(body, len(body.in_vars))
    params["n_cond"] = n_cond + len(cond.consts)
    at = n_carry + n_cond
    inputs[at:at] = [v for v, _ in cond.consts]
    inputs += [v for v, _ in body.consts]
    return Equation(eqn.prim, inputs, eqn.outputs, params), list(cond.consts) + list(body.consts)


def known_gathers(graph: Graph) -> Graph:
    """`graph` with each gather of a vector by a constant integer array (an index of the
    equation, or a constant of the graph) whose positions are all in bounds (none negative)
    as a `gather_known` equation of the vector and the positions: a constant, of 32 bits
    when they fit (half the memory a loop reads)."""
    consts = list(graph.consts)
    values = dict(consts)
    equations, changed = [], False
    for eqn in graph.equations:
        positions = _known_positions(eqn, values)
        if positions is None:
            equations.append(eqn)
            continue
        if positions.dtype.itemsize > 4 and positions.size and positions.max() < 2**31:
            positions = positions.astype(np.int32)
        var = Var(ShapedArray(positions.shape, positions.dtype))
        consts.append((var, positions))
        equations.append(Equation(gather_known_p, [eqn.inputs[0], var], eqn.outputs, {}))
        changed = True
    return _replace(graph, equations, consts=consts) if changed else graph


def _known_positions(eqn, consts: dict) -> ndarray | None:
    """A gather's positions when they are a constant, all in bounds; else None."""
    if eqn.prim is not getitem_p or len(eqn.params["index"]) != 1:
        return None
    x, (index,) = eqn.inputs[0], eqn.params["index"]
    if index is ARG and len(eqn.inputs) == 2:
        value = consts.get(eqn.inputs[1])
    elif type(index) is ndarray and len(eqn.inputs) == 1:
        value = index
    else:
        return None
    if type(x) is not Var or x.aval.ndim != 1:
        return None
    if type(value) is not ndarray or value.dtype.kind not in "iu":
        return None
    if value.size and not (value.min() >= 0 and value.max() < x.aval.shape[0]):
        return None
    return value


def _steps(graph: Graph) -> list:
    """[("numpy", eqn) | ("segment", [eqns])] in order."""
    steps: list = []
    run: list = []

    def flush():
        tail = []  # (views ending the run: NumPy's are free, a segment's output a copy)
        while run and run[-1].prim.name in _TRAILING_VIEWS:
            tail.append(run.pop())
        if run and any(e.prim.name not in _MOVEMENT for e in run):
            steps.append(("segment", list(run)))
        else:
            steps.extend(("numpy", e) for e in run)
        steps.extend(("numpy", e) for e in reversed(tail))
        run.clear()

    for eqn in graph.equations:
        if kind_of(eqn) is None:
            flush()
            steps.append(("numpy", eqn))
        else:
            run.append(eqn)
    flush()
    return steps


def _live(graph: Graph, steps: list) -> list:
    """For each segment step, (inputs, outputs): the variables it reads from before and
    those read after it (by later steps or as the graph's outputs)."""
    read_after: list = [set() for _ in steps]
    later: set = {v for v in graph.out_vars if type(v) is Var}
    for k in range(len(steps) - 1, -1, -1):
        read_after[k] = set(later)
        kind, item = steps[k]
        for eqn in item if kind == "segment" else [item]:
            later.update(x for x in eqn.inputs if type(x) is Var)
    result = []
    for k, (kind, item) in enumerate(steps):
        if kind != "segment":
            result.append(None)
            continue
        defined: set = set()
        inputs: list = []
        seen: set = set()
        for eqn in item:
            for x in eqn.inputs:
                if type(x) is Var and x not in defined and x not in seen:
                    seen.add(x)
                    inputs.append(x)
            defined.update(eqn.outputs)
        outputs = [v for eqn in item for v in eqn.outputs if v in read_after[k]]
        result.append((inputs, outputs))
    return result


def _scalar(x):
    """A shape-() value as a scalar for a segment (a 0-d array's element)."""
    return x[()] if type(x) is ndarray else x


def compile_numba(graph: Graph, fastmath: bool = False):
    """A function of the graph's flat inputs returning its flat outputs (a list), running
    its segments compiled by LLVM (the LLVM backend, autodiff/staging/llvm/) or, those it
    cannot translate, by Numba. Its first call compiles what Numba compiles; if that fails,
    the graph runs on the NumPy executor from then on (see the module docstring).

    Example:
        >>> import numpy as np, autodiff.numpy as anp
        >>> from autodiff.staging.api import make_graph
        >>> run = compile_numba(make_graph(lambda x: anp.sin(x) * 2.0)(np.zeros(2)))
        >>> run(np.array([0.0, np.pi / 2]))
        [array([0., 2.])]
    """
    _ready()
    original, graph = graph, split_as_slices(graph)  # (the same inputs and outputs)
    graph = known_gathers(sub_graph_consts_lifted(scalar_consts_inlined(graph)))
    steps = _steps(graph)
    live = _live(graph, steps)
    written, buffers, uniform = {}, {}, {}
    for k, ((kind, item), io) in enumerate(zip(steps, live)):
        if kind == "segment":
            uniform[k] = _uniform_inputs(graph, item, io[0])
            bands = _band_inputs(graph, item, io[0], uniform[k])
            source, buffers[k] = write_function(
                f"segment{k}", item, io[0], io[1], STATEMENTS, BUFFER_MIN_SIZE, uniform[k], bands
            )
            written[f"segment{k}"] = (source, k)
    reasons: dict = {}  # segment -> why it is not LLVM's (tests and benchmarks read them)
    segments = {}
    if llvm_enabled():
        segments = _compile_llvm(written, live, buffers, uniform, fastmath, reasons)
    rest = [name for name in written if name not in segments]
    if rest:
        source, inline = _module_source([written[name][0] for name in rest])
        options = dict(OPTIONS, fastmath=FASTMATH if fastmath else False)
        segments.update(cache.load(source, inline + rest, options, inline))
    driver = _write_driver(graph, steps, live, segments, buffers, uniform)
    driver.source = _module_source([source for source, _ in written.values()])[0]
    driver.llvm_segments = len(written) - len(rest)
    driver.numba_segments = len(rest)
    driver.llvm_fallbacks = {name: reasons.get(name, "AUTODIFF_LLVM=0") for name in rest}
    # (the machine code the driver runs: freed with the driver, whoever drops it)
    code = [getattr(f, "compiled", None) for f in segments.values()]
    driver.llvm_code = list({id(c): c for c in code if c is not None}.values())
    return _FirstCall(original, driver)


def _module_source(functions: list) -> tuple[str, list]:
    """The module holding the generated `functions` (with approx.py's vectorizable exp and
    tanh when they call them), and the names of those it inlines."""
    sources = ["import math\n\nimport numpy as np\n", *functions]
    inline = [f for f in approx.FUNCTIONS if any(f"{f}(" in part for part in sources)]
    if inline:
        sources.insert(1, approx.SOURCE)
    return "\n\n".join(sources), inline


def llvm_enabled() -> bool:
    """Does `compile_numba` compile segments with LLVM (AUTODIFF_LLVM, not "0")?"""
    return _LLVM[0]


def llvm_ready() -> bool:
    """Is LLVM set up in this process already (its one-off cost paid)?"""
    return llvm_engine.ready()


def set_llvm_enabled(enabled: bool) -> bool:
    """Switch the LLVM backend on or off (tests: the Numba path alone); returns the setting
    it replaces."""
    with _LLVM_LOCK:
        previous, _LLVM[0] = _LLVM[0], bool(enabled)
    return previous


def _compile_llvm(
    written: dict, live: list, buffers: dict, uniform: dict, fastmath: bool, reasons: dict
):
    """{name: callable} for the segments LLVM compiles: those that translate (an
    `Unsupported` construct, or any other failure, leaves a segment to Numba; `reasons`
    gets why)."""
    parts = {}
    start = time.perf_counter()
    layout = runtime.layout()
    layout.vector_bits = llvm_engine.vector_bits()
    for name, (source, k) in written.items():
        inputs, outputs = live[k]
        params = [
            Param(x.aval.dtype, None if x.aval.ndim == 0 or x in uniform[k] else x.aval.shape)
            for x in inputs
        ] + [Param(v.aval.dtype, v.aval.shape) for v in buffers[k]]
        avals = [(v.aval.dtype, v.aval.shape) for v in outputs]
        try:
            parts[name] = translate(source, name, params, avals, layout, fastmath)
        except Exception as error:  # (Unsupported, or a translator error: Numba compiles it)
            reasons[name] = f"{type(error).__name__}: {error}"
    llvm_engine.TIMES["translate"] += time.perf_counter() - start
    compiled = llvm_module.compile_segments(list(parts.values()), fastmath)
    reasons.update((name, "LLVM could not compile it") for name in parts if name not in compiled)
    return compiled


def answered_once() -> None:
    """A compiled graph has answered its first call: what its code calls through slots and
    does not have yet (gemm.py's kernels, vector math: `module.compile_wanted`) compiles in
    the background now."""
    llvm_module.compile_wanted()


class _FirstCall:
    """The driver's first call: Numba compiles (or loads) its segments then (LLVM's are
    compiled already); a failure falls back to the NumPy executor. Later calls go to the
    driver directly. Where the segments went: `llvm_segments`, `numba_segments`,
    `llvm_fallbacks` (as on the driver)."""

    def __init__(self, graph: Graph, driver):
        self.graph = graph
        self.driver = driver
        self.source = driver.source
        self.llvm_segments = driver.llvm_segments
        self.numba_segments = driver.numba_segments
        self.llvm_fallbacks = driver.llvm_fallbacks

    def __call__(self, *args):
        graph = self.graph
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (Numba's performance hints)
                outs = self.driver(*args)
        except Exception as error:  # (any failure: the NumPy executor answers)
            graph.numba_failure = f"{type(error).__name__}: {error}"
            graph.compiled = compile_graph(graph)
            return graph.compiled(*args)
        graph.compiled = self.driver
        return outs


def _uniform_inputs(graph: Graph, equations: list, inputs: list) -> frozenset:
    """The segment's inputs that are constants of one repeated value (a scalar broadcast:
    every stride 0) and that only its loops read: they go in as that scalar (a loop reading
    a stride-0 array is not vectorized)."""
    consts = dict(graph.consts)
    found = {x for x in inputs if _repeats_one_value(consts.get(x))}
    return frozenset(_read_by_loops_only(equations, found))


def _repeats_one_value(value) -> bool:
    """Is `value` an array of one value repeated, bit for bit (a broadcast, strides 0, or
    written out: a gradient's seed scaled, a basis's sums)?"""
    if type(value) is not ndarray or not value.ndim or not value.size:
        return False
    if not any(value.strides):
        return True
    if value.size > UNIFORM_CHECK_SIZE or value.dtype.kind not in "fiub":
        return False
    flat = np.ascontiguousarray(value).reshape(-1)
    return bool(np.all(flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)))


def _read_by_loops_only(equations: list, found: set) -> set:
    """Those of `found` that only the loops of `equations` read (elementwise, reductions)."""
    for eqn in equations:
        if found and kind_of(eqn) not in ("elementwise", "reduction"):
            found.difference_update(eqn.inputs)
        elif found and eqn.prim.name == "transpose":
            found.difference_update(eqn.inputs)
    return found


def _band_inputs(graph: Graph, equations: list, inputs: list, uniform: frozenset) -> dict:
    """{input: Band} for the segment's constant inputs that are zero but on one diagonal of
    one value (codegen.Band), read only by its loops: they read the formula instead of
    memory (a basis of a Jacobian or Hessian, sliced and scaled: a Hessian's loops read
    several of them). The arrays still go in (nothing else changes)."""
    consts = dict(graph.consts)
    bands = {}
    for x in inputs:
        value = consts.get(x)
        if x in uniform or type(value) is not ndarray:
            continue
        if not BAND_MIN_SIZE <= value.size <= UNIFORM_CHECK_SIZE:
            continue
        band = _band(value)
        if band is not None:
            bands[x] = band
    keep = _read_by_loops_only(equations, set(bands))
    return {x: band for x, band in bands.items() if x in keep}


def _band(value: ndarray) -> Band | None:
    """`value` as a Band, if it is one: two axes longer than 1 (any others of length 1),
    its nonzeros the same value on consecutive rows of one diagonal."""
    axes = [a for a, n in enumerate(value.shape) if n > 1]
    if len(axes) != 2 or value.dtype.kind not in "fiub":
        return None
    matrix = value.reshape(value.shape[axes[0]], value.shape[axes[1]])
    rows, cols = np.nonzero(matrix)
    if not rows.size:
        return Band(axes[0], axes[1], 0, 0, 0, 0)
    offset, first = int(cols[0] - rows[0]), matrix[rows[0], cols[0]]
    lo, hi = int(rows[0]), int(rows[-1]) + 1
    if (
        rows.size != hi - lo
        or np.any(cols - rows != offset)
        or np.any(rows != np.arange(lo, hi))
        or np.any(matrix[rows, cols] != first)
        or np.isnan(first)
        or (value.dtype.kind == "f" and np.signbit(matrix[matrix == 0]).any())  # (-0.0)
    ):
        return None
    return Band(axes[0], axes[1], offset, lo, hi, first.item())


class _DriverNames:
    """The names the driver's source uses: its locals (`v0`, `v1`, ...) and the globals it
    reads (constants, literals, segments, dtypes), numbered in the order they are asked for."""

    def __init__(self):
        self.names: dict = {}
        self.globals: dict = {"_scalar": _scalar, "_empty": np.empty}

    def global_(self, prefix: str, value) -> str:
        key = f"{prefix}{len(self.globals)}"
        self.globals[key] = value
        return key

    def local(self, x) -> str:
        if type(x) is Literal:
            return self.global_("l", x.value)
        if x not in self.names:
            self.names[x] = f"v{len(self.names)}"
        return self.names[x]


def _write_driver(
    graph: Graph, steps: list, live: list, segments: dict, buffers: dict, uniform: dict
):
    ns = _DriverNames()
    pooled = _poolable(graph, steps, buffers)
    for k, (kind, eqn) in enumerate(steps):  # (ufuncs on large arrays: into pooled memory)
        if kind == "numpy" and _into_buffer(eqn) and eqn.outputs[0] in pooled:
            buffers[k] = [eqn.outputs[0]]
    pool = [v for k in sorted(buffers) for v in buffers[k] if v in pooled]
    slot = {v: f"b{i}" for i, v in enumerate(pool)}
    params = [ns.local(v) for v in graph.in_vars]
    for var, value in graph.consts:
        ns.names[var] = ns.global_("c", value)
    lines = [f"def run({', '.join(params)}):"]
    if pool:
        lines += _take_pool(pool, slot, ns.globals)
    for k, ((kind, item), io) in enumerate(zip(steps, live)):
        lines += _step_lines(graph, k, kind, item, io, segments, buffers, uniform, slot, ns)
    if pool:
        lines.append("    _pool.append(pool)")
    lines.append(f"    return [{', '.join(ns.local(x) for x in graph.out_vars)}]")
    source = "\n".join(lines) + "\n"
    local_ns: dict = {}
    exec(compile(source, f"<numba driver {graph.name}>", "exec"), ns.globals, local_ns)
    run = local_ns["run"]
    run.source = source
    return run


def _take_pool(pool: list, slot: dict, globals_: dict) -> list:
    """The driver's lines taking its pooled buffers (a set a previous call returned, or new
    ones), and the globals they read."""
    avals = [(v.aval.shape, v.aval.dtype) for v in pool]
    globals_["_pool"] = []
    globals_["_make"] = lambda: tuple(np.empty(shape, dtype) for shape, dtype in avals)
    return [
        "    try:",
        "        pool = _pool.pop()",
        "    except IndexError:",
        "        pool = _make()",
        f"    {''.join(slot[v] + ', ' for v in pool)}= pool",
    ]


def _step_lines(
    graph: Graph, k: int, kind: str, item, io: tuple, segments, buffers, uniform, slot, ns
) -> list:
    """The driver's lines for step `k`: a NumPy call (into a pooled buffer, or not), or the
    call of a compiled segment that has outputs."""
    if kind == "numpy" and k in buffers:
        return ["    " + _ufunc_into(item, slot[item.outputs[0]], ns.local, ns.global_)]
    if kind == "numpy":
        return ["    " + _numpy_statement(item, ns.local, ns.global_)]
    if not io[1]:
        return []
    fn = ns.global_("segment", segments[f"segment{k}"])
    repeated = {x: ns.global_("u", dict(graph.consts)[x].flat[0]) for x in uniform[k]}
    return _segment_call(fn, io, buffers[k], slot, ns.local, ns.global_, repeated)


def _segment_call(
    fn: str, io: tuple, buffers: list, slot: dict, local, global_, repeated: dict
) -> list:
    """The driver's lines calling a segment: shape-() inputs as scalars, uniform constants as
    the scalar they repeat (`repeated`), its buffers (pooled, or new), and its shape-()
    results as NumPy scalars of their dtype."""
    inputs, outputs = io
    args = [
        repeated[x] if x in repeated else f"_scalar({local(x)})" if x.aval.ndim == 0 else local(x)
        for x in inputs
    ]
    for v in buffers:
        if v in slot:
            args.append(slot[v])
        else:
            shape, dtype = global_("s", v.aval.shape), global_("d", v.aval.dtype)
            args.append(f"_empty({shape}, {dtype})")
    targets = [local(v) for v in outputs]
    lines = [f"    {''.join(t + ', ' for t in targets)}= {fn}({', '.join(args)})"]
    for v, t in zip(outputs, targets):
        if v.aval.ndim == 0:
            lines.append(f"    {t} = {global_('dtype', v.aval.dtype.type)}({t})")
    return lines


def _into_buffer(eqn) -> bool:
    """A NumPy step that can write into a given array: a ufunc of one output, no params."""
    return (
        isinstance(eqn.prim.impl, np.ufunc)
        and eqn.prim.impl.nout == 1
        and not eqn.params
        and eqn.outputs[0].aval.size >= BUFFER_MIN_SIZE
        and all(type(x) is Var and x.aval.shape == eqn.outputs[0].aval.shape for x in eqn.inputs)
    )


def _ufunc_into(eqn, buffer: str, local, global_) -> str:
    impl = global_("impl", eqn.prim.impl)
    args = ", ".join(local(x) for x in eqn.inputs)
    return f"{local(eqn.outputs[0])} = {impl}({args}, out={buffer})"


def _poolable(graph: Graph, steps: list, buffers: dict) -> set:
    """The large intermediates whose memory may be reused from one call to the next: not
    outputs, and read only by equations whose results never share memory with their
    operands (so no view of them escapes the call)."""
    candidates = {v for vs in buffers.values() for v in vs}
    candidates.update(e.outputs[0] for kind, e in steps if kind == "numpy" and _into_buffer(e))
    candidates -= {v for v in graph.out_vars if type(v) is Var}
    for kind, item in steps:
        for eqn in item if kind == "segment" else [item]:
            fresh = _fresh_result(eqn, kind)
            for x in eqn.inputs:
                if x in candidates and not fresh:
                    candidates.discard(x)
    return candidates


def _fresh_result(eqn, kind: str) -> bool:
    """Are `eqn`'s results new memory (never a view of an operand)?"""
    if kind == "numpy":
        return isinstance(eqn.prim.impl, np.ufunc)
    name = eqn.prim.name
    if name in ("matmul", "dot"):
        return True
    return kind_of(eqn) in ("elementwise", "reduction") and name != "transpose"


def _numpy_statement(eqn, local, global_) -> str:
    args = [local(x) for x in eqn.inputs]
    impl = global_("impl", eqn.prim.impl)
    for key, value in eqn.params.items():
        args.append(f"{key}={global_('p', value)}")
    outs = [local(v) for v in eqn.outputs]
    if eqn.prim.multiple_results:
        target = "".join(o + ", " for o in outs) or "_"
    else:
        target = outs[0]
    return f"{target} = {impl}({', '.join(args)})"


__all__ = [
    "OPTIONS",
    "SIMD_MIN_SIZE",
    "TRANSCENDENTAL",
    "answered_once",
    "compile_numba",
    "kind_of",
    "llvm_enabled",
    "set_llvm_enabled",
]
