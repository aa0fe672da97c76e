"""Behaviours PyTorch's own autograd tests rely on (issue 27), tested in our words.

Each group is a torch behaviour the torch face follows: torch's numeric constants and device
namespaces, legacy Tensor constructors and methods (`new`, `bernoulli`, `split_with_sizes`,
`volatile`), the `out=` argument, functions torch gives no derivative, and the private
`torch._C` names autodiff maps. Where real PyTorch is installed, values are compared with it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import autodiff as torch
import autodiff.autograd.forward_ad as fwAD

# ---- constants and device namespaces ----


def test_constants_are_the_floats():
    assert torch.inf == math.inf and -torch.inf == -math.inf
    assert math.isnan(torch.nan)
    assert torch.e == math.e and torch.pi == math.pi


def test_device_queries_answer_as_a_machine_without_the_device():
    for ns in (torch.cuda, torch.mps, torch.xpu):
        assert ns.is_available() is False
        assert ns.device_count() == 0
        ns.manual_seed(0)  # nothing to seed, as torch without the device
    for backend in (torch.backends.mps, torch.backends.cudnn, torch.backends.mkldnn):
        assert backend.is_available() is False
    # the usual device-selection idiom picks the CPU, and tensors can be made there
    device = "cuda" if torch.cuda.is_available() else "cpu"
    assert torch.ones(2, device=device).device == torch.device("cpu")


def test_device_only_calls_raise_and_flags_can_be_set():
    with pytest.raises(RuntimeError, match="not available"):
        torch.cuda.current_device()
    torch.backends.cudnn.deterministic = True  # (accepted; nothing changes)
    try:
        assert torch.backends.cudnn.deterministic is True
    finally:
        torch.backends.cudnn.deterministic = False


# ---- legacy constructors and methods ----


def test_new_makes_tensors_of_the_same_dtype():
    x = torch.ones(3, dtype=torch.float32)
    by_sizes = x.new(2, 4)
    assert by_sizes.shape == (2, 4) and by_sizes.dtype == np.float32
    assert x.new(torch.Size([5])).shape == (5,)
    data = x.new([1, 2])
    assert data.tolist() == [1.0, 2.0] and data.dtype == np.float32
    assert x.new().shape == (0,)
    assert x.new(2, requires_grad=True).requires_grad
    assert x.new(2, dtype=torch.int64).dtype == np.int64
    with pytest.raises(TypeError):
        x.new(2, [3])


def test_bernoulli_method_draws_zeros_and_ones_with_the_given_probabilities():
    assert torch.zeros(4).bernoulli().tolist() == [0.0] * 4
    assert torch.ones(4).bernoulli().tolist() == [1.0] * 4
    torch.manual_seed(0)
    draws = torch.full((1000,), 0.25).bernoulli()
    assert set(np.unique(draws.numpy()).tolist()) <= {0.0, 1.0}
    assert 0.15 < float(draws.mean()) < 0.35


def test_split_with_sizes_splits_and_differentiates():
    x = torch.arange(6.0, requires_grad=True)
    a, b = x.split_with_sizes([2, 4])
    assert a.tolist() == [0.0, 1.0] and b.tolist() == [2.0, 3.0, 4.0, 5.0]
    (a.sum() * 2 + b.sum() * 3).backward()
    assert x.grad.tolist() == [2.0, 2.0, 3.0, 3.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match="sum exactly to 6"):
        x.split_with_sizes([2, 3])
    assert [p.shape for p in torch.split_with_sizes(torch.ones(2, 5), [1, 4], dim=1)] == [
        (2, 1),
        (2, 4),
    ]


def test_volatile_is_false_with_a_warning():
    x = torch.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert x.volatile is False
    assert any("volatile" in str(w.message) for w in caught)


# ---- out= ----


def test_out_receives_the_result():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    out = torch.zeros(2)
    version = out._version
    for fn, expected in (
        (torch.add, [4.0, 6.0]),
        (torch.sub, [-2.0, -2.0]),
        (torch.mul, [3.0, 8.0]),
        (torch.div, [1 / 3, 0.5]),
    ):
        assert fn(a, b, out=out) is out
        np.testing.assert_allclose(out.numpy(), expected)
    assert out._version > version
    assert torch.add(a, b, alpha=2, out=out) is out and out.tolist() == [7.0, 10.0]
    ints = torch.zeros(2, dtype=torch.int64)
    torch.div(torch.tensor([7, 8]), 2, rounding_mode="floor", out=ints)
    assert ints.tolist() == [3, 4]


def test_out_refuses_what_it_cannot_record_or_hold():
    a = torch.ones(2, requires_grad=True)
    out = torch.zeros(2)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.mul(a, a, out=out)
    with torch.no_grad():  # (nothing to record: fine, as in torch)
        assert torch.mul(a, a, out=out) is out
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.add(torch.ones(2), 1.0, out=torch.zeros(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.add(torch.ones(2), 0.5, out=torch.zeros(2, dtype=torch.int64))
    with fwAD.dual_level():
        dual = fwAD.make_dual(torch.ones(2), torch.ones(2))
        with pytest.raises(RuntimeError, match="out= function"):
            torch.add(dual, 1.0, out=torch.zeros(2))
        with pytest.raises(RuntimeError, match="out= function"):
            torch.add(torch.ones(2), 1.0, out=dual)


def test_out_of_another_shape_is_resized():
    empty = torch.zeros(0)
    assert torch.add(torch.ones(3), 1.0, out=empty).tolist() == [2.0, 2.0, 2.0]
    with pytest.warns(UserWarning, match="was resized"):
        out = torch.add(torch.ones(2), 1.0, out=torch.zeros(5))
    assert out.shape == (2,)


def test_out_matches_pytorch():
    real = pytest.importorskip("torch")
    a, b = np.array([1.5, -2.0, 3.0]), np.array([0.5, 4.0, -1.0])
    for name in ("add", "sub", "mul", "div"):
        ours = torch.zeros(3)
        theirs = real.zeros(3, dtype=real.float64)
        getattr(torch, name)(torch.tensor(a), torch.tensor(b), out=ours)
        getattr(real, name)(real.tensor(a), real.tensor(b), out=theirs)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())


# ---- functions without a derivative; torch's other special functions ----


def test_nextafter_values_and_no_derivative():
    x, y = torch.tensor([1.0, -2.0]), torch.tensor([2.0, -3.0])
    np.testing.assert_array_equal(torch.nextafter(x, y).numpy(), np.nextafter(x.numpy(), y.numpy()))
    w = torch.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="derivative for 'nextafter'"):
        torch.nextafter(w, y)
    with torch.no_grad():
        assert torch.nextafter(w, y).requires_grad is False
    with pytest.raises(NotImplementedError, match="derivative for 'nextafter'"):
        torch.grad(lambda v: torch.nextafter(v, 2.0).sum())(np.ones(2))


def test_igamma_is_the_regularized_incomplete_gamma_function():
    special = pytest.importorskip("scipy.special")
    a, x = np.array([0.5, 1.0, 3.0]), np.array([0.3, 2.0, 1.5])
    np.testing.assert_allclose(
        torch.igamma(torch.tensor(a), torch.tensor(x)).numpy(), special.gammainc(a, x)
    )
    np.testing.assert_allclose(
        torch.igammac(torch.tensor(a), torch.tensor(x)).numpy(), special.gammaincc(a, x)
    )


def test_conjugation_is_never_lazy():
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert torch.resolve_conj(z) is z and torch.resolve_neg(z) is z
    assert torch.is_conj(z.conj()) is False and torch.is_neg(z) is False


# ---- torch._C ----


def test_private_c_names_map_onto_autodiffs_state():
    C = torch._C
    assert C.is_grad_enabled() is True
    with torch.no_grad():
        assert C.is_grad_enabled() is False
    try:
        C._set_fwd_grad_enabled(False)
        assert fwAD._is_fwd_grad_enabled() is False
    finally:
        C._set_fwd_grad_enabled(True)
    assert fwAD._is_fwd_grad_enabled() is True
    assert C._autograd._saved_tensors_hooks_is_enabled() is True
    with torch.autograd.graph.disable_saved_tensors_hooks("off"):
        assert C._autograd._saved_tensors_hooks_is_enabled() is False


def test_private_c_classes_and_weak_references():
    C = torch._C
    leaf = torch.ones(2, requires_grad=True)
    y = leaf * 2
    assert isinstance(y.grad_fn.next_functions[0][0], C._functions.AccumulateGrad)
    assert C._autograd.SavedTensor is torch.autograd.SavedTensor
    t = torch.ones(3)
    ref = C._WeakTensorRef(t)
    assert ref.expired() is False
    del t
    assert ref.expired() is True


def test_undefined_grad_node_gives_no_gradient():
    C = torch._C
    x = torch.ones(3, requires_grad=True)
    w = torch.ones(3, requires_grad=True)
    y = C._functions.UndefinedGrad()(x * 2)
    (y * w).sum().backward()
    assert x.grad is None  # (nothing flows through the node)
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    assert isinstance(C._functions.UndefinedGrad(), torch.autograd.graph.Node)


def test_delayed_error_node_raises_only_when_reached():
    C = torch._C
    x = torch.ones(2, requires_grad=True)
    y = torch.ones(2, requires_grad=True)
    y_err = C._functions.DelayedError("Boom!", 1)(y)
    out = (x * y_err).sum()
    with pytest.raises(RuntimeError, match="Boom!"):
        torch.autograd.grad(out, y, retain_graph=True)
    (gx,) = torch.autograd.grad(out, x)  # (the node is not on x's path)
    assert gx.tolist() == [1.0, 1.0]
    assert issubclass(C._functions.DelayedError, torch.autograd.graph.Node)
    with pytest.raises(TypeError, match="expected 1 arguments"):
        C._functions.DelayedError("Boom!", 1)(x, y)
    with pytest.raises(AttributeError, match="no counterpart in autodiff"):
        C._functions.NotAName  # noqa: B018
