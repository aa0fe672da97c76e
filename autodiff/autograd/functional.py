"""torch.autograd.functional: vjp, jvp, jacobian, hessian, hvp and vhp of Tensor functions.

Higher-level wrappers around the one engine, with torch's argument rules: `inputs`
is a Tensor or a tuple of Tensors, and results mirror that structure (a Tensor in
gives a Tensor out; tuples give tuples, and tuples of tuples for Jacobians and
Hessians). Without `create_graph` results never require grad.

How each one is computed:

- `vjp`, `vhp`, `hvp` and reverse-mode `jacobian`: `autograd.grad` on the graph
  that `func` records (one call per output element for `jacobian`, or a single
  `is_grads_batched=True` call when `vectorize=True`); `vhp` and `hvp` differentiate
  the gradient again, `hvp` with torch's double-backward trick.
- `jvp`: real forward mode (a dual level), not torch's double-backward trick, so
  it costs one evaluation of `func`; every operation in `func` needs a jvp rule.
- forward-mode `jacobian` (`vectorize=True` only, as in torch): `autodiff.jacfwd`;
  forward-mode `hessian`: `jacfwd` of the functional `autodiff.grad`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import autodiff.numpy as anp
from autodiff.autograd import forward_ad
from autodiff.autograd._backward import grad as _autograd_grad
from autodiff.autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from autodiff.core.tensor import Tensor
from autodiff.jacobians import basis_rows, jacfwd, jacrev, row_blocks
from autodiff.numpy import copy
from autodiff.ops.elementwise import conj_complex
from autodiff.reverse import grad as functional_grad
from autodiff.torch.creation import ones_like, zeros, zeros_like

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


# ---- argument handling (torch's rules and messages) ----------------------------------------


def _as_tuple(value, what: str, fn_name: str) -> tuple[bool, tuple]:
    """`(was_tuple, values)`: `value` as a tuple of Tensors, or torch's TypeError."""
    was_tuple = isinstance(value, tuple)
    values = value if was_tuple else (value,)
    for i, el in enumerate(values):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if was_tuple else f"the given {what}"
            raise TypeError(
                f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                f"{where} has type {type(el)}."
            )
    return was_tuple, values


def _prepare(tensors: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh Tensor objects for `func`: differentiable copies when building a graph through
    them, else detached leaves. A fresh object separates the argument from the same
    tensor captured by `func`'s closure."""

    return tuple(
        copy(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
        for t in tensors
    )


def _finish(values, create_graph: bool):
    """Detach results (recursively through tuples) unless the caller asked for a graph."""
    if isinstance(values, tuple):
        return tuple(_finish(v, create_graph) for v in values)
    return values if create_graph else values.detach()


def _unpack(result, was_tuple):
    """Undo `_as_tuple`: `was_tuple` is one flag, or `(outer, inner)` for nested results."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            result = tuple(r[0] for r in result)
        return result if outer else result[0]
    return result if was_tuple else result[0]


def _torch_size(shape) -> str:
    return f"torch.Size([{', '.join(str(s) for s in shape)}])"


def _validate_v(v: tuple, refs: tuple, refs_were_tuple: bool) -> None:
    if len(v) != len(refs):
        if refs_were_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(refs)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el, ref) in enumerate(zip(v, refs)):
        if tuple(el.shape) != tuple(ref.shape):
            entry = f"Entry {i} in " if refs_were_tuple else ""
            raise RuntimeError(
                f"{entry}v has invalid size: should be {_torch_size(ref.shape)} but got "
                f"{_torch_size(el.shape)}."
            )


def _vector(v, refs: tuple, refs_were_tuple: bool, fn_name: str, create_graph: bool, missing: str):
    """The checked `v` (as a tuple), or None when it may be omitted (one-element `refs`)."""
    if v is None:
        if len(refs) != 1 or refs[0].size != 1:
            raise RuntimeError(missing)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _validate_v(v, refs, refs_were_tuple)
    return v


_NO_V_FOR_OUTPUT = (
    "The vector v can only be None if the user-provided function returns a single Tensor with a "
    "single element."
)
_NO_V_FOR_INPUT = (
    "The vector v can only be None if the input to the user-provided function is a single Tensor "
    "with a single element."
)


def _level0(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._from(np.asarray(x))


def _call(func: Callable, inputs: tuple, fn_name: str) -> tuple[bool, tuple]:
    return _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)


# ---- strict mode ------------------------------------------------------------------------------


def _check_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    """In strict mode, every value must exist and depend on the inputs (torch's messages)."""
    if not strict:
        return
    for i, value in enumerate(values):
        if value is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
        if value.requires_grad:
            continue
        if kind == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example)."
            )
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients. The outputs "
            "must be computed in a differentiable manner from the input when running in strict "
            "mode."
        )


_MISSING = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. This "
    "is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
    "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
    "in the grad_jacobian. This is not allowed in strict mode as it prevents from using the "
    "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros shaped like `refs[i]` for missing results; strict mode raises instead."""

    filled = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_MISSING[stage].format(i=i))
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        filled.append(g)
    return tuple(filled)


def _grad(
    outputs: tuple,
    inputs: tuple,
    grad_outputs=None,
    *,
    create_graph: bool,
    retain_graph: bool | None = None,
    is_grads_batched: bool = False,
) -> tuple:
    """`autograd.grad` that skips outputs without a graph (and `None` outputs); None for
    inputs no output depends on."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _autograd_grad(
        tuple(o for o, _ in pairs),
        inputs,
        tuple(g for _, g in pairs),
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
        is_grads_batched=is_grads_batched,
    )


# ---- vjp / jvp --------------------------------------------------------------------------------


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func(inputs), v^T J)`: the vector-Jacobian product of `func` at `inputs`.

    Arguments:
        func: takes Tensors, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors.
        v: shaped like the output(s); optional when `func` returns one one-element Tensor.
        create_graph: make both results differentiable.
        strict: raise when an input does not influence the outputs (instead of zeros).

    Example:
        >>> import autodiff as ad
        >>> out, g = vjp(lambda x: x ** 2, ad.tensor([1.0, 2.0]), ad.tensor([1.0, 1.0]))
        >>> out, g
        (tensor([1., 4.]), tensor([2., 4.]))
    """
    with enable_grad():
        inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_were_tuple, outputs = _call(func, inputs, "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _vector(v, outputs, outputs_were_tuple, "vjp", create_graph, _NO_V_FOR_OUTPUT)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "back")
    return (
        _unpack(_finish(outputs, create_graph), outputs_were_tuple),
        _unpack(_finish(result, create_graph), inputs_were_tuple),
    )


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func(inputs), J v)`: the Jacobian-vector product of `func` at `inputs`.

    Computed in forward mode on a dual level (one evaluation of `func`), where torch
    uses the double-backward trick; results and error messages are torch's. `func`
    sees dual Tensors, so every operation it uses needs a forward-mode (jvp) rule.

    Arguments:
        func: takes Tensors, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors.
        v: shaped like the input(s); optional when `inputs` is one one-element Tensor.
        create_graph: make both results differentiable (with respect to `inputs` and `v`).
        strict: raise when an output does not depend on the inputs (instead of zeros).

    Example:
        >>> import autodiff as ad
        >>> out, t = jvp(lambda x: x ** 3, ad.tensor([1.0, 2.0]), ad.tensor([1.0, 0.5]))
        >>> out, t
        (tensor([1., 8.]), tensor([3., 6.]))
    """

    with enable_grad():
        inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        # A graph through the primal computation is only needed to answer strict mode.
        inputs = _prepare(inputs, create_graph, need_graph=create_graph or strict)
        v = _vector(v, inputs, inputs_were_tuple, "jvp", create_graph, _NO_V_FOR_INPUT)
        if v is None:
            v = (ones_like(inputs[0]),)
        with forward_ad.dual_level():
            duals = tuple(forward_ad.make_dual(x, t) for x, t in zip(inputs, v))
            outputs_were_tuple, dual_outputs = _call(func, duals, "jvp")
            unpacked = [forward_ad.unpack_dual(o) for o in dual_outputs]
        outputs = tuple(_level0(p) for p, _ in unpacked)
        tangents = tuple(None if t is None else _level0(t) for _, t in unpacked)
        if strict:
            _check_requires_grad(outputs, "outputs", strict)
            zeros = tuple(np.zeros(o.shape, o.dtype) for o in outputs)
            used = _grad(outputs, inputs, zeros, create_graph=False, retain_graph=True)
            for i, g in enumerate(used):  # torch's "independent of input i" test
                if g is None:
                    raise RuntimeError(_MISSING["back"].format(i=i))
    result = _fill_in_zeros(tangents, outputs, strict, create_graph, "back_trick")
    return (
        _unpack(_finish(outputs, create_graph), outputs_were_tuple),
        _unpack(_finish(result, create_graph), outputs_were_tuple),
    )


# ---- jacobian ---------------------------------------------------------------------------------


def jacobian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
    *,
    chunk_size: int | None = None,
    executor=None,
    progress=False,
):
    """The Jacobian of `func` at `inputs`: entry `[i][j]` has shape `out_i.shape + in_j.shape`.

    A single Tensor in and out gives one Tensor; a tuple on either side gives a
    tuple; tuples on both sides give a tuple (over outputs) of tuples (over inputs).

    Arguments:
        func: takes Tensors, returns a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors.
        create_graph: make the Jacobian differentiable (reverse mode only).
        strict: raise when an output does not depend on an input (not with `vectorize`).
        vectorize: reverse mode: one batched backward pass (`is_grads_batched=True`)
            instead of one per output element; forward mode requires it.
        strategy: `"reverse-mode"` (one backward pass per output element) or
            `"forward-mode"` (`autodiff.jacfwd`, one batched forward pass).
        chunk_size, executor, progress: (autodiff's) `autodiff.jacrev`/`jacfwd` over chunks
            of `chunk_size` rows, each a task of `executor` (a `dask.distributed.Client` or a
            `concurrent.futures.Executor`), with a progress bar; no graph, real dtypes.

    Example:
        >>> import autodiff as ad
        >>> jacobian(lambda x: x ** 2, ad.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    if strategy not in _STRATEGIES:
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if executor is not None or progress or chunk_size is not None:
        scale = {"chunk_size": chunk_size, "executor": executor, "progress": progress}
        return _scaled_out("jacobian", func, inputs, create_graph, strict, strategy, scale)
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.'
            )
        return _jacobian_forward(func, inputs, strict, vectorize)

    with enable_grad():
        inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_were_tuple, outputs = _call(func, inputs, "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                    "not supported together. Please either set `strict=False` or "
                    "`vectorize=False`."
                )
            jac = _jacobian_batched(outputs, inputs, create_graph)
        else:
            jac = _jacobian_rows(outputs, inputs, create_graph, strict)
        jac = _finish(jac, create_graph)
    return _unpack(jac, (outputs_were_tuple, inputs_were_tuple))


def _one_hot(shape: tuple, dtype, j: int) -> Tensor:
    e = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype)
    e[j] = 1
    return Tensor._from(e.reshape(shape))


def _jacobian_rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """One `autograd.grad` per output element; row j of block (i, k) is d out_i[j] / d in_k."""

    jac = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        for j in range(out.size):
            seed = (_one_hot(out.shape, out.dtype, j),)
            row = _grad((out,), inputs, seed, create_graph=create_graph, retain_graph=True)
            for k, (g, inp) in enumerate(zip(row, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(
                            f"Output {i} of the user-provided function is independent of input "
                            f"{k}. This is not allowed in strict mode."
                        )
                    g = zeros(inp.shape, dtype=inp.dtype)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(
                        "The jacobian of the user-provided function is independent of input "
                        f"{k}. This is not allowed in strict mode when create_graph=True."
                    )
                rows[k].append(g)
        jac.append(
            tuple(
                anp.reshape(anp.stack(r), out.shape + inp.shape)
                if r
                else zeros(out.shape + inp.shape, dtype=inp.dtype)
                for r, inp in zip(rows, inputs)
            )
        )
    return tuple(jac)


def _jacobian_batched(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    """All rows at once: one `autograd.grad(..., is_grads_batched=True)` over the output basis."""

    out_shapes = [tuple(o.shape) for o in outputs]
    n = sum(o.size for o in outputs)
    if n == 0:
        return tuple(
            tuple(zeros(s + inp.shape, dtype=inp.dtype) for inp in inputs) for s in out_shapes
        )
    rows = basis_rows(out_shapes, [o.dtype for o in outputs], 0, n)
    seeds = tuple(Tensor._from(r) for r in rows)
    grads = _grad(outputs, inputs, seeds, create_graph=create_graph, is_grads_batched=True)
    per_input = []
    for g, inp in zip(grads, inputs):
        if g is None:
            g = zeros((n,) + inp.shape, dtype=inp.dtype)
        per_input.append(
            [
                block.reshape(s + inp.shape)
                for block, s in zip(row_blocks(g, out_shapes), out_shapes)
            ]
        )
    return tuple(tuple(blocks[i] for blocks in per_input) for i in range(len(outputs)))


def _jacobian_forward(func: Callable, inputs, strict: bool, vectorize: bool):
    """Forward-mode Jacobian: `autodiff.jacfwd` over all inputs (vectorized only, as in torch)."""

    if strict:
        raise RuntimeError(
            'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
            "are not supported together (yet). Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
            "implemented for `vectorize=True`."
        )
    outputs_were_tuple = []

    def tupled(*xs):
        was_tuple, outs = _call(func, xs, "jacobian")
        outputs_were_tuple.append(was_tuple)
        return outs

    jac = jacfwd(tupled, argnums=tuple(range(len(inputs))))(*(x.detach() for x in inputs))
    jac = tuple(tuple(_level0(block).detach() for block in row) for row in jac)
    return _unpack(jac, (outputs_were_tuple[0], inputs_were_tuple))


def _scaled_out(fn_name: str, func, inputs, create_graph, strict, strategy, scale: dict):
    """jacobian / hessian with chunk_size, executor or progress: the functional `jacrev` or
    `jacfwd` (by `strategy`) over detached inputs, in chunks of rows run as tasks
    (autodiff/distributed); Tensors without a graph come back."""
    if create_graph or strict:
        raise RuntimeError(
            f"torch.autograd.functional.{fn_name}: chunk_size=, executor= and progress= compute "
            "the rows without an autograd graph: they cannot be combined with "
            "create_graph=True or strict=True."
        )
    inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    xs = tuple(x.detach() for x in inputs)
    argnums = tuple(range(len(xs)))
    if fn_name == "hessian":

        def scalar_func(*a):
            return _single_element(func(*a), False, "hessian").reshape(())

        target, checked = functional_grad(scalar_func, argnums=argnums), xs
        structure = (inputs_were_tuple, inputs_were_tuple)
    else:
        outputs_were_tuple, outputs = _call(func, xs, fn_name)  # (the structure, here)
        target, checked = (lambda *a: _call(func, a, fn_name)[1]), xs + outputs
        structure = (outputs_were_tuple, inputs_were_tuple)
    if any(np.dtype(t.dtype).kind == "c" for t in checked):
        raise NotImplementedError(
            f"torch.autograd.functional.{fn_name}: chunk_size=, executor= and progress= take "
            "real inputs and outputs; for complex ones use autodiff.jacrev/jacfwd (JAX's "
            "convention) with them."
        )
    transform = jacfwd if strategy == "forward-mode" else jacrev
    jac = transform(target, argnums=argnums, **scale)(*xs)
    jac = tuple(tuple(_level0(block) for block in row) for row in jac)
    return _unpack(jac, structure)


def _construct_standard_basis_for(tensors: tuple, tensor_numels: tuple) -> tuple:
    """The `N x N` identity (`N = sum(tensor_numels)`) split by columns into one chunk per
    tensor, `N x numel` with that tensor's dtype (torch's helper of the vectorized Jacobian:
    row `k` of the chunks together is the k-th basis vector of all the inputs flattened).

    Example:
        >>> import autodiff as ad
        >>> a, b = _construct_standard_basis_for((ad.zeros(1), ad.zeros(2)), (1, 2))
        >>> a.shape, b.shape, b.tolist()
        ((3, 1), (3, 2), [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    """
    if len(tensors) != len(tensor_numels) or not tensors:
        raise ValueError(
            "_construct_standard_basis_for: expected one numel per tensor, and at least one tensor"
        )
    total = sum(tensor_numels)
    chunks, start = [], 0
    for tensor, numel in zip(tensors, tensor_numels):
        chunk = np.zeros((total, numel), dtype=tensor.dtype)
        chunk[start : start + numel] = np.eye(numel, dtype=tensor.dtype)
        chunks.append(Tensor._from(chunk))
        start += numel
    return tuple(chunks)


# ---- second order -----------------------------------------------------------------------------


def _single_element(out, strict: bool, fn_name: str) -> Tensor:
    """Check that `func` returned one one-element Tensor (torch's messages)."""
    was_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outs, "outputs", strict)
    if was_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.size != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )
    return out


def hessian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
    *,
    chunk_size: int | None = None,
    executor=None,
    progress=False,
):
    """The Hessian of scalar `func` at `inputs`: entry `[i][j]` has shape `in_i.shape + in_j.shape`.

    The Jacobian of the gradient. The gradient is always reverse mode; the outer
    Jacobian follows `outer_jacobian_strategy` (`"forward-mode"` needs `vectorize=True`
    and runs `autodiff.jacfwd` over the functional `autodiff.grad`). `chunk_size`,
    `executor` and `progress` as for `jacobian` (the outer Jacobian's rows as tasks).

    Example:
        >>> import autodiff as ad
        >>> hessian(lambda x: (x ** 3).sum(), ad.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    if executor is not None or progress or chunk_size is not None:
        scale = {"chunk_size": chunk_size, "executor": executor, "progress": progress}
        strategy, given = outer_jacobian_strategy, inputs if inputs_were_tuple else inputs[0]
        return _scaled_out("hessian", func, given, create_graph, strict, strategy, scale)

    def scalar_func(*xs):
        return _single_element(func(*xs), strict, "hessian").reshape(())

    if outer_jacobian_strategy == "forward-mode":

        def gradient(*xs):  # xs are forward-mode tracers: the functional grad sees through them
            g = functional_grad(scalar_func, argnums=tuple(range(len(xs))))(*xs)
            # (torch's convention: JAX's conjugate; an input the output does not depend on
            # gets a zero array: a Tensor for jacobian)
            return tuple(_level0(conj_complex(v)) for v in g)
    else:

        def gradient(*xs):
            g = jacobian(scalar_func, xs, create_graph=True)
            _check_requires_grad(g, "jacobian", strict)
            return g

    result = jacobian(
        gradient,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _unpack(result, (inputs_were_tuple, inputs_were_tuple))


def _gradient_setup(func, inputs, v, create_graph: bool, strict: bool, fn_name: str):
    """What vhp and hvp share: checked inputs, v, the output and its gradient (with a graph)."""
    inputs_were_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    v = _vector(v, inputs, inputs_were_tuple, fn_name, create_graph, _NO_V_FOR_INPUT)
    out = _single_element(func(*inputs), strict, fn_name)
    jac = _grad((out,), inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return inputs_were_tuple, inputs, v, out, jac


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func(inputs), v^T H)`: vector-Hessian product of scalar `func` (double backward).

    Example:
        >>> import autodiff as ad
        >>> out, p = vhp(lambda x: (x ** 3).sum(), ad.tensor([1.0, 2.0]), ad.tensor([1.0, 1.0]))
        >>> out, p
        (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        inputs_were_tuple, inputs, v, out, jac = _gradient_setup(
            func, inputs, v, create_graph, strict, "vhp"
        )
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back")
    return _finish(out, create_graph), _unpack(_finish(result, create_graph), inputs_were_tuple)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func(inputs), H v)`: Hessian-vector product of scalar `func`.

    As in torch, by the double-backward trick: `u -> H^T u` is linear, so the
    gradient of `H^T u` with respect to `u`, contracted with `v`, is `H v`. For
    twice continuously differentiable functions `H` is symmetric and `vhp` (one
    backward pass fewer) gives the same numbers.

    Example:
        >>> import autodiff as ad
        >>> out, p = hvp(lambda x: (x ** 3).sum(), ad.tensor([1.0, 2.0]), ad.tensor([1.0, 0.0]))
        >>> out, p
        (tensor(9.), tensor([6., 0.]))
    """

    with enable_grad():
        inputs_were_tuple, inputs, v, out, jac = _gradient_setup(
            func, inputs, v, create_graph, strict, "hvp"
        )
        u = tuple(zeros_like(x, requires_grad=True) for x in inputs)
        hessian_t_u = _grad(jac, inputs, u, create_graph=True)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(hessian_t_u, u, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back_trick")
    return _finish(out, create_graph), _unpack(_finish(result, create_graph), inputs_were_tuple)
