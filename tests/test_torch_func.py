"""autodiff.func against torch.func: the tutorials' programs run unchanged on both.

Each program is written once, as torch.func code taking the `torch` module as an argument;
it runs with real torch and with `autodiff` as `torch`, from the same data and weights (drawn
by NumPy, copied into each library's modules), and the results must agree: float64 to
1e-10, float32 to 1e-5. The programs follow PyTorch's torch.func tutorials (per-sample
gradients, Jacobians and Hessians, neural tangent kernels, model ensembling), shrunk to
test sizes. Then torch.func's conventions one by one, and the torch-face gaps of issue 39.
"""

from __future__ import annotations

import copy
from functools import partial

import numpy as np
import pytest

import autodiff
import autodiff.func

torch = pytest.importorskip("torch")


def _numpy(tree):
    """Results as NumPy arrays (nested lists, tuples and dicts kept), from either library."""
    if isinstance(tree, dict):
        return {k: _numpy(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_numpy(v) for v in tree) if type(tree) in (list, tuple) else tree
    return np.asarray(tree.detach().numpy())


def _assert_same(ours, theirs, tol: float) -> None:
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs)  # (torch's order: the dicts' own)
        for k in theirs:
            _assert_same(ours[k], theirs[k], tol)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b, tol)
    else:
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def _run_both(program, *args, tol: float = 1e-10):
    ours = _numpy(program(autodiff, *args))
    theirs = _numpy(program(torch, *args))
    _assert_same(ours, theirs, tol)
    return ours


def _init(lib, model, seed: int, scale: float = 0.3):
    """The same weights in either library's module, by parameter name and shape."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for _, p in model.named_parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)) * scale, dtype=p.dtype))
    return model


def _data(seed: int, *shape, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- the tutorials ----------------------------------------------------------------------------


def per_sample_gradients(torch, data, targets, dtype_name):
    nn, F = torch.nn, torch.nn.functional
    functional_call, vmap, grad = torch.func.functional_call, torch.func.vmap, torch.func.grad
    dtype = getattr(torch, dtype_name)

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.conv2 = nn.Conv2d(4, 6, 3, 1)
            self.fc1 = nn.Linear(6 * 3 * 3, 8)
            self.fc2 = nn.Linear(8, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(x)
            x = self.conv2(x)
            x = F.relu(x)
            x = F.max_pool2d(x, 2)
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.fc2(x)
            return F.log_softmax(x, dim=1)

    def loss_fn(predictions, targets):
        return F.nll_loss(predictions, targets)

    model = _init(torch, SimpleCNN().to(dtype), 0)
    data, targets = torch.tensor(data, dtype=dtype), torch.tensor(targets)

    def compute_grad(sample, target):
        prediction = model(sample.unsqueeze(0))
        loss = loss_fn(prediction, target.unsqueeze(0))
        return torch.autograd.grad(loss, list(model.parameters()))

    per_sample_grads = [compute_grad(data[i], targets[i]) for i in range(len(data))]
    per_sample_grads = [torch.stack(shards) for shards in zip(*per_sample_grads)]

    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return loss_fn(predictions, targets)

    ft_compute_grad = grad(compute_loss)
    ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
    ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
    for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads, ft_per_sample_grads.values()):
        assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=1e-6, rtol=1e-5)
    return ft_per_sample_grads


@pytest.mark.parametrize("dtype_name, tol", [("float64", 1e-10), ("float32", 1e-5)])
def test_per_sample_gradients(dtype_name, tol):
    data = _data(1, 5, 1, 10, 10)
    targets = np.random.default_rng(2).integers(0, 10, 5)
    grads = _run_both(per_sample_gradients, data, targets, dtype_name, tol=tol)
    assert list(grads) == [
        "conv1.weight",
        "conv1.bias",
        "conv2.weight",
        "conv2.bias",
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
        "fc2.bias",
    ]
    assert grads["fc1.weight"].shape == (5, 8, 54)


def jacobians(torch, weight, bias, x, xs):
    F = torch.nn.functional
    vmap, vjp, jacrev, jacfwd = (
        torch.func.vmap,
        torch.func.vjp,
        torch.func.jacrev,
        torch.func.jacfwd,
    )

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()

    weight, bias, x, xs = (torch.tensor(a) for a in (weight, bias, x, xs))
    unit_vectors = torch.eye(len(bias), dtype=x.dtype)
    _, vjp_fn = vjp(partial(predict, weight, bias), x)
    (ft_jacobian,) = vmap(vjp_fn)(unit_vectors)
    jac_rev = jacrev(predict, argnums=2)(weight, bias, x)
    assert torch.allclose(ft_jacobian, jac_rev)
    ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
    jac_fwd = jacfwd(predict, argnums=2)(weight, bias, x)

    compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
    batch_jacobian0 = compute_batch_jacobian(weight, bias, xs)

    def predict_with_output_summed(weight, bias, x):
        return predict(weight, bias, x).sum(0)

    batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, xs)
    batch_jacobian1 = batch_jacobian1.movedim(1, 0)
    assert torch.allclose(batch_jacobian0, batch_jacobian1)
    batch_fwd = vmap(jacfwd(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, xs)
    return ft_jacobian, ft_jac_weight, ft_jac_bias, jac_fwd, batch_jacobian0, batch_fwd


def test_jacobians():
    weight, bias, x, xs = _data(3, 5, 4), _data(4, 5), _data(5, 4), _data(6, 3, 4)
    jac, jac_w, jac_b, jac_fwd, batch, batch_fwd = _run_both(jacobians, weight, bias, x, xs)
    assert jac_w.shape == (5, 5, 4) and jac_b.shape == (5, 5) and batch.shape == (3, 5, 4)
    np.testing.assert_allclose(jac_fwd, jac, rtol=1e-12)


def hessians(torch, weight, bias, x, xs, tangent):
    F = torch.nn.functional
    func = torch.func
    vmap, jacrev, jacfwd, hessian = func.vmap, func.jacrev, func.jacfwd, func.hessian

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()

    weight, bias, x, xs, tangent = (torch.tensor(a) for a in (weight, bias, x, xs, tangent))
    hess_api = hessian(predict, argnums=2)(weight, bias, x)
    hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
    hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
    assert torch.allclose(hess_api, hess_fwdfwd) and torch.allclose(hess_api, hess_revrev)
    compute_batch_hessian = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))
    batch_hess = compute_batch_hessian(weight, bias, xs)

    def f(x):
        return x.sin().sum()

    def hvp(f, primals, tangents):
        return func.jvp(func.grad(f), primals, tangents)[1]

    def hvp_revrev(f, primals, tangents):
        _, vjp_fn = func.vjp(func.grad(f), *primals)
        return vjp_fn(*tangents)

    (revrev,) = hvp_revrev(f, (x,), (tangent,))
    return hess_api, batch_hess, hvp(f, (x,), (tangent,)), revrev


def test_hessians():
    weight, bias, x, xs, tangent = (
        _data(3, 5, 4),
        _data(4, 5),
        _data(5, 4),
        _data(6, 3, 4),
        _data(7, 4),
    )
    hess, batch, hvp, revrev = _run_both(hessians, weight, bias, x, xs, tangent)
    assert hess.shape == (5, 4, 4) and batch.shape == (3, 5, 4, 4)
    np.testing.assert_allclose(hvp, -np.sin(_data(5, 4)) * tangent, rtol=1e-12)
    np.testing.assert_allclose(revrev, hvp, rtol=1e-12)


def neural_tangent_kernels(torch, x_train, x_test):
    nn = torch.nn
    func = torch.func
    functional_call, vmap, vjp, jvp, jacrev = (
        func.functional_call,
        func.vmap,
        func.vjp,
        func.jvp,
        func.jacrev,
    )

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(2, 3, (3, 3))
            self.conv2 = nn.Conv2d(3, 3, (3, 3))
            self.fc = nn.Linear(3 * 4 * 4, 4)

        def forward(self, x):
            x = self.conv1(x)
            x = x.relu()
            x = self.conv2(x)
            x = x.flatten(1)
            return self.fc(x)

    net = _init(torch, CNN().double(), 8)
    x_train, x_test = torch.tensor(x_train), torch.tensor(x_test)
    params = {k: v.detach() for k, v in net.named_parameters()}

    def fnet_single(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2):
        jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
        jac1 = jac1.values()
        jac1 = [j.flatten(2) for j in jac1]
        jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
        jac2 = jac2.values()
        jac2 = [j.flatten(2) for j in jac2]
        result = torch.stack([torch.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2)])
        return result.sum(0)

    def empirical_ntk_ntk_vps(func, params, x1, x2):
        def get_ntk(x1, x2):
            def func_x1(params):
                return func(params, x1)

            def func_x2(params):
                return func(params, x2)

            output, vjp_fn = vjp(func_x1, params)

            def get_ntk_slice(vec):
                vjps = vjp_fn(vec)
                _, jvps = jvp(func_x2, (params,), vjps)
                return jvps

            basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(
                output.numel(), -1
            )
            return vmap(get_ntk_slice)(basis)

        return vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)

    result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
    result_vps = empirical_ntk_ntk_vps(fnet_single, params, x_train, x_test)
    assert torch.allclose(result, result_vps, atol=1e-8)
    return result, result_vps


def test_neural_tangent_kernels():
    ntk, ntk_vps = _run_both(neural_tangent_kernels, _data(9, 4, 2, 8, 8), _data(10, 3, 2, 8, 8))
    assert ntk.shape == (4, 3, 4, 4)


def model_ensembling(torch, data, minibatch_index):
    nn, F = torch.nn, torch.nn.functional
    stack_module_state, functional_call, vmap = (
        torch.func.stack_module_state,
        torch.func.functional_call,
        torch.func.vmap,
    )

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 8)
            self.fc2 = nn.Linear(8, 8)
            self.fc3 = nn.Linear(8, 3)

        def forward(self, x):
            x = x.flatten(1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.fc2(x)
            x = F.relu(x)
            return self.fc3(x)

    num_models = 4
    data = torch.tensor(data)
    models = [_init(torch, SimpleMLP().double(), 20 + i) for i in range(num_models)]
    minibatches = data[:num_models]
    predictions_diff_minibatch_loop = [model(mb) for model, mb in zip(models, minibatches)]
    minibatch = data[minibatch_index]
    predictions2 = [model(minibatch) for model in models]

    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0])
    base_model = base_model.to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    assert [p.size(0) for p in params.values()] == [num_models] * 6
    predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
    assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop))
    predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    assert torch.allclose(predictions2_vmap, torch.stack(predictions2))
    return predictions1_vmap, predictions2_vmap, params


def test_model_ensembling():
    first, second, params = _run_both(model_ensembling, _data(11, 6, 5, 1, 4, 4), 0)
    assert first.shape == (4, 5, 3) and second.shape == (4, 5, 3)
    assert list(params) == [
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
        "fc2.bias",
        "fc3.weight",
        "fc3.bias",
    ]


# ---- torch.func's conventions -----------------------------------------------------------------


def _pair(seed: int, *shape):
    a = _data(seed, *shape)
    return autodiff.tensor(a), torch.tensor(a)


def test_dict_results_keep_insertion_order():
    (w, tw), (b, tb) = _pair(30, 3), _pair(31, 3)

    def loss(p):
        return (p["w"].sin() * p["b"]).sum()

    ours = autodiff.func.grad(loss)({"w": w, "b": b})
    theirs = torch.func.grad(loss)({"w": tw, "b": tb})
    assert list(ours) == list(theirs) == ["w", "b"]
    _assert_same(_numpy(ours), _numpy(theirs), 1e-12)
    # outputs of the function too: vmap's and jacrev's dicts are in the function's order
    out = autodiff.func.vmap(lambda x: {"z": x, "a": 2 * x})(w)
    assert list(out) == ["z", "a"]
    jac = autodiff.func.jacrev(lambda p: {"z": p["w"] * p["b"], "a": p["b"]})({"w": w, "b": b})
    assert list(jac) == ["z", "a"] and list(jac["z"]) == ["w", "b"]
    (ct,) = autodiff.func.vjp(lambda p: p, {"w": w, "b": b})[1]({"w": w, "b": b})
    assert list(ct) == ["w", "b"]
    # the JAX face keeps JAX's order (sorted keys)
    assert list(autodiff.grad(loss)({"w": w, "b": b})) == ["b", "w"]


def test_grad_structures_match_torch():
    (x, tx), (y, ty) = _pair(32, 4), _pair(33, 4)

    def f(x, y):
        return (x * y.exp()).sum(), {"aux": x.cos()}

    for lib, a, b in ((autodiff, x, y), (torch, tx, ty)):
        g, aux = lib.func.grad(f, argnums=(0, 1), has_aux=True)(a, b)
        assert type(g) is tuple and len(g) == 2 and list(aux) == ["aux"]
    ours = autodiff.func.grad_and_value(f, argnums=1, has_aux=True)(x, y)
    theirs = torch.func.grad_and_value(f, argnums=1, has_aux=True)(tx, ty)
    _assert_same(_numpy(ours), _numpy(theirs), 1e-12)  # (grad, (value, aux))
    ours = autodiff.func.grad_and_value(lambda x: x.pow(3).sum())(x)
    theirs = torch.func.grad_and_value(lambda x: x.pow(3).sum())(tx)
    _assert_same(_numpy(ours), _numpy(theirs), 1e-12)


def test_vjp_jvp_linearize_match_torch():
    (x, tx), (v, tv) = _pair(34, 3), _pair(35, 3)

    def f(x):
        return x.sin() * x, x.sum()

    def run(lib, x, v):
        func = lib.func
        out, vjp_fn, aux = func.vjp(lambda x: (x.tanh(), x * 2), x, has_aux=True)
        cts = vjp_fn(v)
        value, tangent = func.jvp(f, (x,), (v,))
        lin_out, jvp_fn = func.linearize(f, x)
        return out, cts, aux, value, tangent, lin_out, jvp_fn(v)

    ours, theirs = run(autodiff, x, v), run(torch, tx, tv)
    assert type(ours[1]) is tuple and len(ours[1]) == 1
    _assert_same(_numpy(ours), _numpy(theirs), 1e-12)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        autodiff.func.jvp(f, [x], [v])


def test_jacobians_with_aux_and_chunks():
    x, tx = _pair(36, 4)

    def f(x):
        return x.sin().cumsum(0), x.max()

    for chunk_size in (None, 1, 3):
        ours = autodiff.func.jacrev(f, has_aux=True, chunk_size=chunk_size)(x)
        theirs = torch.func.jacrev(f, has_aux=True, chunk_size=chunk_size)(tx)
        _assert_same(_numpy(ours), _numpy(theirs), 1e-12)
    ours = autodiff.func.jacfwd(f, has_aux=True)(x)
    _assert_same(_numpy(ours), _numpy(torch.func.jacfwd(f, has_aux=True)(tx)), 1e-12)
    with pytest.raises(ValueError, match="chunk_size"):
        autodiff.func.jacrev(f, chunk_size=0)


def test_results_are_torch_faced():
    # a Jacobian block that does not depend on the input comes back a torch Tensor
    (w, _), (b, _) = _pair(37, 3, 2), _pair(38, 3)
    jac = autodiff.func.jacrev(lambda p, x: p["w"] @ x + p["b"])({"w": w, "b": b}, w[0])
    assert all(type(j) is autodiff.Tensor for j in jac.values())
    assert jac["b"].flatten(1).shape == (3, 3) and jac["w"].flatten(1).shape == (3, 6)


def test_vmap_keywords_randomness_and_out_dims():
    (x, tx), (s, ts) = _pair(39, 3, 2), _pair(40, 2)

    def f(x, *, scale):
        return x * scale

    ours = autodiff.func.vmap(f, in_dims=1, out_dims=1)(x, scale=s[0])
    theirs = torch.func.vmap(f, in_dims=1, out_dims=1)(tx, scale=ts[0])
    _assert_same(_numpy(ours), _numpy(theirs), 0)  # (keyword arguments are not mapped)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        autodiff.func.vmap(lambda x: x + autodiff.randn(2))(x)
    same = autodiff.func.vmap(lambda x: x * 0 + autodiff.randn(2), randomness="same")(x)
    assert (same == same[0]).all()
    with pytest.raises(NotImplementedError, match="randomness='different'"):
        autodiff.func.vmap(f, randomness="different")
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        autodiff.func.vmap(f, randomness="other")


def test_stack_module_state_checks():
    nn = autodiff.nn
    models = [nn.Linear(3, 2), nn.Linear(3, 2)]
    params, buffers = autodiff.func.stack_module_state(models)
    assert params["weight"].requires_grad and params["weight"].is_leaf and buffers == {}
    np.testing.assert_array_equal(
        params["bias"][1].detach().numpy(), models[1].bias.detach().numpy()
    )
    with pytest.raises(RuntimeError, match="at least one model"):
        autodiff.func.stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        autodiff.func.stack_module_state([nn.Linear(3, 2), nn.Sequential(nn.Linear(3, 2))])
    models[1].eval()
    with pytest.raises(RuntimeError, match="training/eval mode"):
        autodiff.func.stack_module_state(models)


def batch_norm_per_sample(torch, data):
    nn = torch.nn
    net = _init(torch, nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh()).double(), 41)
    torch.func.replace_all_batch_norm_modules_(net)
    assert net[1].running_mean is None and not net[1].track_running_stats
    params = dict(net.named_parameters())

    def loss(params, x):
        return torch.func.functional_call(net, params, (x,)).pow(2).sum()

    return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, torch.tensor(data))


def test_replace_all_batch_norm_modules_():
    _run_both(batch_norm_per_sample, _data(42, 5, 6, 3))


# ---- the torch face's gaps (issue 39, item 4) -------------------------------------------------


def test_top_level_vmap_takes_in_dims_and_out_dims():
    (x, tx), (y, ty) = _pair(43, 3, 2), _pair(44, 3)
    ours = autodiff.vmap(lambda a, b: a * b, in_dims=(1, None), out_dims=1)(x, y)
    theirs = torch.vmap(lambda a, b: a * b, in_dims=(1, None), out_dims=1)(tx, ty)
    _assert_same(_numpy(ours), _numpy(theirs), 0)
    with pytest.raises(TypeError, match="both in_axes and in_dims"):
        autodiff.vmap(lambda a: a, in_axes=1, in_dims=0)


def test_torch_keyword_names():
    (a, ta), (b, tb), (v, tv) = _pair(45, 2, 3), _pair(46, 3, 2), _pair(47, 3)
    calls = [
        lambda t, a, b, v: t.matmul(input=a, other=b),
        lambda t, a, b, v: t.mm(input=a, mat2=b),
        lambda t, a, b, v: t.bmm(input=a[None], mat2=b[None]),
        lambda t, a, b, v: t.mv(input=a, vec=v),
        lambda t, a, b, v: t.dot(input=v, tensor=v),
        lambda t, a, b, v: t.add(input=a, other=a, alpha=2),
        lambda t, a, b, v: t.mul(input=a, other=a),
        lambda t, a, b, v: t.cat(tensors=[a, a], dim=1),
        lambda t, a, b, v: t.sum(input=a, dim=1),
    ]
    for call in calls:
        _assert_same(_numpy(call(autodiff, a, b, v)), _numpy(call(torch, ta, tb, tv)), 1e-12)


def test_set_default_device():
    assert autodiff.set_default_device("cpu") is None
    assert autodiff.set_default_device(None) is None
    assert autodiff.get_default_device() == autodiff.device("cpu")
    with pytest.raises(RuntimeError, match="CPU only: device 'cuda'"):
        autodiff.set_default_device("cuda")


def test_autograd_profiler_is_a_no_op_with_torch_api(tmp_path):
    x = autodiff.ones(3, requires_grad=True)
    with autodiff.autograd.profiler.profile(record_shapes=True) as prof:
        with autodiff.autograd.profiler.record_function("forward"):
            y = (x * 2).sum()
        y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    assert table == str(prof.key_averages()) == ""
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    assert (tmp_path / "trace.json").read_text() == '{"traceEvents": []}'

    @autodiff.autograd.profiler.record_function("step")
    def step(v):
        return v + 1

    assert step(1) == 2


def test_reflected_operators_list_operands_as_torch():
    def names(lib, expression):
        x = lib.ones(3, requires_grad=True, dtype=lib.float64)
        b = x.sin()
        node = expression(b)
        return node.grad_fn.name(), [
            (None if n is None else n.name(), i) for n, i in node.grad_fn.next_functions
        ]

    for expression in (lambda b: 2 * b, lambda b: 2 + b, lambda b: b * 2, lambda b: b - 2):
        assert names(autodiff, expression) == names(torch, expression)


@pytest.mark.parametrize(
    "nd, groups, stride, padding, output_padding, dilation, batched",
    [
        (1, 1, 1, 0, 0, 1, True),
        (1, 2, 2, 1, 1, 1, True),
        (2, 1, 2, 1, 1, 1, True),
        (2, 2, 3, (1, 0), (2, 1), 2, True),
        (2, 1, (1, 2), 2, 0, (2, 1), True),
        (2, 1, 2, 4, 0, 1, True),  # (padding beyond the kernel: the spread input is cropped)
        (2, 1, 2, 1, 1, 1, False),
    ],
)
def test_conv_transpose(nd, groups, stride, padding, output_padding, dilation, batched):
    rng = np.random.default_rng(48)
    spatial = (5,) if nd == 1 else (5, 4)
    x = rng.standard_normal(((2,) if batched else ()) + (4,) + spatial)
    w = rng.standard_normal((4, 6 // groups) + (3,) * nd)
    b = rng.standard_normal(6)
    results = []
    for lib in (autodiff, torch):
        conv = getattr(lib.nn.functional, f"conv_transpose{nd}d")
        args = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = conv(*args, stride, padding, output_padding, groups, dilation)
        (y * lib.tensor(np.arange(y.numel()).reshape(tuple(y.shape)) % 7)).sum().backward()
        results.append([y.detach().numpy()] + [a.grad.numpy() for a in args])
    for ours, theirs in zip(*results):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


def test_conv_transpose_under_transforms():
    x, tx = _pair(49, 3, 2, 4, 4)
    w, tw = _pair(50, 2, 3, 3, 3)

    def f(lib):
        def per_sample(w, x):
            return lib.nn.functional.conv_transpose2d(x, w, stride=2).tanh().sum()

        return lib.func.vmap(lib.func.grad(per_sample), in_dims=(None, 0))

    _assert_same(_numpy(f(autodiff)(w, x)), _numpy(f(torch)(tw, tx)), 1e-10)


def test_meta_device():
    nn = autodiff.nn
    model = nn.Linear(3, 2)
    meta = copy.deepcopy(model).to("meta")
    assert meta.weight.is_meta and meta.weight.device == autodiff.device("meta")
    assert meta.weight.shape == (2, 3) and meta.bias.dtype == model.bias.dtype
    assert not model.weight.is_meta and model.weight.device == autodiff.device("cpu")
    with pytest.raises(RuntimeError, match="device meta"):
        meta(autodiff.ones(3))
    out = autodiff.func.functional_call(meta, dict(model.named_parameters()), (autodiff.ones(3),))
    np.testing.assert_allclose(out.detach().numpy(), model(autodiff.ones(3)).detach().numpy())
    t = autodiff.ones(2, 2).to("meta")
    assert t.is_meta and t.shape == (2, 2)
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        t.to("cpu")
