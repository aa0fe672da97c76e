"""Module hooks: forward pre-hooks and hooks (args, kwargs, prepend, always_call, removal),
full backward hooks and backward pre-hooks (grad_input / grad_output as torch passes them,
replacing them, double backward, no cycle kept alive), the legacy backward hook."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import autodiff as ad
from autodiff import nn


class _Scale(nn.Module):
    def forward(self, x, y=None, scale=1.0):
        out = x * 2.0 * scale
        return out if y is None else (out, x * y)


def test_forward_hooks_order_arguments_and_removal():
    m = _Scale()
    calls = []

    def pre(mod, args):
        calls.append("pre")
        return (args[0] + 1.0,)

    def pre_kwargs(mod, args, kwargs):
        calls.append("pre_kwargs")
        return args, {**kwargs, "scale": 10.0}

    def post(mod, args, out):
        calls.append("post")
        return out + 0.5

    h1 = m.register_forward_pre_hook(pre)
    m.register_forward_pre_hook(pre_kwargs, with_kwargs=True)
    m.register_forward_hook(
        lambda mod, a, k, out: calls.append(("kw", sorted(k))), with_kwargs=True
    )
    m.register_forward_hook(post, prepend=True)
    out = m(ad.tensor([1.0]))
    assert calls == ["pre", "pre_kwargs", "post", ("kw", ["scale"])]
    np.testing.assert_allclose(out.numpy(), [(1.0 + 1.0) * 2.0 * 10.0 + 0.5])
    h1.remove()
    h1.remove()  # (again: nothing)
    calls.clear()
    with m.register_forward_pre_hook(lambda mod, args: calls.append("ctx")):
        m(ad.tensor([1.0]))
    m(ad.tensor([1.0]))
    assert calls.count("ctx") == 1 and calls.count("pre") == 0
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        bad = _Scale()
        bad.register_forward_pre_hook(lambda mod, a, k: 3, with_kwargs=True)
        bad(ad.tensor([1.0]))


def test_forward_hook_always_call_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    m.register_forward_hook(lambda mod, args, out: seen.append("never"))
    with pytest.raises(ValueError, match="boom"):
        m(ad.ones(1))
    assert seen == [None]


def _hook_record(torch):
    """A module with two tensor inputs (one not requiring grad), a non-tensor one, and two
    outputs; the grads its full backward (pre-)hooks see and the gradients that result."""
    nn_ = torch.nn

    class Two(nn_.Module):
        def forward(self, x, c, k):
            return x * c * k, (x * x).sum()

    m = Two()
    seen = {}

    def pre_hook(mod, grad_output):
        seen["pre"] = [None if g is None else g.detach().numpy().copy() for g in grad_output]
        return (grad_output[0] * 3.0, grad_output[1])

    def hook(mod, grad_input, grad_output):
        seen["in"] = [None if g is None else g.detach().numpy().copy() for g in grad_input]
        seen["out"] = [None if g is None else g.detach().numpy().copy() for g in grad_output]
        return (grad_input[0] + 1.0, None, None)

    m.register_full_backward_pre_hook(pre_hook)
    m.register_full_backward_hook(hook)
    x = torch.tensor(np.array([1.0, 2.0]), requires_grad=True)
    c = torch.tensor(np.array([3.0, 4.0]))
    a, s = m(x, c, 2.0)
    (a.sum() + 10.0 * s).backward()
    seen["x.grad"] = x.grad.numpy()
    seen["names"] = (a.grad_fn.name(), s.grad_fn.name())
    return seen


def test_full_backward_hooks_match_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _hook_record(ad), _hook_record(torch)
    assert (
        ours["names"]
        == theirs["names"]
        == (
            "BackwardHookFunctionBackward",
            "BackwardHookFunctionBackward",
        )
    )
    for key in ("pre", "out", "in"):
        assert len(ours[key]) == len(theirs[key])
        for a, b in zip(ours[key], theirs[key]):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(ours["x.grad"], theirs["x.grad"])


def test_full_backward_hook_no_input_requires_grad_and_double_backward():
    w = ad.tensor([2.0], requires_grad=True)

    class M(nn.Module):
        def forward(self, x):
            return x * w

    m = M()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go[0].numpy())))
    m(ad.tensor([3.0])).sum().backward()
    assert seen[0][0] == (None,)
    np.testing.assert_allclose(seen[0][1], [1.0])
    with pytest.raises(RuntimeError, match="where no input requires gradient should always"):
        bad = M()
        bad.register_full_backward_hook(lambda mod, gi, go: (ad.ones(1),))
        bad(ad.tensor([3.0])).sum().backward()
    # double backward: the hooks run once, for the first backward only
    counter = [0]
    mse = nn.MSELoss()
    mse.register_full_backward_hook(lambda mod, gi, go: counter.__setitem__(0, counter[0] + 1))
    x = ad.tensor([0.3], requires_grad=True)
    (gx,) = ad.autograd.grad(mse(x, ad.tensor([0.1])), x, create_graph=True)
    assert counter[0] == 1
    (ggx,) = ad.autograd.grad(gx, x)
    assert counter[0] == 1
    np.testing.assert_allclose(ggx.numpy(), [2.0])


def test_full_backward_hook_keeps_no_cycle_alive():
    class Marker:
        pass

    def run():
        t = ad.randn(4, requires_grad=True)
        a = ad.tensor(1.0, requires_grad=True)

        class M(nn.Module):
            def forward(self, x):
                return x**2 * a**2

        m = M()
        m.register_full_backward_hook(lambda *args: None)
        out = m(t)
        marker = Marker()
        out.grad_fn.metadata["marker"] = marker
        ad.autograd.grad(out.exp().sum(), (t, a), create_graph=True)
        return weakref.ref(marker)

    ref = run()
    gc.collect()
    assert ref() is None


def test_backward_hook_kinds_do_not_mix_and_legacy_hook_runs():
    m = nn.Linear(2, 1)
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"):
        m.register_backward_hook(lambda *a: None)
    legacy = nn.Linear(2, 1)
    seen = []
    handle = legacy.register_backward_hook(lambda mod, gi, go: seen.append(len(go)))
    legacy(ad.ones(3, 2, requires_grad=True)).sum().backward()
    assert seen == [1]
    handle.remove()
    legacy(ad.ones(3, 2, requires_grad=True)).sum().backward()
    assert seen == [1]
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"):
        legacy.register_full_backward_hook(lambda *a: None)


def _double_output(module, args, out):
    return out * 2.0


def test_module_accessors_copies_and_data_parallel():
    import copy
    import pickle

    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert m.get_parameter("0.weight") is m[0].weight
    assert m.get_buffer("1.running_mean") is m[1].running_mean
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        m.get_buffer("1.weight")
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        m.get_parameter("1.running_mean")
    m.set_submodule("1", nn.Identity())
    assert isinstance(m[1], nn.Identity)
    with pytest.raises(RuntimeError, match="CPU only"):
        m.cuda()
    # hooks travel with copies and pickles (a picklable hook)
    m.register_forward_hook(_double_output)
    x = ad.ones(3, 2)
    expected = m(x).detach().numpy()
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        np.testing.assert_allclose(clone(x).detach().numpy(), expected)
    dp = nn.DataParallel(m, device_ids=[0])
    assert list(dp.state_dict()) == ["module.0.weight", "module.0.bias"]
    np.testing.assert_allclose(dp(x).detach().numpy(), expected)
