"""A compiled training step (`autodiff.compile` of a function calling `backward()` and an
optimizer's `step`): one graph for the loss, the gradients and the update, matching the
eager step (and real torch's) step by step; what it cannot stage runs eagerly."""

import copy

import numpy as np
import pytest

import autodiff as torch
import autodiff.nn as nn
from autodiff.torch.compile import GraphBreakError


def _close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _setup(seed=0, dropout=False):
    torch.manual_seed(seed)
    layers = [nn.Linear(5, 8), nn.Tanh()]
    if dropout:
        layers.append(nn.Dropout(0.3))
    layers.append(nn.Linear(8, 2))
    model = nn.Sequential(*layers).double()
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.standard_normal((16, 5)))
    y = torch.tensor(rng.standard_normal((16, 2)))
    return model, x, y


def _step(model, opt, loss_fn=None):
    loss_fn = loss_fn or nn.MSELoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _assert_same(m1, o1, m2, o2, tol=1e-12):
    for a, b in zip(m1.parameters(), m2.parameters()):
        _close(a.detach(), b.detach(), tol)
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            _close(a.grad, b.grad, tol)
        for k, v in o1.state[a].items():
            _close(v, o2.state[b][k], tol)


OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.05),
    "sgd-momentum": lambda p: torch.optim.SGD(
        p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2
    ),
    "sgd-dampening-maximize": lambda p: torch.optim.SGD(
        p, lr=0.05, momentum=0.5, dampening=0.3, maximize=True
    ),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "adam-decay": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1, betas=(0.8, 0.9)),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.3),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_compiled_step_matches_eager(name):
    m1, x, y = _setup()
    m2 = copy.deepcopy(m1)
    o1, o2 = OPTIMIZERS[name](m1.parameters()), OPTIMIZERS[name](m2.parameters())
    eager, compiled = _step(m1, o1), torch.compile(_step(m2, o2))
    for i in range(8):
        if i == 5:  # (a learning-rate change between calls: read at each call)
            for g in o1.param_groups + o2.param_groups:
                g["lr"] *= 0.5
        l1, l2 = eager(x, y), compiled(x, y)
        _close(l1.detach(), l2)
        _assert_same(m1, o1, m2, o2)
    counts = compiled._compile_counts
    assert counts["staged"] == 1 and counts["graph_breaks"] == 0
    assert counts["compiled_calls"] >= 7  # (Adam's and momentum's first step: eagerly)


def test_compiled_step_with_a_scheduler_and_param_groups():
    m1, x, y = _setup()
    m2 = copy.deepcopy(m1)

    def make(m):
        opt = torch.optim.Adam(
            [{"params": m[0].parameters()}, {"params": m[2].parameters(), "lr": 0.05}], lr=0.01
        )
        return opt, torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    (o1, s1), (o2, s2) = make(m1), make(m2)
    eager, compiled = _step(m1, o1), torch.compile(_step(m2, o2))
    for _ in range(6):
        eager(x, y)
        compiled(x, y)
        s1.step()
        s2.step()
        _assert_same(m1, o1, m2, o2)
    assert compiled._compile_counts["staged"] == 1


def test_compiled_step_against_real_torch():
    real = pytest.importorskip("torch")
    model, x, y = _setup()
    ref = real.nn.Sequential(real.nn.Linear(5, 8), real.nn.Tanh(), real.nn.Linear(8, 2)).double()
    with real.no_grad():
        for p, q in zip(ref.parameters(), model.parameters()):
            p.copy_(real.from_numpy(np.array(q.detach())))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    ropt = real.optim.Adam(ref.parameters(), lr=1e-2)
    compiled = torch.compile(_step(model, opt))
    rx, ry = real.from_numpy(np.array(x)), real.from_numpy(np.array(y))
    for _ in range(6):
        loss = compiled(x, y)
        ropt.zero_grad()
        rloss = real.nn.functional.mse_loss(ref(rx), ry)
        rloss.backward()
        ropt.step()
        _close(loss, rloss.detach().numpy(), 1e-10)
    for p, q in zip(model.parameters(), ref.parameters()):
        _close(p.detach(), q.detach().numpy(), 1e-10)
        _close(p.grad, q.grad.numpy(), 1e-10)


def test_gradients_accumulate_without_zero_grad():
    m1, x, y = _setup()
    m2 = copy.deepcopy(m1)

    def backward_only(model):
        def f(x, y):
            loss = ((model(x) - y) ** 2).sum()
            loss.backward()
            return loss

        return f

    eager, compiled = backward_only(m1), torch.compile(backward_only(m2))
    for _ in range(3):
        eager(x, y)
        compiled(x, y)
        for a, b in zip(m1.parameters(), m2.parameters()):
            _close(a.grad, b.grad)


def test_parameters_read_after_the_step_are_the_new_ones():
    m1, x, y = _setup()
    m2 = copy.deepcopy(m1)
    o1, o2 = torch.optim.SGD(m1.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)

    def make(model, opt):
        def f(x, y):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            return model(x)  # (after the update)

        return f

    eager, compiled = make(m1, o1), torch.compile(make(m2, o2))
    for _ in range(3):
        _close(eager(x, y).detach(), compiled(x, y).detach())
    _assert_same(m1, o1, m2, o2)
    assert compiled._compile_counts["graph_breaks"] == 0


def test_dropout_in_a_compiled_step_draws_eagers_masks():
    m1, x, y = _setup(dropout=True)
    m2 = copy.deepcopy(m1)
    o1, o2 = torch.optim.SGD(m1.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)
    eager, compiled = _step(m1, o1), torch.compile(_step(m2, o2))
    for seed in range(3):
        torch.manual_seed(seed)
        l1 = eager(x, y)
        torch.manual_seed(seed)
        l2 = compiled(x, y)
        _close(l1.detach(), l2)
    _assert_same(m1, o1, m2, o2)
    assert compiled._compile_counts["graph_breaks"] == 0


def _clipped(model, opt):
    def f(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01)
        opt.step()
        return loss

    return f


def _rmsprop(model, _):
    return _step(model, torch.optim.RMSprop(model.parameters(), lr=0.01))


def _amsgrad(model, _):
    return _step(model, torch.optim.Adam(model.parameters(), lr=0.01, amsgrad=True))


def _create_graph(model, opt):
    def f(x, y):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward(create_graph=True)
        opt.step()

    return f


def test_gradient_clipping_is_staged():
    # (clip_grad_norm_ scales the gradients in place: the staged gradients take the writes)
    m1, x, y = _setup()
    m2 = copy.deepcopy(m1)
    o1, o2 = torch.optim.SGD(m1.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)
    eager, compiled = _clipped(m1, o1), torch.compile(_clipped(m2, o2))
    for _ in range(3):
        _close(eager(x, y).detach(), compiled(x, y))
        _assert_same(m1, o1, m2, o2)
    assert compiled._compile_counts["graph_breaks"] == 0


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("make", [_rmsprop, _amsgrad, _create_graph])
def test_what_cannot_be_staged_runs_eagerly(make):
    m1, x, y = _setup()
    m2 = copy.deepcopy(m1)
    o1, o2 = torch.optim.SGD(m1.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)
    eager, compiled = make(m1, o1), torch.compile(make(m2, o2))
    for _ in range(3):
        eager(x, y)
        compiled(x, y)
        for a, b in zip(m1.parameters(), m2.parameters()):
            _close(a.detach(), b.detach())
            assert type(b) is nn.Parameter  # (staging put the parameters back)
    assert compiled._compile_counts["graph_breaks"] == 1
    with pytest.raises(GraphBreakError, match="graph break in 'f'|graph break in 'step'"):
        torch.compile(make(m2, o2), fullgraph=True)(x, y)


def test_a_changed_optimizer_stages_again():
    m1, x, y = _setup()
    m2 = copy.deepcopy(m1)
    o1, o2 = torch.optim.SGD(m1.parameters(), lr=0.1), torch.optim.SGD(m2.parameters(), lr=0.1)
    eager, compiled = _step(m1, o1), torch.compile(_step(m2, o2))
    for i in range(4):
        if i == 2:  # (momentum switched on: other formulas, and a buffer made eagerly)
            for g in o1.param_groups + o2.param_groups:
                g["momentum"] = 0.9
        eager(x, y)
        compiled(x, y)
        _assert_same(m1, o1, m2, o2)
    assert compiled._compile_counts["staged"] == 2


def test_compiled_function_reads_the_current_parameters():
    # (what a compiled function computes from parameters alone is computed at each call: a
    # weight updated in place between calls is read anew)
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(2, 3, dtype=torch.float64))

        def forward(self, x):
            return (x @ (self.w * 2).t()).sum()

    model = Scaled()
    f = torch.compile(lambda x: model(x))
    x = torch.ones(4, 3, dtype=torch.float64)
    assert float(f(x).detach()) == float(model(x).detach()) == 48.0
    with torch.no_grad():
        model.w.mul_(2)
    assert float(f(x).detach()) == float(model(x).detach()) == 96.0
    f(x).backward()
    _close(model.w.grad, np.full((2, 3), 8.0))


def _random_program(seed: int):
    """A random small training program: layers, loss, optimizer and extras drawn from
    `seed` (the same draws give the eager and the compiled copy)."""
    rng = np.random.default_rng(seed)
    width = int(rng.integers(3, 9))
    layers = [nn.Linear(4, width)]
    for _ in range(int(rng.integers(1, 3))):
        kind = rng.choice(["tanh", "relu", "bn", "ln", "dropout", "sigmoid"])
        layers.append(
            {
                "tanh": nn.Tanh,
                "relu": nn.ReLU,
                "sigmoid": nn.Sigmoid,
                "bn": lambda: nn.BatchNorm1d(width),
                "ln": lambda: nn.LayerNorm(width),
                "dropout": lambda: nn.Dropout(0.2),
            }[kind]()
        )
        layers.append(nn.Linear(width, width))
    layers.append(nn.Linear(width, 3))
    torch.manual_seed(seed)
    model = nn.Sequential(*layers).double()
    options = {
        "sgd": dict(lr=0.05, momentum=float(rng.choice([0.0, 0.9])), weight_decay=1e-3),
        "adam": dict(lr=0.01, betas=(0.85, 0.99), weight_decay=float(rng.choice([0.0, 0.1]))),
        "adamw": dict(lr=0.01, maximize=bool(rng.integers(2))),
    }
    name = str(rng.choice(list(options)))
    kind = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name]
    loss_name = str(rng.choice(["mse", "ce", "l1"]))
    clip = bool(rng.integers(2))
    x = torch.tensor(rng.standard_normal((8, 4)))
    y = torch.tensor(rng.integers(0, 3, 8)) if loss_name == "ce" else torch.randn(8, 3)
    return model, (lambda p: kind(p, **options[name])), loss_name, clip, x, y


@pytest.mark.parametrize("seed", range(24))
def test_random_training_programs_compiled_match_eager(seed):
    model, make_opt, loss_name, clip, x, y = _random_program(seed)
    m1, m2 = model, copy.deepcopy(model)
    o1, o2 = make_opt(m1.parameters()), make_opt(m2.parameters())
    loss_fn = {"mse": nn.MSELoss(), "ce": nn.CrossEntropyLoss(), "l1": nn.L1Loss()}[loss_name]

    def make(m, o):
        def step(x, y):
            o.zero_grad()
            loss = loss_fn(m(x), y)
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            o.step()
            return loss

        return step

    eager, compiled = make(m1, o1), torch.compile(make(m2, o2))
    for i in range(5):
        torch.manual_seed(100 + i)
        l1 = eager(x, y)
        torch.manual_seed(100 + i)
        l2 = compiled(x, y)
        # (rounding: the compiled graph fuses and orders some sums otherwise, and Adam's
        # division by the root of a small second moment magnifies the last bits)
        _close(l1.detach(), l2, 1e-9)
        _assert_same(m1, o1, m2, o2, 1e-9)
        for a, b in zip(m1.state_dict().values(), m2.state_dict().values()):
            _close(a, b, 1e-9)
    assert compiled._compile_counts["graph_breaks"] == 0
    m1.eval(), m2.eval()
    _close(m1(x).detach(), m2(x).detach(), 1e-9)


def test_a_parameter_given_another_array_stages_again():
    # (`.data = ...` of another dtype: the staged step would compute in the old one)
    w = nn.Parameter(torch.ones(3, dtype=torch.float64))
    opt = torch.optim.SGD([w], lr=0.1)

    @torch.compile
    def step(x):
        opt.zero_grad()
        (w * x).sum().backward()
        opt.step()

    step(torch.ones(3, dtype=torch.float64))
    with torch.no_grad():
        w.data = torch.ones(3, dtype=torch.float32)
    step(torch.ones(3, dtype=torch.float32))
    assert w.dtype == torch.float32
    _close(w.detach(), np.full(3, 0.9, np.float32), 1e-7)
    assert step._compile_counts["staged"] == 2
