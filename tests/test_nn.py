"""autodiff.nn: modules, functional, init, utils, and a torch training script run unchanged.

The script test runs one torch-style training script under real torch and under
`import autodiff as torch` and compares the losses step by step; the other comparisons with
torch check values and gradients of each `nn.functional` function; the rest needs no torch:
gradients by finite differences (`check_grads`), module bookkeeping, state dicts, modes.
"""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import autodiff as ad
from autodiff import nn
from autodiff.nn import functional as F
from autodiff.testing import check_grads
from autodiff.utils.data import DataLoader, TensorDataset, default_collate

# ------------------------------------------------------------------------------ the script


def training_script(torch, data, make_optimizer, init=None, epochs=3):
    """A training loop as a torch user writes it; `torch` is torch or autodiff.

    Returns the loss of every step, the last epoch's accuracy, the final class probabilities
    and the initial weights (as NumPy arrays)."""
    torch.manual_seed(0)
    X = torch.tensor(data["x"])
    labels = torch.tensor(data["labels"])
    targets = torch.tensor(data["targets"])
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(X, labels, targets), batch_size=16
    )

    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(
                torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.Tanh()
            )
            self.classify = torch.nn.Linear(16, 3)
            self.regress = torch.nn.Linear(16, 1)

        def forward(self, x):
            h = self.body(x)
            return self.classify(h), self.regress(h).squeeze(1)

    model = TwoHeads().double()
    if init is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in init.items()})
    initial = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    cross_entropy = torch.nn.CrossEntropyLoss()
    mse = torch.nn.MSELoss()
    optimizer = make_optimizer(torch, model)
    losses = []
    for _ in range(epochs):
        correct = 0
        for xb, yb, tb in loader:
            optimizer.zero_grad()
            logits, prediction = model(xb)
            loss = cross_entropy(logits, yb) + 0.5 * mse(prediction, tb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            correct += (logits.argmax(dim=1) == yb).sum().item()
        accuracy = correct / X.size(0)
    with torch.no_grad():
        probabilities = torch.softmax(model(X)[0], dim=1)
    return losses, accuracy, probabilities.numpy(), initial


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    return {
        "x": x,
        "labels": (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1),
        "targets": np.sin(x[:, 3]) + 0.1 * rng.standard_normal(n),
    }


OPTIMIZERS = {
    "sgd-momentum": lambda torch, model: torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
    "adam": lambda torch, model: torch.optim.Adam(model.parameters(), lr=0.01),
}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_training_script_runs_unchanged_and_matches_torch(optimizer):
    torch = pytest.importorskip("torch")
    data = _data()
    make = OPTIMIZERS[optimizer]
    ref_losses, ref_accuracy, ref_probs, init = training_script(torch, data, make)
    losses, accuracy, probs, _ = training_script(ad, data, make, init=init)
    assert len(losses) == len(ref_losses) == 9
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-10)
    assert accuracy == ref_accuracy
    np.testing.assert_allclose(probs, ref_probs, rtol=1e-9, atol=1e-12)
    assert losses[-1] < losses[0]


def test_training_script_is_deterministic_under_manual_seed():
    data = _data()
    first = training_script(ad, data, OPTIMIZERS["sgd-momentum"], epochs=1)
    second = training_script(ad, data, OPTIMIZERS["sgd-momentum"], epochs=1)
    assert first[0] == second[0]
    for name in first[3]:
        np.testing.assert_array_equal(first[3][name], second[3][name])


def test_linear_init_follows_torch_bounds():
    layer = nn.Linear(9, 50)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert w.shape == (50, 9) and b.shape == (50,) and w.dtype == np.float64
    assert np.abs(w).max() <= 1 / 3 and np.abs(b).max() <= 1 / 3  # 1/sqrt(fan_in) both
    assert np.abs(w).max() > 0.25 and np.std(w) > 0.15  # (uniform, not a constant)
    assert nn.Linear(2, 3, dtype=np.float32).weight.dtype == np.float32
    assert nn.Linear(2, 3, bias=False).bias is None


# ------------------------------------------------------------------------------ functional

RNG = np.random.default_rng(1)
X23 = RNG.standard_normal((2, 3))
X34 = RNG.standard_normal((3, 4)) * 3
P34 = RNG.uniform(0.05, 0.95, (3, 4))
LABELS = np.array([0, 3, 1])
SOFT = RNG.dirichlet(np.ones(4), 3)
W4 = np.array([0.5, 1.0, 2.0, 0.25])

# name -> (function of the differentiable args and a namespace's F, the args)
FUNCTIONAL_CASES = {
    "relu": (lambda f, x: f.relu(x), (X34,)),
    "leaky_relu": (lambda f, x: f.leaky_relu(x, 0.2), (X34,)),
    "elu": (lambda f, x: f.elu(x, alpha=0.7), (X34,)),
    "gelu": (lambda f, x: f.gelu(x), (X34,)),
    "gelu-tanh": (lambda f, x: f.gelu(x, approximate="tanh"), (X34,)),
    "silu": (lambda f, x: f.silu(x), (X34,)),
    "softplus": (lambda f, x: f.softplus(x * 10, beta=0.5, threshold=8.0), (X34,)),
    "sigmoid": (lambda f, x: f.sigmoid(x), (X34,)),
    "tanh": (lambda f, x: f.tanh(x), (X34,)),
    "softmax": (lambda f, x: f.softmax(x, dim=0), (X34,)),
    "log_softmax": (lambda f, x: f.log_softmax(x, dim=1), (X34,)),
    "linear": (lambda f, x, w, b: f.linear(x, w, b), (X23, X34[:, :3], X34[:, 0])),
    "layer_norm": (
        lambda f, x, w, b: f.layer_norm(x, (4,), w, b, eps=1e-3),
        (X34, W4, X34[0]),
    ),
    "normalize": (lambda f, x: f.normalize(x, p=3.0, dim=0), (X34,)),
    "pad": (lambda f, x: f.pad(x, (1, -1, 2, 0), value=0.5), (X34,)),
    "pad-reflect": (lambda f, x: f.pad(x[None], (2, 1), mode="reflect"), (X34,)),
    "pad-replicate": (lambda f, x: f.pad(x[None], (2, 1), mode="replicate"), (X34,)),
    "pad-circular": (lambda f, x: f.pad(x[None], (2, 1), mode="circular"), (X34,)),
    "mse_loss": (lambda f, x, y: f.mse_loss(x, y), (X34, P34)),
    "l1_loss-sum": (lambda f, x, y: f.l1_loss(x, y, reduction="sum"), (X34, P34)),
    "huber_loss": (lambda f, x, y: f.huber_loss(x, y, delta=0.8, reduction="none"), (X34, P34)),
    "smooth_l1_loss": (lambda f, x, y: f.smooth_l1_loss(x, y, beta=0.5), (X34, P34)),
    "bce": (lambda f, p, y: f.binary_cross_entropy(p, y), (P34, SOFT)),
    "bce_with_logits": (
        lambda f, x, y: f.binary_cross_entropy_with_logits(x, y, reduction="sum"),
        (X34, SOFT),
    ),
}
# (class indices, and the weights torch does not differentiate, are passed as constants)
INDEX_CASES = {
    "bce-weight-none": lambda f, t, x: f.binary_cross_entropy(
        f.sigmoid(x), t(SOFT), weight=t(SOFT), reduction="none"
    ),
    "bce_with_logits-weights": lambda f, t, x: f.binary_cross_entropy_with_logits(
        x, t(SOFT), weight=t(SOFT[0]), pos_weight=t(W4)
    ),
    "cross_entropy": lambda f, t, x: f.cross_entropy(x, t(LABELS)),
    "cross_entropy-weight": lambda f, t, x: f.cross_entropy(x, t(LABELS), weight=t(W4)),
    "cross_entropy-ignore-sum": lambda f, t, x: f.cross_entropy(
        x, t(np.array([0, -100, 2])), reduction="sum"
    ),
    "cross_entropy-smoothing": lambda f, t, x: f.cross_entropy(
        x, t(LABELS), weight=t(W4), label_smoothing=0.2
    ),
    "cross_entropy-smoothing-none": lambda f, t, x: f.cross_entropy(
        x, t(np.array([0, 1, -100])), label_smoothing=0.1, reduction="none"
    ),
    "cross_entropy-probabilities": lambda f, t, x: f.cross_entropy(
        x, t(SOFT), weight=t(W4), label_smoothing=0.1
    ),
    "cross_entropy-1d": lambda f, t, x: f.cross_entropy(x[0], t(np.array(2))),
    "cross_entropy-spatial": lambda f, t, x: f.cross_entropy(
        x.reshape(1, 3, 2, 2), t(np.array([[[0, 2], [1, 1]]]))
    ),
    "nll_loss-weight-mean": lambda f, t, x: f.nll_loss(x, t(LABELS), weight=t(W4)),
    "one_hot": lambda f, t, x: x * f.one_hot(t(LABELS), 4),
    "embedding-padding": lambda f, t, x: f.embedding(t(np.array([[0, 2], [1, 0]])), x, 0),
}


def _torch_and_ours(torch):
    ours = lambda a: ad.tensor(np.asarray(a))
    theirs = lambda a: torch.tensor(np.asarray(a))
    return ours, theirs


def _compare_with_torch(torch, run_ours, run_theirs, args):
    xs = [ad.tensor(a, requires_grad=True) for a in args]
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    out, ref = run_ours(*xs), run_theirs(*ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    ct = np.random.default_rng(2).standard_normal(np.shape(ref.detach().numpy()))
    grads = ad.autograd.grad(out, xs, ad.tensor(ct), allow_unused=True)
    ref_grads = torch.autograd.grad(ref, ts, torch.tensor(ct), allow_unused=True)
    for g, r in zip(grads, ref_grads):
        if r is None:
            assert g is None or not np.any(g.numpy())
        else:
            np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("name", sorted(FUNCTIONAL_CASES))
def test_functional_matches_torch(name):
    torch = pytest.importorskip("torch")
    f, args = FUNCTIONAL_CASES[name]
    _compare_with_torch(torch, lambda *a: f(F, *a), lambda *a: f(torch.nn.functional, *a), args)


@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_functional_with_indices_matches_torch(name):
    torch = pytest.importorskip("torch")
    f = INDEX_CASES[name]
    ours, theirs = _torch_and_ours(torch)
    _compare_with_torch(
        torch, lambda x: f(F, ours, x), lambda x: f(torch.nn.functional, theirs, x), (X34,)
    )


@pytest.mark.parametrize("name", sorted(FUNCTIONAL_CASES))
def test_functional_gradients(name):
    f, args = FUNCTIONAL_CASES[name]
    order = 2 if name in ("gelu", "softplus", "layer_norm", "cross_entropy", "bce") else 1
    check_grads(lambda *a: f(F, *a), args, order=order, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["cross_entropy-smoothing", "cross_entropy-probabilities"])
def test_cross_entropy_gradients(name):
    f = INDEX_CASES[name]
    check_grads(lambda x: f(F, np.asarray, x), (X34,), order=2, modes=("fwd", "rev"))


def test_functional_errors_and_warnings():
    x = ad.tensor(X34)
    with pytest.raises(ValueError, match="mean2 is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="mean2")
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, ad.tensor([0, 7, 1]))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(x, x)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(x, 1.5)
    with pytest.raises(RuntimeError, match="Given normalized_shape=\\[3\\]"):
        F.layer_norm(x, (3,))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        F.one_hot(x)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ad.tensor([5]), x)
    with pytest.warns(UserWarning, match=r"target size \(torch.Size\(\[3\]\)\) that is different"):
        F.mse_loss(ad.zeros(3, 1), ad.zeros(3))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        assert F.softmax(x).shape == (3, 4)


def test_relu_inplace_and_dropout_modes():
    x = ad.tensor([-1.0, 2.0])
    assert F.relu(x, inplace=True) is x and x.tolist() == [0.0, 2.0]
    ad.manual_seed(3)
    drop = nn.Dropout(0.25)
    big = ad.ones(20000)
    out = drop(big).numpy()
    assert set(np.unique(out)) <= {0.0, 4 / 3}
    assert abs((out == 0).mean() - 0.25) < 0.02
    assert drop.eval()(big) is big
    assert not drop.training and drop.train().training
    assert (nn.Dropout(1.0)(big).numpy() == 0).all()


# ------------------------------------------------------------------------------ modules


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(ad.ones(3))
        self.inner = nn.Linear(3, 3)
        self.register_buffer("count", ad.zeros(1))
        self.register_buffer("scratch", ad.zeros(1), persistent=False)
        self.note = "not a parameter"

    def forward(self, x):
        return self.inner(x) * self.scale


def test_module_registers_parameters_buffers_and_children():
    block = _Block()
    assert [n for n, _ in block.named_parameters()] == ["scale", "inner.weight", "inner.bias"]
    assert [n for n, _ in block.named_buffers()] == ["count", "scratch"]
    assert [n for n, _ in block.named_modules()] == ["", "inner"]
    assert list(block.children()) == [block.inner]
    assert list(block.state_dict()) == ["scale", "count", "inner.weight", "inner.bias"]
    assert isinstance(block.scale, nn.Parameter) and isinstance(block.scale, ad.Tensor)
    block.scale = None
    assert block.scale is None and [n for n, _ in block.named_parameters()][0] == "inner.weight"
    with pytest.raises(TypeError, match="cannot assign 'torch.DoubleTensor' as parameter 'scale'"):
        block.scale = ad.ones(3)
    with pytest.raises(TypeError, match="cannot assign 'str' as child module 'inner'"):
        block.inner = "x"
    del block.inner
    assert not hasattr(block, "inner") and list(block.children()) == []
    with pytest.raises(AttributeError, match="'_Block' object has no attribute 'missing'"):
        block.missing  # noqa: B018


def test_module_needs_init_and_forward():
    class NoInit(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ad.ones(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        NoInit()
    with pytest.raises(NotImplementedError, match='missing the required "forward" function'):
        nn.Module()(1)


def test_shared_modules_and_parameters_are_listed_once():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(model.parameters())) == 2
    assert [n for n, _ in model.named_modules()] == ["", "0", "1"]
    assert len(list(model.named_modules(remove_duplicate=False))) == 4
    assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_state_dict_round_trip_and_sharing():
    a, b = _Block(), _Block()
    state = a.state_dict()
    assert not isinstance(state["scale"], nn.Parameter) and not state["scale"].requires_grad
    with ad.no_grad():
        a.scale.mul_(2.0)
    assert state["scale"].tolist() == [2.0, 2.0, 2.0]  # (shares memory, as torch)
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    x = ad.tensor(X23[:, :3] if X23.shape[1] == 3 else X23)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    assert b.scale is not a.scale and isinstance(b.scale, nn.Parameter)


def test_load_state_dict_errors_leave_the_module_unchanged():
    model = _Block()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    bad = {k: ad.ones(*v.shape) for k, v in model.state_dict().items()}
    del bad["count"]
    bad["extra"] = ad.ones(1)
    bad["inner.weight"] = ad.ones(2, 2)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(bad)
    assert str(info.value) == (
        "Error(s) in loading state_dict for _Block:\n"
        '\tMissing key(s) in state_dict: "count". \n'
        '\tUnexpected key(s) in state_dict: "extra". \n'
        "\tsize mismatch for inner.weight: copying a param with shape torch.Size([2, 2]) from "
        "checkpoint, the shape in current model is torch.Size([3, 3])."
    )
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    del bad["inner.weight"]
    result = model.load_state_dict(bad, strict=False)
    assert result.missing_keys == ["count", "inner.weight"] and result.unexpected_keys == ["extra"]
    assert model.scale.tolist() == [1.0, 1.0, 1.0] and model.count.tolist() == [0.0]


def test_train_eval_requires_grad_apply_zero_grad():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(), nn.Sequential(nn.Dropout()))
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("no")
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    model.requires_grad_()
    seen = []
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "Dropout", "Dropout", "Sequential", "Sequential"]
    model(ad.ones(1, 2)).sum().backward()
    grads = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=False)
    assert all(p.grad is g and not g.numpy().any() for p, g in zip(model.parameters(), grads))
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_dtype_conversion_keeps_parameter_objects():
    model = nn.Sequential(nn.Linear(2, 2), nn.Embedding(3, 2))
    model.register_buffer("steps", ad.tensor([1, 2]))
    params = list(model.parameters())
    model[0](ad.ones(1, 2)).sum().backward()
    assert model.float() is model
    assert [p.dtype for p in model.parameters()] == [np.float32] * 3
    assert list(model.parameters()) == params and params[0].grad.dtype == np.float32
    assert model.steps.dtype == np.int64  # (integer buffers keep their dtype, as torch)
    model.to(np.float64)
    assert [p.dtype for p in model.parameters()] == [np.float64] * 3
    model.to("cpu")
    with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
        model.to("cuda")
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        model.to(np.int32)


def test_parameter_copy_and_pickle():
    p = nn.Parameter(ad.tensor([1.0, 2.0]))
    (p * p).sum().backward()
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad and q.grad is None
    assert q.tolist() == [1.0, 2.0] and not np.shares_memory(q.numpy(force=True), p._value)
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.requires_grad and r.tolist() == [1.0, 2.0]
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    frozen = nn.Parameter(ad.tensor([1, 2]), requires_grad=False)
    assert not frozen.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        nn.Parameter(ad.tensor([1, 2]))
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    clone = pickle.loads(pickle.dumps(model))
    x = ad.ones(1, 2)
    np.testing.assert_array_equal(clone(x).detach().numpy(), model(x).detach().numpy())
    twin = copy.deepcopy(model)
    assert twin[0].weight is not model[0].weight


def test_containers():
    layers = [nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)]
    seq = nn.Sequential(*layers)
    assert seq[0] is layers[0] and seq[-1] is layers[2] and len(seq) == 3
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == layers[1:]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1"]
    seq.append(nn.Tanh()).insert(0, nn.Identity())
    assert [type(m).__name__ for m in seq] == ["Identity", "Linear", "Linear", "Tanh"]
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("first", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in named.named_parameters()] == ["first.weight", "first.bias"]
    items = nn.ModuleList([nn.Linear(1, 1)])
    items += [nn.ReLU()]
    items.append(nn.Tanh())
    items.insert(1, nn.Identity())
    assert [type(m).__name__ for m in items] == ["Linear", "Identity", "ReLU", "Tanh"]
    assert type(items[1:]) is nn.ModuleList and len(list(items.parameters())) == 2
    del items[0]
    assert [n for n, _ in items.named_children()] == ["0", "1", "2"]
    heads = nn.ModuleDict([("a", nn.Linear(1, 1))])
    heads["b"] = nn.Linear(1, 2)
    heads.update({"c": nn.ReLU()})
    assert list(heads.keys()) == ["a", "b", "c"] and "b" in heads and len(heads) == 3
    assert [n for n, _ in heads.named_parameters()] == ["a.weight", "a.bias", "b.weight", "b.bias"]
    assert heads.pop("a") is not None and list(heads) == ["b", "c"]


def test_reprs_match_torch():
    torch = pytest.importorskip("torch")

    def build(m):
        return m.Sequential(
            m.Linear(2, 3),
            m.ReLU(inplace=True),
            m.ModuleList([m.Linear(3, 3) for _ in range(3)] + [m.GELU(approximate="tanh")]),
            m.ModuleDict({"drop": m.Dropout(0.1), "norm": m.LayerNorm((3,), eps=1e-6)}),
            m.Embedding(10, 3, padding_idx=0),
            m.Softmax(dim=1),
            m.LogSoftmax(dim=-1),
            m.Flatten(),
            m.Identity(),
            m.LeakyReLU(0.2, inplace=True),
            m.ELU(),
            m.SiLU(),
            m.Softplus(beta=2.0),
            m.Sigmoid(),
            m.Tanh(),
            m.CrossEntropyLoss(),
            m.MSELoss(),
            m.Linear(3, 1, bias=False),
        )

    assert repr(build(nn)) == repr(build(torch.nn))


def test_modules_under_transforms():
    model = nn.Sequential(nn.Linear(3, 5), nn.GELU(), nn.LayerNorm(5), nn.Linear(5, 2))
    xs = RNG.standard_normal((4, 3))

    def loss(x):
        return F.cross_entropy(model(x[None]), np.array([1]))

    per_example = ad.vmap(ad.grad(loss))(xs)
    x = ad.tensor(xs, requires_grad=True)
    F.cross_entropy(model(x), ad.tensor([1, 1, 1, 1]), reduction="sum").backward()
    np.testing.assert_allclose(np.asarray(per_example.detach()), x.grad.numpy(), rtol=1e-12)
    check_grads(lambda x: model(x), (xs,), order=2, modes=("fwd", "rev"))
    jitted = ad.jit(lambda x: nn.functional.softplus(model(x)).sum())
    expected = F.softplus(model(xs)).sum().detach()
    np.testing.assert_allclose(jitted(xs).detach().numpy(), expected.numpy(), rtol=1e-12)


def test_embedding_padding_row_gets_no_gradient():
    emb = nn.Embedding(4, 2, padding_idx=-1)
    assert emb.padding_idx == 3 and emb.weight[3].tolist() == [0.0, 0.0]
    emb(ad.tensor([[3, 1], [1, 0]])).sum().backward()
    assert emb.weight.grad.tolist() == [[1.0, 1.0], [2.0, 2.0], [0.0, 0.0], [0.0, 0.0]]
    pretrained = nn.Embedding.from_pretrained(ad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert not pretrained.weight.requires_grad and pretrained(ad.tensor([1])).tolist() == [[3, 4]]


def test_loss_modules_hold_weights_as_buffers():
    loss = nn.CrossEntropyLoss(weight=ad.tensor(W4), reduction="sum", label_smoothing=0.1)
    assert [n for n, _ in loss.named_buffers()] == ["weight"]
    x = ad.tensor(X34)
    assert float(loss(x, ad.tensor(LABELS))) == float(
        F.cross_entropy(x, ad.tensor(LABELS), weight=ad.tensor(W4), reduction="sum",
                        label_smoothing=0.1)
    )  # fmt: skip
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.MSELoss(size_average=False).reduction == "sum"


# ------------------------------------------------------------------------------ init, utils


def test_init_functions():
    w = ad.empty(40, 30)
    nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain("tanh"))
    assert np.abs(w.numpy()).max() <= 5 / 3 * np.sqrt(6 / 70)
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert 0.8 < w.numpy().std() / np.sqrt(2 / 40) < 1.2
    assert nn.init.constant_(w, 0.5).numpy().max() == 0.5
    assert nn.init.zeros_(w).numpy().max() == 0 and nn.init.ones_(w).numpy().min() == 1
    assert nn.init.eye_(ad.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    p = nn.Parameter(ad.empty(3, 3))
    assert nn.init.normal_(p, 1.0, 0.0) is p and p.tolist() == [[1.0] * 3] * 3 and p.is_leaf
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_normal_(ad.empty(3))
    with pytest.raises(ValueError, match="Mode fan_middle not supported"):
        nn.init.kaiming_uniform_(w, mode="fan_middle")


def test_clip_grad_norm_and_value():
    a, b = nn.Parameter(ad.zeros(2)), nn.Parameter(ad.zeros(1))
    a.grad, b.grad = ad.tensor([3.0, 0.0]), ad.tensor([4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=2.5)
    assert float(total) == 5.0
    np.testing.assert_allclose(a.grad.numpy(), [3 * 2.5 / (5 + 1e-6), 0.0])
    np.testing.assert_allclose(b.grad.numpy(), [4 * 2.5 / (5 + 1e-6)])
    assert float(nn.utils.clip_grad_norm_(a, 10.0, norm_type="inf")) == pytest.approx(1.5, 1e-6)
    nn.utils.clip_grad_value_([a, b], 0.5)
    assert b.grad.tolist() == [0.5]
    a.grad = ad.tensor([np.inf, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)


def test_parameters_to_vector_round_trip():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = nn.utils.parameters_to_vector(model.parameters())
    assert vec.shape == (11,) and vec.requires_grad
    nn.utils.vector_to_parameters(ad.arange(11.0), model.parameters())
    assert model[0].weight.tolist() == [[0, 1, 2], [3, 4, 5]] and model[1].bias.tolist() == [10]
    with pytest.raises(ValueError, match="expected a vector of 11 elements"):
        nn.utils.vector_to_parameters(ad.zeros(3), model.parameters())


def test_data_loader():
    x, y = ad.arange(10.0).reshape(5, 2), ad.tensor([0, 1, 0, 1, 1])
    data = TensorDataset(x, y)
    batches = list(DataLoader(data, batch_size=2))
    assert len(batches) == 3 and batches[2][0].tolist() == [[8.0, 9.0]]
    assert len(DataLoader(data, batch_size=2, drop_last=True)) == 2
    ad.manual_seed(0)
    shuffled = [b[1] for b in DataLoader(data, batch_size=5, shuffle=True)][0]
    assert sorted(shuffled.tolist()) == [0, 0, 1, 1, 1]
    rows = sorted(
        r for b in DataLoader(data, batch_size=2, shuffle=True) for r in b[0][:, 0].tolist()
    )
    assert rows == [0.0, 2.0, 4.0, 6.0, 8.0]
    pairs = [(ad.tensor([float(i)]), {"k": i}) for i in range(3)]
    assert default_collate(pairs)[1]["k"].tolist() == [0, 1, 2]
    with pytest.raises(NotImplementedError, match="sampler is not supported"):
        DataLoader(data, sampler=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(DataLoader(data, batch_size=4, num_workers=2))) == 2


def test_functional_call_gives_per_example_parameter_gradients():
    from autodiff.nn.utils.stateless import functional_call

    ad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    params = {name: p.detach() for name, p in model.named_parameters()}
    xs, labels = RNG.standard_normal((5, 3)), np.array([0, 1, 1, 0, 1])

    def loss(params, x, label):
        logits = functional_call(model, params, (x[None],))
        return F.cross_entropy(logits, label[None])

    per_example = ad.vmap(ad.grad(loss), in_axes=(None, 0, 0))(params, xs, labels)
    for i in range(5):
        model.zero_grad()
        F.cross_entropy(model(ad.tensor(xs[i : i + 1])), ad.tensor(labels[i : i + 1])).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(np.asarray(per_example[name][i]), p.grad.numpy(), rtol=1e-12)
    assert all(p is q for p, q in zip(model.parameters(), model.parameters()))
    assert isinstance(model[0].weight, nn.Parameter)  # (restored)
    square = nn.Linear(3, 3)
    tied = nn.Sequential(square, nn.Tanh(), square)
    shifted = {"0.weight": ad.zeros(3, 3), "0.bias": ad.ones(3)}  # (also 2.weight, 2.bias)
    assert functional_call(tied, shifted, ad.ones(1, 3)).tolist() == [[1.0, 1.0, 1.0]]
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(model, {"0.weight": ad.zeros(4, 3)}, ad.ones(1, 3), strict=True)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        functional_call(model, {"nope": ad.zeros(1)}, ad.ones(1, 3))
