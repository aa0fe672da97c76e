"""torch's legacy and utility autograd API on the torch face (issue 27): `Variable`, custom
Function details (the tensors forward and the rules see, `mark_dirty`, materialized
gradients, `save_for_forward`, the node's view of its ctx, `saved_variables`), pickling and
deep copies of tensors, and the Tensor autograd attributes torch code sets and deletes.

Where real torch is installed, behaviours are also checked against it, side by side.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest
from torch_oracle import both, leaf

import autodiff as ad
from autodiff import autograd
from autodiff.autograd import Function, Variable
from autodiff.autograd import forward_ad as fwAD
from autodiff.autograd.function import InplaceFunction, once_differentiable

# ---------------------------------------------------------------------------------------------
# Variable


def test_variable_makes_a_tensor_sharing_data():
    x = ad.tensor([1.0, 2.0])
    v = Variable(x, requires_grad=True)
    assert v is not x and v.requires_grad and not x.requires_grad
    assert isinstance(v, Variable) and isinstance(x, Variable) and not isinstance(1.0, Variable)
    with ad.no_grad():
        v.mul_(2.0)
    assert x.tolist() == [2.0, 4.0]  # (shared data)
    assert Variable(x).requires_grad is False and Variable().shape == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        Variable([1.0])
    (v * v).sum().backward()
    assert v.grad.tolist() == [4.0, 8.0]


def test_variable_matches_torch():
    def make(torch):
        x = torch.tensor([1.0, 2.0])
        v = torch.autograd.Variable(x, requires_grad=True)
        return v.tolist(), v.requires_grad, v.is_leaf, isinstance(x, torch.autograd.Variable)

    ours, theirs = both(make)
    assert ours == theirs


# ---------------------------------------------------------------------------------------------
# Custom Functions


def test_forward_and_backward_see_the_callers_tensors():
    seen = {}

    class Keep(Function):
        @staticmethod
        def forward(ctx, x, y):
            seen["forward"] = (x, y)
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = ctx.saved_tensors
            return g * ctx.saved_tensors[1], None

    a = leaf(1.0, 2.0)
    b = ad.tensor([3.0, 4.0])
    out = Keep.apply(a, b)
    assert seen["forward"][0] is a and seen["forward"][1] is b
    assert out.grad_fn.saved_tensors[0] is a and out.grad_fn.saved_tensors[1] is b
    out.sum().backward()
    assert seen["backward"][0] is a and seen["backward"][1] is b
    assert a.grad.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = out.grad_fn.saved_tensors


def test_returning_an_output_twice_gives_one_tensor():
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            return out, out

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 2

    x = ad.tensor(np.random.default_rng(0).standard_normal((3, 3)), requires_grad=True)
    a, b = Twice.apply(x)
    assert a is b
    assert autograd.gradcheck(lambda v: sum(Twice.apply(v)), (x,))
    assert autograd.gradgradcheck(lambda v: sum(Twice.apply(v)), (x,))

    class TwiceInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 2

    def fn(v):
        a, b = TwiceInPlace.apply(v.clone())
        assert a is b
        return a + b

    assert autograd.gradcheck(fn, (x,))
    assert autograd.gradgradcheck(fn, (x,))


def test_mark_dirty_returns_the_input_itself_and_bumps_its_version():
    def run(torch):
        class InplaceMul(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x.mul_(2)

            @staticmethod
            def backward(ctx, g):
                return g * 2

        z = torch.tensor(1.0, requires_grad=True)
        x = z.clone()
        y = InplaceMul.apply(x)
        y.backward()
        return y is x, x._version, x.item(), z.grad.item()

    ours, theirs = both(run)
    assert ours == theirs == (True, 2, 2.0, 2.0)


def test_mark_dirty_misuse():
    class NotReturned(Function):
        @staticmethod
        def forward(ctx, a):
            a.add_(1)
            ctx.mark_dirty(a)
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not"):
        NotReturned.apply(leaf(1.0).clone())

    class NotAnInput(Function):
        @staticmethod
        def forward(ctx, a):
            c = 3 * a
            ctx.mark_dirty(c)
            return c

        @staticmethod
        def backward(ctx, g):
            return 3 * g

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        NotAnInput.apply(leaf(1.0).clone())
    assert [str(m.message) for m in w if "mark_dirty" in str(m.message)]

    class Dirty(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.mark_dirty(a)
            return a.add_(1)

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        Dirty.apply(leaf(1.0))
    y = leaf(1.0, 2.0)
    x = ad.tensor([0.0, 0.0])  # (a leaf that needs no gradient: allowed, as in torch)

    class AddInPlace(InplaceFunction):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, ga + gb

    q, _ = AddInPlace.apply(x, y)
    assert q is x and q.requires_grad and type(q.grad_fn) is AddInPlace._backward_cls
    q.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError):
        InplaceFunction.apply(y)  # (no forward: torch's NotImplementedError)


def test_materialized_and_unmaterialized_gradients():
    def run(torch, materialize):
        got = []

        class Two(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                got.append(
                    (None if g1 is None else g1.tolist(), None if g2 is None else g2.tolist())
                )
                return g1 if g1 is not None else g2

        a, b = Two.apply(torch.tensor([1.0], requires_grad=True))
        a.sum().backward()
        return got

    for materialize in (True, False):
        ours, theirs = both(lambda torch, m=materialize: run(torch, m))
        assert ours == theirs
    assert run(ad, True) == [([1.0], [0.0])] and run(ad, False) == [([1.0], None)]


def test_non_differentiable_outputs_get_none_when_asked():
    got = []

    class Func(Function):
        @staticmethod
        def forward(ctx, x):
            out1 = x.clone()
            ctx.mark_non_differentiable(out1)
            ctx._materialize_non_diff_grads = False
            return x.clone(), out1

        @staticmethod
        def backward(ctx, g0, g1):
            got.append(g1)
            return g0

    a = ad.tensor(1.0, requires_grad=True)
    Func.apply(a)[0].backward()
    assert got == [None]


def test_needs_input_grad_and_returned_none_gradients():
    class F(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            assert ctx.needs_input_grad == (True, False, False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return None, None, None

    x = leaf(1.0)
    F.apply(x, ad.tensor([1.0]), 3).backward()
    assert x.grad is None  # (None stays None, not zeros)
    assert F.apply(x, ad.tensor([1.0]), 3).grad_fn.needs_input_grad == (True, False, False)


def test_save_for_forward_is_what_jvp_sees():
    class Func(Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
            ctx.z = z
            return z * x * y

        @staticmethod
        def jvp(ctx, x_t, y_t, _):
            x, y = ctx.saved_tensors
            return ctx.z * (y * x_t + x * y_t)

        @staticmethod
        def vjp(ctx, g):
            x, y = ctx.saved_tensors
            return ctx.z * g * y, ctx.z * g * x, None

    a = ad.tensor(1.0, requires_grad=True)
    b = ad.tensor(2.0, requires_grad=True)
    with fwAD.dual_level():
        out = Func.apply(fwAD.make_dual(a, ad.tensor(1.0)), b, 4)
        assert fwAD.unpack_dual(out).tangent.item() == 8.0
        out.backward()
    assert (a.grad.item(), b.grad.item()) == (8.0, 4.0)
    assert autograd.gradcheck(Func.apply, (a, b, 4), check_forward_ad=True)
    seen = []

    class BackwardOnly(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def jvp(ctx, t):
            seen.append(len(ctx.saved_tensors))
            return t

        @staticmethod
        def vjp(ctx, g):
            seen.append(len(ctx.saved_tensors))
            return g

    with fwAD.dual_level():
        BackwardOnly.apply(fwAD.make_dual(a, ad.tensor(1.0))).backward()
    assert seen == [0, 1]  # (jvp sees only what save_for_forward saved, as in torch)


def test_saved_variables_is_a_deprecated_alias():
    class F(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x + y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_variables
            return g, g

    with pytest.warns(DeprecationWarning, match="'saved_variables' is deprecated"):
        F.apply(leaf(1.0), leaf(2.0)).sum().backward()


def test_function_node_reads_the_ctx_and_saved_tensor_objects():
    class MyFn(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            ctx.note = "kept"
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = leaf(1.0, 2.0)
    y = MyFn.apply(a)
    node = y.grad_fn
    assert node.note == "kept" and node.saved_tensors == (a, None)
    raw = node._raw_saved_tensors
    assert all(isinstance(r, autograd.SavedTensor) for r in raw)
    with pytest.raises(RuntimeError, match="None is forbidden"):
        raw[1].register_hooks(lambda t: t, lambda t: t)
    calls = []
    raw[0].register_hooks(
        lambda t: calls.append("pack") or t, lambda t: calls.append("unpack") or t
    )
    with pytest.raises(RuntimeError, match="already been set"):
        raw[0].register_hooks(lambda t: t, lambda t: t)
    y.sum().backward()
    assert calls == ["pack", "unpack"]
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = node._raw_saved_tensors
    with pytest.raises(TypeError, match="is not callable"):
        node(ad.tensor([1.0, 1.0]))


def test_once_differentiable_and_a_reentrant_backward():
    y_data = ad.tensor([[1.0, 2.0], [3.0, 4.0]])

    class Reenter(Function):
        @staticmethod
        def forward(ctx, x):
            with ad.enable_grad():
                ctx.x = Variable(x, requires_grad=True)
                ctx.y = Variable(y_data, requires_grad=True)
                ctx.out = ctx.x * ctx.y
            return ctx.out.detach()

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            with ad.enable_grad():
                ctx.out.sum().backward()
            return ctx.x.grad * g

    x = ad.ones((2, 2), requires_grad=True)
    Reenter.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y_data.numpy())


# ---------------------------------------------------------------------------------------------
# Tensor autograd attributes


def test_pickle_keeps_data_and_requires_grad_not_the_graph():
    def run(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.grad = torch.tensor([5.0, 5.0])
        y = torch.tensor([3.0])
        out = []
        for p in range(3):
            xc, yc, zc = pickle.loads(pickle.dumps([x, y, x * 2], protocol=p))
            out.append(
                (xc.tolist(), xc.requires_grad, xc.grad, yc.requires_grad, zc.tolist(), zc.is_leaf)
            )
        c = copy.copy(x * 2)
        return out, c.requires_grad, c.is_leaf

    ours, theirs = both(run)
    assert ours == theirs


def test_deepcopy_keeps_requires_grad_and_grad():
    def run(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.grad = torch.tensor([5.0, 5.0])
        y = copy.deepcopy(x)
        shared = copy.deepcopy([x, x])
        return (
            y.tolist(),
            y.requires_grad,
            y.grad.tolist(),
            y.grad is x.grad,
            shared[0] is shared[1],
        )

    ours, theirs = both(run)
    assert ours == theirs == ([1.0, 2.0], True, [5.0, 5.0], False, True)
    x = leaf(1.0)
    y = copy.deepcopy(x)
    with ad.no_grad():
        y.add_(1.0)
    assert x.tolist() == [1.0]  # (a copy of the data)
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(x * 2)


def test_requires_grad_on_a_graph_result():
    def run(torch):
        x = torch.tensor([1.0], requires_grad=True)
        z = x * 2
        out = [z.requires_grad_() is z, z.requires_grad_(True) is z]
        for f in (lambda: z.requires_grad_(False), lambda: setattr(z, "requires_grad", True)):
            try:
                f()
                out.append(None)
            except RuntimeError as e:
                out.append(str(e))
        return out

    ours, theirs = both(run)
    assert ours == theirs


def test_grad_attribute_deletion_and_retain_grad_on_a_leaf():
    x = leaf(1.0, 2.0)
    (x * x).sum().backward()
    del x.grad
    assert x.grad is None
    x.retain_grad()  # (a no-op on a leaf, as in torch)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_format_spec_of_a_one_element_tensor():
    x = leaf(1.0, 2.0)
    assert f"{(x * x).sum():.3f}" == "5.000" and f"{x.sum():g}" == "3"
