"""`jit` and `make_graph`: stage a function once per signature, optimize it, run it compiled.

A signature is what a staged graph depends on: the pytree structure of the arguments, each
array argument's shape and dtype (a Python scalar is *weakly typed*, as in JAX: its kind, not
its value), and the values of the static arguments. `jit` keeps one compiled graph per
signature in a bounded LRU cache; a call with a signature seen before runs the executor at
once. Called on tracers or on Tensors that require grad, it binds the staged-call primitive
(staging/call.py), so every transform applies to it.
"""

from __future__ import annotations

import functools
import inspect
import reprlib
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
from numpy import ndarray

from autodiff.core.abstract import ShapedArray
from autodiff.core.config import jit_disabled
from autodiff.core.primitive import bind
from autodiff.core.pytree import LEAF, TreeDef, tree_flatten, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES
from autodiff.core.trace import EVAL_TRACE
from autodiff.kernels._numba import numba_available, numba_disabled
from autodiff.staging.call import call_p, run_graph
from autodiff.staging.ir import Graph
from autodiff.staging.passes import optimize
from autodiff.staging.trace import stage

_PYTHON_SCALARS = {
    bool: np.dtype(bool),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}
CACHE_SIZE = 256  # signatures kept per jitted function (the least recently used go first)


def _leaf_aval(x) -> ShapedArray:
    """What a staged graph depends on of one argument leaf: its shape, dtype, weak type."""
    kind = type(x)
    if kind is ndarray or kind in TENSOR_TYPES:
        return ShapedArray(x.shape, x.dtype)
    if kind in _PYTHON_SCALARS:
        return ShapedArray((), _PYTHON_SCALARS[kind], weak_type=kind is not bool)
    if isinstance(x, np.generic):
        return ShapedArray((), x.dtype)
    if isinstance(x, (list, tuple)) or hasattr(x, "__array__"):
        a = np.asarray(x)
        if a.dtype != object:
            return ShapedArray(a.shape, a.dtype)
    raise TypeError(
        f"Argument {reprlib.repr(x)} of type {type(x)} is not a valid JAX type (not a valid "
        "array type for jit): pass arrays, Tensors or Python numbers (in tuples, lists, dicts "
        "or registered pytrees), or mark the argument static (static_argnums / static_argnames)."
    )


def _flat_key(args: tuple) -> tuple | None:
    """The cache key of positional arguments that are all arrays or numbers (Python's or
    NumPy's scalars): their shapes and dtypes, or their types; else None. What `_leaf_aval`
    reads of them."""
    key = []
    for a in args:
        kind = type(a)
        if kind is ndarray:
            key.append((a.shape, a.dtype))
        elif kind in _PYTHON_SCALARS or isinstance(a, np.generic):  # (the type: the dtype)
            key.append(kind)
        else:
            return None
    return tuple(key)


def _is_array_like(x) -> bool:
    try:
        _leaf_aval(x)
    except TypeError:
        return False
    return True


def _hashable(value, what: str):
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"Non-hashable static arguments are not supported: {what} is a "
            f"{type(value).__name__} ({value!r}). A static argument is part of the cache key: "
            "pass a hashable value (a tuple rather than a list), or make it a dynamic argument."
        ) from None
    return value


class _Entry:
    """One compiled signature: the optimized graph and the Tensors it captured (their current
    values are read at each call)."""

    __slots__ = ("graph", "captured")

    def __init__(self, graph: Graph, captured: list):
        self.graph = graph
        self.captured = captured


class Jitted:
    """`fun` compiled once per signature (see `jit`)."""

    def __init__(
        self,
        fun: Callable,
        static_argnums: Sequence[int],
        static_argnames,
        backend: str | None = None,
        fastmath: bool = False,
    ):
        functools.update_wrapper(self, fun)
        self.backend = backend
        self.fastmath = fastmath
        self.fun = fun
        self.static_argnums, self.static_argnames = _static_arguments(
            fun, tuple(static_argnums), tuple(static_argnames)
        )
        self._static = bool(self.static_argnums or self.static_argnames)
        self._cache: OrderedDict = OrderedDict()
        self._names = _parameter_names(fun)
        self.traces = 0  # how many times `fun` was staged (once per new signature)

    def __get__(self, obj, objtype=None):  # (as a method: bind `self` like a function)
        return self if obj is None else functools.partial(self, obj)

    def __repr__(self):
        return f"<jitted {getattr(self.fun, '__qualname__', self.fun)!r}>"

    def __call__(self, *args, **kwargs):
        if jit_disabled():  # (disable_jit(): the function as plain Python, every call)
            return self.fun(*args, **kwargs)
        if not kwargs and not self._static:
            # The commonest calls, arrays and Python numbers only: the key is the arrays'
            # shapes and dtypes, and the numbers' types (what their weak avals depend on).
            key = _flat_key(args)
            if key is not None:
                entry = self._cache.get(key)
                if entry is None:
                    entry = self._compile(key, args, kwargs)
                if not entry.captured:
                    outs = run_graph(entry.graph, *args)
                    out_tree = entry.graph.out_tree
                    return outs[0] if out_tree is LEAF else tree_unflatten(out_tree, outs)
                return self._run(entry, list(args))
        static, in_tree, leaves = self._split(args, kwargs)
        key = (in_tree, static, self._avals(in_tree, leaves, static))
        entry = self._cache.get(key)
        if entry is None:
            entry = self._compile(key, args, kwargs)
        else:
            self._cache.move_to_end(key)
        return self._run(entry, leaves)

    def graph(self, *args, **kwargs) -> Graph:
        """The optimized graph a call with these arguments runs (staged if new).

        Example:
            >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
            >>> print(ad.jit(lambda x: anp.sin(x) * 2.0).graph(np.zeros(3)))
            { lambda ; a:f64[3] . let
                b:f64[3] = sin a
                c:f64[3] = multiply b 2.0
              in (c,) }
        """
        key = None if kwargs or self._static else _flat_key(args)  # (as `__call__` keys it)
        if key is None:
            static, in_tree, leaves = self._split(args, kwargs)
            key = (in_tree, static, self._avals(in_tree, leaves, static))
        entry = self._cache.get(key) or self._compile(key, args, kwargs)
        return entry.graph

    def clear_cache(self) -> None:
        """Forget every compiled signature."""
        self._cache.clear()

    # ---- staging ----
    def _avals(self, in_tree: TreeDef, leaves: list, static: tuple) -> tuple:
        """The dynamic leaves' types; a leaf that is no array raises JAX's TypeError, naming
        where the function received it."""
        try:
            return tuple([_leaf_aval(x) for x in leaves])
        except TypeError as error:
            names = _leaf_names(in_tree, leaves, self._names, static)
            at = next(n for n, x in zip(names, leaves) if not _is_array_like(x))
            fname = getattr(self.fun, "__qualname__", self.fun)
            raise TypeError(
                f"Error interpreting argument to {fname} as an abstract array. The problematic "
                f"value is of type {type(leaves[names.index(at)])} and was passed to the "
                f"function at path {at}. This typically means that a jit-wrapped function was "
                "called with a non-array argument, and this argument was not marked as static "
                f"using the static_argnums or static_argnames parameters of jit. {error}"
            ) from None

    def _split(self, args: tuple, kwargs: dict) -> tuple:
        """The static values (hashable, in order), the dynamic arguments' structure and
        leaves. The dynamic pytree is `(positional arguments, keyword arguments)`."""
        static = []
        dynamic = []
        n = len(args)
        for i, a in enumerate(args):
            if i in self.static_argnums or i - n in self.static_argnums:
                static.append((i, _hashable(a, f"static argument {i}")))
            else:
                dynamic.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                static.append((k, _hashable(v, f"static argument {k!r}")))
            else:
                dyn_kwargs[k] = v
        leaves, in_tree = tree_flatten((tuple(dynamic), dyn_kwargs))
        return tuple(static), in_tree, leaves

    def _compile(self, key, args: tuple, kwargs: dict) -> _Entry:
        static, in_tree, leaves = self._split(args, kwargs)
        avals = [_leaf_aval(x) for x in leaves]
        self.traces += 1
        graph, captured = stage(
            self._with_static(static, len(args)),
            avals,
            in_tree,
            _leaf_names(in_tree, leaves, self._names, static),
            getattr(self.fun, "__name__", "f"),
        )
        entry = _Entry(optimize(graph, call_p), captured)
        entry.graph.backend = _backend(self.backend)
        entry.graph.fastmath = self.fastmath
        if all(t._trace is EVAL_TRACE for t in captured):
            # (a graph that captured an enclosing transform's tracers is that call's only)
            self._cache[key] = entry
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return entry

    def _with_static(self, static: tuple, n_args: int):
        """`fun` as a function of `(dynamic positional arguments, dynamic keywords)`."""
        positional = {k: v for k, v in static if type(k) is int}
        named = {k: v for k, v in static if type(k) is str}

        def call(dynamic: tuple, kwargs: dict):
            it = iter(dynamic)
            merged = [positional[i] if i in positional else next(it) for i in range(n_args)]
            return self.fun(*merged, **kwargs, **named)

        return call

    def _run(self, entry: _Entry, leaves: list):
        captured = entry.captured
        if captured or any(type(x) in TENSOR_TYPES for x in leaves):
            outs = bind(call_p, *leaves, *captured, graph=entry.graph)
        else:
            outs = run_graph(entry.graph, *leaves)
        return tree_unflatten(entry.graph.out_tree, list(outs))


def _static_arguments(fun: Callable, nums: tuple, names: tuple) -> tuple:
    """JAX's reading of static_argnums/static_argnames: given only one of them, the other is
    inferred through `fun`'s signature, so that a static argument is static whether it is
    passed by position or by keyword."""
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return nums, names
    either = [(i, p.name) for i, p in enumerate(parameters) if p.kind is p.POSITIONAL_OR_KEYWORD]
    if names and not nums:
        nums = tuple(i for i, name in either if name in names)
    elif nums and not names:
        n = len(parameters)
        wanted = {i % n if -n <= i < 0 else i for i in nums}
        names = tuple(name for i, name in either if i in wanted)
    return nums, names


def _parameter_names(fun: Callable) -> list:
    try:
        return [
            p.name
            for p in inspect.signature(fun).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return []


def _leaf_names(in_tree: TreeDef, leaves: list, names: list, static: tuple) -> list:
    """A name per flat argument, for error messages: `x`, `params['w']`, `args[2][0]`."""
    static_positions = sorted(k for k, _ in static if type(k) is int)
    positions = []
    i = 0
    for _ in range(len(in_tree.children[0].children) if in_tree.children else 0):
        while i in static_positions:
            i += 1
        positions.append(i)
        i += 1
    labels = []
    args_tree, kwargs_tree = in_tree.children
    for position, child in zip(positions, args_tree.children):
        base = names[position] if position < len(names) else f"argument {position}"
        labels.extend(_paths(child, base))
    for key, child in zip(kwargs_tree.aux or (), kwargs_tree.children):
        labels.extend(_paths(child, str(key)))
    return labels if len(labels) == len(leaves) else [f"argument {j}" for j in range(len(leaves))]


def _paths(tree: TreeDef, base: str) -> list:
    """The names of a pytree's leaves: `base`, `base[0]`, `base['key']`, ..."""
    if tree.kind is None:
        return [base]
    if tree.kind is dict:
        keys = list(tree.aux)
    else:
        keys = list(range(len(tree.children)))
    out = []
    for key, child in zip(keys, tree.children):
        out.extend(_paths(child, f"{base}[{key!r}]"))
    return out


def jit(
    fun: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    backend: str | None = None,
    fastmath: bool = False,
    inline: bool = False,
):
    """`fun` staged into a graph once per signature, optimized, and run compiled.

    Every call with arguments of new shapes, dtypes or pytree structure (or new values of
    the static arguments) stages `fun` again; Python code in it runs then, not at later
    calls. Inside, values have shapes and dtypes but no values: Python control flow on them
    raises `ConcretizationError` (use `cond`, `switch`, `fori_loop`, `while_loop`, `scan`).
    Composes with every transform both ways; usable as a decorator.

    Arguments:
        fun: the function (pytrees of arrays in and out).
        static_argnums, static_argnames: arguments that are Python values, hashable, part of
            the signature (a new value stages again).
        backend: "numba" (compiled by Numba at the first call of each signature; see
            docs/guide/jit.md), "numpy" (the NumPy executor), or None, the default: the NumPy
            executor first, then, once its calls have taken a tenth of the estimated compile
            cost, Numba compiling in a background thread, swapped in once ready. Graphs over the
            compile budget run on the NumPy executor, with a warning, under either.
            `AUTODIFF_DISABLE_NUMBA=1`, or Numba missing, means "numpy".
        fastmath: LLVM's fast-math flags for the Numba backend — fused multiply-adds,
            approximate reciprocals and functions, no NaN, inf or signed zero assumed — but
            not reassociation; results may differ in the last bits, and NaN/inf are not
            handled. No effect on the NumPy executor.
        inline: JAX's hint to inline `fun` into an enclosing staged function; accepted for
            JAX code; it changes no result.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> f = ad.jit(lambda x, n: anp.sum(x ** n), static_argnums=1)
        >>> float(f(np.arange(3.0), 2)), float(ad.grad(f)(np.arange(3.0), 2)[2])
        (5.0, 4.0)
    """
    if backend not in (None, "numpy", "numba"):
        raise ValueError(f"Unknown jit backend {backend!r}: use 'numba' or 'numpy'.")
    if backend == "numba" and not numba_available() and not numba_disabled():
        raise ValueError("jit(backend='numba') needs Numba: pip install numba")
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    if fun is None:
        return lambda f: jit(f, static_argnums, static_argnames, backend, fastmath, inline)
    if not callable(fun):
        raise TypeError(f"jit expects a callable, got {type(fun).__name__}")
    return Jitted(fun, tuple(static_argnums), tuple(static_argnames), backend, bool(fastmath))


def _backend(requested: str | None) -> str:
    """The executor a graph runs on: "numpy", "numba" (compiled at the first call) or "auto"
    (the default: NumPy first, Numba compiled in the background; staging/call.py).
    AUTODIFF_DISABLE_NUMBA=1 or a missing Numba mean NumPy, whatever was requested."""
    if requested == "numpy" or not numba_available():
        return "numpy"
    return "numba" if requested == "numba" else "auto"


def make_graph(fun: Callable, static_argnums: int | Sequence[int] = ()):
    """A function of `fun`'s arguments returning the `Graph` staged from `fun` for them, as
    `fun` wrote it (not optimized; `jit(fun).graph(...)` gives what jit runs).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> print(ad.make_graph(lambda x, y: anp.sin(x) * y)(np.zeros(3), 2.0))
        { lambda ; a:f64[3] b:~f64[] . let
            c:f64[3] = sin a
            d:f64[3] = multiply c b
          in (d,) }
    """
    jitted = jit(fun, static_argnums)

    def staged(*args, **kwargs) -> Graph:
        static, in_tree, leaves = jitted._split(args, kwargs)
        graph, _ = stage(
            jitted._with_static(static, len(args)),
            [_leaf_aval(x) for x in leaves],
            in_tree,
            _leaf_names(in_tree, leaves, jitted._names, static),
            getattr(fun, "__name__", "f"),
        )
        return graph

    return staged


class ShapeDtypeStruct:
    """An array's shape and dtype without its values (JAX's `jax.ShapeDtypeStruct`): what
    `eval_shape` returns, and an argument it takes in place of an array.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> s = ad.ShapeDtypeStruct((2, 3), np.float32)
        >>> s, s.ndim, s.size
        (ShapeDtypeStruct(shape=(2, 3), dtype=float32), 2, 6)
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, *, weak_type: bool = False):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __eq__(self, other) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (
            (self.shape, self.dtype, self.weak_type) == (other.shape, other.dtype, other.weak_type)
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def _abstract_aval(x) -> ShapedArray:
    """An `eval_shape` argument's type: anything with `shape` and `dtype` stands for an array."""
    if type(x) not in _PYTHON_SCALARS and hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(x.shape, x.dtype, getattr(x, "weak_type", False))
    return _leaf_aval(x)


def eval_shape(fun: Callable, *args, **kwargs):
    """The shapes and dtypes of `fun(*args, **kwargs)`, as a pytree of `ShapeDtypeStruct`,
    without computing any value (JAX's `jax.eval_shape`): `fun` is staged for the arguments'
    types. An argument may be an array or anything with `shape` and `dtype` attributes.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> ad.eval_shape(lambda x, y: anp.dot(x, y), ad.ShapeDtypeStruct((2, 3), np.float32),
        ...               np.ones((3, 4), np.float32))
        ShapeDtypeStruct(shape=(2, 4), dtype=float32)
    """
    if not callable(fun):
        raise TypeError(f"eval_shape requires a callable argument, got {fun!r}")
    leaves, in_tree = tree_flatten((args, kwargs))
    graph, _ = stage(
        lambda a, k: fun(*a, **k),
        [_abstract_aval(x) for x in leaves],
        in_tree,
        name=getattr(fun, "__name__", "f"),
    )
    structs = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in graph.out_avals]
    return tree_unflatten(graph.out_tree, structs)


def block_until_ready(x):
    """`x`, once every array in it is computed (JAX's `jax.block_until_ready`). autodiff
    computes synchronously: the results of `jit` and of every transform are NumPy arrays (or
    Tensors) whose values exist when the call returns, so this returns `x` as it is. (NumPy
    arrays have no `.block_until_ready()` method: call this function instead.)

    Example:
        >>> import numpy as np, autodiff as ad
        >>> ad.block_until_ready(ad.jit(lambda x: x * 2)(np.ones(2)))
        array([2., 2.])
    """
    return x


__all__ = ["Jitted", "ShapeDtypeStruct", "block_until_ready", "eval_shape", "jit", "make_graph"]
