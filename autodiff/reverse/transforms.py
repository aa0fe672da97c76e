"""Functional reverse-mode transforms: grad, value_and_grad, vjp, and linearize.

Each call pushes a ReverseTrace, wraps the differentiated inputs as leaf
tracers, runs the function, pops the trace and runs the engine from the output.
Pytrees, `argnums` and `has_aux` are handled here; the core sees flat lists.
`linearize` gives a JVP function without forward mode: it transposes the pullback.

Complex values follow JAX's convention on this (functional) face: cotangents are the plain
transpose of the JVP (the rules' own bilinear convention), so `grad` of a real-valued
function of complex inputs is JAX's (for |z|^2: 2 conj(z)). The torch face conjugates at
its own boundary (autograd.backward/grad, hooks, Function.backward); `pullback(...,
conjugate=True)` is that convention for torch-face callers of a functional pullback.
Errors are JAX's types with JAX's key phrases ("Gradient only defined for scalar-output
functions.", "two-element tuple", "is not a valid JAX type", "unexpected tree structure").
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Sequence
from functools import wraps

import numpy as np

from autodiff.core import buffers
from autodiff.core.config import checks_leaks
from autodiff.core.dtypes import dtype_of, float0, float_kind, is_inexact
from autodiff.core.errors import invalid_value_error, type_str
from autodiff.core.pytree import LEAF, tree_flatten, tree_map, tree_unflatten
from autodiff.core.tensor import TENSOR_TYPES, Tensor
from autodiff.core.trace import EVAL_TRACE, new_trace, pop_trace, push_trace
from autodiff.ops.elementwise import conj_complex
from autodiff.ops.structural import shape_of
from autodiff.reverse.engine import backward_pass
from autodiff.reverse.graph import ReverseTrace


def is_valid_value(x) -> bool:
    """Whether the transforms accept `x` as a value: an array or scalar of a numeric (or
    float0) dtype, or a Tensor."""
    if isinstance(x, (Tensor, bool, int, float, complex)):
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        return float_kind(x.dtype) in "biufc" or x.dtype == float0
    return False


def _as_input(x, where: str = "an argument"):
    """Python and NumPy scalars become 0-d arrays so that dtype and shape are defined;
    anything that is not an array, a scalar or a Tensor is refused (`where` names it)."""
    if isinstance(x, (Tensor, np.ndarray)) and is_valid_value(x):
        return x
    if isinstance(x, (bool, int, float, complex)) or (
        isinstance(x, np.generic) and is_valid_value(x)
    ):
        return np.asarray(x)
    raise invalid_value_error(x, where)


def check_callable(fun, transform: str) -> None:
    """TypeError unless `fun` can be called (as JAX: "Expected a callable value")."""
    if not callable(fun):
        raise TypeError(
            f"Expected a callable value, got {reprlib.repr(fun)}: {transform} "
            "transforms a function."
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
            raise TypeError(
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
        f"{transform} requires real- or complex-valued inputs (input dtype that is a sub-dtype "
        f"of np.inexact), but got {dtype.name}. Argument {position} of {fname} {has} "
        f"{dtype.name}: {hint}."
    )


_GRAD_HINT = (
    "use allow_int=True to get zero (float0) gradients for integer inputs, use vjp, or "
    "convert it to a float dtype"
)


def check_inexact_inputs(transform: str, args: Sequence, nums, fname: str, hint: str) -> None:
    """Raise `integer_input_error` unless every leaf of the arguments at `nums` is float or
    complex."""
    for i in nums:
        leaves, treedef = tree_flatten(args[i])
        for x in leaves:
            dt = dtype_of(_as_input(x, f"argument {i} of {fname}"))
            if not is_inexact(dt):
                raise integer_input_error(transform, dt, i, fname, treedef is not LEAF, hint)


def check_holomorphic_inputs(transform: str, args: Sequence, nums, fname: str) -> None:
    """TypeError unless every leaf of the arguments at `nums` is complex (holomorphic=True)."""
    for i in nums:
        for x in tree_flatten(args[i])[0]:
            dt = dtype_of(_as_input(x, f"argument {i} of {fname}"))
            if dt.kind != "c":
                raise TypeError(
                    f"{transform} with holomorphic=True requires inputs with complex dtype, but "
                    f"got {dt.name} (argument {i} of {fname}). Convert it with "
                    f"x.astype(complex), or drop holomorphic=True for a real input."
                )


def _fname(fun) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


class _Leaves:
    """The leaf tracers of one transform call, with what is needed to rebuild gradients."""

    def __init__(
        self, trace: ReverseTrace, trees: Sequence, nums=None, fname: str = "", positions=None
    ):
        """With `nums` (the positions of `trees` among `fname`'s arguments), integer and
        boolean inputs are refused (grad's error); without, they get no tracer (and a float0
        cotangent). `positions` names the trees in errors when `nums` is not given."""
        self.treedefs = []
        self.values = []  # flat input values, per tree
        # flat leaf tracers' edges (or None for integer inputs), per tree: what the gradients
        # are read by (no tracer, which a pullback kept after its transform would leak)
        self.edges = []
        self.wrapped = []  # the trees with tracers in place of inputs
        where_nums = nums if nums is not None else positions
        for k, tree in enumerate(trees):
            if type(tree) is np.ndarray and is_inexact(tree.dtype) or type(tree) in TENSOR_TYPES:
                flat, treedef = [tree], LEAF  # (a lone array)
            else:
                flat, treedef = tree_flatten(tree)
                pos = where_nums[k] if where_nums is not None else k
                where = f"argument {pos} of {fname}" if fname else f"argument {pos}"
                flat = [_as_input(x, where) for x in flat]
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
            self.edges.append([None if t is None else t._edge for t in tracers])
            wrapped = [t if t is not None else x for t, x in zip(tracers, flat)]
            self.wrapped.append(wrapped[0] if treedef is LEAF else tree_unflatten(treedef, wrapped))

    def gradients(self, cts: dict, conjugate: bool = False) -> list:
        """One gradient pytree per input tree; inputs the output did not use get zeros
        (float0 zeros for integer inputs, as in JAX).

        With `conjugate`, complex gradients follow PyTorch's convention (see conj_complex);
        the functional transforms never ask for it.
        """
        out = []
        for treedef, flat, edges in zip(self.treedefs, self.values, self.edges):
            grads = []
            for x, edge in zip(flat, edges):
                g = cts.get(edge) if edge is not None else None
                if g is not None and conjugate:
                    g = conj_complex(g)
                grads.append(_zeros_like(x) if g is None else _match_input_type(g, x))
            out.append(grads[0] if treedef is LEAF else tree_unflatten(treedef, grads))
        return out


def _zeros_like(x):
    """The zero cotangent of `x`: zeros of its dtype, float0 zeros for an integer input."""
    dt = dtype_of(x)
    shape = np.shape(x) if not isinstance(x, Tensor) else x.shape
    if not is_inexact(dt):
        return np.zeros(shape, float0)
    z = np.zeros(shape, dt)
    return Tensor(z) if isinstance(x, Tensor) and x._trace is EVAL_TRACE else z


def _match_input_type(g, x):
    """Tensors in, Tensors out: a raw gradient for a level-0 Tensor input is wrapped."""
    if isinstance(x, Tensor) and x._trace is EVAL_TRACE and not isinstance(g, Tensor):
        return Tensor(g)
    return g


def _primal_of(out, trace):
    """Replace this trace's tracers in a pytree by their primal values."""
    return tree_map(lambda v: v._value if isinstance(v, Tensor) and v._trace is trace else v, out)


def split_aux(out, has_aux: bool, fname: str):
    """`(output, aux)` of a `has_aux` function's result, or TypeError in JAX's words."""
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"has_aux=True requires {fname} to return a two-element tuple (output, aux), but "
            f"got type {type(out)} with value {reprlib.repr(out)}."
        )
    return out[0], out[1]


_SCALAR_ONLY = "Gradient only defined for scalar-output functions. "


def _check_scalar_output(out, holomorphic: bool, transform: str = "grad") -> None:
    if not isinstance(out, Tensor) and not is_valid_value(out):
        what = (
            f"a {type(out).__name__} of {len(out)} values"
            if isinstance(out, (tuple, list, dict))
            else f"{reprlib.repr(out)} of type {type(out)}"
        )
        raise TypeError(
            f"{_SCALAR_ONLY}Output was {what}. {transform} needs one real scalar (an array of "
            "shape ()); to differentiate a function with several or non-scalar outputs, use "
            "jacrev (jax.jacobian) or vjp."
        )
    shape = tuple(out.shape if isinstance(out, Tensor) else np.shape(out))
    if shape != ():
        size = int(np.prod(shape))
        extract = ""
        if size == 1:
            idx = " or output[0]" if len(shape) == 1 else ""
            extract = f"extract the scalar with output.reshape(()){idx}, "
        raise TypeError(
            f"{_SCALAR_ONLY}Output had shape: {shape}. To get the gradient, {extract}reduce the "
            "output to a scalar with output.sum(), or use jacrev (jax.jacobian) or vjp to "
            "differentiate a function with a non-scalar output."
        )
    dt = dtype_of(out)
    if holomorphic:
        if dt.kind != "c":
            raise TypeError(
                f"{transform} with holomorphic=True requires outputs with complex dtype, but "
                f"got {dt.name}."
            )
    elif dt.kind == "c":
        raise TypeError(
            f"{transform} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
            "holomorphic=True. For a real loss of a complex output take its .real, .imag or "
            "abs; for other non-holomorphic functions use vjp directly."
        )
    elif float_kind(dt) != "f":
        raise TypeError(
            f"{transform} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dt.name}. For differentiation of functions with integer "
            "outputs, use vjp directly."
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
        allow_int: integer inputs get zero gradients of dtype `float0` instead of an error.

    Returns:
        A function returning `(value, gradient)`, or `((value, aux), gradient)` with `has_aux`.

    For a real-valued function of complex inputs the gradient is JAX's: the conjugate of
    PyTorch's `.grad` (see the complex-numbers guide).

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> value, g = ad.value_and_grad(lambda x: anp.sum(x ** 2))(anp.array([1.0, 2.0]))
        >>> float(value), g
        (5.0, array([2., 4.]))
    """
    check_callable(fun, "value_and_grad")
    return wraps(fun)(_value_and_grad(fun, argnums, has_aux, holomorphic, allow_int))


def _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, transform="grad") -> Callable:
    """`value_and_grad`'s function, unwrapped (grad wraps its own)."""
    fname = _fname(fun)

    @checks_leaks(transform)
    def value_and_grad_f(*args, **kwargs):
        nums = check_argnums(argnums, len(args), fname)
        if holomorphic:
            check_holomorphic_inputs(transform, args, nums, fname)
        trace = push_trace(ReverseTrace)
        try:
            trace.spares = []  # (given back to the pool of recycled memory below)
            trees = [args[i] for i in nums]
            leaves = (
                _Leaves(trace, trees, fname=fname, positions=nums)
                if allow_int
                else _Leaves(trace, trees, nums, fname)
            )
            call_args = list(args)
            for i, w in zip(nums, leaves.wrapped):
                call_args[i] = w
            result = fun(*call_args, **kwargs)
            out, aux = split_aux(result, has_aux, fname)
            _check_scalar_output(out, holomorphic, transform)
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
        grads = leaves.gradients(cts)
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
    `grad(grad(f))` is the second derivative. Complex inputs of a real `fun` get JAX's
    gradient (for abs(z)**2 it is 2 conj(z); `.grad` on the torch face is its conjugate).

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp
        >>> float(ad.grad(anp.sin)(0.0))
        1.0
        >>> float(ad.grad(ad.grad(ad.grad(anp.sin)))(0.0))
        -1.0
        >>> complex(ad.grad(lambda z: anp.abs(z) ** 2)(1.0 + 2.0j))
        (2-4j)
    """
    check_callable(fun, "grad")
    vg = _value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @wraps(fun)
    def grad_f(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


def vjp(fun: Callable, *primals, has_aux: bool = False) -> tuple:
    """Evaluate `fun(*primals)` and return its pullback.

    Returns:
        `(out, vjp_fn)` or `(out, vjp_fn, aux)`. `vjp_fn(ct)` takes one cotangent with
        the structure, shapes and dtypes of `out` and returns a tuple with one
        cotangent per primal (float0 zeros for integer primals). It may be called any
        number of times. Complex values follow JAX's convention: `vjp_fn` is the plain
        transpose of the JVP (no conjugation).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> out, f_vjp = ad.vjp(lambda x: x * 2.0, np.array([1.0, 2.0]))
        >>> f_vjp(np.array([1.0, 10.0]))
        (array([ 2., 20.]),)
    """
    check_callable(fun, "vjp")
    return pullback(fun, primals, has_aux)


def _check_cotangent(c, i: int, shape, dtype, fname: str):
    """The cotangent for output `i` as an array, or ValueError in JAX's words."""
    if not isinstance(c, (Tensor, np.ndarray)):
        if isinstance(c, (bool, int, float, complex)) and not isinstance(c, bool):
            kind_ok = is_inexact(dtype) and (
                np.dtype(dtype).kind == "c" or not isinstance(c, complex)
            )
            c = np.asarray(c, dtype=dtype) if kind_ok else np.asarray(c)
        elif is_valid_value(c):
            c = np.asarray(c)
        else:
            raise invalid_value_error(c, f"the cotangent for output {i} of {fname}")
    c_shape = tuple(c.shape)
    c_dt = dtype_of(c)
    expected = dtype if is_inexact(dtype) else float0
    # (an integer output's cotangent is ignored: float0 as in JAX, or any real zeros)
    ok_dtype = c_dt == expected or (not is_inexact(dtype) and c_dt.kind in "biuf")
    if c_shape != tuple(shape) or not ok_dtype:
        raise ValueError(
            "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got "
            f"{type_str(c)}, but expected {type_str(np.zeros(shape, expected))} because output "
            f"{i} of {fname} had type {type_str(np.zeros(shape, dtype))}. (Shape of cotangent "
            f"input to vjp pullback function {c_shape} must be the same as the shape of the "
            f"corresponding primal output {tuple(shape)}, its dtype the output's.)"
        )
    return c


@checks_leaks("vjp")
def pullback(fun: Callable, primals, has_aux: bool, conjugate: bool = False) -> tuple:
    """`vjp` (JAX's convention: the plain transpose of the JVP, which the rules compute).
    With `conjugate=True` the pullback follows PyTorch's convention for complex values
    instead (`conj(J^T conj(ct))`), for callers on the torch face."""
    fname = _fname(fun)
    with new_trace(ReverseTrace) as trace:
        leaves = _Leaves(trace, primals, fname=fname)
        result = fun(*leaves.wrapped)
        out, aux = split_aux(result, has_aux, fname)
    leaves.wrapped = []  # (the pullback below keeps `leaves`: its edges, not its tracers)
    out_flat, out_def = tree_flatten(out)
    for i, o in enumerate(out_flat):
        if not is_valid_value(o):
            raise TypeError(
                f"{fname} returned {reprlib.repr(o)} of type {type(o)} at output component "
                f"{i}, which is not a valid JAX type: vjp differentiates functions returning "
                "arrays, scalars or Tensors (or pytrees of them)."
            )
    out_primal = _primal_of(out, trace)
    tape = trace.nodes
    edges = [v._edge if isinstance(v, Tensor) and v._trace is trace else None for v in out_flat]
    shapes = [(tuple(np.shape(v)) if not isinstance(v, Tensor) else v.shape) for v in out_flat]
    dtypes = [dtype_of(v) for v in out_flat]

    def vjp_fn(*args):
        if len(args) != 1:
            raise TypeError(
                f"The function returned by vjp applied to {fname} was called with {len(args)} "
                "arguments, but functions returned by vjp (jax.vjp) must be called with a "
                "single argument corresponding to the single value returned by the function "
                "being differentiated (even if that returned value is a tuple or other "
                f"container): for a function returning (x, x), call f_vjp((ct1, ct2)), not "
                "f_vjp(ct1, ct2)."
            )
        (ct,) = args
        ct_flat, ct_def = tree_flatten(ct)
        if ct_def != out_def:
            raise ValueError(
                f"unexpected tree structure of the argument to the VJP function of {fname}: it "
                f"must match the pytree structure of {fname}'s output. Tree structure of "
                f"cotangent input {ct_def} does not match structure of primal output {out_def}."
            )
        roots, seeds = [], []
        for i, (edge, shape, c) in enumerate(zip(edges, shapes, ct_flat)):
            c = _check_cotangent(c, i, shape, dtypes[i], fname)
            if edge is not None:
                roots.append(edge)
                seeds.append(conj_complex(c) if conjugate else c)
        cts = backward_pass(roots, seeds, retain_graph=True, order=tape) if roots else {}
        return tuple(leaves.gradients(cts, conjugate))

    if has_aux:
        return out_primal, vjp_fn, _primal_of(aux, trace)
    return out_primal, vjp_fn


def tangents_for(tangents: tuple, primals) -> tuple:
    """The tangents given to a linearized function, one per primal, each as its primal's
    tangent type (`_tangent_for`); TypeError for another count."""
    if len(tangents) != len(primals):
        raise TypeError(
            f"linearized function takes {len(primals)} tangents (one per primal), got "
            f"{len(tangents)}"
        )
    return tuple(_tangent_for(t, p, i) for i, (t, p) in enumerate(zip(tangents, primals)))


def _tangent_for(t, primal, i: int):
    """Tangent `i` of a linearized function as an array of its primal's tangent type, or
    ValueError in JAX's words."""
    p_dt = dtype_of(primal)
    expected = p_dt if is_inexact(p_dt) else float0
    if isinstance(t, (float, complex)) and not isinstance(t, bool) and is_inexact(p_dt):
        if isinstance(t, float) or p_dt.kind == "c":
            t = np.asarray(t, p_dt)  # (a Python number takes the primal's precision)
    elif not isinstance(t, (Tensor, np.ndarray)):
        t = _as_input(t, f"tangent {i}")
    shape = tuple(np.shape(primal) if not isinstance(primal, Tensor) else primal.shape)
    if tuple(t.shape) != shape or dtype_of(t) != expected:
        raise ValueError(
            "linearized function called on tangent values inconsistent with the original "
            f"primal values: got tangent {type_str(t)} for primal {type_str(primal)} (argument "
            f"{i}) but expected {type_str(np.zeros(shape, expected))}."
        )
    return t


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """Evaluate `fun` once and return `(out, jvp_fn)` (`(out, jvp_fn, aux)` with `has_aux`),
    where `jvp_fn(*tangents)` is its JVP at `primals`.

    `jvp_fn` never re-evaluates `fun`: it transposes the recorded pullback of
    `fun` (the pullback is linear in its cotangent), so each call costs one pass
    over the recorded graph. Tangents must have their primals' shapes and dtypes
    (`float0` for integer primals).

    Example:
        >>> import numpy as np, autodiff as ad, autodiff.numpy as anp
        >>> out, f_jvp = ad.linearize(lambda x: x ** 3, 2.0)
        >>> float(out), float(f_jvp(1.0))
        (8.0, 12.0)
    """
    check_callable(fun, "linearize")
    primals = tuple(_as_input(p, f"argument {i} of {_fname(fun)}") for i, p in enumerate(primals))
    result = pullback(fun, primals, has_aux)
    out, f_pullback = result[0], result[1]
    out_flat, out_def = tree_flatten(out)
    zeros = tree_unflatten(
        out_def,
        [
            np.zeros(shape_of(o), dtype_of(o) if is_inexact(dtype_of(o)) else float0)
            for o in out_flat
        ],
    )
    _, transpose = pullback(f_pullback, (zeros,), False)

    def jvp_fn(*tangents):
        (t_out,) = transpose(tangents_for(tangents, primals))
        return t_out

    if has_aux:
        return out, jvp_fn, result[2]
    return out, jvp_fn


def _zeros_like_primal(p, what: str) -> np.ndarray:
    """Zeros of a primal's shape and dtype (an abstract value's too: shape and dtype only)."""
    if hasattr(p, "shape") and hasattr(p, "dtype") and not isinstance(p, (Tensor, np.ndarray)):
        p = np.zeros(tuple(p.shape), p.dtype)
    return np.zeros(np.shape(p), dtype_of(_as_input(p, what)))


def _check_transpose_kinds(in_dtypes: list, out_dtypes: list, integer: bool, fname: str):
    """JAX's check: a linear map to transpose is float/complex to float/complex, or integer to
    integer."""
    kinds_ok = (
        all(dt.kind in "biu" for dt in out_dtypes)
        if integer
        else all(dt.kind in "fc" for dt in in_dtypes + out_dtypes)
    )
    if not kinds_ok:
        raise TypeError(
            "linear_transpose only supports [float or complex] -> [float or complex], and "
            f"integer -> integer functions, but got {[d.name for d in in_dtypes]} -> "
            f"{[d.name for d in out_dtypes]} for {fname}."
        )


def linear_transpose(fun: Callable, *primals, reduce_axes=()) -> Callable:
    """The transpose of the linear function `fun`: `transpose_fun(ct)` returns a tuple with
    one cotangent per primal. `primals` fix the input structure, shapes and dtypes (arrays,
    scalars, or objects with `.shape` and `.dtype`); their values do not matter. As in JAX,
    `fun` must map float/complex inputs to float/complex outputs, or integers to integers.

    Example:
        >>> import numpy as np, autodiff as ad
        >>> t = ad.linear_transpose(lambda x: (1 + 2j) * x, 1j)
        >>> t(3 + 4j)
        (array(-5.+10.j),)
    """
    check_callable(fun, "linear_transpose")
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    fname = _fname(fun)
    in_flat, in_def = tree_flatten(primals)
    examples = [_zeros_like_primal(p, f"primal {i} of {fname}") for i, p in enumerate(in_flat)]
    in_dtypes = [e.dtype for e in examples]
    integer = bool(in_dtypes) and all(dt.kind in "biu" for dt in in_dtypes)
    # An integer-to-integer linear map is transposed through its float extension.
    run = [e.astype(np.float64) if integer else e for e in examples]
    out, pull = pullback(lambda *xs: fun(*tree_unflatten(in_def, xs)), run, False)
    out_flat, out_def = tree_flatten(out)
    out_dtypes = [dtype_of(o) for o in out_flat]
    if integer:  # (the output dtypes of the integer function itself)
        out_dtypes = [dtype_of(o) for o in tree_flatten(fun(*tree_unflatten(in_def, examples)))[0]]
    _check_transpose_kinds(in_dtypes, out_dtypes, integer, fname)
    expected = [np.zeros(np.shape(o), dtype_of(o)) for o in out_flat]

    def transpose_fun(out_cotangent):
        ct_flat, ct_def = tree_flatten(out_cotangent)
        if ct_def != out_def:
            raise TypeError(
                f"cotangent tree does not match function output, expected {out_def} but got "
                f"{ct_def}"
            )
        cts = []
        for c, e in zip(ct_flat, expected):
            c = np.asarray(c) if not isinstance(c, (Tensor, np.ndarray)) else c
            want = "biu" if integer else e.dtype.kind
            same_kind = dtype_of(c).kind in want
            if tuple(c.shape) != e.shape or not same_kind:
                raise TypeError(
                    f"cotangent type does not match function output, expected {type_str(e)} but "
                    f"got {type_str(c)}"
                )
            cts.append(c.astype(e.dtype) if dtype_of(c) != e.dtype else c)
        in_cts = pull(tree_unflatten(out_def, cts))
        if integer:
            in_cts = tuple(np.asarray(c).astype(dt) for c, dt in zip(in_cts, in_dtypes))
        else:  # (arrays, as JAX returns, also for 0-d inputs)
            in_cts = tuple(np.asarray(c) if isinstance(c, np.generic) else c for c in in_cts)
        return tuple(tree_unflatten(in_def, list(in_cts)))

    return transpose_fun
