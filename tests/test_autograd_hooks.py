"""Backward hooks of the imperative autograd and their order, as torch 2.x runs them.

Each ordering test records the calls in a list; the expected list is what torch gives
for the same script (checked while writing the test; torch is not imported here).
"""

import re

import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff import autograd
from autodiff.autograd.graph import register_multi_grad_hook


def leaf(*values):
    return ad.tensor(list(values), requires_grad=True)


def as_lists(grads):
    return [None if g is None else g.tolist() for g in grads]


class TestHookOrder:
    def test_all_hook_kinds_in_torch_order(self):
        log = []
        x = leaf(1.0, 2.0)
        y = x * 2
        z = y * 3
        s = z.sum()

        def tensor_hook(name):
            return lambda g: log.append((name, g.tolist()))

        y.register_hook(tensor_hook("y.tensor_hook1"))
        y.grad_fn.register_prehook(lambda go: log.append(("y.node_pre", go[0].tolist())))
        y.register_hook(tensor_hook("y.tensor_hook2"))
        y.retain_grad()
        y.grad_fn.register_hook(
            lambda gi, go: log.append(("y.node_post", as_lists(gi), as_lists(go)))
        )
        z.register_hook(tensor_hook("z.tensor_hook"))
        z.grad_fn.register_prehook(lambda go: log.append(("z.node_pre", go[0].tolist())))
        z.grad_fn.register_hook(lambda gi, go: log.append(("z.node_post",)))
        x.register_hook(tensor_hook("x.tensor_hook"))
        x.register_post_accumulate_grad_hook(lambda t: log.append(("x.post_acc", t.grad.tolist())))
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log.append(("acc.pre", go[0].tolist())))
        acc.register_hook(lambda gi, go: log.append(("acc.post", as_lists(gi), as_lists(go))))
        s.backward()
        assert log == [
            ("z.tensor_hook", [1.0, 1.0]),
            ("z.node_pre", [1.0, 1.0]),
            ("z.node_post",),
            ("y.tensor_hook1", [3.0, 3.0]),
            ("y.tensor_hook2", [3.0, 3.0]),
            ("y.node_pre", [3.0, 3.0]),
            ("y.node_post", [[6.0, 6.0], None], [[3.0, 3.0]]),
            ("x.tensor_hook", [6.0, 6.0]),
            ("acc.pre", [6.0, 6.0]),
            ("x.post_acc", [6.0, 6.0]),
            ("acc.post", [], [[6.0, 6.0]]),  # AccumulateGrad: no grad_inputs
        ]
        assert x.grad.tolist() == [6.0, 6.0] and y.grad.tolist() == [3.0, 3.0]

    def test_retain_grad_sees_tensor_hooks_but_not_node_pre_hooks(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        s = (y * 3).sum()
        y.retain_grad()
        y.register_hook(lambda g: g * 10)  # registered after retain_grad: still seen by it
        y.grad_fn.register_prehook(lambda go: (go[0] * 100,))
        s.backward()
        assert y.grad.tolist() == [30.0, 30.0]
        assert x.grad.tolist() == [6000.0, 6000.0]

    def test_nodes_run_highest_sequence_number_first(self):
        x = leaf(1.0)
        log = []
        a = x * 2  # created first
        b = x * 3
        c = x * 4  # created last
        for name, t in (("a", a), ("b", b), ("c", c)):
            t.grad_fn.register_prehook(lambda go, name=name: log.append(name))
        (a + c + b).sum().backward()
        assert log == ["c", "b", "a"]

    def test_a_node_runs_after_all_its_consumers(self):
        x = leaf(1.0)
        log = []
        h = x * 2
        late = x * 5  # higher sequence number than h, consumes nothing of h
        u = h * 3
        v = h * 4
        for name, t in (("h", h), ("late", late), ("u", u), ("v", v)):
            t.grad_fn.register_prehook(lambda go, name=name: log.append(name))
        (u + late + v).sum().backward()
        assert log == ["v", "u", "late", "h"]

    def test_tensor_hooks_run_in_registration_order_and_chain(self):
        x = leaf(1.0, 2.0)
        seen = []
        x.register_hook(lambda g: seen.append(("first", g.tolist())) or g + 1)
        x.register_hook(lambda g: seen.append(("second", g.tolist())) or g * 10)
        (x * 2).sum().backward()
        assert seen == [("first", [2.0, 2.0]), ("second", [3.0, 3.0])]
        assert x.grad.tolist() == [30.0, 30.0]


class TestTensorHooks:
    def test_hook_returning_new_gradient_changes_the_result(self):
        x = leaf(1.0, 2.0)
        x.register_hook(lambda g: g * 2)
        (x * 3).sum().backward()
        assert x.grad.tolist() == [6.0, 6.0]

    def test_hook_on_non_leaf_changes_downstream_gradients(self):
        x = leaf(1.0, 2.0)
        y = x * x
        y.register_hook(lambda g: g * ad.tensor([0.0, 1.0]))
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 4.0]

    def test_hook_returning_none_keeps_the_gradient(self):
        x = leaf(1.0, 2.0)
        seen = []
        x.register_hook(lambda g: seen.append(g.tolist()))
        (x * 3).sum().backward()
        assert seen == [[3.0, 3.0]] and x.grad.tolist() == [3.0, 3.0]

    def test_hook_gets_a_tensor(self):
        x = leaf(1.0)
        kinds = []
        x.register_hook(lambda g: kinds.append(type(g)))
        (x * 3).sum().backward()
        assert kinds == [ad.Tensor]

    def test_handle_remove(self):
        x = leaf(1.0, 2.0)
        handle = x.register_hook(lambda g: g * 2)
        handle.remove()
        (x * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
        handle.remove()

    def test_handle_as_context_manager(self):
        x = leaf(1.0)
        with x.register_hook(lambda g: g * 2):
            (x * 3).sum().backward()
        (x * 3).sum().backward()
        assert x.grad.tolist() == [9.0]

    def test_hooks_fire_in_autograd_grad(self):
        x = leaf(1.0, 2.0)
        x.register_hook(lambda g: g * 2)
        assert autograd.grad((x * 3).sum(), x)[0].tolist() == [6.0, 6.0]
        y = x * 2
        y.register_hook(lambda g: g * 2)
        assert autograd.grad((y * 3).sum(), y)[0].tolist() == [6.0, 6.0]

    def test_node_pre_hook_of_captured_node_does_not_change_capture(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        y.register_hook(lambda g: g * 2)
        y.grad_fn.register_prehook(lambda go: (go[0] * 5,))
        assert autograd.grad((y * 3).sum(), y)[0].tolist() == [6.0, 6.0]

    def test_hooks_fire_on_every_backward(self):
        x = leaf(1.0)
        count = []
        x.register_hook(lambda g: count.append(1))
        s = (x * 2).sum()
        s.backward(retain_graph=True)
        s.backward()
        assert len(count) == 2

    def test_hook_sees_graph_under_create_graph(self):
        x = leaf(1.0, 2.0)
        seen = []
        y = x * x
        y.register_hook(lambda g: seen.append(g.requires_grad))
        autograd.grad((y * y).sum(), x, create_graph=True)
        autograd.grad((y * y).sum(), x)
        assert seen == [True, False]

    def test_hook_changing_the_size_raises(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        y.register_hook(lambda g: g[:1])
        with pytest.raises(
            RuntimeError, match=re.escape("hook '<lambda>' has changed the size of value")
        ):
            y.sum().backward()

    def test_hook_on_tensor_without_grad_raises(self):
        with pytest.raises(
            RuntimeError,
            match=re.escape("cannot register a hook on a tensor that doesn't require gradient"),
        ):
            ad.tensor([1.0]).register_hook(lambda g: g)


class TestNodeHooks:
    def test_post_hook_replaces_grad_inputs(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, gi[1]))
        (y * 3).sum().backward()
        assert x.grad.tolist() == [7.0, 7.0]

    def test_node_hooks_returning_wrong_number_of_values(self):
        x, z = leaf(1.0, 2.0), leaf(1.0, 2.0)

        def myhook(gi, go):
            return (gi[0],)

        y = x * z
        y.grad_fn.register_hook(myhook)
        with pytest.raises(
            RuntimeError,
            match=re.escape(
                "hook 'myhook' has returned an incorrect number of values (got 1, but expected 2)"
            ),
        ):
            y.sum().backward()
        y = x * z
        y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
        with pytest.raises(
            RuntimeError,
            match=re.escape(
                "hook '<lambda>' has returned an incorrect number of values (got 2, but expected 1)"
            ),
        ):
            y.sum().backward()

    def test_accumulate_grad_hooks_do_not_run_in_autograd_grad(self):
        x = leaf(1.0, 2.0)
        acc = (x * 1).grad_fn.next_functions[0][0]
        log = []
        acc.register_prehook(lambda g: log.append("acc.pre"))
        acc.register_hook(lambda gi, go: log.append("acc.post"))
        x.register_hook(lambda g: log.append("tensor"))
        x.register_post_accumulate_grad_hook(lambda t: log.append("post_acc"))
        autograd.grad((x * x).sum(), x)
        assert log == ["tensor"]
        log.clear()
        (x * x).sum().backward(inputs=[x])
        assert log == ["tensor", "acc.pre", "post_acc", "acc.post"]
        log.clear()
        (x * x).sum().backward()
        assert log == ["tensor", "acc.pre", "post_acc", "acc.post"]

    def test_post_hooks_see_none_for_constant_inputs(self):
        x = leaf(1.0, 2.0)
        seen = []
        y = x * ad.tensor([3.0, 4.0])
        y.grad_fn.register_hook(lambda gi, go: seen.append(as_lists(gi)))
        y.sum().backward()
        assert seen == [[[3.0, 4.0], None]]


class TestPostAccumulateGradHooks:
    def test_fires_after_accumulation_with_the_tensor(self):
        x = leaf(1.0, 2.0)
        seen = []
        handle = x.register_post_accumulate_grad_hook(
            lambda t: seen.append((t is x, t.grad.tolist()))
        )
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        autograd.grad((x * 2).sum(), x)  # grad() accumulates nothing: no call
        assert seen == [(True, [2.0, 2.0]), (True, [5.0, 5.0])]
        handle.remove()
        (x * 2).sum().backward()
        assert len(seen) == 2

    def test_optimizer_step_in_the_hook(self):
        x = leaf(1.0, 2.0)

        def sgd_step(t):
            with ad.no_grad():
                t -= 0.1 * t.grad
            t.grad = None

        x.register_post_accumulate_grad_hook(sgd_step)
        (x * x).sum().backward()
        assert x.grad is None
        assert [round(v, 12) for v in x.tolist()] == [0.8, 1.6]
        assert x.requires_grad and x.is_leaf

    def test_only_on_leaves_that_require_grad(self):
        with pytest.raises(
            RuntimeError,
            match=re.escape("post accumulate grad hooks cannot be registered on non-leaf tensors"),
        ):
            (leaf(1.0) * 2).register_post_accumulate_grad_hook(lambda t: None)
        with pytest.raises(
            RuntimeError,
            match=re.escape("cannot register a hook on a tensor that doesn't require gradient"),
        ):
            ad.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None)


class TestMultiGradHook:
    def test_mode_all_and_any(self):
        a, b, c = leaf(1.0, 2.0), leaf(3.0, 4.0), leaf(5.0)
        log = []
        h_all = register_multi_grad_hook([a, b, c], lambda gs: log.append(("all", as_lists(gs))))
        h_any = register_multi_grad_hook(
            [a, b], lambda g: log.append(("any", g.tolist())), mode="any"
        )
        (a * b).sum().backward()
        assert log == [("any", [3.0, 4.0]), ("all", [[3.0, 4.0], [1.0, 2.0], None])]
        log.clear()
        (a * 2).sum().backward()
        assert log == [("all", [[2.0, 2.0], None, None]), ("any", [2.0, 2.0])]
        log.clear()
        h_all.remove()
        h_any.remove()
        (a * b).sum().backward()
        assert log == []

    def test_fires_once_per_pass(self):
        a, b = leaf(1.0), leaf(2.0)
        calls = []
        register_multi_grad_hook([a, b], lambda gs: calls.append(as_lists(gs)))
        s = (a * b).sum()
        s.backward(retain_graph=True)
        s.backward()
        assert calls == [[[2.0], [1.0]], [[2.0], [1.0]]]

    def test_non_leaf_tensors(self):
        x = leaf(1.0, 2.0)
        y, z = x * 2, x * 3
        calls = []
        register_multi_grad_hook([y, z], lambda gs: calls.append(as_lists(gs)))
        (y * z).sum().backward()
        assert calls == [[[3.0, 6.0], [2.0, 4.0]]]

    def test_bad_mode(self):
        with pytest.raises(
            ValueError, match=re.escape("Expects mode to be one of ('all', 'any') but got bad")
        ):
            register_multi_grad_hook([leaf(1.0)], lambda g: None, mode="bad")


def test_hooks_compose_with_numpy_functions():
    x = leaf(0.0, 1.0)
    y = anp.exp(x)
    y.register_hook(lambda g: g * 0.5)
    y.sum().backward()
    assert [round(v, 12) for v in x.grad.tolist()] == [0.5, round(0.5 * 2.718281828459045, 12)]
