"""autograd.Function: custom forward/backward/jvp/vmap, imperative and under the transforms.

Modelled on PyTorch's own custom Function tests (test_autograd.py, functorch's
test_eager_transforms / autograd_function tests); expected behaviour and messages
were checked against torch 2.x.
"""

import re

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.autograd import Function, once_differentiable
from autodiff.autograd import forward_ad as fwAD
from autodiff.autograd.function import FunctionCtx, VmapInfo
from autodiff.core.trace import state, trace_stack_depth
from autodiff.reverse.accumulate import RELEASED_MESSAGE

ag = ad.autograd


@pytest.fixture(autouse=True)
def _clean_state():
    yield
    assert trace_stack_depth() == 1
    assert state().grad_enabled


# ---------------------------------------------------------------------------------------------
# Functions used throughout


class Exp(Function):
    """Old style (forward takes ctx); saves its output: double backward goes through it."""

    @staticmethod
    def forward(ctx, x):
        result = anp.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class Square(Function):
    """New style (setup_context), with jvp: usable under every transform."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 2 * x * t


class Linear(Function):
    """The linear layer of torch's "Extending autograd" tutorial."""

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        ctx.save_for_backward(x, weight, bias)
        out = x @ weight.T
        return out if bias is None else out + bias

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, bias = ctx.saved_tensors
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = grad_output @ weight
        if ctx.needs_input_grad[1]:
            gw = grad_output.T @ x
        if bias is not None and ctx.needs_input_grad[2]:
            gb = grad_output.sum(0)
        return gx, gw, gb


class Cube(Function):
    """torch.func's example: an intermediate returned as an output to be saved."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x**3, 3 * x**2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output[1])
        ctx.save_for_forward(inputs[0], output[1])

    @staticmethod
    def backward(ctx, g, g_dx):
        x, dx = ctx.saved_tensors
        return g * dx + g_dx * 6 * x

    @staticmethod
    def jvp(ctx, t):
        x, dx = ctx.saved_tensors
        return dx * t, 6 * x * t


class RoundSTE(Function):
    """Straight-through rounding: the custom derivative (1) differs from the true one (0)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return anp.round(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g

    @staticmethod
    def jvp(ctx, t):
        return t


class SinWithVmap(Function):
    """A hand-written vmap staticmethod (no generated rule)."""

    calls: list = []

    @staticmethod
    def forward(x):
        return anp.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * anp.cos(x)

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * anp.cos(x)

    @staticmethod
    def vmap(info, in_dims, x):
        SinWithVmap.calls.append((info, in_dims))
        return SinWithVmap.apply(x), in_dims[0]


def _t(a, requires_grad=False):
    return ad.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


# ---------------------------------------------------------------------------------------------
# Imperative API


def test_exp_forward_backward_and_node():
    x = _t([0.0, 1.0, -2.0], requires_grad=True)
    y = Exp.apply(x)
    np.testing.assert_allclose(y.detach().numpy(), np.exp([0.0, 1.0, -2.0]))
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "ExpBackward"
    assert repr(y).endswith("grad_fn=<ExpBackward>)")
    ((node, index),) = y.grad_fn.next_functions
    assert node.name() == "torch::autograd::AccumulateGrad" and node.variable is x and index == 0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0, -2.0]))


def test_setup_context_style_square():
    x = _t([1.0, -3.0], requires_grad=True)
    y = Square.apply(x)
    assert y.grad_fn.name() == "SquareBackward"
    (y * _t([1.0, 2.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -12.0])


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_function_matches_composite(with_bias):
    rng = np.random.default_rng(0)
    xv, wv, bv = rng.normal(size=(4, 3)), rng.normal(size=(2, 3)), rng.normal(size=2)
    x, w = _t(xv, True), _t(wv, True)
    b = _t(bv, True) if with_bias else None
    out = Linear.apply(x, w, b)
    (out**2).sum().backward()
    ref = xv @ wv.T + (bv if with_bias else 0.0)
    np.testing.assert_allclose(out.detach().numpy(), ref)
    gx, gw = 2 * ref @ wv, (2 * ref).T @ xv
    np.testing.assert_allclose(x.grad.numpy(), gx)
    np.testing.assert_allclose(w.grad.numpy(), gw)
    if with_bias:
        np.testing.assert_allclose(b.grad.numpy(), (2 * ref).sum(0))


def test_needs_input_grad():
    seen = []

    class Record(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen.append(ctx.needs_input_grad)
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g, g, None

    a, b = _t([1.0], True), _t([2.0])
    Record.apply(a, b, 3.0).sum().backward()
    assert seen == [(True, False, False)] * 2
    with ag.no_grad():  # as in torch: requires_grad of the inputs, whatever the grad mode
        out = Record.apply(a, b, 3.0)
    assert seen[-1] == (True, False, False) and not out.requires_grad


def test_forward_runs_without_recording():
    inside = {}

    class Peek(Function):
        @staticmethod
        def forward(ctx, x):
            inside["requires_grad"] = x.requires_grad
            inside["grad_enabled"] = ag.is_grad_enabled()
            y = x * 2
            inside["y_grad_fn"] = y.grad_fn
            return y

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = _t([1.0], True)
    out = Peek.apply(x)
    # forward gets the caller's tensor itself (as torch: it requires grad), and records nothing
    assert inside == {"requires_grad": True, "grad_enabled": False, "y_grad_fn": None}
    assert out.grad_fn.name() == "PeekBackward"


def test_multiple_inputs_and_outputs():
    class SumProd(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a + b, a * b

        @staticmethod
        def backward(ctx, g_sum, g_prod):
            a, b = ctx.saved_tensors
            return g_sum + g_prod * b, g_sum + g_prod * a

    av, bv = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    a, b = _t(av, True), _t(bv, True)
    s, p = SumProd.apply(a, b)
    assert s.grad_fn is p.grad_fn
    (2 * s + 3 * p).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 + 3 * bv)
    np.testing.assert_allclose(b.grad.numpy(), 2 + 3 * av)
    # only one output used: the other's grad is materialised as zeros
    a.grad = b.grad = None
    s, p = SumProd.apply(a, b)
    p.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), bv)


def test_non_tensor_inputs_and_outputs_pass_through():
    got = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor, label):
            ctx.factor = factor
            return x * factor, label, None

        @staticmethod
        def backward(ctx, g, g_label, g_none):
            got["grads"] = (g_label, g_none)
            return g * ctx.factor, None, None

    x = _t([1.0, 2.0], True)
    y, label, nothing = Scale.apply(x, 3, "tag")
    assert label == "tag" and nothing is None
    y.sum().backward()
    assert got["grads"] == (None, None)  # non-Tensor outputs get None even when materialising
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_materialize_grads_on_and_off():
    got = []

    class Twice(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 1.0, x * 1.0

        @staticmethod
        def backward(ctx, g1, g2):
            got.append((g1, g2))
            return g1, None

    x = _t([1.0, 2.0], True)
    Twice.apply(x, True)[0].sum().backward()
    g1, g2 = got[-1]
    np.testing.assert_allclose(g2.numpy(), [0.0, 0.0])
    assert isinstance(g2, ad.Tensor) and g2.dtype == np.float64
    Twice.apply(x, False)[0].sum().backward()
    assert got[-1][1] is None
    np.testing.assert_allclose(got[-1][0].numpy(), [1.0, 1.0])


def test_double_backward_through_saved_output():
    xv = np.array([0.5, -1.0])
    x = _t(xv, True)
    (gx,) = ag.grad(Exp.apply(x).sum(), x, create_graph=True)
    assert gx.requires_grad
    np.testing.assert_allclose(gx.detach().numpy(), np.exp(xv))
    (ggx,) = ag.grad(gx.sum(), x)
    np.testing.assert_allclose(ggx.numpy(), np.exp(xv))


def test_double_backward_through_saved_input_and_gradgradcheck():
    x = _t([1.0, -2.0], True)
    (gx,) = ag.grad((Square.apply(x) ** 2).sum(), x, create_graph=True)  # 4 x^3
    gx.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 12 * np.array([1.0, 4.0]))
    rng = np.random.default_rng(1)
    inputs = (_t(rng.normal(size=(3, 2)), True), _t(rng.normal(size=(4, 2)), True))
    inputs += (_t(rng.normal(size=4), True),)
    assert ag.gradcheck(Linear.apply, inputs)
    assert ag.gradgradcheck(Linear.apply, inputs)


def test_once_differentiable():
    class Cubed(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not ag.is_grad_enabled()
            return 3 * x**2 * g

    x = _t([1.0, 2.0], True)
    Cubed.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    # grad_outputs that do not require grad: the result simply has no graph (as in torch)
    (gx,) = ag.grad(Cubed.apply(x).sum(), x, create_graph=True)
    assert not gx.requires_grad
    # with a differentiable grad_output, differentiating again raises
    gy = _t([1.0, 1.0], True)
    (gx,) = ag.grad(Cubed.apply(x), x, gy, create_graph=True)
    assert gx.grad_fn.name() == "torch::autograd::Error"
    with pytest.raises(
        RuntimeError,
        match="trying to differentiate twice a function that was marked with @once_differentiable",
    ):
        gx.sum().backward()


def test_hooks_on_outputs_and_nodes():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = _t([1.0, 2.0], True)
    y = Double.apply(x)
    calls = []
    y.register_hook(lambda g: calls.append("tensor") or g * 10)
    y.grad_fn.register_prehook(lambda grads: calls.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: calls.append("post"))
    y.retain_grad()
    y.sum().backward()
    assert calls == ["tensor", "pre", "post"]
    np.testing.assert_allclose(y.grad.numpy(), [10.0, 10.0])
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 20.0])
    x.grad = None
    y = Double.apply(x)
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7,))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 7.0])


def test_retain_graph():
    x = _t([1.0], True)
    y = Exp.apply(x)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.e)


def test_backward_after_release_raises():
    x = _t([1.0], True)
    y = Exp.apply(x)
    y.backward()
    with pytest.raises(RuntimeError, match=re.escape(RELEASED_MESSAGE)):
        y.backward()


def test_saved_input_modified_in_place_is_detected():
    x = _t([1.0, 2.0], True)
    a = x * 1.0
    y = Square.apply(a)
    with ag.no_grad():
        a += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()

    class NoSave(Function):
        @staticmethod
        def forward(ctx, v):
            return v * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3

    b = x * 1.0
    z = NoSave.apply(b)
    with ag.no_grad():
        b += 1.0  # not saved: no error, as in torch
    z.sum().backward()


class AddOneInplace(Function):
    @staticmethod
    def forward(ctx, x):
        x += 1.0
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


def test_mark_dirty_rebases_history_and_bumps_version():
    leaf = _t([1.0, 2.0], True)
    a = leaf * 1.0
    mul_node = a.grad_fn
    b = AddOneInplace.apply(a)
    assert b is a  # the modified input is the output
    assert a._version == 2  # the in-place op plus mark_dirty, as in torch
    assert a.grad_fn.name() == "AddOneInplaceBackward"
    assert a.grad_fn.next_functions[0][0] is mul_node
    np.testing.assert_allclose(a.detach().numpy(), [2.0, 3.0])
    a.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), [2.0, 2.0])


def test_mark_dirty_modification_without_inplace_op_still_bumps():
    class NumpyAddOne(Function):
        @staticmethod
        def forward(ctx, x):
            buffer = x.numpy()
            buffer += 1.0
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = _t([1.0], True) * 1.0
    assert NumpyAddOne.apply(a) is a and a._version == 1
    np.testing.assert_allclose(a.detach().numpy(), [2.0])


def test_mark_dirty_invalidates_earlier_saves_and_checks():
    leaf = _t([1.0, 2.0], True)
    a = leaf * 1.0
    d = a * a  # saves a at version 0
    AddOneInplace.apply(a)
    with pytest.raises(RuntimeError, match="is at version 2; expected version 0 instead"):
        d.sum().backward()
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad has been used in an in-place operation.",
    ):
        AddOneInplace.apply(_t([1.0], True))
    with ag.no_grad():  # allowed without recording
        AddOneInplace.apply(_t([1.0], True))

    class NotReturned(Function):
        @staticmethod
        def forward(ctx, x):
            x += 1.0
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(
        RuntimeError,
        match="Some elements marked as dirty during the forward method were not returned as output",
    ):
        NotReturned.apply(leaf * 1.0)


def test_mark_non_differentiable_and_integer_outputs():
    got = {}

    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            order = ad.tensor(np.argsort(x.numpy()))
            doubled, tripled = x * 2, x * 3
            ctx.mark_non_differentiable(tripled)
            return doubled, order, tripled

        @staticmethod
        def backward(ctx, g_doubled, g_order, g_tripled):
            got["grads"] = (g_order, g_tripled)
            return 2 * g_doubled

    x = _t([3.0, 1.0, 2.0], True)
    doubled, order, tripled = SortLike.apply(x)
    assert doubled.requires_grad
    assert not order.requires_grad and order.grad_fn is None
    assert not tripled.requires_grad and tripled.grad_fn is None
    doubled.sum().backward()
    g_order, g_tripled = got["grads"]
    assert g_order.dtype == order.dtype and not np.any(g_order.numpy())
    np.testing.assert_allclose(g_tripled.numpy(), np.zeros(3))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_inputs_not_requiring_grad_give_no_graph():
    y = Exp.apply(_t([1.0]))
    assert not y.requires_grad and y.grad_fn is None


def test_kwargs_and_defaults_are_bound_like_torch():
    seen = []

    class Affine(Function):
        @staticmethod
        def forward(x, scale=2.0, *, shift=0.0):
            return x * scale + shift

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(len(inputs))
            ctx.scale = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale, None

    x = _t([1.0, 2.0], True)
    np.testing.assert_allclose(Affine.apply(x).detach().numpy(), [2.0, 4.0])
    np.testing.assert_allclose(Affine.apply(x, shift=1.0).detach().numpy(), [3.0, 5.0])
    Affine.apply(x, scale=3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert seen == [2, 2, 2]


def test_vjp_alias_and_both_defined():
    class ByVjp(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 4

        @staticmethod
        def vjp(ctx, g):
            return g * 4

    x = _t([1.0], True)
    ByVjp.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0])

    class Both(ByVjp):
        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        Both.apply(x).sum().backward()


# ---- validation of what backward returns (torch's messages) ----


def _returning(grads, forward=lambda ctx, x, *rest: x * 2):
    class MyFn(Function):
        pass

    MyFn.forward = staticmethod(forward)
    MyFn.backward = staticmethod(lambda ctx, g: grads(g))
    return MyFn


def test_wrong_number_of_gradients():
    x, y = _t([1.0, 2.0], True), _t([3.0, 4.0], True)
    fn = _returning(lambda g: (g,), forward=lambda ctx, a, b: a * b)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "function MyFnBackward returned an incorrect number of gradients (expected 2, got 1)"
        ),
    ):
        fn.apply(x, y).sum().backward()
    fn = _returning(lambda g: (g, g))
    with pytest.raises(RuntimeError, match=re.escape("(expected 1, got 2)")):
        fn.apply(x).sum().backward()
    _returning(lambda g: (g, None, None)).apply(x).sum().backward()  # extra Nones are dropped
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def test_gradient_of_wrong_shape_and_broadcast_gradients():
    x = _t([1.0, 2.0, 3.0], True)
    fn = _returning(lambda g: ad.ones(2), forward=lambda ctx, v: v.sum())
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "Function MyFnBackward returned an invalid gradient at index 0 - got [2] but "
            "expected shape compatible with [3]"
        ),
    ):
        fn.apply(x).backward()
    # a gradient the input broadcasts to is summed back to the input's shape
    _returning(lambda g: ad.ones((2, 3))).apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_gradient_for_non_tensor_input_and_non_tensor_gradient():
    x = _t([1.0], True)
    fn = _returning(lambda g: (g, g), forward=lambda ctx, v, k: v * k)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "function MyFnBackward returned a gradient different than None at position 2, but "
            "the corresponding forward input was not a Variable"
        ),
    ):
        fn.apply(x, 2.0).sum().backward()
    with pytest.raises(RuntimeError, match=re.escape("expected Variable or None (got float)")):
        _returning(lambda g: 1.0).apply(x).sum().backward()


def test_gradient_dtype_is_cast_to_input_dtype():
    x = ad.tensor(np.ones(2, np.float32), requires_grad=True)
    _returning(lambda g: ad.tensor(np.ones(2, np.float64))).apply(x).sum().backward()
    assert x.grad.dtype == np.float32


def test_not_implemented_and_save_errors():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

    x = _t([1.0, 2.0], True)
    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp"):
        NoBackward.apply(x).backward()
    with fwAD.dual_level():
        dual = fwAD.make_dual(_t([1.0]), _t([1.0]))
        with pytest.raises(
            NotImplementedError,
            match="You must implement the jvp function for "
            "custom autograd.Function to use it with forward mode AD.",
        ):
            NoBackward.apply(dual)

    class SavesInt(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x

    with pytest.raises(
        TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"
    ):
        SavesInt.apply(x)
    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        Function.apply(x)
    with pytest.warns(DeprecationWarning):
        Exp()


# ---- forward AD (dual levels) ----


def test_jvp_on_dual_levels():
    got = {}

    class ScaleShift(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            ctx.k = k
            return x * y * k

        @staticmethod
        def jvp(ctx, tx, ty, tk):
            x, y = ctx.saved_tensors
            got["tangents"] = (tx, ty, tk)
            return ctx.k * (tx * y + x * ty)

    with fwAD.dual_level():
        x = fwAD.make_dual(_t([1.0, 2.0]), _t([3.0, 3.0]))
        out = ScaleShift.apply(x, _t([5.0, 5.0]), 2.0)
        primal, tangent = fwAD.unpack_dual(out)
    np.testing.assert_allclose(primal.numpy(), [10.0, 20.0])
    np.testing.assert_allclose(tangent.numpy(), [30.0, 30.0])
    tx, ty, tk = got["tangents"]
    np.testing.assert_allclose(ty.numpy(), [0.0, 0.0])  # materialised for the Tensor input
    assert tk is None  # never for non-Tensor inputs


def test_jvp_validation_messages():
    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x + 1

        @staticmethod
        def jvp(ctx, t):
            return t

    class BadSize(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            return ad.ones(3)

    with fwAD.dual_level():
        x = fwAD.make_dual(_t([1.0, 2.0]), _t([1.0, 1.0]))
        with pytest.raises(
            RuntimeError,
            match=re.escape(
                "Function's jvp returned an invalid number of forward gradients (expected 2 but "
                "got 1)"
            ),
        ):
            TwoOut.apply(x)
        with pytest.raises(
            RuntimeError,
            match=re.escape(
                "Tensor is of size [2] while the given forward gradient is of size [3]."
            ),
        ):
            BadSize.apply(x)


# ---------------------------------------------------------------------------------------------
# Functional transforms


def test_grad_jvp_and_higher_order():
    assert ad.grad(Square.apply)(3.0) == 6.0
    assert ad.grad(ad.grad(Square.apply))(3.0) == 2.0
    assert ad.grad(lambda x: Cube.apply(x)[0])(2.0) == 12.0
    assert ad.grad(ad.grad(lambda x: Cube.apply(x)[0]))(2.0) == 12.0
    out, tangent = ad.jvp(lambda x: Cube.apply(x)[0], (2.0,), (1.0,))
    assert (out, tangent) == (8.0, 12.0)
    # forward-over-reverse and reverse-over-forward
    assert ad.jvp(ad.grad(lambda x: Cube.apply(x)[0]), (2.0,), (1.0,))[1] == 12.0
    assert ad.grad(lambda x: ad.jvp(lambda u: Cube.apply(u)[0], (x,), (1.0,))[1])(2.0) == 12.0


def test_numpy_in_numpy_out_and_tensor_in_tensor_out():
    xs = np.array([1.0, 2.0])
    g = ad.grad(lambda x: Square.apply(x).sum())(xs)
    assert type(g) is np.ndarray
    gg = ad.grad(ad.grad(lambda x: Square.apply(x)))(1.5)
    assert not isinstance(gg, ad.Tensor) and gg == 2.0
    g = ad.grad(lambda x: Square.apply(x).sum())(ad.tensor(xs))
    assert isinstance(g, ad.Tensor)
    np.testing.assert_allclose(g.numpy(), 2 * xs)


def test_vmap_with_generated_rule_and_nestings():
    xs = np.arange(4.0)
    np.testing.assert_allclose(ad.vmap(lambda x: Cube.apply(x)[0])(xs), xs**3)
    np.testing.assert_allclose(ad.vmap(ad.grad(lambda x: Cube.apply(x)[0]))(xs), 3 * xs**2)
    np.testing.assert_allclose(
        ad.grad(lambda x: ad.vmap(lambda v: Cube.apply(v)[0])(x).sum())(xs), 3 * xs**2
    )
    np.testing.assert_allclose(ad.jacrev(lambda x: Cube.apply(x)[0])(xs), np.diag(3 * xs**2))
    np.testing.assert_allclose(ad.jacfwd(lambda x: Cube.apply(x)[0])(xs), np.diag(3 * xs**2))
    np.testing.assert_allclose(ad.hessian(lambda x: Cube.apply(x)[0].sum())(xs), np.diag(6 * xs))
    grid = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(ad.vmap(ad.vmap(lambda x: Cube.apply(x)[0]))(grid), grid**3)
    np.testing.assert_allclose(
        ad.grad(lambda x: ad.vmap(ad.vmap(lambda v: Cube.apply(v)[0]))(x).sum())(grid), 3 * grid**2
    )
    np.testing.assert_allclose(
        ad.vmap(lambda x: ad.jvp(lambda u: Cube.apply(u)[0], (x,), (np.ones_like(x),))[1])(grid),
        3 * grid**2,
    )


def test_custom_derivative_is_used_at_every_level():
    # the true derivative of round is 0: any 1 below comes from the custom backward / jvp
    xs = np.array([0.2, 1.7, -0.6])
    np.testing.assert_allclose(ad.grad(lambda x: RoundSTE.apply(x).sum())(xs), np.ones(3))
    np.testing.assert_allclose(ad.vmap(ad.grad(RoundSTE.apply))(xs), np.ones(3))
    np.testing.assert_allclose(ad.grad(lambda x: ad.vmap(RoundSTE.apply)(x).sum())(xs), np.ones(3))
    np.testing.assert_allclose(ad.jacfwd(ad.vmap(RoundSTE.apply))(xs), np.eye(3))
    np.testing.assert_allclose(ad.jacrev(ad.vmap(RoundSTE.apply))(xs), np.eye(3))
    x = _t(xs, True)
    ad.vmap(RoundSTE.apply)(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3))


def test_generated_vmap_reduces_gradients_of_unbatched_inputs():
    class Mul(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(a, b):
            return a * b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.save_for_forward(*inputs)  # (jvp sees only these, as in torch)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a  # may be broadcast: summed back per example

        @staticmethod
        def jvp(ctx, ta, tb):
            a, b = ctx.saved_tensors
            return ta * b + a * tb

    a, b = np.arange(6.0).reshape(3, 2), np.array([1.0, 2.0])

    def f(a, b):
        return (ad.vmap(Mul.apply, in_axes=(0, None))(a, b) ** 2).sum()

    def ref(a, b):
        return ((a * b) ** 2).sum()

    for got, want in zip(ad.grad(f, argnums=(0, 1))(a, b), ad.grad(ref, argnums=(0, 1))(a, b)):
        np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(ad.hessian(f, argnums=1)(a, b), ad.hessian(ref, argnums=1)(a, b))
    np.testing.assert_allclose(ad.jacfwd(f, argnums=1)(a, b), ad.jacrev(ref, argnums=1)(a, b))


def test_generated_vmap_with_intermediates_saved_in_setup_context():
    class Scaled(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0] * 3)  # an intermediate, not an input or output
            ctx.shape = inputs[0].shape

        @staticmethod
        def backward(ctx, g):
            (three_x,) = ctx.saved_tensors
            assert three_x.shape == ctx.shape
            return g * three_x

    xs = np.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(ad.grad(lambda x: Scaled.apply(x).sum())(xs), 3 * xs)
    np.testing.assert_allclose(ad.vmap(ad.grad(Scaled.apply))(xs), 3 * xs)
    np.testing.assert_allclose(ad.grad(lambda x: ad.vmap(Scaled.apply)(x).sum())(xs), 3 * xs)


def test_vmap_staticmethod():
    SinWithVmap.calls.clear()
    xs = np.linspace(0.0, 1.0, 4)
    np.testing.assert_allclose(ad.vmap(SinWithVmap.apply)(xs), np.sin(xs))
    assert SinWithVmap.calls == [(VmapInfo(batch_size=4, randomness="error"), (0,))]
    grid = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(ad.vmap(SinWithVmap.apply, in_axes=1)(grid), np.sin(grid.T))
    assert SinWithVmap.calls[-1][1] == (1,)
    np.testing.assert_allclose(ad.vmap(ad.grad(SinWithVmap.apply))(xs), np.cos(xs))
    np.testing.assert_allclose(
        ad.grad(lambda x: ad.vmap(SinWithVmap.apply)(x).sum())(xs), np.cos(xs)
    )
    np.testing.assert_allclose(ad.jacrev(SinWithVmap.apply)(xs), np.diag(np.cos(xs)))
    np.testing.assert_allclose(ad.jacfwd(SinWithVmap.apply)(xs), np.diag(np.cos(xs)))
    np.testing.assert_allclose(
        ad.hessian(lambda x: SinWithVmap.apply(x).sum())(xs), np.diag(-np.sin(xs))
    )
    x = _t(xs, True)
    ad.vmap(SinWithVmap.apply)(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs))


def test_vmap_errors():
    class NoVmap(Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    class BothRules(NoVmap):
        generate_vmap_rule = True

        @staticmethod
        def vmap(info, in_dims, x):
            return x, 0

    class OneReturn(NoVmap):
        @staticmethod
        def vmap(info, in_dims, x):
            return (OneReturn.apply(x),)

    xs = np.ones(3)
    with pytest.raises(
        RuntimeError,
        match="You tried to vmap over NoVmap, but it does not have "
        "vmap support. Please override and implement the vmap staticmethod or set "
        "generate_vmap_rule=True.",
    ):
        ad.vmap(NoVmap.apply)(xs)
    with pytest.raises(
        RuntimeError,
        match="You tried to vmap over BothRules, but it has both "
        "generate_vmap_rule=True and an overridden vmap staticmethod.",
    ):
        ad.vmap(BothRules.apply)(xs)
    with pytest.raises(
        RuntimeError,
        match="Expected the vmap staticmethod to have two returns, "
        "an output and out_dims with pytree structure compatible with the output. "
        "Got 1 returns instead",
    ):
        ad.vmap(OneReturn.apply)(xs)


def test_old_style_function_under_transforms_raises():
    with pytest.raises(RuntimeError, match="it must override the setup_context staticmethod"):
        ad.grad(lambda x: Exp.apply(x).sum())(np.ones(2))
    with pytest.raises(RuntimeError, match="it must override the setup_context staticmethod"):
        ad.vmap(Exp.apply)(np.ones(2))


def test_is_grads_batched():
    x = _t([1.0, 2.0, 3.0], True)
    y, _ = Cube.apply(x)
    (g,) = ag.grad(y, x, ad.tensor(np.eye(3)), is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), np.diag(3 * np.array([1.0, 4.0, 9.0])))


def test_ctx_is_a_function_ctx_with_arbitrary_attributes():
    seen = {}

    class Attrs(Function):
        @staticmethod
        def forward(x):
            return x + 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.anything = {"k": [1, 2]}
            seen["ctx"] = ctx

        @staticmethod
        def backward(ctx, g):
            seen["same"] = ctx is seen["ctx"] and ctx.anything == {"k": [1, 2]}
            return g

    x = _t([1.0], True)
    Attrs.apply(x).sum().backward()
    assert isinstance(seen["ctx"], FunctionCtx) and seen["same"]


def test_non_tensor_arguments_and_outputs_under_transforms():
    class ScaleAndSum(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, k, label="label"):
            return x * k, label, anp.sum(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g, g_label, g_sum):
            assert g_label is None
            return g * ctx.k + g_sum, None, None

        @staticmethod
        def jvp(ctx, t, t_k, t_label):
            assert t_k is None and t_label is None
            return t * ctx.k, None, anp.sum(t)

    xs = np.arange(6.0).reshape(2, 3)
    scaled, label, total = ScaleAndSum.apply(_t(xs), 3.0)
    assert label == "label"
    np.testing.assert_allclose(ad.vmap(lambda x: ScaleAndSum.apply(x, 3.0)[2])(xs), [3.0, 12.0])

    def loss(x):
        scaled, _, total = ScaleAndSum.apply(x, 3.0)
        return (scaled**2).sum() + total

    want = 18 * xs + 1
    np.testing.assert_allclose(ad.grad(loss)(xs), want)
    np.testing.assert_allclose(ad.vmap(ad.grad(loss))(xs), want)
    np.testing.assert_allclose(ad.jacfwd(lambda x: ScaleAndSum.apply(x, 3.0)[2])(xs[0]), np.ones(3))
    np.testing.assert_allclose(
        ad.vmap(ad.jacrev(lambda x: ScaleAndSum.apply(x, 3.0)[2]))(xs), np.ones((2, 3))
    )


def test_mark_dirty_of_a_non_input_warns_and_is_ignored():
    class DirtyOutput(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = _t([1.0], True)
    with pytest.warns(UserWarning, match="ctx.mark_dirty\\(\\) received a tensor that was not"):
        y = DirtyOutput.apply(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])
