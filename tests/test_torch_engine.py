"""The torch face's autograd engine as PyTorch's (issue 27): node classes and introspection
(`MulBackward0`, `_saved_self`, `_raw_saved_*` SavedTensors, calling a node), which saved
values a backward pass frees (and which nodes may run twice), version counters shared by
`detach()`, products saving only what their gradients read, saved-tensor hooks, callbacks
queued during a backward pass, dual tensors updated in place.

Where real torch is installed, the behaviours are also checked against it, side by side.
"""

import pickle
import warnings
import weakref

import numpy as np
import pytest
from torch_oracle import both, leaf

import autodiff as ad
from autodiff import autograd
from autodiff.autograd import forward_ad as fwAD
from autodiff.autograd.graph import Node, saved_tensors_hooks

FREED = "after they have already been freed"


# ---------------------------------------------------------------------------------------------
# Node classes and names


def test_node_classes_are_named_as_torch_names_them():
    def names(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        nodes = [
            (x * x).grad_fn,
            (x + x).grad_fn,
            x.sum().grad_fn,
            x.mean().grad_fn,
            x.exp().grad_fn,
            (x / 2).grad_fn,
            (x * 2).grad_fn.next_functions[0][0],
        ]
        return [(type(n).__name__, n.name()) for n in nodes]

    ours, theirs = both(names)
    assert ours == theirs
    assert ours[-1] == ("AccumulateGrad", "torch::autograd::AccumulateGrad")
    assert ours[3] == ("MeanBackward0", "MeanBackward0")


def test_nodes_are_instances_of_graph_node_without_it_in_their_mro():
    x = leaf(1.0, 2.0)
    node = x.exp().grad_fn
    assert isinstance(node, Node) and issubclass(type(node), Node)
    assert Node not in type(node).mro()
    assert isinstance(node.next_functions[0][0], Node)
    assert not isinstance(None, Node) and not isinstance(1, Node) and not isinstance(Node, Node)
    assert issubclass(autograd.function.BackwardCFunction, Node)
    seen = []

    class Id(autograd.Function):
        @staticmethod
        def forward(ctx, v):
            seen.append(isinstance(ctx, Node))  # (a ctx is a node, as in torch)
            return v.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    y = Id.apply(x)
    assert seen == [True] and isinstance(y.grad_fn, Node)
    assert type(y.grad_fn) is Id._backward_cls and type(y.grad_fn).__name__ == "IdBackward"
    assert repr(y).endswith("grad_fn=<IdBackward>)")


def test_one_class_per_name_and_same_class_across_calls():
    x = leaf(1.0)
    assert type((x * 2).grad_fn) is type((x * 3).grad_fn)
    assert type((x * 2).grad_fn) is not type((x + 2).grad_fn)
    a = x.clone().grad_fn.next_functions[0][0]
    assert type(a).__name__ == "AccumulateGrad" and a.variable is x


def test_nodes_do_not_pickle_as_in_torch():
    x = leaf(1.0)
    for node in ((x * 2).grad_fn, (x * 2).grad_fn.next_functions[0][0]):
        with pytest.raises(TypeError, match=f"cannot pickle '{type(node).__name__}' object"):
            pickle.dumps(node)


def test_calling_a_node_applies_its_rule():
    def call(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        g = y.grad_fn(torch.tensor([1.0, 1.0]))
        p = (x**2).grad_fn(torch.tensor([1.0, 1.0]))
        return [t.tolist() for t in g], p.tolist(), p.requires_grad, (x * x).grad_fn(None)

    ours, theirs = both(call)
    assert ours == theirs == ([[1.0, 2.0], [1.0, 2.0]], [2.0, 4.0], True, (None, None))
    x = leaf(1.0)
    y = x**2
    with pytest.raises(TypeError, match="expected 1 arguments, got 2 instead"):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match="expected 1 arguments, got 0 instead"):
        y.grad_fn()
    with ad.no_grad():
        assert not y.grad_fn(ad.tensor([1.0])).requires_grad  # (grad mode off: not recorded)
    acc = (x * 1).grad_fn.next_functions[0][0]
    assert acc(ad.tensor([3.0])) == () and x.grad.tolist() == [3.0]  # (it accumulates)


def test_input_metadata_and_sequence_numbers():
    x = ad.tensor(np.ones(2, dtype=np.float32), requires_grad=True)
    z = x * x
    (meta,) = z.grad_fn._input_metadata
    assert tuple(meta.shape) == (2,) and meta.dtype == np.float32
    assert (z * 2).grad_fn._sequence_nr() > z.grad_fn._sequence_nr()


# ---------------------------------------------------------------------------------------------
# Saved values


def test_saved_inputs_are_the_tensors_themselves_and_outputs_new_tensors():
    a = leaf(1.0, 2.0, 3.0)
    b = a * a
    c = a * b
    d = a.exp()
    assert b.grad_fn._saved_self is a and b.grad_fn._saved_other is a
    assert c.grad_fn._saved_self is a and c.grad_fn._saved_other is b
    r = d.grad_fn._saved_result
    assert r is not d and r.grad_fn is d.grad_fn
    np.testing.assert_array_equal(r.detach().numpy(), d.detach().numpy())
    assert (a**3).grad_fn._saved_exponent == 3
    assert not hasattr((a + a).grad_fn, "_saved_self")  # (AddBackward0 saves no tensor)
    c.sum().backward()
    with pytest.raises(RuntimeError, match=FREED):
        _ = c.grad_fn._saved_self
    np.testing.assert_array_equal(a.detach().numpy(), [1.0, 2.0, 3.0])


def test_saved_values_match_torch():
    def saved(torch):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = torch.tensor([3.0, 4.0])
        return (
            (x * y).grad_fn._saved_self,
            (x * y).grad_fn._saved_other.tolist(),
            (y / x).grad_fn._saved_self.tolist(),
            (x / y).grad_fn._saved_self,
            x.tanh().grad_fn._saved_result.tolist(),
            x.sin().grad_fn._saved_self.tolist(),
        )

    ours, theirs = both(saved)
    assert ours == theirs


def test_a_product_saves_only_what_its_gradients_read():
    # `w * x` with x needing no gradient saves x, not w: w may change in place before the
    # backward pass (an optimizer step), as in torch; x may not.
    w = leaf(1.0, 2.0)
    x = ad.tensor([3.0, 4.0])
    loss = (x @ w) + (w * x).sum() + (w / x).sum()
    with ad.no_grad():
        w.copy_(ad.tensor([5.0, 6.0]))
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * x.numpy() + 1 / x.numpy())
    w.grad = None
    loss = (w * x).sum()
    with ad.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    counts = []
    with saved_tensors_hooks(lambda t: counts.append(1) or t, lambda t: t):
        (w * x).sum().backward()
    assert len(counts) == 1


def test_raw_saved_tensors_and_their_hooks():
    a = leaf(1.0, 2.0)
    y = a * a
    raw = y.grad_fn._raw_saved_self
    assert isinstance(raw, autograd.SavedTensor) and raw.data is a and raw.unpack_hook is None
    raw.register_hooks(lambda t: 2 * t, lambda t: t / 2)
    np.testing.assert_allclose(y.grad_fn._saved_self.detach().numpy(), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="already been set"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="after it has been freed"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match="forbidden"):
        autograd.SavedTensor()


def test_raw_saved_hooks_errors_as_torch():
    a = leaf(1.0, 2.0)
    y = a * a
    raw = y.grad_fn._raw_saved_self
    with pytest.raises(TypeError, match="incompatible function arguments"):
        raw.register_hooks(lambda t: t)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        raw.register_hooks(1, 1)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        raw.register_hooks(lambda t, b: t, lambda t: t)

    def double_in_place(t):
        t *= 2
        return t

    with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
        (a.clone() * a).grad_fn._raw_saved_self.register_hooks(double_in_place, lambda t: t)
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: 1)
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        _ = y.grad_fn._saved_self


def test_raw_saved_hooks_keep_the_graph_of_a_non_leaf():
    a = leaf(1.0, 2.0)
    h = a + 1
    y = h * h
    y.grad_fn._raw_saved_self.register_hooks(lambda t: 2 * t, lambda t: t)
    assert y.grad_fn._saved_self.grad_fn is h.grad_fn
    (g,) = autograd.grad(y.sum(), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * (a.detach().numpy() + 1))
    y = a**3
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    (g,) = autograd.grad(y.sum(), (a,), create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 6 * a.detach().numpy())


def test_saved_result_hooks_and_data():
    a = ad.tensor(2.0, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t) as _:
        b = a**2
    c = b.exp()
    d = c**2
    assert b.grad_fn._raw_saved_self.data is a
    assert (
        c.grad_fn._raw_saved_result.data is not c
        and c.grad_fn._raw_saved_result.unpack_hook is None
    )
    assert d.grad_fn._raw_saved_self.data is c
    e = a.exp()
    e.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: t)
    assert e.grad_fn._saved_result.grad_fn is e.grad_fn
    e.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp(2.0))


def test_pack_hook_modifying_its_input_raises():
    a = leaf(1.0, 2.0)

    def inc(t):
        t += 1
        return t

    with saved_tensors_hooks(inc, lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            a.exp()


# ---------------------------------------------------------------------------------------------
# What a backward pass frees


def test_backward_twice_through_nodes_that_saved_nothing():
    def twice(torch):
        b = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        c = (b + 1).sum() + b.mean() + b.clone().sum()
        c.backward()
        c.backward()
        return b.grad.tolist()

    ours, theirs = both(twice)
    assert ours == theirs
    b = leaf(1.0, 2.0, 3.0)
    for make in (lambda: (b * b).sum(), lambda: b.exp().sum(), lambda: b[[0, 0]].sum()):
        c = make()
        c.backward()
        with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
            c.backward()


def test_backward_twice_through_a_function_that_saved_nothing():
    class Double(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Saving(Double):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

    x = leaf(1.0)
    y = Double.apply(x).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [4.0]
    y = Saving.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        y.backward()


def test_a_large_graph_that_saved_nothing_keeps_no_memory():
    x = ad.tensor(np.ones(1 << 16), requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    node = y.grad_fn.next_functions[0][0]  # AddBackward0: what it keeps is a stand-in
    kept = node.primals[0]
    assert type(node).__name__ == "AddBackward0"
    assert kept.shape == (1 << 16,) and kept.strides == (0,) and not kept.flags.writeable
    y.backward()
    assert x.grad.numpy()[0] == 2.0


def test_gradient_edges_as_roots():
    inp = leaf(1.0).clone()
    out = inp.clone()
    edge = autograd.graph.get_gradient_edge(out)
    autograd.backward(edge)
    del out
    autograd.backward(edge)  # (the edge keeps the node: the clone saved nothing)
    x = leaf(1.0, 2.0)

    def fn():
        tmp = x.sin().cos().sum()
        return tmp.exp(), autograd.graph.get_gradient_edge(tmp)

    out, tmp_edge = fn()
    (g_tmp,) = autograd.grad(out, (tmp_edge,))  # (in two steps)
    (gx,) = autograd.grad(tmp_edge, (x,), grad_outputs=(g_tmp,))
    (want,) = autograd.grad(fn()[0], (x,))
    np.testing.assert_allclose(gx.numpy(), want.numpy())
    vec = autograd.graph.get_gradient_edge(x.sin())
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        autograd.grad(vec, (x,))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        autograd.grad(vec, (x,), grad_outputs=ad.tensor([1.0, 2.0, 3.0]))


# ---------------------------------------------------------------------------------------------
# Version counters and detach


def test_detach_shares_the_version_counter():
    def versions(torch):
        x = torch.tensor(2.0, requires_grad=True)
        z = x.detach()
        before = (x._version, z._version)
        z.zero_()
        return before, (x._version, z._version)

    ours, theirs = both(versions)
    assert ours == theirs == ((0, 0), (1, 1))
    x = ad.tensor(2.0, requires_grad=True)
    y = x**2
    x.detach().zero_()
    with pytest.raises(RuntimeError, match="has been modified by an inplace"):
        y.backward()


def test_data_shares_no_version_counter():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    x.data.mul_(1.0)  # (torch: .data changes go unnoticed)
    assert x._version == 0
    y.backward()


def test_detach_in_place():
    x = leaf(1.0, 2.0)
    y = leaf(3.0, 4.0)
    a = x * 2
    (y + a).sum().backward(retain_graph=True)
    assert a.detach_() is a and not a.requires_grad and a.grad_fn is None and a.is_leaf
    (y + a).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0] and y.grad.tolist() == [2.0, 2.0]
    a = leaf(1.0).clone()
    b = a.sin()
    a.detach_()
    with pytest.raises(RuntimeError, match="saved tensor that has been detached"):
        b.backward()
    a = leaf(1.0).clone()
    b = a.exp()  # (saves its output, not a)
    a.detach_()
    b.backward()


def test_output_nr():
    x = leaf(*range(10))

    class Halves(autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v[:5], v[5:]

        @staticmethod
        def backward(ctx, *g):
            return ad.cat(g)

    a, b = Halves.apply(x)
    assert (a.output_nr, b.output_nr, x.output_nr, (x * 2).output_nr) == (0, 1, 0, 0)


# ---------------------------------------------------------------------------------------------
# Hooks and callbacks


def test_queue_callback_runs_at_the_end_of_the_pass():
    order = []
    engine = autograd.Variable._execution_engine

    class Tap(autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v

        @staticmethod
        def backward(ctx, g):
            order.append("node")
            engine.queue_callback(lambda: order.append("first") or engine.queue_callback(last))
            return g

    def last():
        order.append("last")

    x = leaf(1.0)
    (Tap.apply(x) * 2).sum().backward()
    assert order == ["node", "first", "last"]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward"):
        engine.queue_callback(last)


def test_callbacks_belong_to_their_own_pass_when_reentrant():
    counter = {"outer": 0, "inner": 0}
    engine = autograd.Variable._execution_engine

    class Inner(autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v

        @staticmethod
        def backward(ctx, g):
            engine.queue_callback(lambda: counter.__setitem__("inner", counter["inner"] + 1))
            return g

    class Outer(autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v

        @staticmethod
        def backward(ctx, g):
            engine.queue_callback(lambda: counter.__setitem__("outer", counter["outer"] + 1))
            t = g.detach().requires_grad_()
            with ad.enable_grad():
                Inner.apply(t).sum().backward()
            assert counter == {"outer": 0, "inner": 1}
            return g

    Outer.apply(leaf(1.0, 2.0)).sum().backward()
    assert counter == {"outer": 1, "inner": 1}


def test_post_accumulate_grad_hook_must_return_none():
    x = leaf(1.0, 2.0)
    x.register_post_accumulate_grad_hook(lambda t: t.grad)
    with pytest.raises(RuntimeError, match="hooks should return None"):
        x.sum().backward()


def test_legacy_backward_hooks_dict():
    x = leaf(1.0, 2.0)
    seen = []
    x._backward_hooks = {"a": lambda g: seen.append(g.tolist())}
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and list(x._backward_hooks) == ["a"]
    c = ad.tensor([1.0])
    c._backward_hooks = {"never": lambda g: 1 / 0}  # (c needs no gradient: never called)
    (c * x).sum().backward()
    with pytest.raises(RuntimeError):
        del x._backward_hooks


def test_saved_tensors_hooks_unbalanced_exit_raises_clearly():
    hooks = saved_tensors_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match="exiting a context that is not active"):
        hooks.__exit__(None, None, None)
    with hooks:
        pass
    with pytest.raises(RuntimeError, match="not active"):
        hooks.__exit__(None, None, None)


def test_hooks_pushed_or_popped_during_backward_do_not_outlive_it():
    # As torch's graph task: a backward pass runs with its own copy of the hooks stack.
    def unpack(t):
        ctx_1.__exit__()
        return t

    ctx_1 = saved_tensors_hooks(lambda t: t, unpack)
    ctx_2 = saved_tensors_hooks(lambda t: t, lambda t: t)
    for _ in range(3):
        with ctx_2:
            ctx_1.__enter__()
            leaf(1.0, 2.0).sin().sum().backward()
    for _ in range(3):
        ctx_1.__exit__()
    with pytest.raises(RuntimeError, match="not active"):
        ctx_1.__exit__()

    def scope():
        def unpack2(t):
            weak().__enter__()
            return t

        hooks = saved_tensors_hooks(lambda t: t, unpack2)
        weak = weakref.ref(hooks)
        with hooks:
            leaf(1.0).sin().sum().backward()
        return weakref.ref(unpack2)

    assert scope()() is None


# ---------------------------------------------------------------------------------------------
# Dual tensors (forward AD) updated in place


def test_current_level_reads_as_torch_module_state():
    assert fwAD._current_level == -1
    with fwAD.dual_level():
        assert fwAD._current_level == 0
    assert fwAD._current_level == -1
    assert fwAD._is_fwd_grad_enabled()
    with fwAD._set_fwd_grad_enabled(False):
        assert not fwAD._is_fwd_grad_enabled()
    assert fwAD._is_fwd_grad_enabled()
    with pytest.raises(AttributeError):
        _ = fwAD._no_such_state


def test_in_place_on_a_dual_tensor_and_its_view():
    def run(torch):
        fw = torch.autograd.forward_ad
        foo = torch.tensor([1.0, 2.0])
        bar = torch.tensor([1.0, 1.0])
        with fw.dual_level():
            dual = fw.make_dual(foo, bar)
            view = dual.narrow(0, 0, 1)
            view *= 2
            p, t = fw.unpack_dual(dual)
            first = (p.tolist(), t.tolist(), fw.unpack_dual(view).tangent.tolist())
            dual.mul_(3)
            p, t = fw.unpack_dual(dual)
            return first, (p.tolist(), t.tolist()), foo.tolist()

    ours, theirs = both(run)
    assert ours == theirs == (([2.0, 2.0], [2.0, 1.0], [2.0]), ([6.0, 6.0], [6.0, 3.0]), [6.0, 6.0])


def test_in_place_of_a_dual_value_into_a_plain_tensor_raises():
    with fwAD.dual_level():
        dual = fwAD.make_dual(ad.tensor([1.0, 2.0]), ad.tensor([1.0, 1.0]))
        baz = ad.tensor([0.0, 0.0])
        with pytest.raises(RuntimeError, match="dropping the derivative"):
            baz += dual
        assert baz.tolist() == [0.0, 0.0]  # (unchanged)


def test_dual_tensors_print_their_tangent_and_unpack_to_new_tensors():
    with fwAD.dual_level():
        foo = ad.tensor([1.0, 2.0])
        dual = fwAD.make_dual(foo, ad.tensor([3.0, 4.0]))
        assert "tangent=" in str(dual) and "tangent=" not in str(foo)
        p = fwAD.unpack_dual(dual).primal
        assert p is not fwAD.unpack_dual(dual).primal and p.tolist() == [1.0, 2.0]
        foo.add_(1.0)
        assert p._version == foo._version == 1  # (an alias: one version counter)
        d = dual.clone()
        d.detach_()
        assert fwAD.unpack_dual(d * 2).tangent is None


def test_grad_mode_decorating_a_class_warns_as_torch():
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):

        @ad.no_grad()
        class Foo:
            def __init__(self):
                assert not ad.is_grad_enabled()

            def method(self):
                return ad.is_grad_enabled()

    assert Foo().method()
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @ad.no_grad()
        def f():
            return ad.is_grad_enabled()

        assert f() is False


def test_force_original_view_tracking_mode():
    assert not autograd.is_view_replay_enabled()
    with autograd._force_original_view_tracking(True):
        assert autograd.is_view_replay_enabled()
    autograd._force_original_view_tracking(True)
    assert autograd.is_view_replay_enabled()
    autograd._force_original_view_tracking(False)
    assert not autograd.is_view_replay_enabled()
