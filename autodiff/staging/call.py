"""`call_p`: a staged graph applied to values — how a jitted function meets the transforms.

A jitted function called on plain arrays runs its executor directly. Called on tracers (a
transform outside the jit: `grad(jit(f))`, `vmap(jit(f))`, `jvp(jit(f))`) or on Tensors that
require grad (the torch face), it binds `call_p`, whose rules *re-stage*: the jvp of a staged
call is a call of the staged jvp of its graph, its vjp a call of the staged pullback, its
batch rule a call of the staged vmap. Derived graphs are optimized, compiled and cached on
the graph they come from, so a transform of a jitted function is itself compiled.

The pullback recomputes the forward computation inside the backward graph (as `checkpoint`
does): the backward graph is self-contained, and `jit(grad(f))`, where the whole gradient is
one graph, is the form that computes each value once.
"""

from __future__ import annotations

import copy
import gc
import queue
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from time import perf_counter

import numpy as np
from numpy import ndarray

from autodiff.core.abstract import ShapedArray
from autodiff.core.dtypes import is_inexact
from autodiff.core.primitive import Primitive, bind
from autodiff.core.pytree import tree_flatten
from autodiff.core.tensor import TENSOR_TYPES
from autodiff.core.trace import new_trace
from autodiff.forward_ad.trace import ForwardTrace, ForwardTracer
from autodiff.kernels._numba import _import_numba, numba_eager, numba_loaded
from autodiff.ops.sparsity import THROUGH_GRAPH
from autodiff.ops.structural import broadcast_to, move_to_front
from autodiff.reverse.engine import backward_pass
from autodiff.reverse.graph import ReverseTrace
from autodiff.staging.executor import compile_graph, interpret_graph
from autodiff.staging.ir import Equation, Graph, eval_graph, sub_graphs
from autodiff.staging.numba.executor import (  # (Numba, llvmlite: at a first call)
    answered_once,
    compile_numba,
    kind_of,
    llvm_enabled,
    llvm_ready,
)
from autodiff.staging.passes import _map_sub_graphs, _replace, inline_calls, optimize
from autodiff.staging.reroll import rerolled
from autodiff.staging.trace import stage
from autodiff.vmap.trace import BatchTrace, BatchTracer

# A graph of this many equations is compiled at once (~15 us an equation: ~30 ms); a larger
# one runs its steps interpreted until it has run COMPILE_AFTER_CALLS times (what the
# interpreter loses per call and equation, ~0.4 us, has then paid for compiling it).
COMPILE_AT_ONCE = 2000
COMPILE_AFTER_CALLS = 40

# ---------------------------------------------------------------------------------------------
# The compiled backend: what compiling costs and may cost, and when it happens.

# What compiling a graph with Numba costs, estimated (s): loading Numba once per process,
# then a fixed cost and a cost per equation (Numba's front end types every scalar operation:
# ~3 ms each on this class of machine; benchmarks/README.md, first calls).
NUMBA_IMPORT_S = 0.3
NUMBA_COMPILE_S = 0.1
NUMBA_PER_EQUATION_S = 0.003
# ... and with LLVM directly (staging/llvm/: a graph with no complex values, whose segments
# all translate): setting LLVM up once per process, a fixed cost per graph (a context, an
# engine, the pass pipeline), and a cost per equation (translation, optimization, code).
LLVM_SETUP_S = 0.015
LLVM_COMPILE_S = 0.015
LLVM_PER_EQUATION_S = 0.0001
# Under the default backend, a graph estimated to compile within this (s) compiles at its
# first call, in the caller's thread: a pause no one can tell from the call itself.
COMPILE_AT_ONCE_S = 0.05
# Under the default backend, a signature's compile starts in the background once it has been
# called TIER_UP_CALL times (a repetition) and its calls have taken TIER_UP_FRACTION of the
# estimated compile cost: a function called once never compiles, and a compile, which takes
# a core and a share of the GIL for its length, is spent on functions that keep running
# (the ski-rental rule, on that share); a loop switches within its first fraction of a
# second, and never waits for the compiler.
TIER_UP_CALL = 2
TIER_UP_FRACTION = 0.1
# The compile budget: a graph with more equations than this, or with a compiled segment (one
# generated function) of more, runs on the NumPy executor under every backend, with a
# warning. Numba's memory grows faster than linearly with its largest function, its time with
# the whole graph (issue 40's closing report: the unrolled RK4 gradient at 10 to 80 steps, in
# one segment and split into many).
BUDGET_EQUATIONS = 4000
BUDGET_SEGMENT_EQUATIONS = 1500
# LLVM's budget: its memory and time grow about linearly (one pass over the statements, the
# light pipeline for a huge module: llvm/engine.py), so only the whole graph's size counts.
LLVM_BUDGET_EQUATIONS = 50_000
# While a background compile runs, the interpreter's switch interval (s): the caller's thread
# waits at most about this long for the GIL the compiling thread holds (Python's default is
# 5 ms, many calls' length). Restored when the compile ends.
TIER_UP_SWITCH_INTERVAL_S = 1e-4
# ... and the objects that exist then frozen out of the garbage collector (`_Quietly`).
TIER_UP_FREEZE_GC = True
# Graphs holding compiled code at once, at most (see _Resident). Numba returns no memory when
# its code is dropped (its JIT engine never removes a module), so under Numba this bounds our
# references only; a backend whose code is freed with its last reference bounds memory by it.
MAX_RESIDENT = 256


def run_graph(graph: Graph, *args) -> list:
    """`graph`'s outputs for plain values, by its executor (see staging/executor.py and
    staging/numba/executor.py)."""
    run = graph.compiled
    if run is None:
        run = _executor(graph)
    return run(*args)


def _executor(graph: Graph):
    if graph.backend != "numpy" and graph.numba_failure is None:
        _check_budget(graph)
    if graph.backend == "numpy" or graph.numba_failure is not None:
        return _numpy_executor(graph)
    if (
        graph.backend == "numba"
        or numba_eager()
        or compile_cost_estimate(graph) <= COMPILE_AT_ONCE_S
    ):
        return _compile_now(graph)
    graph.compiled = _Tiered(graph)
    return graph.compiled


def compile_backend(graph: Graph) -> Callable:
    """`graph` compiled: a function of its flat inputs returning its flat outputs, which
    compiles (or loads from the disk cache) at its first call and raises if it cannot. The
    one place that says what compiling is; the tiers call it, then call the result once, in
    the caller's thread or in the background, before it serves calls."""
    return compile_numba(compiled_form(graph), graph.fastmath).driver  # (not its fallback)


def compiled_form(graph: Graph) -> Graph:
    """What the backend compiles for `graph`: its custom rules' calls inlined
    (`custom_calls_inlined`), and its runs of repeated blocks (an unrolled loop's steps)
    rerolled into scans (staging/reroll.py); once per graph."""
    key = ("custom calls inlined",)
    if key not in graph.derived:  # (None: `graph` itself, which would otherwise hold itself)
        inlined = custom_calls_inlined(graph)
        graph.derived[key] = None if inlined is graph else inlined
        if inlined is not graph:
            inlined.backend, inlined.fastmath = graph.backend, graph.fastmath
    inlined = graph.derived[key] or graph
    return rerolled(inlined, _lowerable)


# Calls of functions with custom derivative rules (custom.py): a compiled graph only
# evaluates, so each can be its function's own equations (staged for the call's operands),
# which the backend compiles, where the call would run the function from Python.
_CUSTOM_CALLS = frozenset(("custom_jvp_call", "custom_vjp_call"))


def custom_calls_inlined(graph: Graph) -> Graph:
    """`graph` (and its sub-graphs) with each custom_jvp/custom_vjp call replaced by its
    function's graph, staged for the call's operands (a call whose function holds traced
    values, or does not stage, stays)."""
    graph = _map_sub_graphs(graph, custom_calls_inlined)
    if not any(eqn.prim.name in _CUSTOM_CALLS for eqn in graph.equations):
        return graph
    equations: list = []
    for eqn in graph.equations:
        staged = _staged_function(eqn) if eqn.prim.name in _CUSTOM_CALLS else None
        equations.append(
            eqn if staged is None else Equation(call_p, eqn.inputs, eqn.outputs, {"graph": staged})
        )
    return inline_calls(_replace(graph, equations), call_p)


def _staged_function(eqn) -> Graph | None:
    avals = [x.aval for x in eqn.inputs]
    fun = eqn.params["fun"]
    try:
        graph, captured = stage(
            lambda *xs: fun(*xs), avals, tree_flatten(tuple(avals))[1], name="custom"
        )
    except Exception:  # (a function that does not stage: the call runs it, as before)
        return None
    if captured or [v.aval for v in graph.out_vars] != [v.aval for v in eqn.outputs]:
        return None
    return custom_calls_inlined(optimize(graph, call_p))


def _lowerable(eqn) -> bool:
    return kind_of(eqn) is not None


def compile_cost_estimate(graph: Graph) -> float:
    """What compiling `graph` would cost (s), estimated from its size (rerolled)."""
    size = compiled_form(graph).count_equations()
    if _llvm_compiles(graph):
        cost = LLVM_COMPILE_S + LLVM_PER_EQUATION_S * size
        return cost if llvm_ready() else cost + LLVM_SETUP_S
    cost = NUMBA_COMPILE_S + NUMBA_PER_EQUATION_S * size
    return cost if numba_loaded() else cost + NUMBA_IMPORT_S


def _llvm_compiles(graph: Graph) -> bool:
    """Will every compiled segment of `graph` be LLVM's (the LLVM backend on, and no
    complex values, which it leaves to Numba)?"""
    if not llvm_enabled():
        return False
    stack = [graph]
    while stack:
        g = stack.pop()
        if any(v.aval.dtype.kind == "c" for v in g.in_vars):
            return False
        for eqn in g.equations:
            if any(v.aval.dtype.kind == "c" for v in eqn.outputs):
                return False
            stack.extend(sub_graphs(eqn.params))
    return True


def over_budget(graph: Graph) -> str | None:
    """Why the backend cannot compile `graph` within its memory and time budget (the warning's
    text), or None if it can."""
    graph = compiled_form(graph)
    total = graph.count_equations()
    if _llvm_compiles(graph):
        if total <= LLVM_BUDGET_EQUATIONS:
            return None
        return (
            f"jit: '{graph.name}' ({total:,} equations) is over the LLVM backend's compile "
            f"budget ({LLVM_BUDGET_EQUATIONS:,} equations); running it on the NumPy executor. "
            + _ADVICE
        )
    if total <= BUDGET_SEGMENT_EQUATIONS:  # (and so is every segment)
        return None
    largest = _largest_segment(graph)
    if total <= BUDGET_EQUATIONS and largest <= BUDGET_SEGMENT_EQUATIONS:
        return None
    return (
        f"jit: '{graph.name}' ({total:,} equations, {largest:,} in its largest compiled "
        f"segment) is over the Numba backend's compile budget ({BUDGET_EQUATIONS:,} equations, "
        f"{BUDGET_SEGMENT_EQUATIONS:,} per segment); running it on the NumPy executor. " + _ADVICE
    )


_ADVICE = (
    "Repeated steps written with fori_loop or scan stage once and compile small; "
    "jit(..., backend='numpy') says this is intended."
)


def _largest_segment(graph: Graph) -> int:
    """The most equations one compiled segment of `graph` would hold: a run of equations
    the backend lowers, each counted with those of its sub-graphs (written inline)."""
    largest = run = 0
    for eqn in graph.equations:
        if kind_of(eqn) is None:
            run = 0
            continue
        run += 1 + sum(sub.count_equations() for sub in sub_graphs(eqn.params))
        largest = max(largest, run)
    return largest


def _check_budget(graph: Graph) -> None:
    message = over_budget(graph)
    if message is not None:
        graph.numba_failure = message
        warnings.warn(message, RuntimeWarning, stacklevel=5)  # (at the jitted call)


def _compile_now(graph: Graph):
    try:
        run = compile_backend(graph)
    except Exception as error:
        return _fall_back(graph, error)
    graph.compiled = _FirstCall(graph, run)
    return graph.compiled


def _fall_back(graph: Graph, error: Exception, numpy_run=None):
    """The NumPy executor for `graph` from now on, the reason kept in `numba_failure`."""
    graph.numba_failure = f"{type(error).__name__}: {error}"
    graph.compiled = compile_graph(graph) if numpy_run is None else numpy_run
    return graph.compiled


def _verified(graph: Graph, outs) -> None:
    """Raises unless `outs` has the number and shapes of `graph`'s outputs."""
    if len(outs) != len(graph.out_vars) or any(
        np.shape(o) != v.aval.shape for o, v in zip(outs, graph.out_vars)
    ):
        raise RuntimeError(f"the compiled '{graph.name}' returned outputs of the wrong shapes")


def _swap_in(graph: Graph, run: Callable) -> None:
    graph.compiled = run
    _resident.add(graph)
    answered_once()


class _FirstCall:
    """A compiled graph's first call, in the caller's thread: the backend compiles then; a
    failure falls back to the NumPy executor. Later calls go to the compiled function."""

    __slots__ = ("graph", "run")

    def __init__(self, graph: Graph, run: Callable):
        self.graph = graph
        self.run = run

    def __call__(self, *args):
        graph = self.graph
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (Numba's performance hints)
                outs = self.run(*args)
            _verified(graph, outs)
        except Exception as error:  # (any failure: the NumPy executor answers)
            return _fall_back(graph, error)(*args)
        _swap_in(graph, self.run)
        return outs


class _Tiered:
    """The default backend: the NumPy executor serves every call, timed, until the time spent
    reaches TIER_UP_FRACTION of the estimated compile cost (and at least the call numbered
    TIER_UP_CALL); that call hands a private copy of its arguments to the background
    compiler (`_TierUpWorker`), which compiles, calls the compiled function once on the copy
    and, if that answers, makes it the graph's executor (`graph.compiled`: one assignment,
    so a call runs wholly on one executor or the other). A failure leaves the NumPy executor
    in place, with `numba_failure` saying why."""

    __slots__ = ("graph", "run", "calls", "spent", "budget", "started", "lock")

    def __init__(self, graph: Graph):
        self.graph = graph
        self.run = compile_graph(graph)
        self.calls = 0
        self.spent = 0.0
        self.budget = TIER_UP_FRACTION * compile_cost_estimate(graph)
        self.started = False
        self.lock = threading.Lock()

    def __call__(self, *args):
        if self.started:
            return self.run(*args)
        start = perf_counter()
        outs = self.run(*args)
        self._count(args, perf_counter() - start)
        return outs

    def _count(self, args: tuple, elapsed: float) -> None:
        with self.lock:  # (one compile however many threads call)
            if self.started:
                return
            self.calls += 1
            self.spent += elapsed
            if self.calls < TIER_UP_CALL or self.spent < self.budget:
                return
            self.started = True
        _worker.submit(self.graph, self.run, [_private_copy(a) for a in args])


def _private_copy(x):
    """A copy of an argument that compiles as the argument does: an array's dtype, layout
    (C, Fortran or strided) and writeability kept. The user's arrays never leave the call."""
    if type(x) is not ndarray:
        return x if isinstance(x, (int, float, complex, np.generic)) else copy.deepcopy(x)
    if x.flags.c_contiguous or x.flags.f_contiguous:
        y = np.array(x, order="C" if x.flags.c_contiguous else "F", copy=True)
    else:
        y = np.empty((*x.shape, 2), x.dtype)[..., 0]
        y[...] = x
    y.flags.writeable = x.flags.writeable
    return y


class _TierUpWorker:
    """One daemon thread compiling the graphs submitted, one at a time, quietly (`_Quietly`).
    A daemon: it never keeps the process alive; if it dies, the graphs it had not compiled
    stay on the NumPy executor."""

    def __init__(self):
        self.lock = threading.Condition()
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.pending = 0

    def submit(self, graph: Graph, numpy_run: Callable, args: list) -> None:
        with self.lock:
            self.pending += 1
            self.jobs.put((graph, numpy_run, args))
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(
                    target=self._serve, name="autodiff-jit-tier-up", daemon=True
                )
                self.thread.start()

    def wait(self, timeout: float | None) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: self.pending == 0, timeout)

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                with _quietly:
                    _tier_up(*job)
            finally:
                with self.lock:
                    self.pending -= 1
                    self.lock.notify_all()


def wait_for_tier_up(timeout: float | None = None) -> bool:
    """Wait until the background compiles started so far have ended (swapped in or fallen
    back); False if `timeout` (s) passed first. For tests and benchmarks: calls never need to.

    Example:
        >>> wait_for_tier_up(timeout=60.0)
        True
    """
    return _worker.wait(timeout)


def _tier_up(graph: Graph, numpy_run: Callable, args: list) -> None:
    """Compile `graph`, check it on `args`, swap it in (in the background thread)."""
    try:
        run = compile_backend(graph)
        _ignore_performance_hints()
        _verified(graph, run(*args))
    except Exception as error:
        _fall_back(graph, error, numpy_run)
        return
    _swap_in(graph, run)


def _ignore_performance_hints() -> None:
    """Numba's performance hints about generated code, ignored. (`catch_warnings` would
    save and restore the process's filters from this thread, undoing what the caller's
    thread does meanwhile; this adds one filter for one category.)"""
    numba = _import_numba() if numba_loaded() else None  # (not imported for this)
    if numba is not None:
        warnings.filterwarnings("ignore", category=numba.core.errors.NumbaPerformanceWarning)


class _Quietly:
    """While a background compile runs: the switch interval lowered, and the objects that
    exist frozen out of the garbage collector (`gc.freeze`), so that the collections the
    compiler's garbage triggers scan its objects only, not the whole heap with the caller's
    thread stopped. Both are process-wide, and restored on every path (the interval unless
    something else changed it meanwhile; nothing frozen if something else had frozen)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.saved = self.ours = 0.0
        self.froze = False

    def __enter__(self):
        with self.lock:
            self.saved = sys.getswitchinterval()
            sys.setswitchinterval(min(self.saved, TIER_UP_SWITCH_INTERVAL_S))
            self.ours = sys.getswitchinterval()  # (as the interpreter rounded it)
            self.froze = TIER_UP_FREEZE_GC and gc.get_freeze_count() == 0
            if self.froze:
                gc.freeze()
        return self

    def __exit__(self, *exc):
        with self.lock:
            if sys.getswitchinterval() == self.ours:
                sys.setswitchinterval(self.saved)
            if self.froze:
                gc.unfreeze()
                self.froze = False


class _Resident:
    """The graphs running compiled code, least recently compiled (or reloaded) first. Beyond
    MAX_RESIDENT, the oldest loses its compiled function: its next call compiles again,
    which loads from the disk cache (cache.py evicts the modules the same way)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.graphs: OrderedDict = OrderedDict()

    def add(self, graph: Graph) -> None:
        with self.lock:
            self.graphs[id(graph)] = graph
            self.graphs.move_to_end(id(graph))
            while len(self.graphs) > MAX_RESIDENT:
                _, oldest = self.graphs.popitem(last=False)
                oldest.compiled = None


_worker = _TierUpWorker()
_quietly = _Quietly()
_resident = _Resident()


def _numpy_executor(graph: Graph):
    size = len(graph.equations)
    if size <= COMPILE_AT_ONCE or graph.calls >= COMPILE_AFTER_CALLS:
        graph.compiled = compile_graph(graph)
        return graph.compiled
    graph.calls += 1
    if graph.interpreted is None:
        graph.interpreted = interpret_graph(graph)
    return graph.interpreted


call_p = Primitive("jit_call", multiple_results=True)
call_p.impl = lambda *args, graph: run_graph(graph, *args)
call_p.sparsity = THROUGH_GRAPH


def _call_abstract_eval(*avals, graph: Graph):
    for i, (got, want) in enumerate(zip(avals, graph.in_avals)):
        if got.shape != want.shape or got.dtype != want.dtype:
            raise TypeError(
                f"Staged call of '{graph.name}': argument {i} is {got}, the graph takes {want}"
            )
    return tuple(graph.out_avals)


call_p.abstract_eval = _call_abstract_eval


def restage(fun, avals: list, name: str) -> Graph:
    """`fun` (of flat arguments, returning a flat list) staged for `avals` and optimized."""
    graph, captured = stage(lambda *xs: fun(*xs), avals, tree_flatten(tuple(avals))[1], name=name)
    if captured:
        raise RuntimeError(f"internal error: restaging '{name}' captured {len(captured)} values")
    return optimize(graph, call_p)


def _derived(graph: Graph, key: tuple, make):
    entry = graph.derived.get(key)
    if entry is None:
        entry = graph.derived[key] = make()
        for derived in entry if type(entry) is tuple else (entry,):
            if type(derived) is Graph:  # (run by the backend its parent runs on)
                derived.backend, derived.fastmath = graph.backend, graph.fastmath
    return entry


# ---------------------------------------------------------------------------------------------
# Forward mode: the staged jvp, primal and tangent outputs together.


def _jvp_flat(graph: Graph, primals: list, tangents: list) -> tuple[list, list]:
    """`graph`'s outputs and their tangents (None: zero) for tangents of the inputs (None:
    zero)."""
    with new_trace(ForwardTrace) as trace:
        args = [p if t is None else ForwardTracer(p, trace, t) for p, t in zip(primals, tangents)]
        outs = eval_graph(graph, *args)
    values, touts = [], []
    for o in outs:
        if type(o) in TENSOR_TYPES and o._trace is trace:
            values.append(o._value)
            touts.append(o._tangent)
        else:
            values.append(o)
            touts.append(None)
    return values, touts


def jvp_graph(graph: Graph, in_mask: tuple, instantiate: bool = False) -> tuple[Graph, tuple]:
    """The staged jvp of `graph` for tangents of the inputs in `in_mask`: a graph of the
    primals and those tangents giving the outputs and the nonzero output tangents (which:
    the second result; with `instantiate`, every differentiable output's, zeros where no
    tangent flows)."""

    def make():
        out_mask: list = []

        def f(*xs):
            n = len(graph.in_vars)
            tangents = iter(xs[n:])
            ts = [next(tangents) if m else None for m in in_mask]
            values, touts = _jvp_flat(graph, list(xs[:n]), ts)
            if instantiate:
                touts = [
                    _zeros_like(a) if t is None and differentiable(a) else t
                    for t, a in zip(touts, graph.out_avals)
                ]
            out_mask[:] = [t is not None for t in touts]
            return values + [t for t in touts if t is not None]

        avals = graph.in_avals + [a for a, m in zip(graph.in_avals, in_mask) if m]
        return restage(f, avals, f"jvp({graph.name})"), tuple(out_mask)

    return _derived(graph, ("jvp", in_mask, instantiate), make)


def _call_jvp(primals, tangents, *, graph: Graph):
    in_mask = tuple(t is not None for t in tangents)
    jgraph, out_mask = jvp_graph(graph, in_mask)
    results = bind(call_p, *primals, *[t for t in tangents if t is not None], graph=jgraph)
    n = len(graph.out_vars)
    rest = iter(results[n:])
    return tuple(results[:n]), tuple(next(rest) if m else None for m in out_mask)


call_p.jvp = _call_jvp
call_p.jvp_computes_primal = True

# ---------------------------------------------------------------------------------------------
# Reverse mode: the forward graph saves the residuals the backward graph reads.


def _zeros_like(aval: ShapedArray):
    return np.zeros(aval.shape, aval.dtype)


def _pullback_flat(graph: Graph, primals: list) -> tuple[list, Callable]:
    """`graph`'s outputs for `primals` and its pullback: a function of the output cotangents
    (None: zero) giving the input cotangents (None where zero or not differentiable)."""
    with new_trace(ReverseTrace) as trace:
        args = [
            trace.new_leaf(p) if is_inexact(a.dtype) else p for p, a in zip(primals, graph.in_avals)
        ]
        outs = eval_graph(graph, *args)

    def pullback(cts: list) -> list:
        roots, seeds = [], []
        for o, ct in zip(outs, cts):
            if ct is not None and type(o) in TENSOR_TYPES and o._trace is trace:
                roots.append(o._edge)
                seeds.append(ct)
        found = backward_pass(roots, seeds, retain_graph=True, order=trace.nodes) if roots else {}
        return [found.get(a._edge) if a is not p else None for a, p in zip(args, primals)]

    values = [o._value if type(o) in TENSOR_TYPES and o._trace is trace else o for o in outs]
    return values, pullback


def differentiable(aval: ShapedArray) -> bool:
    return is_inexact(aval.dtype)


def vjp_graph(graph: Graph, ct_mask: tuple, instantiate: bool = False) -> tuple[Graph, tuple]:
    """The staged pullback of `graph`, recomputing its forward computation: a graph of the
    primals and the output cotangents in `ct_mask` giving the nonzero input cotangents
    (which: the second result; with `instantiate`, every differentiable input's, zeros
    where none flows)."""

    def make():
        in_mask: list = []

        def f(*xs):
            n = len(graph.in_vars)
            cts = iter(xs[n:])
            _, pullback = _pullback_flat(graph, list(xs[:n]))
            in_cts = pullback([next(cts) if m else None for m in ct_mask])
            if instantiate:
                in_cts = [
                    _zeros_like(a) if c is None and differentiable(a) else c
                    for c, a in zip(in_cts, graph.in_avals)
                ]
            in_mask[:] = [c is not None for c in in_cts]
            return [c for c in in_cts if c is not None]

        avals = graph.in_avals + [a for a, m in zip(graph.out_avals, ct_mask) if m]
        return restage(f, avals, f"vjp({graph.name})"), tuple(in_mask)

    return _derived(graph, ("vjp", ct_mask, instantiate), make)


def split_graph(graph: Graph, needed: tuple | None = None) -> tuple[Graph, Graph, tuple]:
    """Reverse mode of `graph` cut in two, each computed once: `fwd(*inputs) -> outputs +
    residuals` and `bwd(*output cotangents, *residuals) -> input cotangents`, one per
    differentiable output and input (zeros where none flows); the third result says which
    inputs are differentiable. `needed` (a bool per input) leaves out the cotangents of the
    inputs it marks False, and what only they need.

    The backward computation is staged while the forward one still is: what it reads of the
    forward computation is captured from the forward graph (closure conversion), and those
    values become the residuals; what it computes from them alone is recorded in the
    forward graph."""

    def make():
        parts: dict = {}
        out_avals = graph.out_avals
        ct_avals = [a for a in out_avals if differentiable(a)]
        in_mask = tuple(differentiable(a) for a in graph.in_avals)
        if needed is not None:
            in_mask = tuple(m and n for m, n in zip(in_mask, needed, strict=True))

        def fwd(*xs):
            values, pullback = _pullback_flat(graph, list(xs))

            def bwd(*cts):
                it = iter(cts)
                full = [next(it) if differentiable(a) else None for a in out_avals]
                in_cts = pullback(full)
                return [
                    _zeros_like(a) if c is None else c
                    for c, a, m in zip(in_cts, graph.in_avals, in_mask)
                    if m
                ]

            bwd_graph, residuals = stage(
                bwd, ct_avals, tree_flatten(tuple(ct_avals))[1], name=f"bwd({graph.name})"
            )
            parts["bwd"] = optimize(bwd_graph, call_p)
            return values + residuals

        fwd_graph = restage(fwd, graph.in_avals, f"fwd({graph.name})")
        return fwd_graph, parts["bwd"], in_mask

    return _derived(graph, ("split",) if needed is None else ("split", needed), make)


def _call_fwd(*primals, graph: Graph):
    fwd_graph, _, _ = split_graph(graph)
    results = bind(call_p, *primals, graph=fwd_graph)
    n = len(graph.out_vars)
    return tuple(results[:n]), tuple(results[n:])


def _call_vjp(cts, *primals, out, graph: Graph, residuals=None):
    if residuals is None:  # (the torch face: the forward graph's outputs only; recompute)
        ct_mask = tuple(c is not None for c in cts)
        vgraph, in_mask = vjp_graph(graph, ct_mask)
        results = iter(bind(call_p, *primals, *[c for c in cts if c is not None], graph=vgraph))
        return tuple(next(results) if m else None for m in in_mask)
    _, bwd_graph, in_mask = split_graph(graph)
    seeds = [
        _zeros_like(a) if c is None else c
        for c, a in zip(cts, graph.out_avals)
        if differentiable(a)
    ]
    results = iter(bind(call_p, *seeds, *residuals, graph=bwd_graph))
    return tuple(next(results) if m else None for m in in_mask)


call_p.fwd = _call_fwd
call_p.vjp = _call_vjp

# ---------------------------------------------------------------------------------------------
# Batching: the staged vmap.


def _batch_flat(graph: Graph, values: list, batched: Sequence[bool], size: int, force) -> tuple:
    """`graph`'s outputs for `values` batched along axis 0 where `batched`, each output batched
    along axis 0 or not (the second result says which; `force`: outputs batched anyway)."""
    with new_trace(BatchTrace, size) as trace:
        args = [BatchTracer(v, trace, 0) if b else v for v, b in zip(values, batched)]
        outs = eval_graph(graph, *args)
    results, mask = [], []
    for i, o in enumerate(outs):
        if type(o) in TENSOR_TYPES and o._trace is trace:
            results.append(move_to_front(o._value, o._bdim))
            mask.append(True)
        elif force is not None and force[i]:
            results.append(broadcast_to(o, (size, *np.shape(o))))
            mask.append(True)
        else:
            results.append(o)
            mask.append(False)
    return results, tuple(mask)


def batch_graph(
    graph: Graph, in_axes: tuple, size: int, force: tuple | None = None
) -> tuple[Graph, tuple]:
    """The staged vmap of `graph` over axis 0 of the inputs in `in_axes` (None: unbatched): a
    graph of the same inputs (batched ones with a leading axis of `size`), and which of its
    outputs are batched, along axis 0 (the outputs in `force` always are)."""

    def make():
        batched = [axis is not None for axis in in_axes]
        avals = [
            ShapedArray((size, *a.shape), a.dtype) if b else a
            for a, b in zip(graph.in_avals, batched)
        ]
        out_mask: list = []

        def f(*xs):
            results, mask = _batch_flat(graph, list(xs), batched, size, force)
            out_mask[:] = mask
            return results

        return restage(f, avals, f"vmap({graph.name})"), tuple(out_mask)

    return _derived(graph, ("vmap", in_axes, size, force), make)


def _call_batch(values, dims, *, graph: Graph):
    size = next(v.shape[d] for v, d in zip(values, dims) if d is not None)
    moved = [v if d is None else move_to_front(v, d) for v, d in zip(values, dims)]
    in_axes = tuple(None if d is None else 0 for d in dims)
    bgraph, out_mask = batch_graph(graph, in_axes, size)
    outs = bind(call_p, *moved, graph=bgraph)
    return outs, tuple(0 if m else None for m in out_mask)


call_p.batch = _call_batch

__all__ = [
    "batch_graph",
    "call_p",
    "compile_backend",
    "compile_cost_estimate",
    "compiled_form",
    "jvp_graph",
    "over_budget",
    "restage",
    "run_graph",
    "split_graph",
    "vjp_graph",
    "wait_for_tier_up",
]
