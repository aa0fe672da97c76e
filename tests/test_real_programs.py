"""Short programs in the style of real JAX, PyTorch and HIPS autograd code, run on autodiff.

Each mirrors what public programs do (HIPS autograd's examples, the torch.func tutorials,
JAX's quickstart and examples), written for this suite, with autodiff reached through the
renames a user makes (`import autodiff.numpy as np`, `import autodiff as torch`, ...).
Results are checked against the real library when it is installed (the same code, the
same numbers in), else against closed forms, finite differences or an independent
computation (a Python loop for a vmap). The last classes check,
row by row, the "What differs" tables of docs/migration/*.md.
"""

import copy
import functools
import importlib.util
import math

import numpy as onp
import pytest
from scipy.optimize import minimize

import autodiff
import autodiff.numpy as anp
import autodiff.numpy.random as npr
import autodiff.scipy.stats.multivariate_normal as mvn
from autodiff import grad, hvp, jit, value_and_grad, vjp, vmap
from autodiff.scipy.special import logsumexp
from autodiff.scipy.stats.norm import logpdf as norm_logpdf
from autodiff.tree_util import ravel_pytree

HAVE = {name: importlib.util.find_spec(name) is not None for name in ("autograd", "jax", "torch")}
needs_autograd = pytest.mark.skipif(not HAVE["autograd"], reason="HIPS autograd not installed")


def tree_close(a, b, rtol=1e-10, atol=1e-12):
    la, lb = autodiff.tree_leaves(a), autodiff.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb, strict=True):
        onp.testing.assert_allclose(onp.asarray(x), onp.asarray(y), rtol=rtol, atol=atol)


def fd_grad(f, x, eps=1e-6):
    """Central differences of a scalar function of a 1-D array."""
    return onp.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in onp.eye(len(x))])


# --- HIPS autograd style: `import autodiff.numpy as np`, `from autodiff import grad` --------


def mlp_log_posterior(np, flatten, params, inputs, targets, l2):
    """autograd's neural_net.py shape: (W, b) tuples, tanh, log-softmax, flattened L2."""
    for w, b in params:
        outputs = np.dot(inputs, w) + b
        inputs = np.tanh(outputs)
    logp = outputs - logsumexp_of(np)(outputs, axis=1, keepdims=True)
    flat, _ = flatten(params)
    return -l2 * np.dot(flat, flat) + np.sum(logp * targets)


def logsumexp_of(np):
    if np is anp:
        return logsumexp
    from autograd.scipy.special import logsumexp as ag_logsumexp

    return ag_logsumexp


def mlp_problem():
    rs = npr.RandomState(0)
    params = [(0.1 * rs.randn(6, 5), 0.1 * rs.randn(5)), (0.1 * rs.randn(5, 3), 0.1 * rs.randn(3))]
    inputs = rs.randn(10, 6)
    targets = onp.eye(3)[rs.randint(0, 3, 10)]
    return params, inputs, targets


class TestAutogradStyle:
    def test_numpy_random_is_numpys(self):
        assert npr.RandomState is onp.random.RandomState and npr.seed is onp.random.seed
        assert anp.random.default_rng is onp.random.default_rng
        assert npr.RandomState(3).randn(2).tolist() == onp.random.RandomState(3).randn(2).tolist()

    def test_stats_modules_import_as_in_autograd_and_jax(self):
        import autodiff.scipy.stats as stats

        assert mvn is stats.multivariate_normal
        assert norm_logpdf(0.0) == pytest.approx(-0.5 * math.log(2 * math.pi))

    def test_mlp_gradient_with_flattened_l2(self):
        params, inputs, targets = mlp_problem()
        obj = functools.partial(mlp_log_posterior, anp, ravel_pytree)
        g = grad(obj)(params, inputs, targets, 0.5)
        assert [tuple(p.shape for p in layer) for layer in g] == [((6, 5), (5,)), ((5, 3), (3,))]
        flat, unravel = ravel_pytree(params)

        def f(v):
            return obj(unravel(v), inputs, targets, 0.5)

        onp.testing.assert_allclose(ravel_pytree(g)[0], fd_grad(f, flat), rtol=1e-6, atol=1e-8)
        if HAVE["autograd"]:
            import autograd
            import autograd.numpy as agnp
            from autograd.misc import flatten

            ref = autograd.grad(functools.partial(mlp_log_posterior, agnp, flatten))(
                params, inputs, targets, 0.5
            )
            tree_close(g, [tuple(layer) for layer in ref])

    @needs_autograd
    def test_black_box_svi_objective(self):
        """black_box_svi.py: reparameterized samples, a mvn entropy, a norm log density."""
        import autograd
        import autograd.numpy as agnp
        import autograd.scipy.stats.multivariate_normal as ag_mvn
        import autograd.scipy.stats.norm as ag_norm

        def make(np, mvn_mod, norm_mod):
            def log_density(x):
                mu, log_sigma = x[:, 0], x[:, 1]
                return mvn_mod.logpdf(x, np.zeros(2), np.eye(2) * 2.0) + norm_mod.logpdf(
                    mu, 0, np.exp(log_sigma)
                )

            def objective(params, t):
                mean, log_std = params[:2], params[2:]
                samples = npr.RandomState(t).randn(50, 2) * np.exp(log_std) + mean
                entropy = 0.5 * 2 * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)
                return -(entropy + np.mean(log_density(samples)))

            return objective

        params = onp.array([0.3, -0.2, -1.0, -0.5])
        ours = value_and_grad(make(anp, mvn, autodiff.scipy.stats.norm))(params, 0)
        ref = autograd.value_and_grad(make(agnp, ag_mvn, ag_norm))(params, 0)
        tree_close(ours, ref)

    @needs_autograd
    def test_gaussian_process_marginal_likelihood(self):
        """gaussian_process.py: an RBF kernel's hyperparameters through mvn.logpdf."""
        import autograd
        import autograd.numpy as agnp
        import autograd.scipy.stats.multivariate_normal as ag_mvn

        def make(np, mvn_mod):
            def log_marginal(params, x, y):
                mean, noise, log_scale, log_len = params
                d = (x[:, None] - x[None, :]) / np.exp(log_len)
                cov = np.exp(log_scale) * np.exp(-0.5 * d**2) + (np.exp(noise) + 1e-6) * np.eye(
                    len(x)
                )
                return mvn_mod.logpdf(y, mean * np.ones(len(x)), cov)

            return log_marginal

        rs = npr.RandomState(1)
        x = onp.linspace(-2, 2, 12)
        y = onp.sin(x) + 0.1 * rs.randn(12)
        params = onp.array([0.1, -2.0, 0.2, -0.3])
        ours = value_and_grad(make(anp, mvn))(params, x, y)
        ref = autograd.value_and_grad(make(agnp, ag_mvn))(params, x, y)
        tree_close(ours, ref, rtol=1e-9)

    @needs_autograd
    def test_rnn_over_a_python_loop(self):
        """rnn.py/lstm.py: dict parameters, hstack with a ones column, a loop over time."""
        import autograd
        import autograd.numpy as agnp

        def make(np):
            def loss(params, inputs):
                h = np.repeat(params["init"], inputs.shape[1], axis=0)
                total = 0.0
                for x in inputs:
                    cat = np.hstack((x, h, np.ones((x.shape[0], 1))))
                    h = np.tanh(np.dot(cat, params["change"]))
                    out = np.dot(np.hstack((h, np.ones((h.shape[0], 1)))), params["predict"])
                    total = total + np.sum(out - logsumexp_of(np)(out, axis=1, keepdims=True))
                return total

            return loss

        rs = npr.RandomState(2)
        params = {
            "init": 0.1 * rs.randn(1, 4),
            "change": 0.1 * rs.randn(3 + 4 + 1, 4),
            "predict": 0.1 * rs.randn(4 + 1, 3),
        }
        inputs = rs.randn(5, 2, 3)
        tree_close(grad(make(anp))(params, inputs), autograd.grad(make(agnp))(params, inputs))

    def test_elementwise_grad_as_vjp_with_ones(self):
        """tanh.py: autograd's elementwise_grad, nested four times (the guide's rewrite)."""

        def egrad(f):
            return lambda x: vjp(f, x)[1](anp.ones_like(x))[0]

        x = onp.linspace(-2, 2, 9)
        d4 = egrad(egrad(egrad(egrad(anp.tanh))))(x)
        t = onp.tanh(x)
        onp.testing.assert_allclose(d4, 8 * t * (1 - t**2) * (2 - 3 * t**2), rtol=1e-9, atol=1e-12)
        if HAVE["autograd"]:
            from autograd import elementwise_grad as ag_egrad

            onp.testing.assert_allclose(d4, ag_egrad(ag_egrad(ag_egrad(ag_egrad(onp.tanh))))(x))

    def test_newton_cg_with_hessian_vector_products(self):
        """gmm.py: scipy's Newton-CG with jac=grad and hessp from hvp."""

        def objective(x):
            return anp.sum((x - anp.arange(3.0)) ** 4) + anp.sum(x**2)

        result = minimize(
            objective,
            onp.ones(3),
            jac=grad(objective),
            hessp=lambda x, v: hvp(objective, (x,), (v,)),
            method="Newton-CG",
        )
        assert result.success
        onp.testing.assert_allclose(grad(objective)(result.x), 0.0, atol=1e-6)

    def test_rosenbrock_with_value_and_grad(self):
        rosenbrock = value_and_grad(lambda x: 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2)
        result = minimize(rosenbrock, x0=onp.zeros(2), jac=True, method="CG")
        onp.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-4)


class TestRavelPytree:
    def test_round_trip_order_and_dtypes(self):
        tree = {"w": onp.arange(6.0).reshape(2, 3), "b": (onp.float32(7), onp.ones(2, onp.float32))}
        flat, unravel = ravel_pytree(tree)
        assert flat.dtype == onp.float64 and flat.tolist() == [7, 1, 1, 0, 1, 2, 3, 4, 5]
        back = unravel(flat)
        assert back["w"].shape == (2, 3) and back["b"][1].dtype == onp.float32
        tree_close(back, tree)
        if HAVE["jax"]:
            from jax.flatten_util import ravel_pytree as jax_ravel

            onp.testing.assert_allclose(flat, jax_ravel(tree)[0])

    def test_differentiable_both_ways(self):
        tree = {"a": onp.array([1.0, 2.0]), "b": onp.array(3.0)}
        flat, unravel = ravel_pytree(tree)
        g = grad(lambda t: anp.sum(ravel_pytree(t)[0] ** 2))(tree)
        tree_close(g, {"a": onp.array([2.0, 4.0]), "b": 6.0})
        onp.testing.assert_allclose(grad(lambda v: unravel(v)["b"] * v[0])(flat), [3.0, 0.0, 1.0])

    def test_empty_tree_and_wrong_length(self):
        flat, unravel = ravel_pytree({})
        assert flat.shape == (0,) and unravel(flat) == {}
        with pytest.raises(ValueError, match=r"unravel expected a vector of shape \(3,\)"):
            ravel_pytree([onp.ones(3)])[1](onp.ones(4))


# --- torch.func tutorials: `import autodiff as torch` --------------------------------------


def torch_pair():
    """(autodiff as torch, real torch or None): the same program runs on both."""
    real = importlib.import_module("torch") if HAVE["torch"] else None
    return autodiff, real


def build_cnn(torch):
    nn, F = torch.nn, torch.nn.functional

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 3, 3)
            self.fc = nn.Linear(3 * 3 * 3, 4)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)

    return SmallCNN()


def seed(torch, model, seed_=0):
    rs = onp.random.RandomState(seed_)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(0.4 * rs.randn(*p.shape), dtype=p.dtype))
    return model


def per_sample_grads(torch):
    """The per-sample-gradients tutorial: functional_call + vmap(grad, in_dims=...)."""
    from_func = importlib.import_module(torch.__name__ + ".func")
    F = torch.nn.functional
    model = seed(torch, build_cnn(torch).double())
    data = torch.tensor(onp.random.RandomState(1).randn(5, 1, 8, 8))
    targets = torch.tensor([0, 1, 2, 3, 1])
    params = {k: v.detach() for k, v in model.named_parameters()}

    def compute_loss(params, sample, target):
        prediction = from_func.functional_call(model, params, (sample.unsqueeze(0),))
        return F.nll_loss(prediction, target.unsqueeze(0))

    batched = from_func.vmap(from_func.grad(compute_loss), in_dims=(None, 0, 0))(
        params, data, targets
    )
    looped = [
        torch.autograd.grad(
            F.nll_loss(model(data[i].unsqueeze(0)), targets[i].unsqueeze(0)),
            list(model.parameters()),
        )
        for i in range(5)
    ]
    return batched, [torch.stack(g) for g in zip(*looped, strict=True)]


class TestTorchFuncTutorials:
    def test_per_sample_gradients(self):
        ours, real = torch_pair()
        batched, looped = per_sample_grads(ours)
        assert list(batched) == ["conv.weight", "conv.bias", "fc.weight", "fc.bias"]
        for b, l in zip(batched.values(), looped, strict=True):
            assert ours.allclose(b, l)
        if real is not None:
            ref, _ = per_sample_grads(real)
            for k in batched:
                onp.testing.assert_allclose(batched[k].numpy(), ref[k].numpy(), rtol=1e-9)

    def test_batched_jacobians_and_hessians(self):
        def run(torch):
            func, F = importlib.import_module(torch.__name__ + ".func"), torch.nn.functional
            rs = onp.random.RandomState(3)
            w, b = torch.tensor(rs.randn(3, 4)), torch.tensor(rs.randn(3))
            x = torch.tensor(rs.randn(5, 4))

            def predict(weight, bias, x):
                return F.linear(x, weight, bias).tanh()

            jac = func.vmap(func.jacrev(predict, argnums=2), in_dims=(None, None, 0))(w, b, x)
            summed = func.jacrev(lambda w, b, x: predict(w, b, x).sum(0), argnums=2)(w, b, x)
            hess = func.vmap(func.hessian(predict, argnums=2), in_dims=(None, None, 0))(w, b, x)
            fwd = func.jacfwd(func.jacfwd(predict, argnums=2), argnums=2)(w, b, x[0])
            return jac, summed.movedim(1, 0), hess, fwd

        jac, summed, hess, fwd = run(autodiff)
        assert jac.shape == (5, 3, 4) and hess.shape == (5, 3, 4, 4)
        assert autodiff.allclose(jac, summed) and autodiff.allclose(hess[0], fwd)
        if HAVE["torch"]:
            for ours, ref in zip((jac, hess), run(torch_pair()[1])[::2], strict=True):
                onp.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-10)

    def test_empirical_ntk_two_ways(self):
        def run(torch):
            func = importlib.import_module(torch.__name__ + ".func")
            net = seed(
                torch,
                torch.nn.Sequential(
                    torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)
                ).double(),
            )
            params = {k: v.detach() for k, v in net.named_parameters()}
            rs = onp.random.RandomState(4)
            x1, x2 = torch.tensor(rs.randn(3, 3)), torch.tensor(rs.randn(2, 3))

            def f(params, x):
                return func.functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

            def jac(x):
                return [
                    j.flatten(2) for j in func.vmap(func.jacrev(f), (None, 0))(params, x).values()
                ]

            by_jac = torch.stack(
                [torch.einsum("Naf,Mbf->NMab", a, b) for a, b in zip(jac(x1), jac(x2), strict=True)]
            ).sum(0)

            def ntk(a, b):
                out, vjp_fn = func.vjp(lambda p: f(p, a), params)

                def column(v):
                    return func.jvp(lambda p: f(p, b), (params,), vjp_fn(v))[1]

                return func.vmap(column)(torch.eye(out.numel(), dtype=out.dtype))

            by_products = func.vmap(func.vmap(ntk, (None, 0)), (0, None))(x1, x2)
            return by_jac, by_products

        by_jac, by_products = run(autodiff)
        assert by_jac.shape == (3, 2, 2, 2)
        assert autodiff.allclose(by_jac, by_products)
        if HAVE["torch"]:
            onp.testing.assert_allclose(by_jac.numpy(), run(torch_pair()[1])[0].numpy(), rtol=1e-10)

    def test_model_ensembling_with_meta_base(self):
        def run(torch):
            func = importlib.import_module(torch.__name__ + ".func")
            models = [seed(torch, torch.nn.Linear(4, 2).double(), i) for i in range(3)]
            params, buffers = func.stack_module_state(models)
            base = copy.deepcopy(models[0]).to("meta")

            def fmodel(params, buffers, x):
                return func.functional_call(base, (params, buffers), (x,))

            x = torch.tensor(onp.random.RandomState(5).randn(3, 6, 4))
            per_model = func.vmap(fmodel)(params, buffers, x)
            shared = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x[0])
            return per_model, shared, [m(x[i]) for i, m in enumerate(models)], list(params)

        per_model, shared, loop, names = run(autodiff)
        assert names == ["weight", "bias"]
        assert autodiff.allclose(per_model, autodiff.stack(loop))
        if HAVE["torch"]:
            ref = run(torch_pair()[1])
            onp.testing.assert_allclose(
                shared.detach().numpy(), ref[1].detach().numpy(), rtol=1e-12
            )


class TestTorchScripts:
    def test_custom_function_training_loop(self):
        """polynomial_custom_function.py: a Function with save_for_backward, manual SGD."""

        def run(torch):
            class Legendre3(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.save_for_backward(x)
                    return 0.5 * (5 * x**3 - 3 * x)

                @staticmethod
                def backward(ctx, g):
                    (x,) = ctx.saved_tensors
                    return g * 1.5 * (5 * x**2 - 1)

            x = torch.linspace(-math.pi, math.pi, 50, dtype=torch.float64)
            y = torch.sin(x)
            coeffs = [
                torch.full((), v, dtype=torch.float64, requires_grad=True)
                for v in (0.0, -1.0, 0.0, 0.3)
            ]
            for _ in range(50):
                a, b, c, d = coeffs
                loss = (a + b * Legendre3.apply(c + d * x) - y).pow(2).sum()
                loss.backward()
                with torch.no_grad():
                    for p in coeffs:
                        p -= 5e-5 * p.grad
                        p.grad = None
            return loss.item(), [p.item() for p in coeffs]

        loss, coeffs = run(autodiff)
        assert loss < 8.0  # from 11.8
        if HAVE["torch"]:
            ref_loss, ref_coeffs = run(torch_pair()[1])
            assert loss == pytest.approx(ref_loss, rel=1e-10)
            onp.testing.assert_allclose(coeffs, ref_coeffs, rtol=1e-9, atol=1e-12)

    def test_sequential_with_rmsprop(self):
        """polynomial_optim.py: Sequential(Linear, Flatten(0, 1)), MSELoss(sum), RMSprop."""

        def run(torch):
            x = torch.linspace(-math.pi, math.pi, 100, dtype=torch.float64)
            xx = x.unsqueeze(-1).pow(torch.tensor([1, 2, 3]))
            model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1)).double()
            seed(torch, model)
            loss_fn = torch.nn.MSELoss(reduction="sum")
            opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
            for _ in range(100):
                loss = loss_fn(model(xx), torch.sin(x))
                opt.zero_grad()
                loss.backward()
                opt.step()
            return loss.item(), model[0].weight.detach().numpy().copy()

        loss, w = run(autodiff)
        if HAVE["torch"]:
            ref_loss, ref_w = run(torch_pair()[1])
            assert loss == pytest.approx(ref_loss, rel=1e-9)
            onp.testing.assert_allclose(w, ref_w, rtol=1e-9)

    def test_forward_ad_on_module_parameters(self):
        """forward_ad_usage.py: dual parameters swapped in with delattr/setattr."""

        def run(torch):
            fwAD = importlib.import_module(torch.__name__ + ".autograd.forward_ad")
            model = seed(torch, torch.nn.Linear(4, 3).double())
            x = torch.tensor(onp.random.RandomState(6).randn(5, 4))
            params = dict(model.named_parameters())
            with fwAD.dual_level():
                for name, p in params.items():
                    delattr(model, name)
                    setattr(model, name, fwAD.make_dual(p, torch.ones_like(p)))
                return fwAD.unpack_dual(model(x)).tangent.detach().numpy().copy()

        tangent = run(autodiff)
        x = onp.random.RandomState(6).randn(5, 4)
        onp.testing.assert_allclose(tangent, onp.repeat(x.sum(1, keepdims=True) + 1, 3, axis=1))
        if HAVE["torch"]:
            onp.testing.assert_allclose(tangent, run(torch_pair()[1]), rtol=1e-12)


# --- JAX style: `import autodiff.numpy as jnp`, `from autodiff import grad, jit, vmap` -------


def jax_pair():
    if not HAVE["jax"]:
        return None
    import jax
    import jax.numpy as jnp

    return jax, jnp


def sum_logistic(jnp):
    return lambda x: jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


class TestJaxStyle:
    def test_quickstart_transforms(self):
        f = sum_logistic(anp)
        x = onp.arange(3.0)
        s = 1 / (1 + onp.exp(-x))
        onp.testing.assert_allclose(grad(f)(x), s * (1 - s))
        third = grad(jit(grad(jit(grad(f)))))(1.0)
        s1 = 1 / (1 + math.exp(-1.0))
        assert third == pytest.approx(s1 * (1 - s1) * (1 - 6 * s1 + 6 * s1**2))
        hess = jit(autodiff.jacfwd(autodiff.jacrev(f)))(x)
        onp.testing.assert_allclose(hess, onp.diag(s * (1 - s) * (1 - 2 * s)))
        if HAVE["jax"]:
            jax, jnp = jax_pair()
            g = jax.grad(jax.jit(jax.grad(jax.jit(jax.grad(sum_logistic(jnp))))))(1.0)
            assert third == pytest.approx(float(g), rel=1e-6)

    def test_logistic_regression_cookbook(self):
        inputs = onp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30]])
        targets = onp.array([True, True, False])

        def make(jnp, vmap_, grad_):
            def predict(w, b, x):
                return 1.0 / (1.0 + jnp.exp(-(jnp.dot(x, w) + b)))

            def loss(params):
                p = predict(params["W"], params["b"], inputs)
                return -jnp.sum(jnp.log(p * targets + (1 - p) * (1 - targets)))

            def example_loss(w, x, t):
                return -jnp.log(jnp.where(t, predict(w, 0.2, x), 1 - predict(w, 0.2, x)))

            per_example = vmap_(grad_(example_loss), in_axes=(None, 0, 0))
            return grad_(loss), per_example

        params = {"W": onp.array([0.1, -0.3, 0.7]), "b": 0.2}
        g_loss, per_example = make(anp, vmap, grad)
        g = g_loss(params)
        per = per_example(params["W"], inputs, targets)
        onp.testing.assert_allclose(per.sum(0), g["W"], rtol=1e-12)
        if HAVE["jax"]:
            jax, jnp = jax_pair()
            ref_loss, ref_per = make(jnp, jax.vmap, jax.grad)
            ref = ref_loss({"W": params["W"].astype(onp.float32), "b": 0.2})
            onp.testing.assert_allclose(g["W"], ref["W"], rtol=1e-5)
            onp.testing.assert_allclose(g["b"], ref["b"], rtol=1e-5)

    def test_jitted_sgd_on_a_list_of_layers(self):
        """mnist_classifier_fromscratch.py: `@jit update` over a list of (w, b) tuples."""
        params, inputs, targets = mlp_problem()

        def make(jnp, jit_, grad_, lse):
            def loss(params, batch):
                x, t = batch
                for w, b in params[:-1]:
                    x = jnp.tanh(jnp.dot(x, w) + b)
                logits = jnp.dot(x, params[-1][0]) + params[-1][1]
                return -jnp.mean(jnp.sum((logits - lse(logits, axis=1, keepdims=True)) * t, axis=1))

            @jit_
            def update(params, batch):
                grads = grad_(loss)(params, batch)
                return [(w - 0.5 * dw, b - 0.5 * db) for (w, b), (dw, db) in zip(params, grads)]

            return loss, update

        loss, update = make(anp, jit, grad, logsumexp)
        p = params
        for _ in range(5):
            p = update(p, (inputs, targets))
        assert loss(p, (inputs, targets)) < loss(params, (inputs, targets))
        if HAVE["jax"]:
            import jax.scipy.special

            jax, jnp = jax_pair()
            ref_loss, ref_update = make(jnp, jax.jit, jax.grad, jax.scipy.special.logsumexp)
            q = [tuple(a.astype(onp.float32) for a in layer) for layer in params]
            batch = (inputs.astype(onp.float32), targets.astype(onp.float32))
            for _ in range(5):
                q = ref_update(q, batch)
            tree_close(p, q, rtol=2e-4, atol=2e-5)

    def test_jacobian_is_jacrev(self):
        f = lambda x: anp.sin(x) * x[0]
        x = onp.array([0.3, 0.7])
        onp.testing.assert_allclose(autodiff.jacobian(f)(x), autodiff.jacrev(f)(x))
        assert autodiff.jacobian is autodiff.jacrev


# --- the migration guides' "What differs" tables, row by row --------------------------------


class TestWhatDiffersFromJax:
    def test_float64_default(self):
        assert anp.zeros(2).dtype == onp.float64 and anp.asarray(1.0).dtype == onp.float64
        assert grad(lambda x: x * x)(onp.float32(2.0)).dtype == onp.float32

    def test_results_are_numpy_arrays(self):
        z = anp.zeros(3)
        assert type(z) is onp.ndarray and not hasattr(z, "at")
        assert autodiff.block_until_ready(z) is z
        onp.testing.assert_allclose(autodiff.tensor(z).at[1].set(2.0), [0.0, 2.0, 0.0])
        assert grad(lambda x: anp.sum(x.at[1].set(x[0] ** 2)))(onp.ones(3)).tolist() == [3, 0, 1]

    def test_out_of_bounds_index_raises(self):
        # JAX clamps x[5] to x[2] (a gather); autodiff raises as NumPy does.
        with pytest.raises(IndexError):
            anp.asarray([1.0, 2.0, 3.0])[5]
        with pytest.raises(IndexError):
            grad(lambda x: x[5])(onp.ones(3))

    def test_in_place_outside_transforms_is_numpys(self):
        x = anp.zeros(2)
        y = x
        y += 1.0
        assert x.tolist() == [1.0, 1.0]  # JAX: x unchanged (y rebound)

    def test_ravel_pytree_and_jacobian_names(self):
        flat, _ = ravel_pytree([onp.ones(2, onp.float32), onp.arange(2)])
        assert flat.dtype == onp.float64  # NumPy's promotion of int64 and float32
        assert autodiff.jacobian is autodiff.jacrev

    def test_random_is_numpys(self):
        assert not hasattr(autodiff, "random")
        a = onp.random.default_rng(0).normal(size=3)
        assert a.tolist() == onp.random.default_rng(0).normal(size=3).tolist()

    def test_dicts_sorted_as_in_jax(self):
        g = grad(lambda p: p["w"] * p["b"])({"w": 2.0, "b": 3.0})
        assert list(g) == ["b", "w"]

    def test_error_types(self):
        with pytest.raises(TypeError, match="Gradient only defined for scalar-output"):
            grad(lambda x: x)(onp.ones(1))
        with pytest.raises(autodiff.ConcretizationError):
            jit(lambda x: float(x))(1.0)
        assert issubclass(autodiff.ConcretizationError, TypeError)

    def test_in_place_on_traced_value_rebinds(self):
        def f(x):
            y = x
            y += 1.0
            return anp.sum(x * y)

        assert grad(f)(onp.ones(2)).tolist() == [3.0, 3.0]

    def test_jax_random_keys_and_example_libraries_absent(self):
        assert importlib.util.find_spec("autodiff.random") is None
        assert importlib.util.find_spec("autodiff.example_libraries") is None


class TestWhatDiffersFromPytorch:
    def test_float64_default_and_shape_tuple(self):
        x = autodiff.randn(2, 3)
        assert x.dtype == autodiff.float64 and autodiff.get_default_dtype() == autodiff.float64
        assert type(x.shape) is tuple and x.size() == autodiff.Size([2, 3])
        assert autodiff.ones(2, dtype=autodiff.float32).dtype == autodiff.float32

    def test_promotion_follows_numpy(self):
        r = autodiff.ones(2, dtype=autodiff.int32) + autodiff.ones(2, dtype=autodiff.float32)
        assert r.dtype == autodiff.float64
        assert autodiff.promote_types(autodiff.int32, autodiff.float32) == autodiff.float32

    def test_manual_seed_reproduces_autodiffs_stream(self):
        autodiff.manual_seed(0)
        a = autodiff.randn(3)
        autodiff.manual_seed(0)
        assert autodiff.equal(a, autodiff.randn(3))

    def test_in_place_rules(self):
        w = autodiff.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            w.add_(1.0)
        with autodiff.no_grad():
            w -= 0.5
        assert w.tolist() == [0.5, 0.5]
        with pytest.raises(Exception, match="in-place"):
            autodiff.func.grad(lambda x: x.mul_(2.0).sum())(autodiff.ones(2))

    def test_dict_order(self):
        p = {"w": autodiff.tensor(2.0), "b": autodiff.tensor(3.0)}
        assert list(autodiff.func.grad(lambda p: p["w"] * p["b"])(p)) == ["w", "b"]
        assert list(autodiff.grad(lambda p: p["w"] * p["b"])(p)) == ["b", "w"]

    def test_piecewise_constant_results_do_not_require_grad(self):
        x = autodiff.tensor([0.4, 1.6], requires_grad=True)
        assert not autodiff.floor(x).requires_grad

    def test_no_cuda(self):
        assert not autodiff.cuda.is_available()
        with pytest.raises(RuntimeError, match="CPU only"):
            autodiff.zeros(2, device="cuda")

    def test_randomness_different_unsupported(self):
        with pytest.raises(NotImplementedError, match="randomness"):
            autodiff.func.vmap(lambda x: x + autodiff.rand(()), randomness="different")(
                autodiff.ones(3)
            )


class TestWhatDiffersFromAutograd:
    def test_argnums_spelling(self):
        f = lambda a, b: a * b
        assert grad(f, argnums=1)(2.0, 3.0) == 2.0
        with pytest.raises(TypeError):
            grad(f, argnum=1)  # autograd's spelling is not accepted

    def test_size_one_output_is_not_a_scalar(self):
        # autograd's grad accepts any size-1 output; autodiff requires shape (), as JAX.
        with pytest.raises(TypeError, match="scalar-output"):
            grad(lambda x: x * 2)(onp.ones(1))
        assert grad(lambda x: (x * 2)[0])(onp.ones(1)).tolist() == [2.0]

    def test_scalar_gradient_type(self):
        g = grad(lambda x: x**2)(3.0)
        assert type(g) is onp.float64 and g == 6.0
        if HAVE["autograd"]:
            import autograd

            assert type(autograd.grad(lambda x: x**2)(3.0)) is onp.float64
            pair = autograd.grad(lambda x, y: x * y, argnum=(0, 1))(3.0, 2.0)
            assert [type(g) for g in pair] == [onp.ndarray, onp.ndarray]

    def test_fixed_point_signature(self):
        def newton_sqrt(x, a):
            return 0.5 * (x + a / x)

        sqrt = lambda a: autodiff.fixed_point(newton_sqrt, 10.0, a, tol=1e-12)
        assert float(sqrt(2.0)) == pytest.approx(math.sqrt(2.0))
        assert float(grad(sqrt)(2.0)) == pytest.approx(0.5 / math.sqrt(2.0), rel=1e-9)

    def test_check_grads_signature(self):
        from autodiff.testing import check_grads

        check_grads(lambda x: anp.sum(anp.tanh(x) ** 2), (onp.array([0.3, -0.4]),), modes=["rev"])

    @needs_autograd
    def test_autograds_optimizers_take_autodiffs_gradients(self):
        from autograd.misc.optimizers import adam

        target = {"w": onp.array([1.0, -2.0]), "b": onp.array(0.5)}

        def objective(params, i):
            return sum(anp.sum((params[k] - target[k]) ** 2) for k in params)

        init = {"w": onp.zeros(2), "b": onp.array(0.0)}
        out = adam(grad(objective), init, step_size=0.1, num_iters=300)
        tree_close(out, target, rtol=1e-3, atol=1e-3)

    def test_flatten_is_ravel_pytree(self):
        flat, unflatten = ravel_pytree([(onp.ones((2, 2)), onp.zeros(2))])
        assert flat.shape == (6,) and unflatten(flat)[0][0].shape == (2, 2)

    def test_primitive_defvjp_is_custom_vjp(self):
        @autodiff.custom_vjp
        def logsumexp_(x):
            m = onp.max(x)
            return m + onp.log(onp.sum(onp.exp(x - m)))

        def fwd(x):
            ans = logsumexp_(x)
            return ans, (x, ans)

        def bwd(res, g):
            x, ans = res
            return (g * anp.exp(x - ans),)

        logsumexp_.defvjp(fwd, bwd)
        x = onp.array([0.5, 1.0, -2.0])
        onp.testing.assert_allclose(grad(logsumexp_)(x), onp.exp(x) / onp.exp(x).sum())

    def test_custom_vspace_types_need_a_pytree_registration(self):
        class Pair:
            def __init__(self, a, b):
                self.a, self.b = a, b

        with pytest.raises(TypeError, match="not a valid JAX type"):
            grad(lambda p: p.a * p.b)(Pair(1.0, 2.0))
        autodiff.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
        g = grad(lambda p: p.a * p.b)(Pair(1.0, 2.0))
        assert (g.a, g.b) == (2.0, 1.0)

    def test_convolve_has_scipys_signature(self):
        import autodiff.scipy.signal as signal

        a, b = onp.arange(5.0), onp.array([1.0, -1.0])
        onp.testing.assert_allclose(signal.convolve(a, b, mode="valid"), [1.0, 1.0, 1.0, 1.0])
        with pytest.raises(TypeError):
            signal.convolve(a, b, axes=([0], [0]))  # autograd's extension
        x = onp.random.RandomState(0).randn(2, 1, 6, 6)
        w = onp.random.RandomState(1).randn(3, 1, 3, 3)
        out = autodiff.nn.functional.conv2d(autodiff.tensor(x), autodiff.tensor(w))
        windows = onp.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))
        ref = onp.einsum("nchwij,kcij->nkhw", windows, w)  # torch's cross-correlation
        onp.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)

    def test_elementwise_grad_and_hvp_spellings(self):
        assert not hasattr(autodiff, "elementwise_grad")
        assert not hasattr(autodiff, "hessian_vector_product")
        f = lambda x: anp.sum(x**3)
        x, v = onp.array([1.0, 2.0]), onp.array([1.0, 0.5])
        onp.testing.assert_allclose(hvp(f, (x,), (v,)), 6 * x * v)
        onp.testing.assert_allclose(vmap(grad(anp.tanh))(x), 1 - onp.tanh(x) ** 2)
