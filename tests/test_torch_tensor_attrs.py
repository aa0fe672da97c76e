"""Tensor attributes of the torch face: deleters and setters with torch's errors (`data`,
`requires_grad`, `_grad_fn`, `_backward_hooks`), `grad_dtype`, `detach_()` on a view, and
torch's in-place view operations (`t_`, `transpose_`, `swapdims_`, `swapaxes_`, `squeeze_`,
`unsqueeze_`, `as_strided_`). Where torch is installed, each program runs on both and the
results (values, shapes, versions, gradients, error types and messages) are compared."""

import numpy as np
import pytest

import autodiff as ad
from tests.torch_oracle import both


def _outcome(fn):
    """What `fn()` gives: ("ok", value) or (exception type name, message)."""
    try:
        return ("ok", fn())
    except Exception as e:
        return (type(e).__name__, str(e))


def _name(dtype) -> str:
    """A dtype's name, torch's or NumPy's (`Tensor.dtype` is a NumPy dtype in autodiff)."""
    return str(dtype).replace("torch.", "")


# ---- deleters and setters ----


@pytest.mark.parametrize(
    "statement",
    [
        "del x.data",
        "x.data = None",
        "del x.requires_grad",
        "x.requires_grad = 1",
        "x.requires_grad = None",
        "del x._grad_fn",
        "del x._backward_hooks",
        "x._grad_fn = 3",
    ],
)
def test_attribute_errors_match_torch(statement):
    def run(torch):
        x = torch.ones(2, 2, requires_grad=True)

        def act():
            exec(statement, {"x": x})

        return _outcome(act), x.requires_grad, tuple(x.shape)

    ours, theirs = both(run)
    assert ours == theirs
    assert ours[0][0] in ("RuntimeError", "TypeError")


def test_attribute_errors_without_torch():
    x = ad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Deleting tensor data is not allowed"):
        del x.data
    with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
        del x.requires_grad
    with pytest.raises(RuntimeError, match="Deletion of _grad_fn not allowed"):
        del x._grad_fn
    with pytest.raises(RuntimeError, match="Deletion of _backwards_hooks not allowed"):
        del x._backward_hooks
    del x.grad
    assert x.grad is None and x.requires_grad


def test_grad_fn_attribute():
    def run(torch):
        a = torch.ones(2, requires_grad=True)
        y = a * 2
        same = y._grad_fn is y.grad_fn
        leaf = a._grad_fn is None
        y._grad_fn = None  # (detaches y in place)
        return same, leaf, y.requires_grad, y.grad_fn is None, y.is_leaf

    ours, theirs = both(run)
    assert ours == theirs == (True, True, False, True, True)


# ---- grad_dtype ----


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_grad_dtype_property():
    def run(torch):
        leaf = torch.tensor([1.0, 2.0], dtype=torch.float32, requires_grad=True)
        seen = [str(leaf.grad_dtype)]
        leaf.grad_dtype = torch.float16
        seen.append(str(leaf.grad_dtype))
        leaf.grad_dtype = None
        seen.append(leaf.grad_dtype)
        non_leaf = leaf * 2
        seen.append(_outcome(lambda: non_leaf.grad_dtype))
        seen.append(_outcome(lambda: setattr(non_leaf, "grad_dtype", torch.float16)))
        seen.append(_outcome(lambda: setattr(leaf, "grad_dtype", "float")))
        return seen

    ours, theirs = both(run)
    assert ours == theirs
    assert ours[:3] == ["torch.float32", "torch.float16", None]


def test_grad_assignment_checks_dtype():
    def run(torch):
        x = torch.tensor([1.0, 2.0], dtype=torch.float32, requires_grad=True)
        seen = [_outcome(lambda: setattr(x, "grad", torch.ones(2, dtype=torch.float64)))]
        seen.append(_outcome(lambda: setattr(x, "grad", torch.ones(3, dtype=torch.float64))))
        x.grad_dtype = torch.float16
        seen.append(_outcome(lambda: setattr(x, "grad", torch.ones(2, dtype=torch.float32))))
        x.grad_dtype = None
        x.grad = torch.ones(2, dtype=torch.float64)
        seen.append(_name(x.grad.dtype))
        y = torch.ones(2, dtype=torch.float32, requires_grad=True) * 2  # (a non-leaf: its dtype)
        seen.append(_outcome(lambda: setattr(y, "grad", torch.ones(2, dtype=torch.float64))))
        return seen

    ours, theirs = both(run)
    assert ours == theirs
    assert ours[0][0] == "RuntimeError" and "grad_dtype 'Float'" in ours[0][1]
    assert ours[3] == "float64"


def test_function_backward_dtype_follows_grad_dtype():
    def run(torch):
        class Widen(torch.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                return inp * 2

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output.to(torch.float64)

        d = torch.tensor([1.0, 2.0], dtype=torch.float32, requires_grad=True)
        Widen.apply(d).sum().backward()
        e = torch.tensor([3.0, 4.0], dtype=torch.float32, requires_grad=True)
        e.grad_dtype = None
        Widen.apply(e).sum().backward()
        f = torch.tensor([3.0, 4.0], dtype=torch.float32, requires_grad=True)
        Widen.apply(f * 1).sum().backward()  # (a non-leaf input: cast to its dtype)
        return [(_name(t.grad.dtype), t.grad.tolist()) for t in (d, e, f)]

    ours, theirs = both(run)
    assert ours == theirs
    assert [dt for dt, _ in ours] == ["float32", "float64", "float32"]


# ---- detach_ ----


def test_detach_in_place_of_a_view_raises():
    def run(torch):
        x = torch.ones(4, 4, requires_grad=True)
        plain = torch.zeros(3)
        return (
            _outcome(lambda: x.narrow(0, 1, 2).detach_()),
            _outcome(lambda: plain[:2].detach_()),
            x.requires_grad,
        )

    ours, theirs = both(run)
    assert ours == theirs
    assert ours[0][0] == "RuntimeError" and ours[0][1].startswith("Can't detach views in-place")


# ---- in-place view operations ----

_IN_PLACE_VIEWS = [
    ("t_", lambda v: v.t_()),
    ("transpose_", lambda v: v.transpose_(0, 1)),
    ("swapdims_", lambda v: v.swapdims_(1, 0)),
    ("swapaxes_", lambda v: v.swapaxes_(0, -1)),
    ("unsqueeze_", lambda v: v.unsqueeze_(1)),
    ("squeeze_", lambda v: v.unsqueeze_(0).squeeze_(0)),
    ("as_strided_", lambda v: v.as_strided_((2, 2), (1, 2))),
]


@pytest.mark.parametrize("name,op", _IN_PLACE_VIEWS, ids=[n for n, _ in _IN_PLACE_VIEWS])
def test_in_place_view_of_a_plain_tensor(name, op):
    def run(torch):
        z = torch.arange(4.0).reshape(2, 2).clone()
        r = op(z)
        return r is z, tuple(z.shape), z.tolist(), z._version >= 1, z._is_view()

    ours, theirs = both(run)
    assert ours == theirs
    assert ours[0] is True


@pytest.mark.parametrize("name,op", _IN_PLACE_VIEWS, ids=[n for n, _ in _IN_PLACE_VIEWS])
def test_in_place_view_gradients(name, op):
    def run(torch):
        x = torch.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        # (a view: it stays one, of the same base; autodiff's as_strided makes a view of a
        # contiguous tensor only)
        v = y[:, :2] if name != "as_strided_" else y.view(3, 2)
        w = y[:, 1:] * 1  # (not a view)
        op(v)
        op(w)
        weights = torch.tensor(np.arange(1.0, 1.0 + v.numel()).reshape(tuple(v.shape)))
        ((v * weights).sum() + (w * weights).sum()).backward()
        return (
            tuple(v.shape),
            v.tolist(),
            v._is_view(),
            v._base is y,
            v._version == y._version,
            w._is_view(),
            x.grad.tolist(),
        )

    ours, theirs = both(run)
    assert ours == theirs


def test_in_place_view_under_no_grad_of_a_view():
    def run(torch):
        x = torch.tensor(np.arange(1.0, 7.0).reshape(2, 3), requires_grad=True)
        v = (x * 2)[:, :2]
        with torch.no_grad():
            v.t_()
        (v * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return v.tolist(), v.requires_grad, x.grad.tolist()

    ours, theirs = both(run)
    assert ours == theirs


def test_in_place_view_errors():
    def run(torch):
        leaf = torch.ones(2, 3, requires_grad=True)
        base = torch.ones(2, 3, requires_grad=True).clone()
        with torch.no_grad():
            quiet = base[:]
        parts = base.unbind()
        return [
            _outcome(lambda: leaf.t_()),
            _outcome(lambda: leaf[:].t_()),
            _outcome(lambda: quiet.transpose_(0, 1)),
            _outcome(lambda: parts[0].unsqueeze_(0)),
            _outcome(lambda: torch.zeros(2, 3, 4).t_()),
            _outcome(lambda: torch.zeros(2, 3).transpose_(0, 3)),
            tuple(leaf.shape),
            tuple(quiet.shape),
        ]

    ours, theirs = both(run)
    assert ours == theirs
    assert ours[0] == (
        "RuntimeError",
        "a leaf Variable that requires grad is being used in an in-place operation.",
    )


def test_in_place_view_keeps_how_the_view_was_made():
    # A view made under no_grad and changed in place there keeps its creation mode: a later
    # in-place operation with grad mode on raises, as on the original view (torch).
    def run(torch):
        base = torch.ones(2, 3, requires_grad=True).clone()
        with torch.no_grad():
            view = base.view_as(base)
            view.t_()
        return _outcome(lambda: view.add_(1))

    ours, theirs = both(run)
    assert ours == theirs
    assert ours[1].startswith("A view was created in no_grad mode")


def test_in_place_view_without_grad_mode_on_a_recorded_tensor_raises():
    # torch would keep the grad_fn of the old shape (a later backward pass fails, or is wrong
    # for a square matrix): autodiff refuses, leaving the tensor as it was.
    x = ad.ones(2, 3, requires_grad=True)
    y = x * 2
    with ad.no_grad():
        with pytest.raises(RuntimeError, match="would leave its history for the old shape"):
            y.t_()
        y.transpose_(0, 0)  # (no change of shape or strides: allowed)
    assert y.shape == (2, 3)
    y.t_()  # (recorded)
    y.backward(ad.ones(3, 2))
    assert x.grad.tolist() == [[2.0] * 3] * 2


def test_in_place_view_inside_a_transform_raises():
    def f(x):
        x.t_()
        return x.sum()

    with pytest.raises(RuntimeError, match="use the out-of-place t"):
        ad.grad(f)(np.ones((2, 2)))
