"""torch.autograd.Function's checks and options, gradcheck's deprecated helpers, autograd
.functional's helpers and the non-reentrant checkpoint's semantics, beside real torch.

Each test runs one program under autodiff and (when installed) under torch (`both`), and
compares what user code sees: values, error types and messages, identities.
"""

import contextlib
import importlib
import warnings
import weakref

import pytest
from torch_oracle import both

import autodiff as ad


def _sub(m, name: str):
    """`m.<name>` as a module (`autograd.gradcheck` is also a function's name)."""
    return importlib.import_module(f"{m.__name__}.{name}")


def _error(fn) -> str:
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return "no error"


# ---- saved tensors ------------------------------------------------------------------------


def test_clear_saved_tensors_on_access_drops_references_and_reads_once():
    def run(m):
        alive, messages = [], []

        class MyFn(m.autograd.Function):
            clear_saved_tensors_on_access = True

            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                ref = weakref.ref(x)
                del x
                alive.append(ref() is not None)
                messages.append(_error(lambda: ctx.saved_tensors))
                return g

        x = m.ones(3, requires_grad=True)
        y = MyFn.apply(x.clone())
        y.sum().backward(retain_graph=True)
        second = _error(lambda: y.sum().backward())
        z = MyFn.apply(x)
        outside = (z.grad_fn.saved_tensors[0] is x, _error(lambda: z.grad_fn.saved_tensors))
        return alive, messages, second, outside

    ours, torch = both(run)
    assert ours == torch
    assert ours[0] == [False] and "can only be accessed once" in ours[1][0]


def test_boxed_grads_call_passes_one_list():
    def run(m):
        seen = []

        class F(m.autograd.Function):
            boxed_grads_call = True

            @staticmethod
            def forward(ctx, x, y):
                return x * 2, y * 3

            @staticmethod
            def backward(ctx, grads):
                seen.append((type(grads).__name__, len(grads)))
                a, b = grads
                grads.clear()
                return a * 2, b * 3

        x = m.tensor([1.0, 2.0], requires_grad=True)
        a, _ = F.apply(x, x)
        a.sum().backward()
        return seen, x.grad.tolist()

    ours, torch = both(run)
    assert ours == torch == ([("list", 2)], [2.0, 2.0])


def test_a_ctx_kept_by_backward_still_reads_its_saved_tensors():
    def run(m):
        kept = []

        class Id(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, g):
                kept.append(ctx)
                return ctx.saved_tensors

        p = m.zeros(1, requires_grad=True)
        loss = Id.apply(p)
        loss.backward(retain_graph=True)
        del loss
        first = kept[0].saved_tensors[0] is p
        loss = Id.apply(p)
        loss.backward()
        del loss
        return first, _error(lambda: kept[1].saved_tensors)

    ours, torch = both(run)
    assert ours == torch
    assert ours[0] is True and "backward through the graph a second time" in ours[1]


def test_function_instance_has_no_node_attributes():
    class Id(ad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = Id()
    for name in ("name", "next_functions", "register_hook", "_register_hook_dict"):
        with pytest.raises(RuntimeError, match=f"Attribute '{name}' is invalid"):
            getattr(f, name)
    with pytest.raises(RuntimeError, match="underlying PyNode has already been deallocated"):
        f.metadata  # noqa: B018
    with pytest.raises(AttributeError):
        f.not_an_attribute  # noqa: B018
    assert Id.apply(ad.zeros(1, requires_grad=True)).grad_fn.name() == "IdBackward"


# ---- forward mode -------------------------------------------------------------------------


@pytest.mark.parametrize("in_place", [True, False])
def test_mark_dirty_under_forward_ad(in_place):
    def run(m):
        fwAD = m.autograd.forward_ad

        class InplaceMul(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def jvp(ctx, t):
                return t.mul_(2) if in_place else t * 2

        z = m.tensor(1.0, requires_grad=True)
        x = z.clone()
        with fwAD.dual_level():
            tangent = m.ones_like(x)
            dual = fwAD.make_dual(x, tangent)
            try:
                out = InplaceMul.apply(dual)
            except RuntimeError as e:
                return str(e)
            primal, t = fwAD.unpack_dual(out)
            result = (out is dual, t is tangent, float(primal.detach()), float(t), x._version)
            out.backward()
        return result, float(z.grad)

    ours, torch = both(run)
    assert ours == torch
    if not in_place:
        assert "not modifying the forward mode gradients inplace" in ours


def test_jvp_of_non_differentiable_outputs_and_integer_inputs():
    def run(m):
        fwAD = m.autograd.forward_ad
        seen = []

        class Marked(m.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                out = y.clone()
                ctx.mark_non_differentiable(out)
                return x.clone(), 3, out

            @staticmethod
            def jvp(ctx, tx, ty):
                seen.append(None if ty is None else ty.tolist())
                return tx, None, tx.clone()

        class Integer(m.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x.clone(), y.clone()

            @staticmethod
            def jvp(ctx, tx, ty):
                seen.append(None if ty is None else ty.tolist())
                return tx, None

        with fwAD.dual_level():
            x = fwAD.make_dual(m.ones(2), m.ones(2))
            err = _error(lambda: Marked.apply(x, m.ones(2)))
            _, out = Integer.apply(x, m.ones(2, dtype=m.int64))
            tangent = fwAD.unpack_dual(out).tangent
        return err, seen, tangent

    ours, torch = both(run)
    assert ours == torch
    assert "returned a gradient at position 2" in ours[0]


# ---- once_differentiable ------------------------------------------------------------------


def test_once_differentiable_puts_one_error_node_over_all_gradients():
    def run(m):
        class F(m.autograd.Function):
            @staticmethod
            def forward(ctx, a, scalar, b):
                ctx.save_for_backward(a, b)
                return a + scalar * b + a * b

            @staticmethod
            @m.autograd.function.once_differentiable
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                return g + g * b, None, g * 2 + g * a

        x = m.ones(2, requires_grad=True)
        y = m.ones(2, requires_grad=True)
        go = m.ones((), requires_grad=True)
        gx, gy = m.autograd.grad(F.apply(x, 2, y).sum(), (x, y), go, create_graph=True)
        node = gx.grad_fn
        shape = (
            type(node).__name__,
            [None if n is None else type(n).__name__ for n, _ in node.next_functions],
            gy.grad_fn is node,
        )
        return shape, _error(lambda: gx.sum().backward())

    ours, torch = both(run)
    assert ours == torch
    assert ours[0] == ("Error", ["AccumulateGrad", None, "AccumulateGrad"], True)


# ---- gradcheck ----------------------------------------------------------------------------


def test_deprecated_jacobian_functions():
    def run(m):
        gc = _sub(m, "autograd.gradcheck")
        a = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64, requires_grad=True)
        b = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            numerical = gc.get_numerical_jacobian(
                lambda xs: xs[0].sum(0) * xs[0][0, 1] + xs[1][:2], (a, b), eps=1e-6
            )
            only_b = gc.get_numerical_jacobian(lambda xs: xs[1] * 2, (a, b), target=b, eps=1e-6)
            jac, reentrant, sizes_ok, types_ok = gc.get_analytical_jacobian(
                (a, b), a.sum(0) * b[:2]
            )
        warned = all(issubclass(w.category, FutureWarning) for w in caught) and len(caught) == 3
        with pytest.raises(ValueError, match="Expected grad_out to be 1.0"):
            gc.get_analytical_jacobian((a,), a * 2, grad_out=2.0)
        return (
            [j.detach().numpy().round(5).tolist() for j in numerical],
            [j.detach().numpy().round(5).tolist() for j in only_b],
            [j.detach().numpy().tolist() for j in jac],
            (reentrant, sizes_ok, types_ok, warned),
        )

    ours, torch = both(run)
    assert ours == torch


def test_gradcheck_gives_backward_an_undefined_gradient():
    def run(m):
        def fn(x):
            def hook(g):
                if g is None:
                    raise RuntimeError("x is undefined")

            y = x.clone()
            y.register_hook(hook)
            return y

        x = m.ones(1, dtype=m.float64, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            message = _error(lambda: m.autograd.gradcheck(fn, (x,)))
            quiet = m.autograd.gradcheck(fn, (x,), raise_exception=False)
        warned = any("New undefined gradient support" in str(w.message) for w in caught)
        return message.split(".")[0], quiet, warned

    ours, torch = both(run)
    assert ours == torch


# ---- autograd.functional ------------------------------------------------------------------


def test_construct_standard_basis_for():
    def run(m):
        F = _sub(m, "autograd.functional")
        inputs = (m.zeros(2, dtype=m.float64), m.zeros(()), m.zeros(3, 1, dtype=m.float32))
        chunks = F._construct_standard_basis_for(inputs, tuple(t.numel() for t in inputs))
        return [(str(c.dtype).split(".")[-1], c.numpy().tolist()) for c in chunks]

    ours, torch = both(run)
    assert ours == torch


def test_forward_over_reverse_hessian_with_an_unused_input():
    def run(m):
        F = _sub(m, "autograd.functional")
        x, y = m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0, 5.0])
        h = F.hessian(
            lambda a, b: (a**3).sum(),
            (x, y),
            vectorize=True,
            outer_jacobian_strategy="forward-mode",
        )
        return [[block.detach().numpy().tolist() for block in row] for row in h]

    ours, torch = both(run)
    assert ours == torch


# ---- checkpoint (use_reentrant=False) -----------------------------------------------------


def _non_deterministic(first, then):
    calls = [0]

    def fn(x):
        calls[0] += 1
        return first(x) if calls[0] == 1 else then(x)

    return fn


def test_checkpoint_detects_non_determinism():
    def run(m):
        cp = _sub(m, "utils.checkpoint")

        def three(x):
            return x.sin().exp().sin()

        def two(x):
            return x.sin().exp()

        def two_other(x):
            return x.sin() * m.tensor([1.0, 2.0])

        a = m.ones(1, requires_grad=True)

        def attempt(first, then, early_stop=True, **kwargs):
            context = (
                contextlib.nullcontext() if early_stop else cp.set_checkpoint_early_stop(False)
            )
            with context:
                out = cp.checkpoint(
                    _non_deterministic(first, then), a, use_reentrant=False, **kwargs
                )
            return _error(lambda: out.sum().backward()).split("\n")[0]

        return [
            attempt(three, two),
            attempt(two, three, early_stop=False),
            attempt(two, three),  # (stops once what backward needs is recomputed)
            attempt(two, two_other),
        ]

    ours, torch = both(run)
    assert ours == torch
    assert ours[2] == "no error"


def test_checkpoint_debug_mode_explains_the_mismatch():
    cp = ad.utils.checkpoint
    a = ad.ones(1, requires_grad=True)
    fn = _non_deterministic(lambda x: x.sin().exp(), lambda x: x.sin() * ad.tensor([1.0, 2.0]))
    with cp.set_checkpoint_debug_enabled(True):
        out = cp.checkpoint(fn, a, use_reentrant=False)
    with pytest.raises(cp.CheckpointError) as info:
        out.sum().backward()
    text = str(info.value)
    assert "You are seeing this error because you passed `debug=True` to checkpoint" in text
    assert "output of ExpBackward0" in text and "test_torch_function_checks.py" in text
    assert "different metadata" in str(info.value.__cause__)


def test_checkpoint_hands_each_recomputed_tensor_out_once():
    def run(m):
        cp = _sub(m, "utils.checkpoint")
        messages = []

        class MyFunc(m.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                out = x * y
                ctx.save_for_backward(x, y, out)
                return out

            @staticmethod
            def backward(ctx, g):
                x, y, _ = ctx.saved_tensors
                messages.append(_error(lambda: ctx.saved_tensors))
                return g * y, g * x

        x = m.tensor(2.0, requires_grad=True)
        y = m.tensor(3.0, requires_grad=True)
        out = cp.checkpoint(lambda a, b: MyFunc.apply(a * b, b * b), x, y, use_reentrant=False)
        out.backward()
        return [s.split(".")[0] for s in messages], float(x.grad), float(y.grad)

    ours, torch = both(run)
    assert ours == torch


def test_graph_exec_group_recomputes_once():
    def run(m):
        cp = _sub(m, "utils.checkpoint")
        counts = []
        for grouped in (True, False):
            calls = [0]

            def fn(x):
                calls[0] += 1
                y = x.sin().cos()
                return y, y.sin().cos()

            x = m.ones(3, requires_grad=True)
            y, z = cp.checkpoint(fn, x, use_reentrant=False)
            with cp.GraphExecGroup() if grouped else contextlib.nullcontext():
                (gy,) = m.autograd.grad(z, (y,), (m.ones(3),))
                m.autograd.grad(y, (x,), (gy,))
            counts.append(calls[0])
        x = m.ones(3, requires_grad=True)
        out = cp.checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)
        with cp.GraphExecGroup():
            out.sum().backward(retain_graph=True)
            overlap = _error(lambda: out.sum().backward())
            nested = _error(lambda: cp.GraphExecGroup().__enter__())
        return counts, overlap.split(".")[1], nested.split(".")[0]

    ours, torch = both(run)
    assert ours == torch
    assert ours[0] == [2, 3]
