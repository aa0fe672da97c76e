"""Functional reverse-mode transforms: grad, value_and_grad, vjp, and linearize.

Each call pushes a ReverseTrace, wraps the differentiated inputs as leaf
tracers, runs the function, pops the trace and runs the engine from the output.
Pytrees, `argnums` and `has_aux` are handled here; the core sees flat lists.
`linearize` gives a JVP function without forward mode: it transposes the pullback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps

import numpy as np

from autodiff.core import buffers
from autodiff.core.dtypes import dtype_of, is_inexact
from autodiff.core.pytree import LEAF, tree_flatten, tree_map, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import EVAL_TRACE, new_trace, pop_trace, push_trace
from autodiff.ops.elementwise import conj_complex
from autodiff.ops.structural import shape_of
from autodiff.reverse.engine import backward_pass
from autodiff.reverse.graph import ReverseTrace


def _as_input(x):
    """Python and NumPy scalars become 0-d arrays so that dtype and shape are defined."""
    if isinstance(x, (Tensor, np.ndarray)):
        return x
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return np.asarray(x)
    raise TypeError(
        f"Argument {x!r} of type {type(x).__name__} is not a valid autodiff input: "
        "expected an array, a scalar or a Tensor (lists are pytrees: pass np.asarray(x))."
    )


def check_argnums(argnums, nargs: int, fname: str, name: str = "argnums") -> tuple[int, ...]:
    """The argument positions `argnums` names (an int or a sequence of ints, negative ones
    counting from the end), checked against the `nargs` positional arguments passed to `fname`.

    Raises TypeError for another type, ValueError for a position out of range or one named
    twice (it would get two derivatives, each counting a part of its use).

    Example:
        >>> check_argnums((0, -1), 3, "f")
        (0, 2)
        >>> check_argnums((1, 0, 1), 2, "f")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: argnums must not contain duplicates, got argnums=(1, 0, 1): argument 1 of ...
    """
    if type(argnums) is int and 0 <= argnums < nargs:  # (the common case)
        return (argnums,)
    nums = (argnums,) if one_argnum(argnums) else argnums
    if not isinstance(nums, Sequence) or isinstance(nums, str) or not all(map(one_argnum, nums)):
        raise TypeError(
            f"{name} must be an int or a sequence of ints, got {name}={argnums!r} "
            f"(of type {type(argnums).__name__})."
        )
    for a in nums:
        if not -nargs <= a < nargs:
            raise ValueError(
                f"differentiating with respect to {name}={argnums!r} requires at least "
                f"{max(a + 1 if a >= 0 else -a for a in nums)} positional arguments to be "
                f"passed by the caller, but got only {nargs} positional arguments to {fname}."
            )
    positions = tuple(int(a) % nargs for a in nums)
    for i, a in enumerate(positions):
        if a in positions[:i]:
            raise ValueError(
                f"{name} must not contain duplicates, got {name}={argnums!r}: argument {a} of "
                f"{fname} is named twice."
            )
    return positions


def one_argnum(argnums) -> bool:
    """Whether `argnums` names one argument (an int, not a bool): the derivative is then not a
    tuple."""
    return isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)


def integer_input_error(
    transform: str, dtype: np.dtype, position: int, fname: str, in_pytree: bool, hint: str
) -> TypeError:
    """The error of a transform asked to differentiate with respect to an integer or boolean
    input (leaf of the argument at `position`), saying what to do instead (`hint`)."""
    has = "has a leaf of dtype" if in_pytree else "has dtype"
    return TypeError(
        f"{transform} requires real- or complex-valued inputs (floating or complex dtype), but "
        f"got {dtype.name}. Argument {position} of {fname} {has} {dtype.name}: {hint}."
    )


_GRAD_HINT = (
    "use allow_int=True to get zero gradients for integer inputs, or convert it to a float dtype"
)


def check_inexact_inputs(transform: str, args: Sequence, nums, fname: str, hint: str) -> None:
    """Raise `integer_input_error` unless every leaf of the arguments at `nums` is float or
    complex."""
    for i in nums:
        leaves, treedef = tree_flatten(args[i])
        for x in leaves:
            dt = dtype_of(_as_input(x))
            if not is_inexact(dt):
                raise integer_input_error(transform, dt, i, fname, treedef is not LEAF, hint)


def _fname(fun) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


class _Leaves:
    """The leaf tracers of one transform call, with what is needed to rebuild gradients."""

    def __init__(self, trace: ReverseTrace, trees: Sequence, nums=None, fname: str = ""):
        """With `nums` (the positions of `trees` among `fname`'s arguments), integer and
        boolean inputs are refused (grad's error); without, they get no tracer."""
        self.treedefs = []
        self.values = []  # flat input values, per tree
        self.tracers = []  # flat leaf tracers (or None for integer inputs), per tree
        self.wrapped = []  # the trees with tracers in place of inputs
        for tree in trees:
            if type(tree) is np.ndarray or type(tree) in TENSOR_TYPES:  # (a lone array)
                flat, treedef = [tree], LEAF
            else:
                flat, treedef = tree_flatten(tree)
                flat = [_as_input(x) for x in flat]
            tracers = []
            for x in flat:
                dt = dtype_of(x)
                if is_inexact(dt):
                    tracers.append(trace.new_leaf(x))
                elif nums is None:
                    tracers.append(None)
                else:
                    i = nums[len(self.treedefs)]
                    raise integer_input_error("grad", dt, i, fname, treedef is not LEAF, _GRAD_HINT)
            self.treedefs.append(treedef)
            self.values.append(flat)
            self.tracers.append(tracers)
            wrapped = [t if t is not None else x for t, x in zip(tracers, flat)]
            self.wrapped.append(wrapped[0] if treedef is LEAF else tree_unflatten(treedef, wrapped))

    def gradients(self, cts: dict, conjugate: bool) -> list:
        """One gradient pytree per input tree; inputs the output did not use get zeros.

        With `conjugate`, complex gradients follow PyTorch's convention (see conj_complex).
        """
        out = []
        for treedef, flat, tracers in zip(self.treedefs, self.values, self.tracers):
            grads = []
            for x, t in zip(flat, tracers):
                g = cts.get(t._edge) if t is not None else None
                if g is not None and conjugate:
                    g = conj_complex(g)
                grads.append(_zeros_like(x) if g is None else _match_input_type(g, x))
            out.append(grads[0] if treedef is LEAF else tree_unflatten(treedef, grads))
        return out


def _zeros_like(x):
    dt = dtype_of(x)
    z = np.zeros(
        np.shape(x) if not isinstance(x, Tensor) else x.shape, dt if is_inexact(dt) else np.float64
    )
    return Tensor(z) if isinstance(x, Tensor) and x._trace is EVAL_TRACE else z


def _match_input_type(g, x):
    """Tensors in, Tensors out: a raw gradient for a level-0 Tensor input is wrapped."""
    if isinstance(x, Tensor) and x._trace is EVAL_TRACE and not isinstance(g, Tensor):
        return Tensor(g)
    return g


def _primal_of(out, trace):
    """Replace this trace's tracers in a pytree by their primal values."""
    return tree_map(lambda v: v._value if isinstance(v, Tensor) and v._trace is trace else v, out)


def _split_aux(out, has_aux: bool, fname: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"has_aux=True requires {fname} to return a pair (output, auxiliary data), "
            f"got {type(out).__name__}."
        )
    return out[0], out[1]


def _check_scalar_output(out, holomorphic: bool) -> None:
    if isinstance(out, (tuple, list, dict)) or out is None:
        raise TypeError(
            f"grad requires real-valued scalar outputs (shape ()), got a {type(out).__name__}. "
            "Use jacrev or vjp for non-scalar outputs."
        )
    shape = out.shape if isinstance(out, Tensor) else np.shape(out)
    if shape != ():
        raise TypeError(
            f"grad requires real-valued scalar outputs (shape ()), got shape {tuple(shape)}. "
            "Use jacrev or vjp for non-scalar outputs."
        )
    dt = dtype_of(out)
    if holomorphic:
        if not np.issubdtype(dt, np.complexfloating):
            raise TypeError(
                f"grad with holomorphic=True requires complex-valued outputs, got {dt.name}."
            )
    elif not np.issubdtype(dt, np.floating):
        raise TypeError(
            f"grad requires real-valued outputs (floating dtype), but got {dt.name}. "
            "For holomorphic differentiation, pass holomorphic=True."
        )


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable:
    """Return a function computing both `fun(*args)` and its gradient with respect to `argnums`.

    Arguments:
        fun: a function of arrays (or pytrees of arrays) returning a real scalar.
        argnums: which positional argument(s) to differentiate, each once (negative ones count
            from the end); a tuple gives a tuple of gradients.
        has_aux: `fun` returns `(output, aux)`; aux is returned alongside, not differentiated.
        holomorphic: `fun` is complex-to-complex holomorphic.
        allow_int: integer inputs get zero gradients instead of an error.

    Returns:
        A function returning `(value, gradient)`, or `((value, aux), gradient)` with `has_aux`.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> value, g = ad.value_and_grad(lambda x: anp.sum(x ** 2))(anp.array([1.0, 2.0]))
        >>> float(value), g
        (5.0, array([2., 4.]))
    """
    return wraps(fun)(_value_and_grad(fun, argnums, has_aux, holomorphic, allow_int))


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int) -> Callable:
    """`value_and_grad`'s function, unwrapped (grad wraps its own)."""
    fname = _fname(fun)

    def value_and_grad_f(*args, **kwargs):
        nums = check_argnums(argnums, len(args), fname)
        trace = push_trace(ReverseTrace)
        try:
            trace.spares = []  # (given back to the pool of recycled memory below)
            trees = [args[i] for i in nums]
            leaves = _Leaves(trace, trees) if allow_int else _Leaves(trace, trees, nums, fname)
            call_args = list(args)
            for i, w in zip(nums, leaves.wrapped):
                call_args[i] = w
            result = fun(*call_args, **kwargs)
            out, aux = _split_aux(result, has_aux, fname)
            _check_scalar_output(out, holomorphic)
        finally:
            pop_trace(trace)
        cts = {}
        if isinstance(out, Tensor) and out._trace is trace:
            value = out._value
            seed = np.ones((), dtype_of(value))
            cts = backward_pass([out._edge], [seed], order=trace.nodes)
            trace.nodes = []  # the tape is spent: free the graph now
            buffers.give_spares(trace.spares)
        else:
            value = out
        grads = leaves.gradients(cts, conjugate=not holomorphic)
        g = grads[0] if one_argnum(argnums) else tuple(grads)
        if has_aux:
            return (value, _primal_of(aux, trace)), g
        return value, g

    return value_and_grad_f


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    allow_int: bool = False,
) -> Callable:
    """Return a function computing the gradient of scalar-valued `fun` with respect to `argnums`.

    Gradients have the structure of the differentiated arguments. Nest freely:
    `grad(grad(f))` is the second derivative.

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> float(ad.grad(anp.sin)(0.0))
        1.0
        >>> float(ad.grad(ad.grad(ad.grad(anp.sin)))(0.0))
        -1.0
    """
    vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @wraps(fun)
    def grad_f(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


def vjp(fun: Callable, *primals, has_aux: bool = False) -> tuple:
    """Evaluate `fun(*primals)` and return its pullback.

    Returns:
        `(out, vjp_fn)` or `(out, vjp_fn, aux)`. `vjp_fn(ct)` takes a cotangent with
        the structure, shapes and dtypes of `out` and returns a tuple with one
        cotangent per primal. It may be called any number of times.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> out, f_vjp = ad.vjp(lambda x: x * 2.0, np.array([1.0, 2.0]))
        >>> f_vjp(np.array([1.0, 10.0]))
        (array([ 2., 20.]),)
    """
    return pullback(fun, primals, has_aux, conjugate=True)


def pullback(fun: Callable, primals, has_aux: bool, conjugate: bool) -> tuple:
    """`vjp`; with `conjugate=False` the pullback is the plain transpose of the JVP (the
    rules' own convention, used by jacrev, linearize and custom rules)."""
    fname = _fname(fun)
    with new_trace(ReverseTrace) as trace:
        leaves = _Leaves(trace, primals)
        result = fun(*leaves.wrapped)
        out, aux = _split_aux(result, has_aux, fname)
    out_flat, out_def = tree_flatten(out)
    out_primal = _primal_of(out, trace)
    tape = trace.nodes
    edges = [v._edge if isinstance(v, Tensor) and v._trace is trace else None for v in out_flat]
    shapes = [(tuple(np.shape(v)) if not isinstance(v, Tensor) else v.shape) for v in out_flat]
    dtypes = [dtype_of(v) for v in out_flat]

    def vjp_fn(ct):
        ct_flat, ct_def = tree_flatten(ct)
        if ct_def != out_def:
            raise ValueError(
                f"Tree structure of cotangent input {ct_def} does not match structure of "
                f"primal output {out_def}."
            )
        roots, seeds = [], []
        for i, (edge, shape, c) in enumerate(zip(edges, shapes, ct_flat)):
            if not isinstance(c, (Tensor, np.ndarray)):
                c = np.asarray(c, dtype=dtypes[i])
            c_shape = c.shape if isinstance(c, Tensor) else np.shape(c)
            if tuple(c_shape) != shape:
                raise ValueError(
                    f"Shape of cotangent input to vjp pullback function {tuple(c_shape)} must be "
                    f"the same as the shape of corresponding primal input {shape} (output {i})."
                )
            if edge is not None:
                roots.append(edge)
                seeds.append(conj_complex(c) if conjugate else c)
        cts = backward_pass(roots, seeds, retain_graph=True, order=tape) if roots else {}
        return tuple(leaves.gradients(cts, conjugate))

    if has_aux:
        return out_primal, vjp_fn, _primal_of(aux, trace)
    return out_primal, vjp_fn


def linearize(fun: Callable, *primals):
    """Evaluate `fun` once and return `(out, jvp_fn)`, where `jvp_fn(*tangents)` is its JVP.

    `jvp_fn` never re-evaluates `fun`: it transposes the recorded pullback of
    `fun` (the pullback is linear in its cotangent), so each call costs one pass
    over the recorded graph.

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> out, f_jvp = ad.linearize(lambda x: x ** 3, 2.0)
        >>> float(out), float(f_jvp(1.0))
        (8.0, 12.0)
    """
    out, f_pullback = pullback(fun, primals, False, conjugate=False)
    out_flat, out_def = tree_flatten(out)
    zeros = tree_unflatten(out_def, [np.zeros(shape_of(o), dtype_of(o)) for o in out_flat])
    _, transpose = pullback(f_pullback, (zeros,), False, conjugate=False)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(
                f"linearized function takes {len(primals)} tangents, got {len(tangents)}"
            )
        (t_out,) = transpose(tuple(tangents))
        return t_out

    return out, jvp_fn
