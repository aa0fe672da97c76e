"""Views on the torch face: `_base`, shared version counters, in-place operations on views and on
tensors with views (CopySlices), and torch's errors for the ambiguous cases. Each program runs
under autodiff and, where installed, under real torch, and the values and gradients agree."""

import numpy as np
import pytest

import autodiff as ad
from tests.torch_oracle import both


def _grads(torch, program):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    out = program(torch, x)
    out.backward()
    return x.grad.detach().numpy().copy()


PROGRAMS = {
    # (the silent wrong answers before views were tracked: the base kept its gradient)
    "zero_slice": lambda t, x: _sum(_do(x * 2, lambda y: y[0:2].zero_())),
    "copy_into_slice": lambda t, x: _sq(
        _do(x * 2, lambda y: y[0:2].copy_(t.tensor([5.0, 5.0], dtype=t.float64)))
    ),
    "mul_slice": lambda t, x: _sq(_do(x * 1, lambda y: y[1:3].mul_(3))),
    "view_then_mul": lambda t, x: _sq(_do(x * 1, lambda y: y.view(2, 2)[1].mul_(x[0]))),
    "diagonal": lambda t, x: _sq(_do(x * 1, lambda y: y.view(2, 2).diagonal().mul_(3))),
    "transpose_row": lambda t, x: _sq(_do(x * 1, lambda y: y.view(2, 2).t()[0].add_(x[:2]))),
    "narrow_select": lambda t, x: _sq(_do(x * 1, lambda y: y.narrow(0, 1, 2).select(0, 1).mul_(5))),
    "as_strided": lambda t, x: _sq(_do(x * 1, lambda y: y.as_strided((2,), (2,)).mul_(2))),
    "zero_whole": lambda t, x: _sum(_do(x * 2, lambda y: y.zero_()) + x),
    "fill_whole": lambda t, x: _sq(_do(x * 2, lambda y: y.fill_(3.0)) * x),
    "base_inplace_then_view": lambda t, x: _other_view_after_base_write(x),
    "view_write_other_view": lambda t, x: _other_view_after_view_write(x),
    "copy_into_constant": lambda t, x: _sq(_into_constant(t, x)),
    "element_view": lambda t, x: _sq(_do(x * 1, lambda y: y[2].mul_(10))),
}


def _do(y, write):
    write(y)
    return y


def _sum(y):
    return y.sum()


def _sq(y):
    return (y * y).sum()


def _other_view_after_base_write(x):
    y = x * 1
    v = y[1:3]
    y.mul_(2)
    return (v * v).sum()


def _other_view_after_view_write(x):
    y = x * 1
    v1, v2 = y[0:2], y[1:3]
    v1.mul_(3)
    return (v2 * v2).sum() + (v1 * x[:2]).sum()


def _into_constant(t, x):
    z = t.zeros(6, dtype=t.float64)
    z[1:5].copy_(x * 2)
    return z


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inplace_on_views_matches_torch(name):
    ours, theirs = both(lambda t: _grads(t, PROGRAMS[name]))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_base_and_version_counter():
    y = ad.ones(4) * 2
    v = y[1:3]
    w = v.view(2, 1)
    assert v._is_view() and w._is_view() and not y._is_view()
    assert v._base is y and w._base is y  # (torch's _base is the root)
    v.mul_(2)
    assert y._version == v._version == w._version == 1
    assert y.tolist() == [2.0, 4.0, 4.0, 2.0]
    assert ad.ones(3).view(3)._base is not None  # (a view even of the same shape)
    assert ad.ones(3).flip(0)._base is None  # (flip copies, as torch)


def test_non_view_results_own_their_data():
    y = ad.tensor([1.0, 2.0, 3.0])
    z = y.flip(0)
    y.mul_(2)
    assert z.tolist() == [3.0, 2.0, 1.0]


def test_grad_fns_after_writes():
    x = ad.ones(4, requires_grad=True)
    y = x * 2
    v = y[0:2]
    v.mul_(3)
    assert y.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"


ERRORS = {
    "a view of a leaf Variable that requires grad": lambda: ad.ones(3, requires_grad=True)[:2].mul_(
        2
    ),
    "function that returns multiple views": lambda: (
        (ad.ones(4, requires_grad=True) * 1).split(2)[0].mul_(2)
    ),
    "Output 1 of Unbind is a view": lambda: (
        (ad.ones(2, requires_grad=True) * 1).unbind()[1].add_(1)
    ),
    "A view was created in no_grad mode": lambda: _nograd_view_write(),
    "more than one element of the written-to tensor": lambda: (
        (ad.ones(2, requires_grad=True) * 1).expand(3, 2).mul_(2)
    ),
}


def _nograd_view_write():
    y = ad.ones(4, requires_grad=True) * 2
    with ad.no_grad():
        v = y[0:2]
    v.mul_(2)


@pytest.mark.parametrize("message", sorted(ERRORS))
def test_torch_errors(message):
    with pytest.raises(RuntimeError, match=message):
        ERRORS[message]()


def test_saved_view_of_the_written_base_is_stale():
    # (mul_ saves `other`, a view of the base it writes into: as torch, backward then raises)
    def program(t):
        x = t.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        y.view(2, 2)[1].mul_(y[0])
        with pytest.raises(RuntimeError, match="output 0 of AsStrided, is at version 1"):
            (y * y).sum().backward()

    both(program)


def test_errors_leave_data_unchanged():
    y = ad.ones(4, requires_grad=True) * 2
    with ad.no_grad():
        v = y[0:2]
    with pytest.raises(RuntimeError):
        v.mul_(5)
    assert y.tolist() == [2.0] * 4 and y._version == 0


def test_nograd_writes_into_views_are_plain():
    x = ad.ones(4, requires_grad=True)
    y = x * 2
    with ad.no_grad():
        y[0:2].mul_(3)
    assert y.tolist() == [6.0, 6.0, 2.0, 2.0]
    assert y.grad_fn.name() == "MulBackward0"


def test_create_graph_through_copy_slices():
    def second(t):
        x = t.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        y[0:2].mul_(x[1:3])
        (g,) = t.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = t.autograd.grad(g.sum(), x)
        return g.detach().numpy().copy(), h.numpy().copy()

    (g1, h1), (g2, h2) = both(second)
    np.testing.assert_allclose(g1, g2)
    np.testing.assert_allclose(h1, h2)
