"""`autodiff.compile` (torch.compile): compiled vs eager for every nn layer and loss, forward
and backward, train and eval; buffers written in place; hooks; graph breaks and fullgraph;
recompilation counts; a compiled training loop against the eager one and real torch's."""

import contextlib
import copy
import io
import re
from pathlib import Path

import numpy as np
import pytest

import autodiff as torch
import autodiff.nn as nn
import autodiff.nn.functional as F
from autodiff.torch.compile import GraphBreakError, OptimizedModule

ROOT = Path(__file__).resolve().parent.parent


def _randn(*shape, requires_grad=False):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=requires_grad)


# (name, module factory, input factory); inputs that are floating require grad.
LAYERS = [
    ("Linear", lambda: nn.Linear(5, 3), lambda: [_randn(4, 5)]),
    ("Identity", lambda: nn.Identity(), lambda: [_randn(4, 5)]),
    ("Flatten", lambda: nn.Flatten(), lambda: [_randn(2, 3, 4)]),
    ("ReLU", lambda: nn.ReLU(), lambda: [_randn(4, 5)]),
    ("ELU", lambda: nn.ELU(), lambda: [_randn(4, 5)]),
    ("GELU", lambda: nn.GELU(), lambda: [_randn(4, 5)]),
    ("GELU-tanh", lambda: nn.GELU(approximate="tanh"), lambda: [_randn(4, 5)]),
    ("LeakyReLU", lambda: nn.LeakyReLU(0.2), lambda: [_randn(4, 5)]),
    ("SiLU", lambda: nn.SiLU(), lambda: [_randn(4, 5)]),
    ("Sigmoid", lambda: nn.Sigmoid(), lambda: [_randn(4, 5)]),
    ("Softplus", lambda: nn.Softplus(), lambda: [_randn(4, 5)]),
    ("Tanh", lambda: nn.Tanh(), lambda: [_randn(4, 5)]),
    ("Softmax", lambda: nn.Softmax(dim=1), lambda: [_randn(4, 5)]),
    ("LogSoftmax", lambda: nn.LogSoftmax(dim=1), lambda: [_randn(4, 5)]),
    ("Dropout", lambda: nn.Dropout(0.5), lambda: [_randn(4, 5)]),
    ("Embedding", lambda: nn.Embedding(10, 3), lambda: [torch.tensor([1, 4, 4, 9])]),
    ("LayerNorm", lambda: nn.LayerNorm(5), lambda: [_randn(4, 5)]),
    ("GroupNorm", lambda: nn.GroupNorm(2, 4), lambda: [_randn(3, 4, 5)]),
    ("BatchNorm1d", lambda: nn.BatchNorm1d(3), lambda: [_randn(4, 3)]),
    ("BatchNorm2d", lambda: nn.BatchNorm2d(3), lambda: [_randn(4, 3, 2, 2)]),
    ("BatchNorm3d", lambda: nn.BatchNorm3d(3), lambda: [_randn(2, 3, 2, 2, 2)]),
    ("BatchNorm1d-cma", lambda: nn.BatchNorm1d(3, momentum=None), lambda: [_randn(4, 3)]),
    ("InstanceNorm1d", lambda: nn.InstanceNorm1d(3), lambda: [_randn(2, 3, 5)]),
    (
        "InstanceNorm2d-stats",
        lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        lambda: [_randn(2, 3, 3, 3)],
    ),
    ("InstanceNorm3d", lambda: nn.InstanceNorm3d(2), lambda: [_randn(1, 2, 2, 2, 3)]),
    ("Conv1d", lambda: nn.Conv1d(2, 3, 3, padding=1), lambda: [_randn(2, 2, 7)]),
    ("Conv2d", lambda: nn.Conv2d(2, 3, 3, stride=2), lambda: [_randn(2, 2, 5, 5)]),
    ("Conv3d", lambda: nn.Conv3d(2, 2, 2), lambda: [_randn(1, 2, 3, 3, 3)]),
    ("MaxPool1d", lambda: nn.MaxPool1d(2), lambda: [_randn(2, 3, 6)]),
    ("MaxPool2d", lambda: nn.MaxPool2d(2), lambda: [_randn(2, 3, 4, 4)]),
    ("MaxPool3d", lambda: nn.MaxPool3d(2), lambda: [_randn(1, 2, 4, 4, 4)]),
    ("AvgPool1d", lambda: nn.AvgPool1d(2), lambda: [_randn(2, 3, 6)]),
    ("AvgPool2d", lambda: nn.AvgPool2d(2), lambda: [_randn(2, 3, 4, 4)]),
    ("AvgPool3d", lambda: nn.AvgPool3d(2), lambda: [_randn(1, 2, 4, 4, 4)]),
    ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(2), lambda: [_randn(2, 3, 6)]),
    ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d(2), lambda: [_randn(2, 3, 6, 6)]),
    ("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d(2), lambda: [_randn(1, 2, 4, 4, 4)]),
    (
        "Sequential",
        lambda: nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)),
        lambda: [_randn(3, 5)],
    ),
    (
        "ModuleList",
        lambda: _Stack(nn.ModuleList([nn.Linear(5, 5), nn.Linear(5, 2)])),
        lambda: [_randn(3, 5)],
    ),
    (
        "ModuleDict",
        lambda: _Stack(nn.ModuleDict({"a": nn.Linear(5, 5), "b": nn.Linear(5, 2)})),
        lambda: [_randn(3, 5)],
    ),
    ("DataParallel", lambda: nn.DataParallel(nn.Linear(5, 2)), lambda: [_randn(3, 5)]),
    ("MSELoss", lambda: nn.MSELoss(), lambda: [_randn(4, 3), _randn(4, 3)]),
    ("MSELoss-none", lambda: nn.MSELoss(reduction="none"), lambda: [_randn(4, 3), _randn(4, 3)]),
    ("L1Loss", lambda: nn.L1Loss(reduction="sum"), lambda: [_randn(4, 3), _randn(4, 3)]),
    ("HuberLoss", lambda: nn.HuberLoss(delta=0.5), lambda: [_randn(4, 3), _randn(4, 3)]),
    ("SmoothL1Loss", lambda: nn.SmoothL1Loss(), lambda: [_randn(4, 3), _randn(4, 3)]),
    (
        "BCELoss",
        lambda: nn.BCELoss(),
        lambda: [torch.rand(4, 3, dtype=torch.float64) * 0.8 + 0.1, torch.rand(4, 3)],
    ),
    ("BCEWithLogitsLoss", lambda: nn.BCEWithLogitsLoss(), lambda: [_randn(4, 3), torch.rand(4, 3)]),
    (
        "CrossEntropyLoss",
        lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
        lambda: [_randn(4, 5), torch.tensor([0, 3, 4, 1])],
    ),
    (
        "NLLLoss",
        lambda: nn.NLLLoss(),
        lambda: [F.log_softmax(_randn(4, 5), dim=1).detach(), torch.tensor([0, 3, 4, 1])],
    ),
]
# Reading a buffer's value in Python (the cumulative average's 1 / num_batches_tracked).
BREAKS_IN_TRAINING = {"BatchNorm1d-cma"}


class _Stack(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        layers = self.layers.values() if isinstance(self.layers, nn.ModuleDict) else self.layers
        for layer in layers:
            x = torch.tanh(layer(x))
        return x


def _leaves(inputs):
    out = []
    for x in inputs:
        if x.dtype.kind == "f":
            x = x.detach().requires_grad_()
        out.append(x)
    return out


def _run(module, inputs, seed):
    """Forward, then backward of a fixed random cotangent: the output, input grads, param
    grads, buffers after."""
    torch.manual_seed(seed)
    out = module(*inputs)
    cot = torch.tensor(np.random.default_rng(1).standard_normal(out.shape))
    if out.requires_grad:
        (out * cot).sum().backward()
    grads = [None if x.grad is None else x.grad.clone() for x in inputs]
    params = [None if p.grad is None else p.grad.clone() for p in module.parameters()]
    buffers = [b.clone() for b in module.buffers()]
    return out.detach(), grads, params, buffers


def _assert_close(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("name,make,inputs", LAYERS, ids=[row[0] for row in LAYERS])
def test_layer_compiled_matches_eager(name, make, inputs, training):
    torch.manual_seed(0)
    eager = make().double().train(training)
    mine = copy.deepcopy(eager)
    compiled = torch.compile(mine)
    xs = inputs()
    for step in range(2):  # (the second call runs the cached graph; buffers moved on)
        want = _run(eager, _leaves(xs), seed=step)
        got = _run(compiled, _leaves(xs), seed=step)
        _assert_close(got[0], want[0])
        for g, w in zip(got[1] + got[2] + got[3], want[1] + want[2] + want[3]):
            _assert_close(g, w)
        eager.zero_grad()
        mine.zero_grad()
    counts = compiled._compile_counts
    breaks = training and name in BREAKS_IN_TRAINING
    assert counts["staged"] == (0 if breaks else 1), counts
    assert counts["graph_breaks"] == (1 if breaks else 0), counts
    assert counts["compiled_calls"] == (0 if breaks else 2), counts


def test_function_compiled_forward_backward():
    def f(x, w, scale=2.0):
        return (torch.tanh(x @ w) * scale).sum(dim=1)

    cf = torch.compile(f)
    x = _randn(4, 3, requires_grad=True)
    w = _randn(3, 2, requires_grad=True)
    out = cf(x, w, scale=3.0)
    assert type(out.grad_fn).__name__ == "JitCallBackward0"  # (one node)
    out.sum().backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    want = f(x, w, scale=3.0)
    want.sum().backward()
    _assert_close(out.detach(), want.detach())
    _assert_close(gx, x.grad)
    _assert_close(gw, w.grad)
    cf(x, w, scale=3.0)
    assert cf._compile_counts["staged"] == 1
    cf(x, w, scale=4.0)  # (a new Python value: a new guard)
    assert cf._compile_counts["staged"] == 2


def test_function_closure_parameters_get_grads():
    model = nn.Linear(3, 2).double()

    @torch.compile
    def loss(x):
        return (model(x) ** 2).mean()

    x = _randn(5, 3)
    loss(x).backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    (model(x) ** 2).mean().backward()
    for g, p in zip(got, model.parameters()):
        _assert_close(g, p.grad)


def test_backward_computes_only_the_gradients_needed():
    # (the compiled backward of a module leaves out its input's gradient when the input does
    # not require grad, and a frozen parameter's; each still gets its gradient when it does)
    from autodiff.torch.compile import _SAVED

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    model[0].bias.requires_grad_(False)
    ref = copy.deepcopy(model)
    cm = torch.compile(model)
    x = _randn(5, 3)
    cm(x).pow(2).sum().backward()
    ref(x).pow(2).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert (p.grad is None) == (q.grad is None)
        if q.grad is not None:
            _assert_close(p.grad, q.grad)
    ((entry,),) = [list(cm._compiled._cache.values())]
    in_mask = entry.forward.derived[_SAVED][1]
    assert in_mask[:2] == (False, True)  # (x, then the first weight)
    assert in_mask[2] is False  # (the frozen bias)
    xg = x.clone().requires_grad_()
    cm(xg).pow(2).sum().backward()
    xr = x.clone().requires_grad_()
    ref(xr).pow(2).sum().backward()
    _assert_close(xg.grad, xr.grad)


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(7, 4)
        self.out = nn.Linear(4, 7, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, idx, scale=1.0, tag="x"):
        h = self.emb(idx) * scale
        return self.out(h), {"h": h, "n": 3, "tag": tag}


def test_tied_weights_keywords_and_other_outputs():
    torch.manual_seed(0)
    model = _Tied().double()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model)
    idx = torch.tensor([1, 2, 6, 2])
    for scale in (2.0, 2.0, 3.0):
        out, aux = compiled(idx, scale=scale, tag="y")
        want, want_aux = ref(idx, scale=scale, tag="y")
        assert aux["n"] == 3 and type(aux["n"]) is int and aux["tag"] == "y"
        _assert_close(aux["h"].detach(), want_aux["h"].detach())
        (out.sum() + aux["h"].sum()).backward()
        (want.sum() + want_aux["h"].sum()).backward()
        _assert_close(out.detach(), want.detach())
        _assert_close(model.emb.weight.grad, ref.emb.weight.grad)
    assert compiled._compile_counts["staged"] == 2  # (scale 2.0, then 3.0)


class _InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.lin(x))


def test_in_place_on_a_staged_value_breaks_the_graph():
    model = _InPlace().double()
    compiled = torch.compile(model)
    x = _randn(4, 3, requires_grad=True)
    out = compiled(x)
    out.sum().backward()
    got = x.grad.clone()
    x.grad = None
    model(x).sum().backward()
    _assert_close(got, x.grad)
    assert compiled._compile_counts["graph_breaks"] == 1


def test_wrapper_shares_parameters_and_state_dict():
    model = nn.Linear(3, 2)
    compiled = torch.compile(model)
    assert isinstance(compiled, OptimizedModule)
    assert list(compiled.parameters())[0] is model.weight
    assert compiled._orig_mod is model
    assert compiled.in_features == 3
    assert list(compiled.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    compiled.eval()
    assert not model.training


def test_no_grad_records_nothing():
    model = torch.compile(nn.Linear(3, 2))
    with torch.no_grad():
        out = model(_randn(4, 3, requires_grad=True))
    assert out.grad_fn is None and not out.requires_grad


def test_recompiles_on_shape_dtype_requires_grad_and_mode():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.0), nn.BatchNorm1d(3))
    compiled = torch.compile(model)
    counts = compiled._compile_counts
    compiled(_randn(4, 3))
    compiled(_randn(4, 3))
    assert counts["staged"] == 1
    compiled(_randn(6, 3))  # (a new shape)
    assert counts["staged"] == 2
    compiled(_randn(6, 3, requires_grad=True))
    assert counts["staged"] == 3
    compiled(torch.randn(6, 3, dtype=torch.float32))
    assert counts["staged"] == 4
    compiled.eval()
    compiled(_randn(4, 3))
    assert counts["staged"] == 5
    model[0].weight = nn.Parameter(_randn(3, 3))  # (a new parameter object)
    compiled(_randn(4, 3))
    assert counts["staged"] == 6
    compiled(_randn(4, 3))
    assert counts["staged"] == 6 and counts["compiled_calls"] == 8
    model[2].eps = 0.5  # (a module's plain attribute: part of the guard)
    x = _randn(4, 3)
    _assert_close(compiled(x).detach(), model(x).detach())
    assert counts["staged"] == 7
    compiled(x)
    assert counts["staged"] == 7
    torch.compiler.reset()
    assert counts["staged"] == 0
    compiled(_randn(4, 3))
    assert counts["staged"] == 1


def test_dynamic_true_stages_per_shape():
    f = torch.compile(lambda x: x * 2, dynamic=True)
    f(_randn(3))
    f(_randn(4))
    assert f._compile_counts["staged"] == 2


def test_train_eval_switch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Tanh())
    ref = copy.deepcopy(model)
    compiled = torch.compile(model)
    x = _randn(8, 4)
    for training in (True, False, True, False):
        compiled.train(training)
        ref.train(training)
        _assert_close(compiled(x).detach(), ref(x).detach())
    _assert_close(model[1].running_mean, ref[1].running_mean)
    _assert_close(model[1].running_var, ref[1].running_var)
    assert int(model[1].num_batches_tracked) == 2
    assert compiled._compile_counts["staged"] == 2


def test_batchnorm_buffers_updated_in_place():
    bn = nn.BatchNorm2d(3)
    ref = copy.deepcopy(bn)
    mean_buffer = bn.running_mean
    compiled = torch.compile(bn)
    for _ in range(3):
        x = _randn(4, 3, 2, 2)
        compiled(x)
        ref(x)
    assert bn.running_mean is mean_buffer  # (written into, not replaced)
    _assert_close(bn.running_mean, ref.running_mean)
    _assert_close(bn.running_var, ref.running_var)
    assert int(bn.num_batches_tracked) == 3
    assert bn.num_batches_tracked.dtype == np.int64


def test_forward_hooks_run_as_in_eager():
    calls = []
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    compiled = torch.compile(model)
    x = _randn(2, 3)
    compiled(x)
    assert compiled._compile_counts["compiled_calls"] == 1
    handle = model[0].register_forward_hook(lambda m, i, o: calls.append(o.detach()) or o * 2)
    pre = compiled.register_forward_pre_hook(lambda m, i: (i[0] + 1,))
    out = compiled(x)
    want = torch.tanh(F.linear(x + 1, model[0].weight, model[0].bias) * 2)
    _assert_close(out.detach(), want.detach())
    assert len(calls) == 1
    handle.remove()
    pre.remove()
    compiled(x)
    assert compiled._compile_counts["compiled_calls"] == 2


def _data_dependent(x):
    if x.sum() > 0:  # (Python needs the value: a graph break)
        return x * 2
    return x - 1


def _uses_item(x):
    return x * x.sum().item()


@pytest.mark.parametrize("fun", [_data_dependent, _uses_item])
def test_graph_break_runs_eagerly(fun):
    compiled = torch.compile(fun)
    for sign in (1.0, -1.0, 1.0):
        x = (sign * torch.ones(3, dtype=torch.float64)).requires_grad_()
        out = compiled(x)
        out.sum().backward()
        y = x.detach().requires_grad_()
        fun(y).sum().backward()
        _assert_close(out.detach(), fun(y).detach())
        _assert_close(x.grad, y.grad)
    counts = compiled._compile_counts
    assert counts["graph_breaks"] == 1 and counts["eager_calls"] == 3


class _Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8))
        self.bn = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        h = self.bn(self.body(x))
        if h[0, 0] > 0:  # (a graph break: the submodules around it compile)
            h = h * 2
        return self.head(h)


def test_graph_break_in_a_module_compiles_its_submodules():
    torch.manual_seed(0)
    model = _Branchy().double()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model)
    for step in range(6):
        x = _randn(5, 4) * (1 if step % 2 else -1)
        got = _run(compiled, [x.detach().requires_grad_()], seed=0)
        want = _run(ref, [x.detach().requires_grad_()], seed=0)
        got_all = [got[0]] + got[1] + got[2] + got[3]
        for g, w in zip(got_all, [want[0]] + want[1] + want[2] + want[3]):
            _assert_close(g, w)
        model.zero_grad()
        ref.zero_grad()
    counts = compiled._compile_counts
    assert counts["graph_breaks"] == 1 and counts["split_calls"] == 6, counts
    children = {type(e.module).__name__: e.counts for e in compiled._compiled._children.values()}
    assert set(children) == {"Sequential", "BatchNorm1d", "Linear"}
    for child in children.values():
        assert child["staged"] == 1 and child["compiled_calls"] == 6, children
    assert "forward" not in model.body.__dict__  # (set for the calls only)


@pytest.mark.parametrize(
    "fun,cause,line",
    [
        (_data_dependent, "bool()", "if x.sum() > 0"),
        (_uses_item, ".item()", "return x * x.sum().item()"),
    ],
)
def test_fullgraph_raises_naming_the_line(fun, cause, line):
    compiled = torch.compile(fun, fullgraph=True)
    with pytest.raises(GraphBreakError) as info:
        compiled(torch.ones(3))
    message = str(info.value)
    assert "test_torch_compile.py" in message and line in message, message
    assert cause in message, message


def _noisy(x):
    return x + torch.randn(*x.shape)


def test_random_draw_other_than_dropout_breaks():
    with pytest.raises(GraphBreakError, match="random draw"):
        torch.compile(_noisy, fullgraph=True)(torch.ones(3))
    compiled = torch.compile(_noisy)
    torch.manual_seed(5)
    got = [compiled(torch.ones(3)) for _ in range(2)]
    torch.manual_seed(5)
    want = [_noisy(torch.ones(3)) for _ in range(2)]
    for g, w in zip(got, want):
        _assert_close(g, w)
    assert compiled._compile_counts["graph_breaks"] == 1


class _TwoDropouts(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 6), nn.Linear(6, 3)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        h = F.dropout(torch.tanh(self.a(x)), p=0.5, training=self.training)
        return self.drop(self.b(h))


def test_dropout_compiled_with_eager_random_stream():
    torch.manual_seed(0)
    model = _TwoDropouts().double()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, fullgraph=True)
    x = _randn(5, 6)
    masks = []
    for step in range(4):
        got = _run(compiled, [x.detach().requires_grad_()], seed=step // 2)
        after_got = float(torch.rand(()))  # (the stream moved on as eager's did)
        want = _run(ref, [x.detach().requires_grad_()], seed=step // 2)
        assert after_got == float(torch.rand(()))
        _assert_close(got[0], want[0])
        for g, w in zip(got[1] + got[2], want[1] + want[2]):
            _assert_close(g, w)
        model.zero_grad()
        ref.zero_grad()
        masks.append(np.asarray(got[0]) != 0)
    assert (masks[0] == masks[1]).all() and not (masks[1] == masks[2]).all()
    assert compiled._compile_counts == {
        "staged": 1,
        "graph_breaks": 0,
        "compiled_calls": 4,
        "eager_calls": 0,
        "split_calls": 0,
    }
    fractions = []
    big = torch.compile(nn.Dropout(0.3))
    for _ in range(20):
        fractions.append(float((big(torch.ones(1000)) == 0).float().mean()))
    assert abs(np.mean(fractions) - 0.3) < 0.01


OPTIMIZERS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "betas": (0.3, 0.9), "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),  # (eager)
    ("RMSprop", {"lr": 0.01}),  # (eager)
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,options", OPTIMIZERS, ids=lambda v: str(v))
def test_optimizer_step_compiled(name, options, dtype):
    torch.manual_seed(0)
    dtype = getattr(torch, dtype)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).to(dtype)
    ref = copy.deepcopy(model)
    opt = getattr(torch.optim, name)(model.parameters(), **options)
    ref_opt = getattr(torch.optim, name)(ref.parameters(), **options)
    ref_opt.add_param_group({"params": []})  # (an empty group: no parameter, skipped)
    opt.add_param_group({"params": []})
    step = torch.compile(opt.step)
    x = torch.randn(8, 3, dtype=dtype)
    for _ in range(30):
        for m, o, s in ((model, opt, step), (ref, ref_opt, ref_opt.step)):
            o.zero_grad()
            (m(x) ** 2).mean().backward()
            s()
        for p, q in zip(model.parameters(), ref.parameters()):
            np.testing.assert_allclose(
                np.asarray(p.detach()),
                np.asarray(q.detach()),
                rtol=1e-13 if dtype == torch.float64 else 1e-6,
                atol=0,
            )
    for key in ref_opt.state[next(ref.parameters())]:
        mine = opt.state[next(model.parameters())][key]
        _assert_close(mine, ref_opt.state[next(ref.parameters())][key])
    counts = step._compile_counts
    fused = name in ("SGD", "Adam", "AdamW") and not options.get("amsgrad")
    first_eager = name != "SGD" or bool(options.get("momentum"))  # (the state's creation)
    assert counts["compiled_calls"] == (30 - first_eager if fused else 0), counts
    assert counts["staged"] == (1 if fused else 0), counts


def test_optimizer_step_with_closure_and_other_methods_run_eagerly():
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = torch.compile(opt.step)
    zero_grad = torch.compile(opt.zero_grad)

    def closure():
        zero_grad()
        loss = (model(torch.ones(2, 3)) ** 2).sum()
        loss.backward()
        return loss

    loss = step(closure)
    assert float(loss.detach()) > 0 and step._compile_counts["eager_calls"] == 1
    assert zero_grad._compile_counts["eager_calls"] == 1
    zero_grad()
    assert model.weight.grad is None


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown backend 'cudagraphs'"):
        torch.compile(lambda x: x, backend="cudagraphs")
    with pytest.raises(ValueError, match="unknown mode"):
        torch.compile(lambda x: x, mode="fastest")
    with pytest.raises(TypeError, match="expected a function or a Module"):
        torch.compile(3)
    with pytest.raises(TypeError, match="unexpected keyword"):
        torch.compile(lambda x: x, fullgrpah=True)
    f = lambda x: x
    assert torch.compile(f, disable=True) is f
    g = torch.compile(backend="eager")(lambda x: x + 1)
    assert float(g(torch.ones(()))) == 2.0


# ---- training loops ----


def _mlp():
    return nn.Sequential(
        nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2)
    )


def _train(model, opt, steps, xs, ys):
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs[i]), ys[i])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _torch_mlp(real, weights):
    ref = real.nn.Sequential(
        real.nn.Linear(4, 16),
        real.nn.Tanh(),
        real.nn.Linear(16, 16),
        real.nn.ReLU(),
        real.nn.Linear(16, 2),
    ).double()
    with real.no_grad():
        for p, w in zip(ref.parameters(), weights):
            p.copy_(real.from_numpy(w))
    return ref


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_training_loop_matches_eager_and_torch(optimizer):
    real = pytest.importorskip("torch")
    torch.manual_seed(0)
    xs = [_randn(16, 4) for _ in range(6)]
    ys = [torch.randint(0, 2, (16,)) for _ in range(6)]
    eager = _mlp().double()
    weights = [np.asarray(p.detach()).copy() for p in eager.parameters()]
    mine = copy.deepcopy(eager)
    ref = _torch_mlp(real, weights)
    options = {"lr": 0.05, "momentum": 0.9} if optimizer == "SGD" else {"lr": 0.01}
    compiled = torch.compile(mine)
    opts = [
        getattr(torch.optim, optimizer)(eager.parameters(), **options),
        getattr(torch.optim, optimizer)(compiled.parameters(), **options),
        getattr(real.optim, optimizer)(ref.parameters(), **options),
    ]
    for i in range(6):
        want = _train(eager, opts[0], 1, xs[i:], ys[i:])[0]
        got = _train(compiled, opts[1], 1, xs[i:], ys[i:])[0]
        opts[2].zero_grad()
        real_x, real_y = real.from_numpy(np.asarray(xs[i])), real.from_numpy(np.asarray(ys[i]))
        real_loss = real.nn.functional.cross_entropy(ref(real_x), real_y)
        real_loss.backward()
        opts[2].step()
        assert abs(got - want) <= 1e-14 * abs(want)
        assert abs(got - real_loss.item()) <= 1e-12
        for p, q, r in zip(mine.parameters(), eager.parameters(), ref.parameters()):
            _assert_close(p, q)
            np.testing.assert_allclose(
                np.asarray(p.detach()), r.detach().numpy(), rtol=1e-11, atol=1e-13
            )
    assert compiled._compile_counts["staged"] == 1


def _doc_script() -> str:
    text = (ROOT / "docs" / "migration" / "from_pytorch.md").read_text()
    section = text.split("## Training a model, torch style", 1)[1]
    return re.search(r"```\{code-cell\} ipython3\n(.*?)```", section, re.S).group(1)


def test_from_pytorch_training_script_with_compile():
    script = _doc_script()
    line = "model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 2))\n"
    assert line in script
    compiled_script = script.replace(line, line + "model = torch.compile(model)\n")
    outputs = []
    models = []
    for source in (script, compiled_script):
        namespace: dict = {}
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(source, "from_pytorch.md", "exec"), namespace)
        outputs.append(buffer.getvalue())
        models.append(namespace["model"])
    assert outputs[0] == outputs[1]
    assert "accuracy" in outputs[1]
    assert isinstance(models[1], OptimizedModule)
    assert models[1]._compile_counts["compiled_calls"] > 100
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        np.testing.assert_allclose(
            np.asarray(p.detach()), np.asarray(q.detach()), rtol=1e-9, atol=1e-12
        )


def test_backward_reads_saved_residuals_and_double_backward_recomputes():
    # (a recorded compiled forward saves its backward's residuals: the backward graph runs on
    # them, never the forward again; create_graph differentiates the recorded call again)
    from autodiff.staging import call as staging_call

    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    model = torch.compile(copy.deepcopy(eager))
    x = _randn(5, 3, requires_grad=True)
    loss_e = (eager(x) ** 2).sum()
    (gx_e,) = torch.autograd.grad(loss_e, x, create_graph=True)
    loss_e.backward(retain_graph=True)
    calls = []
    real = staging_call.vjp_graph
    staging_call.vjp_graph = lambda *a, **k: calls.append(a) or real(*a, **k)
    try:
        x2 = x.detach().requires_grad_()
        loss_c = (model(x2) ** 2).sum()
        loss_c.backward(retain_graph=True)
        assert calls == []  # (the split backward graph, on the saved residuals)
        (gx_c,) = torch.autograd.grad(loss_c, x2, create_graph=True)
    finally:
        staging_call.vjp_graph = real
    np.testing.assert_allclose(loss_c.detach().numpy(), loss_e.detach().numpy(), rtol=1e-14)
    for p_e, p_c in zip(eager.parameters(), model.parameters()):
        np.testing.assert_allclose(p_c.grad.numpy(), p_e.grad.numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(gx_c.detach().numpy(), gx_e.detach().numpy(), rtol=1e-13)
    # second order: d/dx of sum(dloss/dx), compiled (recomputing) against eager
    (hx_e,) = torch.autograd.grad(gx_e.sum(), x)
    (hx_c,) = torch.autograd.grad(gx_c.sum(), x2)
    np.testing.assert_allclose(hx_c.numpy(), hx_e.numpy(), rtol=1e-12, atol=1e-14)
