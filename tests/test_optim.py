"""autodiff.optim: torch's optimizers and learning-rate schedules.

Each optimizer is checked against a reference written here from torch's documented
algorithm (plain NumPy), against real torch over several steps (float64, two parameter
groups), and for its bookkeeping: state_dict round trips, zero_grad, param groups, closures,
errors, version counters.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import autodiff as ad
from autodiff import nn, optim
from autodiff.optim import lr_scheduler

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 3))
W0 = RNG.standard_normal((3, 2))
B0 = RNG.standard_normal(2)


def _loss(ns, w, b):
    """A non-quadratic loss of two parameters, for any namespace with tanh and tensor."""
    return ((ns.tensor(A) @ w + b).tanh() ** 2).sum() + (w**4).sum() * 0.1


def _loss_grad(w, b):
    """Its gradient, by hand (for the NumPy references)."""
    h = np.tanh(A @ w + b)
    dz = 2 * h * (1 - h * h)
    return A.T @ dz + 0.4 * w**3, dz.sum(0)


# ------------------------------------------------------------------------------ references


def _sgd(params, grads, state, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False,
         maximize=False):  # fmt: skip
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        g = -g if maximize else g
        g = g + weight_decay * p
        if momentum:
            b = state.get(i)
            b = g.copy() if b is None else momentum * b + (1 - dampening) * g
            state[i] = b
            g = g + momentum * b if nesterov else b
        out.append(p - lr * g)
    return out


def _adam(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
          amsgrad=False, maximize=False, decoupled=False):  # fmt: skip
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        t, m, v, vmax = state.get(i, (0, 0 * p, 0 * p, 0 * p))
        t += 1
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        m_hat = m / (1 - betas[0] ** t)
        vmax = np.maximum(vmax, v) if amsgrad else v
        v_hat = vmax / (1 - betas[1] ** t)
        state[i] = (t, m, v, vmax)
        out.append(p - lr * m_hat / (np.sqrt(v_hat) + eps))
    return out


def _adamw(params, grads, state, lr, weight_decay=0.01, **kwargs):
    return _adam(params, grads, state, lr, weight_decay=weight_decay, decoupled=True, **kwargs)


def _rmsprop(params, grads, state, lr, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
             centered=False, maximize=False):  # fmt: skip
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        v, b, mean = state.get(i, (0 * p, 0 * p, 0 * p))
        g = -g if maximize else g
        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            mean = alpha * mean + (1 - alpha) * g
            avg = np.sqrt(v - mean * mean) + eps
        else:
            avg = np.sqrt(v) + eps
        if momentum > 0:
            b = momentum * b + g / avg
            p = p - lr * b
        else:
            p = p - lr * g / avg
        state[i] = (v, b, mean)
        out.append(p)
    return out


def _adagrad(params, grads, state, lr, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
             eps=1e-10, maximize=False):  # fmt: skip
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        t, s = state.get(i, (0, 0 * p + initial_accumulator_value))
        t += 1
        g = -g if maximize else g
        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        state[i] = (t, s)
        out.append(p - clr * g / (np.sqrt(s) + eps))
    return out


CASES = {
    "sgd": ("SGD", _sgd, dict(lr=0.05)),
    "sgd-momentum-dampening-wd": (
        "SGD", _sgd, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)
    ),
    "sgd-nesterov-maximize": ("SGD", _sgd, dict(lr=0.02, momentum=0.8, nesterov=True, maximize=True)),
    "adam": ("Adam", _adam, dict(lr=0.05)),
    "adam-amsgrad-wd": (
        "Adam", _adam, dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)
    ),
    "adam-maximize": ("Adam", _adam, dict(lr=0.01, eps=1e-3, maximize=True)),
    "adamw": ("AdamW", lambda *a, **k: _adamw(*a, **k), dict(lr=0.05)),
    "adamw-amsgrad": (
        "AdamW", lambda *a, **k: _adamw(*a, **k),
        dict(lr=0.05, weight_decay=0.3, amsgrad=True),
    ),
    "rmsprop": ("RMSprop", _rmsprop, dict(lr=0.01)),
    "rmsprop-centered-momentum-wd": (
        "RMSprop", _rmsprop, dict(lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.1)
    ),
    "adagrad": ("Adagrad", _adagrad, dict(lr=0.1)),
    "adagrad-decay-init-wd": (
        "Adagrad", _adagrad,
        dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.2, weight_decay=0.1, eps=1e-6),
    ),
}  # fmt: skip


def _run(ns_optim, name, kwargs, steps, ns=ad, Param=nn.Parameter):
    w, b = Param(ns.tensor(W0.copy())), Param(ns.tensor(B0.copy()))
    opt = getattr(ns_optim, name)([w, b], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        _loss(ns, w, b).backward()
        opt.step()
    return w.detach().numpy(), b.detach().numpy()


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_the_reference_algorithm(case):
    name, reference, kwargs = CASES[case]
    params, state = [W0.copy(), B0.copy()], {}
    for _ in range(4):
        params = reference(params, _loss_grad(*params), state, **kwargs)
    for got, want in zip(_run(optim, name, kwargs, 4), params):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    name, _, kwargs = CASES[case]
    ours = _run(optim, name, kwargs, 6)
    theirs = _run(torch.optim, name, kwargs, 6, ns=torch, Param=torch.nn.Parameter)
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_state_dicts_match_torch_in_layout():
    torch = pytest.importorskip("torch")
    for name, _, kwargs in CASES.values():
        ours = getattr(optim, name)(nn.Linear(2, 1).parameters(), **kwargs)
        theirs = getattr(torch.optim, name)(torch.nn.Linear(2, 1).parameters(), **kwargs)
        assert ours.state_dict()["param_groups"] == theirs.state_dict()["param_groups"]
        for opt, ns in ((ours, ad), (theirs, torch)):
            for p in opt.param_groups[0]["params"]:
                p.grad = ns.ones_like(p)
            opt.step()
        assert {k: sorted(v) for k, v in ours.state_dict()["state"].items()} == {
            k: sorted(v) for k, v in theirs.state_dict()["state"].items()
        }
        assert repr(ours).replace("True", "x") == repr(theirs).replace("True", "x")


@pytest.mark.parametrize("case", ["sgd-momentum-dampening-wd", "adam-amsgrad-wd", "rmsprop"])
def test_state_dict_round_trip_resumes_training(case):
    name, _, kwargs = CASES[case]
    full = _run(optim, name, kwargs, 6)
    w, b = nn.Parameter(ad.tensor(W0.copy())), nn.Parameter(ad.tensor(B0.copy()))
    opt = getattr(optim, name)([w, b], **kwargs)
    for _ in range(3):
        opt.zero_grad()
        _loss(ad, w, b).backward()
        opt.step()
    saved = copy.deepcopy(opt.state_dict())
    w2, b2 = nn.Parameter(w.detach() * 1), nn.Parameter(b.detach() * 1)
    resumed = getattr(optim, name)([w2, b2], lr=123.0)
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == kwargs["lr"]
    for _ in range(3):
        resumed.zero_grad()
        _loss(ad, w2, b2).backward()
        resumed.step()
        opt.step()  # (the source's buffers are not shared with the loaded copy)
    for got, want in zip((w2.detach().numpy(), b2.detach().numpy()), full):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        getattr(optim, name)([w2], **kwargs).load_state_dict(saved)


def test_zero_grad_closure_groups_and_skipped_parameters():
    w, b, unused = (nn.Parameter(ad.ones(2)) for _ in range(3))
    opt = optim.SGD([{"params": [w]}, {"params": [b, unused], "lr": 0.5}], lr=0.1, momentum=0.5)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]

    def closure():
        opt.zero_grad()
        loss = (w * w).sum() + (b * 3).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 8.0
    assert w.tolist() == [0.8, 0.8] and b.tolist() == [-0.5, -0.5]
    assert unused.tolist() == [1.0, 1.0] and unused not in opt.state
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None and b.grad is None
    opt.add_param_group({"params": nn.Parameter(ad.ones(1)), "lr": 2.0})
    assert opt.param_groups[2]["momentum"] == 0.5
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [w]})


def test_constructor_errors():
    p = nn.Parameter(ad.ones(2))
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.Adam([p], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(
        ValueError, match="Nesterov momentum requires a momentum and zero dampening"
    ):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        optim.SGD([p], lr=0.1, differentiable=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)
    c = nn.Parameter(ad.tensor([1 + 1j]))
    c.grad = ad.tensor([1 + 0j])
    optim.SGD([c], lr=0.5).step()
    assert c.tolist() == [0.5 + 1j]
    with pytest.raises(NotImplementedError, match="Adam: complex parameters are not supported"):
        optim.Adam([c]).step()


def test_updates_are_in_place_and_counted():
    p = nn.Parameter(ad.tensor([1.0, 2.0], dtype=np.float32))
    memory = p._value
    y = (p * p).sum()  # (saves p)
    p.grad = ad.ones(2, dtype=np.float32)
    opt = optim.Adam([p], lr=0.1)
    opt.step()
    assert p._value is memory and p.dtype == np.float32 and p._version == 1
    assert opt.state[p]["exp_avg"].dtype == np.float32
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


# ------------------------------------------------------------------------------ schedules

SCHEDULES = {
    "StepLR": lambda s, opt: s.StepLR(opt, step_size=3, gamma=0.5),
    "ExponentialLR": lambda s, opt: s.ExponentialLR(opt, gamma=0.9),
    "CosineAnnealingLR": lambda s, opt: s.CosineAnnealingLR(opt, T_max=4, eta_min=0.01),
    "LambdaLR": lambda s, opt: s.LambdaLR(opt, [lambda e: 1 / (1 + e), lambda e: 0.9**e]),
}


def _rates(ns_optim, build, Param, tensor, epochs=12):
    opt = ns_optim.SGD([{"params": [Param(tensor([1.0]))]}, {"params": [Param(tensor([2.0]))]}],
                       lr=0.1)  # fmt: skip
    schedule = build(ns_optim.lr_scheduler, opt)
    rates = []
    for _ in range(epochs):
        opt.step()
        schedule.step()
        rates.append(schedule.get_last_lr())
    return rates


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_match_torch(name):
    torch = pytest.importorskip("torch")
    ours = _rates(optim, SCHEDULES[name], nn.Parameter, ad.tensor)
    theirs = _rates(torch.optim, SCHEDULES[name], torch.nn.Parameter, torch.tensor)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15)


def test_schedules_closed_forms():
    step = _rates(optim, SCHEDULES["StepLR"], nn.Parameter, ad.tensor, epochs=7)
    np.testing.assert_allclose([r[0] for r in step], [0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025])
    exp = _rates(optim, SCHEDULES["ExponentialLR"], nn.Parameter, ad.tensor, epochs=5)
    np.testing.assert_allclose([r[1] for r in exp], [0.1 * 0.9**e for e in range(1, 6)])
    cos = _rates(optim, SCHEDULES["CosineAnnealingLR"], nn.Parameter, ad.tensor, epochs=8)
    closed = [0.01 + 0.09 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(1, 9)]
    np.testing.assert_allclose([r[0] for r in cos], closed, rtol=1e-12)
    lam = _rates(optim, SCHEDULES["LambdaLR"], nn.Parameter, ad.tensor, epochs=3)
    np.testing.assert_allclose(lam, [[0.05, 0.09], [0.1 / 3, 0.081], [0.025, 0.0729]])


def test_schedule_order_warning_and_state():
    opt = optim.SGD([nn.Parameter(ad.ones(1))], lr=1.0)
    schedule = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    assert opt.param_groups[0]["initial_lr"] == 1.0 and schedule.get_last_lr() == [1.0]
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before"):
        schedule.step()
    state = schedule.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 1
    fresh = lr_scheduler.StepLR(optim.SGD([nn.Parameter(ad.ones(1))], lr=1.0), step_size=9)
    fresh.load_state_dict(state)
    assert fresh.step_size == 1 and fresh.last_epoch == 1
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.StepLR([], step_size=1)


def test_a_group_given_a_generator_keeps_its_parameters():
    # (a group's "params" given as `module.parameters()`, a generator, is read once: the
    # group holds the list, and every step updates them, as torch's)
    model = nn.Linear(2, 1).double()
    opt = optim.SGD([{"params": model.parameters()}], lr=0.5)
    assert isinstance(opt.param_groups[0]["params"], list)
    for _ in range(3):
        before = model.weight.detach().clone()
        opt.zero_grad()
        model(ad.ones(1, 2, dtype=ad.float64)).sum().backward()
        opt.step()
        np.testing.assert_allclose(model.weight.detach(), before - 0.5)
