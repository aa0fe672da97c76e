"""What a hook may ask of the backward pass running (torch._C's `_current_graph_task_id`,
`_current_graph_task_execution_order`, `_will_engine_execute_node`, `_current_autograd_node`),
hooks on gradients no one computed, deep reentrant passes, anomaly mode's reports, saved
tensors and version counters: each against real torch where it is installed."""

import re
import warnings

import numpy as np
import pytest
from torch_oracle import both

import autodiff as ad
from autodiff.autograd import Function


def _names(nodes):
    return [n.name() for n in nodes]


# ---- the pass running ----------------------------------------------------------------------


def _predicted_orders(torch):
    """The execution orders torch._C predicts, from a hook, for a few graphs."""
    results = []

    def run(build, call):
        seen = []
        out, inputs = build()
        out.register_hook(
            lambda g: seen.append(_names(torch._C._current_graph_task_execution_order()))
        )
        with torch.autograd.set_multithreading_enabled(False):
            call(out, inputs)
        results.append(seen[0])

    def chain():
        return torch.tensor(1.0, requires_grad=True).clone().sin().exp(), None

    def branches():
        a = torch.tensor(1.0, requires_grad=True)
        b = torch.tensor(2.0, requires_grad=True)
        return b.sin() * a.cos(), (a, b)

    def shared_leaf():
        a = torch.tensor(1.0, requires_grad=True)
        return a.sin() * a.cos(), (a,)

    def subgraph():
        a = torch.tensor(1.0, requires_grad=True)
        b = torch.tensor(1.0, requires_grad=True)
        return (a * b).sin(), (a,)

    run(chain, lambda out, _: out.backward())
    run(branches, lambda out, _: out.backward())
    run(shared_leaf, lambda out, _: out.backward())
    run(subgraph, lambda out, inputs: torch.autograd.grad(out, inputs))
    run(branches, lambda out, inputs: out.backward(inputs=inputs[:1]))

    a = torch.tensor(1.0, requires_grad=True)
    b = a * 2
    out, out2, out3 = b.sin(), b.cos(), b.cos()
    seen = []
    out3.register_hook(
        lambda g: seen.append(_names(torch._C._current_graph_task_execution_order()))
    )
    with torch.autograd.set_multithreading_enabled(False):
        torch.autograd.grad((out, out3, out2), inputs=(a,))
    results.append(seen[0])
    return results


def test_current_graph_task_execution_order_matches_torch():
    ours, theirs = both(_predicted_orders)
    assert ours == theirs


def test_execution_order_is_the_order_nodes_run():
    # The prediction, and the order the tensor hooks of the same graph run in.
    a = ad.tensor(1.0, requires_grad=True)
    b = ad.tensor(2.0, requires_grad=True)
    c, d = b.sin(), a.cos()
    out = c * d
    ran, predicted = [], []
    for name, t in (("a", a), ("b", b), ("c", c), ("d", d), ("out", out)):
        t.register_hook(lambda g, name=name: ran.append(name))
    out.register_hook(lambda g: predicted.extend(ad._C._current_graph_task_execution_order()))
    with ad.autograd.set_multithreading_enabled(False):
        out.backward()
    grad_fn = {
        "a": a.clone().grad_fn.next_functions[0][0],
        "b": b.clone().grad_fn.next_functions[0][0],
        "c": c.grad_fn,
        "d": d.grad_fn,
        "out": out.grad_fn,
    }
    assert predicted == [grad_fn[name] for name in ran]


def test_execution_order_errors_match_torch():
    def errors(torch):
        found = []
        try:
            torch._C._current_graph_task_execution_order()
        except RuntimeError as e:
            found.append(str(e))
        t = torch.tensor(1.0, requires_grad=True).exp()
        t.register_hook(lambda g: torch._C._current_graph_task_execution_order())
        try:
            t.backward()  # (multithreading on)
        except RuntimeError as e:
            found.append(str(e).split(",")[0])
        return found

    ours, theirs = both(errors)
    assert ours == theirs


def test_current_graph_task_id_matches_torch():
    def ids(torch):
        seen = []
        t = torch.tensor(1.0, requires_grad=True).clone()
        t.register_hook(lambda g: seen.append(torch._C._current_graph_task_id()))
        for _ in range(3):
            t.backward(retain_graph=True)
        return [s - seen[0] for s in seen], torch._C._current_graph_task_id()

    ours, theirs = both(ids)
    assert ours == theirs == ([0, 1, 2], -1)


def _will_execute(torch):
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def node_of(t):
        return t.clone().grad_fn.next_functions[0][0] if t.grad_fn is None else t.grad_fn

    a = torch.randn(2, 3, requires_grad=True)
    a2 = torch.randn(2, 3, requires_grad=True)
    b = a * a2
    b2 = b.cos()
    c = Twice.apply(b)
    nodes = [node_of(t) for t in (a, a2, b, b2, c)]
    seen = []
    c.register_hook(lambda g: seen.append([torch._C._will_engine_execute_node(n) for n in nodes]))
    out = c.sum()
    torch.autograd.backward(out, inputs=(a, b), retain_graph=True)
    torch.autograd.backward(out, retain_graph=True)
    errors = []
    try:
        torch.autograd.grad(out, (a,))  # (the hook asks about a's accumulator: not supported)
    except RuntimeError as e:
        errors.append(str(e))
    for arg in (out.grad_fn, out, 3):
        try:
            torch._C._will_engine_execute_node(arg)
        except RuntimeError as e:
            errors.append(str(e))
    return seen, errors


def test_will_engine_execute_node_matches_torch():
    ours, theirs = both(_will_execute)
    assert ours == theirs
    assert ours[0][0] == [True, False, True, False, True]


def _current_nodes(torch):
    seen = []
    x = torch.tensor(1.0, requires_grad=True)
    y = x.exp()
    z = y.sin()
    y.grad_fn.register_prehook(lambda g: seen.append(torch._C._current_autograd_node().name()))
    y.grad_fn.register_hook(lambda gi, go: seen.append(torch._C._current_autograd_node().name()))
    z.register_hook(lambda g: seen.append(torch._C._current_autograd_node().name()))
    z.backward()
    seen.append(torch._C._current_autograd_node())
    return seen


def test_current_autograd_node_matches_torch():
    ours, theirs = both(_current_nodes)
    assert ours == theirs == ["SinBackward0", "ExpBackward0", "ExpBackward0", None]


def _post_hook_from_unpack_hook(torch):
    seen = []

    def unpack(t):
        def hook(grad_inputs, grad_outputs):
            seen.append(grad_outputs)
            return tuple(g / 2 for g in grad_inputs)

        torch._C._current_autograd_node().register_hook(hook)
        return t

    a = torch.tensor([0.5, 1.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        a.exp().sum().backward()
    return seen, a.grad.tolist()


def test_post_hook_registered_by_an_unpack_hook_runs_as_torch():
    ours, theirs = both(_post_hook_from_unpack_hook)
    assert ours[0] == theirs[0] == [()]
    np.testing.assert_allclose(ours[1], theirs[1])


def test_multithreading_mode():
    assert ad._C._is_multithreading_enabled()
    with ad.autograd.set_multithreading_enabled(False):
        assert not ad._C._is_multithreading_enabled()
    assert ad._C._is_multithreading_enabled()


# ---- hooks on gradients no one computed ----------------------------------------------------


def _hooks_on_undefined(torch):
    seen = []
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    parts = x.unbind()
    parts[0].register_hook(lambda g: seen.append(("part0", g)))
    parts[1].backward()

    class First(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, None

    u = torch.tensor([1.0], requires_grad=True)
    w = torch.tensor([2.0], requires_grad=True)
    w.register_hook(lambda g: seen.append(("leaf", g)))
    v = w * 2
    v.register_hook(lambda g: seen.append(("nonleaf", g)))
    v.grad_fn.register_prehook(lambda g: seen.append(("prehook", g)))
    First.apply(u, v).sum().backward()
    errors = []
    y = torch.tensor([1.0, 2.0], requires_grad=True)
    q = y.unbind()
    q[0].register_hook(lambda g: torch.ones(()))
    try:
        q[1].backward()
    except RuntimeError as e:
        errors.append(str(e))
    return seen, w.grad, errors


def test_hooks_see_none_where_no_gradient_reached_as_torch():
    ours, theirs = both(_hooks_on_undefined)
    assert ours == theirs
    assert ours[0] == [
        ("part0", None),
        ("nonleaf", None),
        ("prehook", (None,)),
        ("leaf", None),
    ]
    assert ours[2] == ["can't replace a None gradient with a non-None value"]


# ---- reentrant passes nested deeper than the stack allows -----------------------------------


class _DeepReentrant(Function):
    @staticmethod
    def forward(ctx, x):
        with ad.enable_grad():
            ctx.x = ad.autograd.Variable(x.detach(), requires_grad=True) - 1
        return ctx.x.detach()

    @staticmethod
    def backward(ctx, g):
        if ctx.x < 0:
            return g
        with ad.enable_grad():
            _DeepReentrant.apply(ctx.x).sum().backward()
        return g


def test_deep_reentrant_backward_needs_no_deep_stack():
    v = ad.tensor(600.0, requires_grad=True)
    _DeepReentrant.apply(v).sum().backward()
    assert v.grad.item() == 1.0
    # The passes ran on fresh stacks, then handed this thread its state back.
    assert ad.is_grad_enabled()
    assert ad._C._current_graph_task_id() == -1
    assert ad.autograd._state.autograd_state().passes == []


def test_deep_reentrant_error_reaches_the_caller():
    class Fails(Function):
        depth = 0

        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            Fails.depth += 1
            if Fails.depth > 300:
                raise ValueError("deep enough")
            with ad.enable_grad():
                Fails.apply(ad.ones(1, requires_grad=True)).sum().backward()
            return g

    with pytest.raises(ValueError, match="deep enough"):
        Fails.apply(ad.ones(1, requires_grad=True)).sum().backward()
    assert ad.autograd._state.autograd_state().passes == []


# ---- autograd.grad and backward options ------------------------------------------------------


def _create_graph_warnings(torch):
    b = torch.tensor([1.0, 2.0], requires_grad=True)
    c = b * b
    with warnings.catch_warnings(record=True) as on_backward:
        warnings.simplefilter("always")
        c.backward(torch.ones_like(c), create_graph=True)
    with warnings.catch_warnings(record=True) as on_grad:
        warnings.simplefilter("always")
        torch.autograd.grad(c, b, torch.ones_like(c), create_graph=True)

    def mentions(ws):
        return any("Using backward() with create_graph=True" in str(w.message) for w in ws)

    return mentions(on_backward), mentions(on_grad)


def test_backward_create_graph_warns_as_torch():
    ours, theirs = both(_create_graph_warnings)
    assert ours == theirs == (True, False)


def _materialized(torch):
    x = torch.tensor(0.5, requires_grad=True)
    a = torch.tensor(1.0, requires_grad=True)
    (dydx,) = torch.autograd.grad(x * a, x, create_graph=True)
    (d2,) = torch.autograd.grad(dydx, x, create_graph=True, materialize_grads=True)
    (d3,) = torch.autograd.grad(d2, x, materialize_grads=True)
    u = torch.rand(2, requires_grad=True).clone()
    v = torch.rand(2, requires_grad=True).clone()
    edge = torch.autograd.graph.get_gradient_edge(v)
    errors = []
    try:
        torch.autograd.grad(u.sum(), (u, edge), allow_unused=True, materialize_grads=True)
    except RuntimeError as e:
        errors.append(str(e))
    by_name = torch.autograd.grad((u * 3).sum(), {"u": u, "v": v}, allow_unused=True)
    return (
        (d2.item(), d2.requires_grad),
        (d3.item(), d3.requires_grad),
        errors,
        sorted(by_name),
        by_name["u"].tolist(),
        by_name["v"],
    )


def test_materialize_grads_and_dict_inputs_as_torch():
    ours, theirs = both(_materialized)
    assert ours == theirs


# ---- anomaly mode -------------------------------------------------------------------------


def _anomaly_reports(torch):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            with torch.autograd.detect_anomaly():
                a = torch.randn(5, requires_grad=True)
                d1 = a + 1
                d2 = d1**2
                d1 += 1
                torch.autograd.grad(d2.sum(), a)
        except RuntimeError as e:
            error = str(e)
    messages = [str(x.message).split("\n")[0] for x in w]
    return (
        [m.split(" Traceback")[0] for m in messages if "Anomaly" in m or "Error detected" in m],
        error.split("Hint: ")[1],
    )


def test_anomaly_reports_the_failing_nodes_forward_call_as_torch():
    ours, theirs = both(_anomaly_reports)
    assert ours == theirs
    assert ours[0][1] == "Error detected in PowBackward0."


def _induced_nan(torch):
    class Inner(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    class Outer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Inner.apply(g.expand(x.shape) * x)

    reports = []
    for anomaly_in_forward in (False, True):
        inp = torch.rand(3, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                if anomaly_in_forward:
                    with torch.autograd.detect_anomaly():
                        (g,) = torch.autograd.grad(Outer.apply(inp), inp, create_graph=True)
                        g.sum().backward()
                else:
                    (g,) = torch.autograd.grad(Outer.apply(inp), inp, create_graph=True)
                    with torch.autograd.detect_anomaly():
                        g.sum().backward()
            except RuntimeError as e:
                reports.append(str(e))
        for x in w:
            text = str(x.message)
            if "Error detected" in text or "induced" in text:
                first = text.strip().split("\n")[0]
                reports.append(re.sub(r" \(Triggered internally.*", "", first))
    return reports


def test_anomaly_reports_the_node_that_induced_a_failing_node_as_torch():
    ours, theirs = both(_induced_nan)
    assert ours == theirs
    assert any("No forward pass information" in r for r in ours)
    assert any("Previous calculation was induced by OuterBackward" in r for r in ours)


# ---- saved tensors, version counters, cached tensors ----------------------------------------


def _unsafe_versions(torch):
    x = torch.ones(2, requires_grad=True).clone()
    x.add_(1)
    x.add_(2)
    with torch.autograd._unsafe_preserve_version_counter(x):
        x.mul_(2)
    kept = x._version
    torch._C._autograd._unsafe_set_version_counter((x,), (0,))
    errors = []
    for versions in ((-1,), (1, 2)):
        try:
            torch._C._autograd._unsafe_set_version_counter((x,), versions)
        except RuntimeError as e:
            errors.append(str(e))
    return kept, x._version, errors


def test_unsafe_version_counter_as_torch():
    ours, theirs = both(_unsafe_versions)
    assert ours == theirs == (2, 0, ours[2])
    assert len(ours[2]) == 2


def _cached(torch):
    torch._C._set_cached_tensors_enabled(True)
    try:
        x = torch.rand(4)
        torch._C._add_cached_tensor(x)
        first = torch._C._is_cached_tensor(x), torch._C._is_cached_tensor(torch.rand(4))
        torch._C._add_cached_tensor(x)
        torch._C._remove_cached_tensor(x)
        second = torch._C._is_cached_tensor(x)
        torch._C._add_cached_tensor(x)
    finally:
        torch._C._set_cached_tensors_enabled(False)
    return first, second, torch._C._is_cached_tensor(x)


def test_cached_tensors_as_torch():
    ours, theirs = both(_cached)
    assert ours == theirs == ((True, False), False, False)
    with pytest.raises(RuntimeError):
        ad._C._add_cached_tensor(ad.zeros(1))


def _made_saved_tensor(torch):
    counts = [0, 0]

    def pack(x):
        counts[0] += 1
        return x

    def unpack(x):
        counts[1] += 1
        return x

    a = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        saved = torch._C._autograd._make_saved_tensor(a, is_output=False)
        after_make = list(counts)
        unpacked = saved.unpack()
        saved.unpack()
    plain = torch._C._autograd._make_saved_tensor(a, is_output=False)
    same = plain.unpack() is a
    with torch.no_grad():
        a.add_(1)
    try:
        plain.unpack()
        error = None
    except RuntimeError as e:
        error = str(e).split(":")[0]
    return after_make, list(counts), unpacked.requires_grad, same, error


def test_make_saved_tensor_as_torch():
    ours, theirs = both(_made_saved_tensor)
    assert ours == theirs
    assert ours[:2] == ([1, 0], [1, 2])


def _double_backward_with_hooks(torch):
    factors = []
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    s = (a**3).sum()
    with torch.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        (g,) = torch.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
    factors.append((a.grad / (6 * a)).tolist())
    with torch.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        b = torch.tensor([1.0, 2.0], requires_grad=True)
        s = (b**3).sum()
        (g,) = torch.autograd.grad(s, (b,), create_graph=True)
        g.sum().backward()
    factors.append((b.grad / (6 * b)).tolist())
    return factors


def test_saved_tensor_hooks_in_a_recorded_backward_pass_as_torch():
    ours, theirs = both(_double_backward_with_hooks)
    assert ours == theirs == [[4.0, 4.0], [8.0, 8.0]]


def _saved_arguments(torch):
    a = torch.ones(1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    stacked = torch.stack([a, b], dim=0).grad_fn
    summed = torch.ones(2, 3, requires_grad=True).sum(1).grad_fn
    product = (a * b).grad_fn
    return (
        (stacked._saved_dim, type(stacked._saved_dim).__name__),
        (summed._saved_dim, summed._saved_keepdim),
        hasattr(product, "_saved_dim"),
    )


def test_saved_argument_bindings_as_torch():
    ours, theirs = both(_saved_arguments)
    assert ours == theirs


# ---- grad_dtype (the leaf's gradient dtype, kept by its accumulator) -------------------------


def test_grad_dtype_casts_accumulated_gradients():
    from autodiff.autograd._grad_dtype import (
        check_grad_assignment,
        get_grad_dtype,
        set_grad_dtype,
    )

    x = ad.tensor([1.0, 2.0], dtype=ad.float32, requires_grad=True)
    assert get_grad_dtype(x) == ad.float32
    set_grad_dtype(x, ad.float16)
    (x * 2).sum().backward()
    assert x.grad.dtype == np.float16
    (x * 2).sum().backward()
    assert x.grad.dtype == np.float16 and x.grad.tolist() == [4.0, 4.0]
    with pytest.raises(RuntimeError, match="Cannot set grad_dtype to 'Float' because"):
        set_grad_dtype(x, ad.float32)
    with pytest.raises(RuntimeError, match="only be accessed on leaf tensors"):
        get_grad_dtype(x * 2)
    with pytest.raises(RuntimeError, match="must be a torch.dtype or None"):
        set_grad_dtype(x, 3)
    y = ad.tensor([1.0], dtype=ad.float32, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="with dtype 'double' to a tensor with grad_dtype 'Float'"
    ):
        check_grad_assignment(y, ad.tensor([1.0], dtype=ad.float64))
    set_grad_dtype(y, None)
    assert get_grad_dtype(y) is None
    check_grad_assignment(y, ad.tensor([1.0], dtype=ad.float64))
