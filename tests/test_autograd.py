"""The PyTorch-compatible imperative autograd: backward/grad semantics, errors, the Node API.

Organised like torch's own test/test_autograd.py. Every expectation below was checked
against torch 2.x running the same script (torch itself is not imported here). Hooks
are in test_autograd_hooks.py, grad modes / anomaly / in-place in test_autograd_modes.py,
threads and memory in test_autograd_stress.py.
"""

import re
import warnings

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff import autograd
from autodiff.autograd.graph import GradientEdge, get_gradient_edge
from autodiff.core.trace import trace_stack_depth

RELEASED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


@pytest.fixture(autouse=True)
def _clean_state():
    yield
    assert trace_stack_depth() == 1
    assert autograd.is_grad_enabled()


def leaf(*values):
    return ad.tensor(list(values), requires_grad=True)


def exact(message):
    return "^" + re.escape(message) + "$"


class TestGradAccumulation:
    def test_grad_accumulates_in_place_across_backward_calls(self):
        x = leaf(1.0, 2.0)
        (x * x).sum().backward()
        g = x.grad
        assert g.tolist() == [2.0, 4.0]
        assert not g.requires_grad and g.grad_fn is None
        (x * 3).sum().backward()
        assert x.grad is g  # same Tensor object, updated in place
        assert g.tolist() == [5.0, 7.0]

    def test_setting_grad_to_none_resets_accumulation(self):
        x = leaf(1.0, 2.0)
        (x * x).sum().backward()
        old = x.grad
        x.grad = None
        (x * x).sum().backward()
        assert x.grad is not old
        assert x.grad.tolist() == [2.0, 4.0]
        assert old.tolist() == [2.0, 4.0]

    def test_first_grad_never_shares_memory(self):
        # The first .grad may take the backward pass's own array, never one someone else
        # holds: a gradient passed in, a cotangent routed to two leaves, a broadcast (read-only)
        # one, or one a hook kept.
        x, w = leaf(1.0, 2.0), leaf(3.0, 4.0)
        seed = ad.tensor([1.0, 1.0])
        (x + 0.0).backward(seed)
        (x + w).sum().backward()
        kept = []
        v = leaf(5.0, 6.0)
        v.register_hook(lambda g: kept.append(g))
        (v * 2).sum().backward()
        with ad.no_grad():
            for t in (x, w, v):
                t.grad += 10
        assert seed.tolist() == [1.0, 1.0]
        assert x.grad.tolist() == [12.0, 12.0] and w.grad.tolist() == [11.0, 11.0]
        assert kept[0].tolist() == [2.0, 2.0] and v.grad.tolist() == [12.0, 12.0]
        s = leaf(1.0, 2.0)
        s.sum().backward()
        s.grad += 1  # the broadcast cotangent was copied into a writable array
        assert s.grad.tolist() == [2.0, 2.0]

    def test_dropped_grad_is_recycled_only_when_nobody_holds_it(self):
        # `p.grad = None` recycles the old gradient's memory for the next backward pass
        # (large arrays), unless someone still holds that gradient or its data.
        w = ad.tensor(np.ones((128, 128)), requires_grad=True)
        x = ad.tensor(np.full((4, 128), 2.0))
        (x @ w).sum().backward()
        data = w.grad.detach()  # (the old gradient's data, without the tensor itself)
        w.grad = None
        (2 * x @ w).sum().backward()
        kept = w.grad  # (the old gradient itself)
        w.grad = None
        (3 * x @ w).sum().backward()
        w.grad = None  # (nobody holds this one)
        (4 * x @ w).sum().backward()
        assert np.all(data.numpy() == 8.0) and np.all(kept.numpy() == 16.0)
        assert np.all(w.grad.numpy() == 32.0)

    def test_assigned_grad_is_accumulated_into(self):
        x = leaf(1.0, 2.0)
        x.grad = ad.tensor([10.0, 10.0])
        (x * x).sum().backward()
        assert x.grad.tolist() == [12.0, 14.0]

    def test_assigning_grad_of_wrong_shape_raises(self):
        x = leaf(1.0, 2.0)
        with pytest.raises(
            RuntimeError,
            match=exact(
                "attempting to assign a gradient of size '[1]' to a tensor of size '[2]'. Please "
                "ensure that the gradient and the tensor are the same size"
            ),
        ):
            x.grad = ad.tensor([1.0])

    def test_autograd_grad_never_writes_leaf_grad(self):
        x = leaf(1.0, 2.0)
        (g,) = autograd.grad((x * x).sum(), x)
        assert g.tolist() == [2.0, 4.0]
        assert x.grad is None
        x.grad = ad.tensor([1.0, 1.0])
        autograd.grad((x * x).sum(), x)
        assert x.grad.tolist() == [1.0, 1.0]

    def test_autograd_grad_fills_retained_non_leaf_grad(self):
        # torch runs retain_grad hooks in autograd.grad too; only leaves are untouched.
        x = leaf(1.0, 2.0)
        y = x * 2
        y.retain_grad()
        out = (y * y).sum()
        assert autograd.grad(out, x)[0].tolist() == [8.0, 16.0]
        assert x.grad is None
        assert y.grad.tolist() == [4.0, 8.0]

    def test_backward_on_diamond_sums_both_paths(self):
        x = leaf(1.0, 2.0)
        h = x * 2
        (h * 3 + h * 4).sum().backward()
        assert x.grad.tolist() == [14.0, 14.0]

    def test_backward_on_a_leaf_itself(self):
        x = leaf(1.0, 2.0)
        autograd.backward(x, ad.tensor([1.0, 2.0]))
        assert x.grad.tolist() == [1.0, 2.0]
        s = ad.tensor(3.0, requires_grad=True)
        s.backward()
        assert s.grad.item() == 1.0

    def test_backward_several_roots_and_repeated_root(self):
        x = leaf(1.0, 2.0)
        autograd.backward([(x * 2).sum(), (x * 3).sum()])
        assert x.grad.tolist() == [5.0, 5.0]
        x.grad = None
        s = (x * x).sum()
        autograd.backward([s, s])
        assert x.grad.tolist() == [4.0, 8.0]

    def test_grad_with_grad_outputs_for_several_outputs(self):
        x = leaf(1.0, 2.0)
        gs = autograd.grad([x * 2, x * 3], x, [ad.tensor([1.0, 1.0]), ad.tensor([1.0, 0.0])])
        assert gs[0].tolist() == [5.0, 2.0]
        gs = autograd.grad([(x * x).sum(), (x * 2).sum()], x, [None, ad.tensor(2.0)])
        assert gs[0].tolist() == [6.0, 8.0]

    def test_grad_with_respect_to_the_same_input_twice(self):
        x = leaf(1.0, 2.0)
        a, b = autograd.grad((x * x).sum(), [x, x])
        assert a.tolist() == b.tolist() == [2.0, 4.0]

    def test_grad_of_leaf_with_respect_to_itself(self):
        x = leaf(1.0, 2.0)
        (g,) = autograd.grad(x, x, ad.tensor([1.0, 1.0]))
        assert g.tolist() == [1.0, 1.0]


class TestRetainGraph:
    def test_second_backward_raises_exact_message(self):
        x = leaf(1.0, 2.0)
        s = (x * x).sum()
        s.backward()
        with pytest.raises(RuntimeError, match=exact(RELEASED)):
            s.backward()

    def test_second_grad_raises_exact_message(self):
        x = leaf(1.0, 2.0)
        s = (x * x).sum()
        autograd.grad(s, x)
        with pytest.raises(RuntimeError, match=exact(RELEASED)):
            autograd.grad(s, x)

    def test_retain_graph_allows_a_second_pass(self):
        x = leaf(1.0, 2.0)
        s = (x * x).sum()
        s.backward(retain_graph=True)
        s.backward()
        assert x.grad.tolist() == [4.0, 8.0]
        with pytest.raises(RuntimeError, match=exact(RELEASED)):
            s.backward()

    def test_retain_graph_defaults_to_create_graph(self):
        x = leaf(1.0, 2.0)
        s = (x**3).sum()
        (g,) = autograd.grad(s, x, create_graph=True)
        (g2,) = autograd.grad(s, x)  # the graph was retained
        assert g2.tolist() == g.tolist() == [3.0, 12.0]
        s = (x**3).sum()
        s.backward(create_graph=True)
        s.backward()
        assert x.grad.tolist() == [6.0, 24.0]

    def test_released_graph_is_still_walkable(self):
        x = leaf(1.0, 2.0)
        s = (x * x).sum()
        s.backward()
        ((mul, index),) = s.grad_fn.next_functions
        assert index == 0 and mul.name() == "MulBackward0"
        names = [n.name() for n, _ in mul.next_functions]
        assert names == ["torch::autograd::AccumulateGrad"] * 2
        assert mul.next_functions[0][0].variable is x

    def test_released_graph_rejects_create_graph_too(self):
        x = leaf(1.0, 2.0)
        s = (x * x).sum()
        s.backward()
        with pytest.raises(RuntimeError, match=exact(RELEASED)):
            autograd.grad(s, x, create_graph=True)


class TestCreateGraph:
    def test_triple_backward_of_x_to_the_fourth(self):
        x = ad.tensor(2.0, requires_grad=True)
        (g1,) = autograd.grad(x**4, x, create_graph=True)
        (g2,) = autograd.grad(g1, x, create_graph=True)
        (g3,) = autograd.grad(g2, x)
        assert (g1.item(), g2.item(), g3.item()) == (32.0, 48.0, 48.0)
        assert g1.requires_grad and g2.requires_grad and not g3.requires_grad
        assert g1.grad_fn is not None and g3.grad_fn is None and g3.is_leaf

    def test_results_require_grad_only_with_create_graph(self):
        x = leaf(1.0, 2.0)
        (g,) = autograd.grad((x**3).sum(), x)
        assert not g.requires_grad and g.is_leaf
        (g,) = autograd.grad((x**3).sum(), x, create_graph=True)
        assert g.requires_grad and not g.is_leaf

    def test_create_graph_on_a_linear_function_gives_a_constant(self):
        x = leaf(1.0, 2.0)
        (g,) = autograd.grad((x * 2).sum(), x, create_graph=True)
        assert not g.requires_grad
        with pytest.raises(
            RuntimeError,
            match=exact("element 0 of tensors does not require grad and does not have a grad_fn"),
        ):
            autograd.grad(g.sum(), x)

    def test_gradient_penalty(self):
        w = ad.tensor([1.0, -2.0, 3.0], requires_grad=True)
        inp = ad.tensor([0.5, 1.5, -1.0], requires_grad=True)
        out = (w * inp * inp).sum()
        (g,) = autograd.grad(out, inp, create_graph=True)
        (g * g).sum().backward()  # ||d out / d inp||^2
        assert w.grad.tolist() == [2.0, -36.0, 24.0]
        assert inp.grad.tolist() == [4.0, 48.0, -72.0]

    def test_double_backward_through_nonlinear_ops(self):
        x = leaf(0.3, -0.7)
        (g,) = autograd.grad(anp.sin(x).sum(), x, create_graph=True)
        (h,) = autograd.grad(g.sum(), x)
        np.testing.assert_allclose(h.numpy(), -np.sin([0.3, -0.7]))

    def test_backward_with_create_graph_gives_grad_with_graph(self):
        x = leaf(1.0, 2.0)
        (x**3).sum().backward(create_graph=True)
        g = x.grad
        assert g.tolist() == [3.0, 12.0] and g.requires_grad and g.grad_fn is not None
        x.grad.sum().backward()  # d/dx sum(3 x^2) = 6 x, accumulated into the same object
        assert x.grad is g
        assert g.tolist() == [9.0, 24.0]

    def test_grad_outputs_with_graph_are_differentiated_through(self):
        x = leaf(1.0, 2.0)
        v = leaf(3.0, 4.0)
        (g,) = autograd.grad(x * x, x, v, create_graph=True)  # 2 x v
        (dv,) = autograd.grad(g.sum(), v)
        assert dv.tolist() == [2.0, 4.0]


class TestInputsAndPruning:
    def test_backward_inputs_accumulates_only_into_inputs(self):
        x, z = leaf(1.0, 2.0), leaf(3.0, 4.0)
        (x * z).sum().backward(inputs=[x])
        assert x.grad.tolist() == [3.0, 4.0]
        assert z.grad is None

    def test_backward_inputs_single_tensor(self):
        x, z = leaf(1.0, 2.0), leaf(3.0, 4.0)
        autograd.backward((x * z).sum(), inputs=z)
        assert z.grad.tolist() == [1.0, 2.0] and x.grad is None

    def test_backward_non_leaf_input_retains_its_grad(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        (y * 3).sum().backward(inputs=[y])
        assert y.grad.tolist() == [3.0, 3.0]
        assert y.retains_grad  # torch calls retain_grad() on non-leaf inputs
        assert x.grad is None

    def test_backward_non_leaf_input_with_retain_grad_is_filled_once(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        y.register_hook(lambda g: g * 2)
        y.retain_grad()
        (y * 3).sum().backward(inputs=[y])
        assert y.grad.tolist() == [6.0, 6.0]
        assert x.grad is None

    def test_backward_leaf_and_non_leaf_inputs(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        y.register_hook(lambda g: g * 2)
        (y * 3).sum().backward(inputs=[y, x])
        assert y.grad.tolist() == [6.0, 6.0]
        assert x.grad.tolist() == [12.0, 12.0]

    def test_backward_gradient_edge_inputs(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        autograd.backward((y * y).sum(), inputs=[get_gradient_edge(x)])
        assert x.grad.tolist() == [8.0, 16.0]
        x.grad = None
        y = x * 2
        y.retain_grad()
        autograd.backward((y * y).sum(), inputs=[get_gradient_edge(y)])
        assert y.grad.tolist() == [4.0, 8.0] and x.grad is None

    def test_grad_accepts_gradient_edges(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        edge = get_gradient_edge(y)
        assert isinstance(edge, GradientEdge)
        assert edge.node is y.grad_fn and edge.output_nr == 0
        gy, gx = autograd.grad((y * y).sum(), [edge, get_gradient_edge(x)])
        assert gy.tolist() == [4.0, 8.0] and gx.tolist() == [8.0, 16.0]

    def test_gradient_edge_of_leaf_is_its_accumulate_grad(self):
        x = leaf(1.0, 2.0)
        edge = get_gradient_edge(x)
        assert edge.node.name() == "torch::autograd::AccumulateGrad"
        assert edge.node is (x * 1).grad_fn.next_functions[0][0]
        with pytest.raises(
            RuntimeError,
            match=exact(
                "It is not possible to get the gradient edge for a Tensor that does not require "
                "gradients"
            ),
        ):
            get_gradient_edge(ad.tensor([1.0]))

    def test_pruned_branches_get_no_cotangent(self):
        # grad w.r.t. x alone: the matmul makes no product for the weight (a custom rule
        # shows which cotangents the engine asks for), and the result is unchanged.
        x = ad.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        w = ad.tensor(np.ones((3, 2)), requires_grad=True)
        calls = []
        from autodiff.ops import products

        rule, numpy_rule = products.matmul_p.vjp, products.matmul_p.fast.vjp

        def spy(g, a, b, *, out, needs=(True, True)):
            calls.append(needs)
            return rule(g, a, b, out=out, needs=needs)

        def numpy_spy(g, out, a, b, *, needs=(True, True)):  # (the rule's NumPy form)
            calls.append(needs)
            return numpy_rule(g, out, a, b, needs=needs)

        products.matmul_p.vjp, products.matmul_p.fast.vjp = spy, numpy_spy
        try:
            (gx,) = autograd.grad((x @ w).sum(), (x,))
            (gw,) = autograd.grad((x @ w).sum(), (w,))
            gx2, gw2 = autograd.grad((x @ w).sum(), (x, w))
        finally:
            products.matmul_p.vjp, products.matmul_p.fast.vjp = rule, numpy_rule
        assert calls == [(True, False), (False, True), (True, True)]
        assert gx.tolist() == gx2.tolist() == [[2.0, 2.0, 2.0]] * 2
        assert gw.tolist() == gw2.tolist() == [[3.0, 3.0], [5.0, 5.0], [7.0, 7.0]]

    def test_branches_not_leading_to_inputs_are_not_executed(self):
        x, z = leaf(1.0, 2.0), leaf(3.0, 4.0)
        a, b = x * 2, z * 3
        fired = []
        b.register_hook(lambda g: fired.append("b"))
        b.grad_fn.register_prehook(lambda g: fired.append("b.pre"))
        z.register_hook(lambda g: fired.append("z"))
        out = (a * b).sum()
        assert autograd.grad(out, x, retain_graph=True)[0].tolist() == [18.0, 24.0]
        out.backward(inputs=[x])
        assert fired == []
        assert z.grad is None and x.grad.tolist() == [18.0, 24.0]

    def test_grad_input_node_is_captured_not_executed(self):
        # torch: a node whose output is an autograd.grad input (and that leads to no other
        # input) is not run — tensor hooks fire, node hooks do not, residuals are kept.
        x = leaf(1.0, 2.0)
        y = x * 2
        log = []
        y.grad_fn.register_prehook(lambda g: log.append("pre"))
        y.grad_fn.register_hook(lambda gi, go: log.append("post"))
        y.register_hook(lambda g: log.append("tensor"))
        autograd.grad((y * y).sum(), [y])
        assert log == ["tensor"]
        (y * 3).sum().backward()  # y's node still has its residuals
        assert log == ["tensor", "tensor", "pre", "post"]
        assert x.grad.tolist() == [6.0, 6.0]

    def test_backward_input_node_is_executed(self):
        # ... while backward(inputs=...) runs the input's node (and frees it).
        x = leaf(1.0, 2.0)
        y = x * 2
        log = []
        y.grad_fn.register_prehook(lambda g: log.append("pre"))
        y.grad_fn.register_hook(lambda gi, go: log.append("post"))
        y.register_hook(lambda g: log.append("tensor"))
        autograd.backward((y * y).sum(), inputs=[y])
        assert log == ["tensor", "pre", "post"]
        assert x.grad is None

    def test_allow_unused_and_materialize_grads(self):
        x, z = leaf(1.0, 2.0), leaf(1.0, 2.0)
        with pytest.raises(
            RuntimeError,
            match=exact(
                "The differentiated Tensor at index 1 appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior."
            ),
        ):
            autograd.grad((x * 2).sum(), [x, z])
        gx, gz = autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
        assert gx.tolist() == [2.0, 2.0] and gz is None
        gx, gz = autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
        assert gz.tolist() == [0.0, 0.0] and gz.shape == z.shape and gz.dtype == z.dtype
        gx, gz = autograd.grad((x * 2).sum(), [x, z], allow_unused=True, materialize_grads=True)
        assert gz.tolist() == [0.0, 0.0]

    def test_materialize_grads_with_allow_unused_false_is_a_value_error(self):
        x = leaf(1.0)
        with pytest.raises(
            ValueError,
            match=exact(
                "Expected allow_unused to be True or not passed when materialize_grads=True, but "
                "got: allow_unused=False."
            ),
        ):
            autograd.grad((x * 2).sum(), x, materialize_grads=True, allow_unused=False)

    def test_unused_index_is_reported(self):
        x, z, w = leaf(1.0), leaf(1.0), leaf(1.0)
        with pytest.raises(RuntimeError, match="at index 0 appears"):
            autograd.grad((x * w).sum(), [z, x])
        with pytest.raises(RuntimeError, match="at index 2 appears"):
            autograd.grad((x * w).sum(), [x, w, z])

    def test_empty_inputs(self):
        x = leaf(1.0, 2.0)
        with pytest.raises(
            RuntimeError, match=exact("`inputs` argument to `grad()` cannot be empty.")
        ):
            autograd.grad((x * 2).sum(), [])
        with pytest.raises(
            RuntimeError, match=exact("`inputs` argument to `backward()` cannot be empty.")
        ):
            autograd.backward((x * 2).sum(), inputs=[])
        with pytest.raises(
            RuntimeError, match=exact("`inputs` argument to `backward()` cannot be empty.")
        ):
            (x * 2).sum().backward(inputs=[])
        assert x.grad is None

    def test_input_that_does_not_require_grad(self):
        x = leaf(1.0, 2.0)
        with pytest.raises(
            RuntimeError, match=exact("One of the differentiated Tensors does not require grad")
        ):
            autograd.grad(x.sum(), ad.tensor([1.0, 2.0]))


class TestDeprecatedArguments:
    def test_only_inputs_false_warns_and_is_ignored(self):
        x = leaf(1.0, 2.0)
        with pytest.warns(
            FutureWarning,
            match=re.escape(
                "only_inputs argument is deprecated and is ignored now (defaults to True). To "
                "accumulate gradient for other parts of the graph, please use "
            ),
        ):
            (g,) = autograd.grad((x * 2).sum(), x, only_inputs=False)
        assert g.tolist() == [2.0, 2.0] and x.grad is None

    def test_only_inputs_true_does_not_warn(self):
        x = leaf(1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            autograd.grad((x * 2).sum(), x, only_inputs=True)

    def test_grad_variables_warns(self):
        x = leaf(1.0, 2.0)
        with pytest.warns(
            FutureWarning,
            match=exact("`grad_variables` is deprecated. Use `grad_tensors` instead."),
        ):
            autograd.backward(x * 2, grad_variables=ad.tensor([1.0, 3.0]))
        assert x.grad.tolist() == [2.0, 6.0]

    def test_grad_variables_and_grad_tensors_together(self):
        x = leaf(1.0)
        with (
            pytest.warns(FutureWarning),
            pytest.raises(
                RuntimeError,
                match=exact(
                    "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                    "`backward()`. Please only use `grad_tensors`."
                ),
            ),
        ):
            autograd.backward(
                (x * 2).sum(), grad_tensors=ad.tensor(1.0), grad_variables=ad.tensor(1.0)
            )


class TestSeedErrors:
    def test_implicit_grad_only_for_scalar_outputs(self):
        x = leaf(1.0, 2.0)
        msg = exact("grad can be implicitly created only for scalar outputs")
        with pytest.raises(RuntimeError, match=msg):
            (x * 2).backward()
        with pytest.raises(RuntimeError, match=msg):
            autograd.grad(x * 2, x)
        with pytest.raises(RuntimeError, match=msg):
            autograd.grad(x * 2, x, [None])
        assert x.grad is None

    def test_implicit_grad_for_one_element_outputs(self):
        x = leaf(1.0, 2.0)
        (g,) = autograd.grad((x * 2)[:1], x)  # shape (1,): numel 1 is enough
        assert g.tolist() == [2.0, 0.0]

    def test_shape_mismatch_message(self):
        x = leaf(1.0, 2.0)
        with pytest.raises(
            RuntimeError,
            match=exact(
                "Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and output[0] has "
                "a shape of torch.Size([2])."
            ),
        ):
            (x * 2).backward(ad.tensor([1.0, 2.0, 3.0]))

    def test_number_of_gradients_mismatch(self):
        x = leaf(1.0, 2.0)
        with pytest.raises(RuntimeError, match=exact("got 2 tensors and 1 gradients")):
            autograd.grad([x.sum(), x.sum()], x, [ad.tensor(1.0)])
        with pytest.raises(RuntimeError, match=exact("got 1 tensors and 0 gradients")):
            autograd.grad(x.sum(), x, [])

    def test_output_without_graph(self):
        x = leaf(1.0, 2.0)
        c = ad.tensor([1.0, 2.0])
        with pytest.raises(
            RuntimeError,
            match=exact("element 0 of tensors does not require grad and does not have a grad_fn"),
        ):
            c.sum().backward()
        with pytest.raises(
            RuntimeError,
            match=exact("element 1 of tensors does not require grad and does not have a grad_fn"),
        ):
            autograd.grad([x.sum(), c.sum()], x)
        with autograd.no_grad():
            y = x * 2
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
            y.sum().backward()

    def test_errors_leave_grad_mode_and_graph_intact(self):
        x = leaf(1.0, 2.0)
        s = (x * x).sum()
        with pytest.raises(RuntimeError):
            autograd.grad(s, [x, leaf(1.0)], create_graph=True)
        assert autograd.is_grad_enabled()
        (g,) = autograd.grad(s, x)  # the graph was retained (create_graph) and is usable
        assert g.tolist() == [2.0, 4.0]


class TestNodeAPI:
    @pytest.mark.parametrize(
        "name, make",
        [
            ("MulBackward0", lambda a, b: a * b),
            ("AddBackward0", lambda a, b: a + b),
            ("SubBackward0", lambda a, b: a - b),
            ("DivBackward0", lambda a, b: a / b),
            ("NegBackward0", lambda a, b: -a),
            ("PowBackward0", lambda a, b: a**2),
            ("AbsBackward0", lambda a, b: abs(a)),
            ("ExpBackward0", lambda a, b: anp.exp(a)),
            ("LogBackward0", lambda a, b: anp.log(a)),
            ("SinBackward0", lambda a, b: anp.sin(a)),
            ("CosBackward0", lambda a, b: anp.cos(a)),
            ("TanhBackward0", lambda a, b: anp.tanh(a)),
            ("AsinBackward0", lambda a, b: anp.arcsin(a / 4)),
            ("AcoshBackward0", lambda a, b: anp.arccosh(b)),
            ("Atan2Backward0", lambda a, b: anp.arctan2(a, b)),
            ("SqrtBackward0", lambda a, b: anp.sqrt(a)),
            ("MaximumBackward0", lambda a, b: anp.maximum(a, b)),
            ("WhereBackward0", lambda a, b: anp.where(a > 1.5, a, b)),
            ("MmBackward0", lambda a, b: a.reshape(1, 2) @ b.reshape(2, 1)),
            ("CatBackward0", lambda a, b: anp.concatenate([a, b])),
            ("FlipBackward0", lambda a, b: anp.flip(a, 0)),
            ("IndexBackward0", lambda a, b: a[[0, 1]]),
            ("IndexBackward0", lambda a, b: a[a > 1.5]),
            ("SelectBackward0", lambda a, b: a[1]),
            ("SelectBackward0", lambda a, b: a[np.int64(-1)]),
            ("SliceBackward0", lambda a, b: a[1:]),
            ("SliceBackward0", lambda a, b: a[0:]),
            ("UnsqueezeBackward0", lambda a, b: a[None]),
            ("SelectBackward0", lambda a, b: a[None, 1]),
            ("UnsqueezeBackward0", lambda a, b: a[:, None]),
            ("AliasBackward0", lambda a, b: a[...]),
            ("SliceBackward0", lambda a, b: a[:]),
            ("AliasBackward0", lambda a, b: a[..., :]),
        ],
    )
    def test_names_match_torch(self, name, make):
        a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
        node = make(a, b).grad_fn
        assert node.name() == name
        assert repr(node).startswith(f"<{name} object at 0x")

    def test_accumulate_grad_node(self):
        x = leaf(1.0, 2.0)
        acc = (x * 1).grad_fn.next_functions[0][0]
        assert acc.name() == "torch::autograd::AccumulateGrad"
        assert repr(acc).startswith("<AccumulateGrad object at 0x")
        assert acc.variable is x
        assert acc.next_functions == ()
        assert (x * 2).grad_fn.next_functions[0][0] is acc  # one accumulator per leaf
        assert x.grad_fn is None

    def test_next_functions_of_constants_are_none(self):
        x = leaf(1.0, 2.0)
        y = x * ad.tensor([1.0, 2.0]) + 3.0
        add = y.grad_fn
        assert add.name() == "AddBackward0"
        (mul, i0), (none, i1) = add.next_functions
        assert (mul.name(), i0, none, i1) == ("MulBackward0", 0, None, 0)
        assert [(n is None, i) for n, i in mul.next_functions] == [(False, 0), (True, 0)]

    def test_next_functions_output_index_of_multi_output_nodes(self):
        x = leaf(1.0, 2.0, 3.0, 4.0)
        parts = anp.split(x, 2)
        y = parts[1] * parts[0]
        (n1, i1), (n0, i0) = y.grad_fn.next_functions
        assert n1 is n0 and (i1, i0) == (1, 0)

    def test_metadata_is_a_persistent_dict(self):
        x = leaf(1.0)
        node = (x * 2).grad_fn
        assert node.metadata == {} and isinstance(node.metadata, dict)
        node.metadata["key"] = 1
        assert node.metadata == {"key": 1}
        assert node.metadata is node.metadata

    def test_node_hook_and_prehook_handles(self):
        a = leaf(0.0, 0.0, 0.0)
        b = a * 1
        handle = b.grad_fn.register_hook(lambda gi, go: (go[0] * 2, None))
        b.sum().backward(retain_graph=True)
        assert a.grad.tolist() == [2.0, 2.0, 2.0]
        handle.remove()
        a.grad = None
        b.sum().backward(retain_graph=True)
        assert a.grad.tolist() == [1.0, 1.0, 1.0]
        handle = b.grad_fn.register_prehook(lambda go: (go[0] * 3,))
        a.grad = None
        b.sum().backward(retain_graph=True)
        assert a.grad.tolist() == [3.0, 3.0, 3.0]
        handle.remove()
        handle.remove()  # removing twice is harmless
        a.grad = None
        b.sum().backward()
        assert a.grad.tolist() == [1.0, 1.0, 1.0]

    def test_tensor_repr_shows_grad_fn(self):
        x = leaf(1.0, 2.0)
        assert repr(x * 2).endswith("grad_fn=<MulBackward0>)")
        assert repr(x).endswith("requires_grad=True)")


class TestTensorAutogradAttributes:
    def test_numpy_on_tensor_requiring_grad(self):
        x = leaf(1.0, 2.0)
        msg = exact(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
        )
        with pytest.raises(RuntimeError, match=msg):
            x.numpy()
        with pytest.raises(RuntimeError, match=msg):
            (x * 2).numpy()
        assert x.detach().numpy().tolist() == [1.0, 2.0]
        # As in torch: with grad mode off, or force=True, the value (its memory, shared).
        with ad.no_grad():
            assert x.numpy().tolist() == [1.0, 2.0]
        forced = x.numpy(force=True)
        forced[0] = 5.0
        assert x.tolist() == [5.0, 2.0] and x.requires_grad

    def test_clone_is_a_differentiable_copy(self):
        x = leaf(1.0, 2.0)
        y = x.clone()
        assert y.grad_fn.name() == "CloneBackward0" and not np.shares_memory(
            y.numpy(force=True), x.numpy(force=True)
        )
        (y * y).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0]

    @pytest.mark.parametrize("values", [[1, 2], [True, False]])
    def test_requires_grad_on_integer_or_bool_tensor(self, values):
        # torch: "Only Tensors of floating point and complex dtype can require gradients"
        # (factory) / "only Tensors of floating point dtype can require gradients" (setter)
        msg = "(?i)^only Tensors of floating point .*can require gradients$"
        with pytest.raises(RuntimeError, match=msg):
            ad.tensor(values, requires_grad=True)
        t = ad.tensor(values)
        with pytest.raises(RuntimeError, match=msg):
            t.requires_grad_()
        with pytest.raises(RuntimeError, match=msg):
            t.requires_grad = True
        assert not t.requires_grad
        t.requires_grad = False  # turning it off is fine

    def test_complex_tensors_can_require_grad(self):
        assert ad.tensor([1 + 2j], requires_grad=True).requires_grad

    def test_setting_requires_grad_on_non_leaf(self):
        y = leaf(1.0) * 2
        with pytest.raises(
            RuntimeError,
            match=exact(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            ),
        ):
            y.requires_grad = False
        with pytest.raises(
            RuntimeError, match=exact("you can only change requires_grad flags of leaf variables.")
        ):
            y.requires_grad = True
        with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
            y.requires_grad_(False)
        assert y.requires_grad

    def test_requires_grad_on_leaves(self):
        t = ad.tensor([1.0])
        assert not t.requires_grad and t.is_leaf
        assert t.requires_grad_() is t and t.requires_grad
        t.requires_grad_(False)
        assert not t.requires_grad
        t.requires_grad = True
        assert (t * 2).requires_grad

    def test_detach(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        d = y.detach()
        assert not d.requires_grad and d.is_leaf and d.grad_fn is None
        assert d.tolist() == [2.0, 4.0]
        assert (d * x).grad_fn.next_functions[0] == (None, 0)
        d2 = x.detach()
        assert not d2.requires_grad and x.requires_grad

    def test_detach_shares_data(self):
        x = leaf(1.0, 2.0)
        d = x.detach()
        d += 1
        assert x.tolist() == [2.0, 3.0]

    def test_is_leaf(self):
        x = leaf(1.0)
        c = ad.tensor([1.0])
        assert x.is_leaf and c.is_leaf and (c * 2).is_leaf
        assert not (x * 2).is_leaf
        with autograd.no_grad():
            assert (x * 2).is_leaf and not (x * 2).requires_grad

    def test_retain_grad(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        assert not y.retains_grad and not x.retains_grad
        y.retain_grad()
        y.retain_grad()  # idempotent
        assert y.retains_grad
        x.retain_grad()  # no-op on leaves
        assert not x.retains_grad
        (y * y).sum().backward(retain_graph=True)
        assert y.grad.tolist() == [4.0, 8.0]
        (y * y).sum().backward()
        assert y.grad.tolist() == [8.0, 16.0]  # accumulates like a leaf's grad
        with pytest.raises(
            RuntimeError, match=exact("can't retain_grad on Tensor that has requires_grad=False")
        ):
            ad.tensor([1.0]).retain_grad()

    def test_non_leaf_grad_access_warns(self):
        y = leaf(1.0) * 2
        with pytest.warns(
            UserWarning,
            match=re.escape(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor."
            ),
        ):
            assert y.grad is None
        y.retain_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert y.grad is None
            assert leaf(1.0).grad is None
            assert ad.tensor([1.0]).grad is None

    def test_results_of_ops_on_constants_do_not_require_grad(self):
        c = ad.tensor([1.0, 2.0])
        assert not (c * 2).requires_grad
        assert (c * leaf(1.0, 1.0)).requires_grad


class TestGraphUtilities:
    def test_saved_tensors_hooks_pack_in_forward_unpack_in_backward(self):
        x = leaf(1.0, 2.0)
        log = []

        def pack(t):
            log.append(("pack", type(t) is ad.Tensor))
            return t.detach() * 1

        def unpack(p):
            log.append(("unpack", type(p) is ad.Tensor))
            return p

        with autograd.graph.saved_tensors_hooks(pack, unpack):
            y = x * x
        assert log == [("pack", True)] * 2
        z = x * x  # outside the block: no hooks
        y.backward(ad.tensor([1.0, 1.0]))
        z.backward(ad.tensor([1.0, 1.0]))
        assert log == [("pack", True)] * 2 + [("unpack", True)] * 2
        assert x.grad.tolist() == [4.0, 8.0]

    def test_saved_tensors_hooks_pack_what_the_rule_reads(self):
        # As in torch: exp saves its result (packed once), add saves nothing.
        x = leaf(1.0, 2.0)
        packed = []
        with autograd.graph.saved_tensors_hooks(
            lambda t: packed.append(t.tolist()) or t.detach() * 1, lambda p: p
        ):
            y = x.exp() + x
        assert packed == [np.exp([1.0, 2.0]).tolist()]
        (g,) = autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]))

    def test_saved_tensors_hooks_pack_with_grad_mode_off(self):
        # As in torch: a pack hook may compute with the tensor (`t * 1` records nothing, so
        # saves nothing to pack again), and grad mode is back on after it.
        x = leaf(1.0, 2.0)
        seen = []

        def pack(t):
            seen.append((ad.is_grad_enabled(), t.requires_grad, (t * 1).requires_grad))
            return t * 1

        with autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            y = (x * x).exp()
        assert seen == [(False, True, False)] * 3 and ad.is_grad_enabled()
        y.sum().backward()
        want = 2.0 * np.array([1.0, 2.0]) * np.exp(np.array([1.0, 4.0]))
        np.testing.assert_allclose(x.grad.numpy(), want)

    @pytest.mark.parametrize(
        "pack", [lambda t: t * 1, lambda t: t.detach() * 1, lambda t: t, lambda t: t.numpy()]
    )
    def test_saved_tensors_hooks_keep_the_graph_for_double_backward(self, pack):
        # As torch puts back a saved variable's grad_fn when it is unpacked: whatever the
        # pack hook returns, a create_graph pass differentiates through the saved input.
        with autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            x = leaf(1.0, 2.0)
            y = (x * x * x).sum()
        (g,) = autograd.grad(y, x, create_graph=True)
        (h,) = autograd.grad(g.sum(), x)
        np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
        np.testing.assert_allclose(h.numpy(), [6.0, 12.0])

    def test_disable_saved_tensors_hooks_and_save_on_cpu(self):
        graph = autograd.graph
        x = leaf(1.0, 2.0)
        with graph.disable_saved_tensors_hooks("no hooks"):
            y = x * x  # (recording is unaffected)
            with pytest.raises(RuntimeError, match="^no hooks$"):
                graph.saved_tensors_hooks(lambda t: t, lambda p: p).__enter__()
            with pytest.raises(RuntimeError, match="^no hooks$"):
                graph.save_on_cpu().__enter__()
            with graph.disable_saved_tensors_hooks("inner"):
                with pytest.raises(RuntimeError, match="^inner$"):
                    graph.save_on_cpu().__enter__()
            with pytest.raises(RuntimeError, match="^no hooks$"):  # (the outer one is back)
                graph.save_on_cpu().__enter__()
        with graph.save_on_cpu(pin_memory=True):
            with pytest.raises(RuntimeError, match="^in use$"):  # (hooks are in use)
                with graph.disable_saved_tensors_hooks("in use"):
                    pass
            z = (x * x * x).sum()
        (g,) = autograd.grad(z, x, create_graph=True)
        (h,) = autograd.grad(g.sum(), x)
        np.testing.assert_allclose(h.numpy(), [6.0, 12.0])
        y.backward(ad.tensor([1.0, 1.0]))
        assert x.grad.tolist() == [2.0, 4.0]

    def test_increment_version_invalidates_saved_tensors(self):
        x = leaf(1.0, 2.0)
        y = x * 1
        w = y * y
        autograd.graph.increment_version(y)
        assert y._version == 1
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
            w.sum().backward()

    def test_is_grads_batched(self):
        x = leaf(1.0, 2.0)
        (g,) = autograd.grad(x**2, x, ad.eye(2), is_grads_batched=True)
        assert g.tolist() == [[2.0, 0.0], [0.0, 4.0]]

    def test_grad_dtype_follows_the_leaf(self):
        x = ad.tensor([1.0, 2.0], dtype=np.float32, requires_grad=True)
        c = ad.tensor([1.0, 2.0], dtype=np.float64)
        assert (x * c).dtype == np.float64
        (x * c).sum().backward()
        assert x.grad.dtype == np.float32
        assert autograd.grad((x * c).sum(), x)[0].dtype == np.float32

    def test_broadcast_leaf_gets_reduced_gradient(self):
        x = ad.tensor(2.0, requires_grad=True)
        y = leaf(1.0, 2.0, 3.0)
        (x * y).sum().backward()
        assert x.grad.item() == 6.0 and x.grad.shape == ()
        assert y.grad.tolist() == [2.0, 2.0, 2.0]

    def test_result_made_under_no_grad_can_become_a_leaf(self):
        x = leaf(1.0, 2.0)
        with autograd.no_grad():
            y = x * 2
        y.requires_grad_()
        assert y.is_leaf and y.requires_grad
        (y * 3).sum().backward()
        assert y.grad.tolist() == [3.0, 3.0] and x.grad is None


class TestComplex:
    """PyTorch's convention: every gradient a user sees is the conjugate of the bilinear one."""

    Z = [1 + 2j, 3 - 1j]
    W = [0.5 - 1j, 2 + 0.3j]

    def test_backward_gives_conjugate_gradients(self):
        z = ad.tensor(self.Z, requires_grad=True)
        w = ad.tensor(self.W)
        (z * w).real.sum().backward()
        np.testing.assert_allclose(z.grad.numpy(), np.conj(self.W))
        (g,) = autograd.grad((z * w).real.sum(), z)
        np.testing.assert_allclose(g.numpy(), np.conj(self.W))

    def test_hooks_retain_grad_and_grad_outputs(self):
        z = ad.tensor(self.Z, requires_grad=True)
        w = ad.tensor(self.W)
        y = z * w
        y.retain_grad()
        seen = []
        y.register_hook(lambda g: seen.append(g.numpy()))
        (y * w).real.sum().backward()
        np.testing.assert_allclose(seen[0], np.conj(self.W))
        np.testing.assert_allclose(y.grad.numpy(), np.conj(self.W))
        np.testing.assert_allclose(z.grad.numpy(), np.conj(np.multiply(self.W, self.W)))
        v = [1 + 1j, 2 - 1j]
        z.grad = None
        (z * w).backward(ad.tensor(v))
        np.testing.assert_allclose(z.grad.numpy(), np.multiply(v, np.conj(self.W)))

    def test_hook_result_is_in_the_conjugate_convention(self):
        z = ad.tensor(self.Z, requires_grad=True)
        w = ad.tensor(self.W)
        y = z * w
        y.register_hook(lambda g: g * 1j)
        (y * w).real.sum().backward()
        np.testing.assert_allclose(z.grad.numpy(), 1j * np.conj(self.W) ** 2)
