"""`checkpoint(fun, policy=..., static_argnums=..., prevent_cse=...)`, `checkpoint_name` and
`checkpoint_policies` (JAX's jax.checkpoint and jax.checkpoint_policies).

What each policy saves and recomputes is counted as JAX's RematTest counts it: primitives
whose impl counts its evaluations, through a forward pass (`vjp`) and then its pullback.
Every policy gives the derivatives of the function without checkpoint, in both modes, to
order 2, eagerly and under jit, vmap and the torch face.
"""

import traceback

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.abstract import same_aval
from autodiff.core.errors import ConcretizationError
from autodiff.core.primitive import Primitive, bind
from autodiff.ops.elementwise import sin_p
from autodiff.ops.products import matmul_p
from autodiff.testing import check_grads

cp = ad.checkpoint_policies
RNG = np.random.default_rng(11)

# ------------------------------------------------------------------ counted primitives

EVALS: dict = {}


def _counted(name: str, ufunc, derivative, saves_output: bool = False) -> Primitive:
    """A unary primitive like `ufunc` that counts its evaluations in EVALS[name]."""
    prim = Primitive(name)

    def impl(x):
        EVALS[name] = EVALS.get(name, 0) + 1
        return ufunc(x)

    prim.impl = impl
    prim.abstract_eval = same_aval
    prim.saves_output = saves_output
    prim.jvp = lambda primals, tangents, *, out: tangents[0] * derivative(primals[0])
    prim.vjp = lambda g, x, *, out: (g * derivative(x),)
    prim.batch = lambda values, dims: (bind(prim, values[0]), dims[0])
    return prim


csin_p = _counted("csin", np.sin, anp.cos)
ccos_p = _counted("ccos", np.cos, lambda x: -anp.sin(x))

# JAX's add_one of RematTest: its derivative reads its output.
add_one_p = Primitive("add_one")
add_one_p.impl = lambda x: EVALS.update(add_one=EVALS.get("add_one", 0) + 1) or x + 1
add_one_p.abstract_eval = same_aval
add_one_p.jvp = lambda primals, tangents, *, out: out * tangents[0]
add_one_p.vjp = lambda g, x, *, out: (out * g,)
add_one_p.batch = lambda values, dims: (bind(add_one_p, values[0]), dims[0])


def csin(x):
    return bind(csin_p, x)


def ccos(x):
    return bind(ccos_p, x)


def _forward_and_backward(f, *args) -> tuple[dict, dict]:
    """The evaluations of the counted primitives in the forward pass (vjp) and in the
    backward pass (the pullback)."""
    EVALS.clear()
    out, pull = ad.vjp(f, *args)
    forward = dict(EVALS)
    EVALS.clear()
    pull(np.ones_like(out))
    return forward, dict(EVALS)


X = np.array([0.3, -0.7, 1.1])


def chain(x):
    a = ad.checkpoint_name(csin(x), "a")
    b = ad.checkpoint_name(ccos(a), "b")
    return csin(b)


@pytest.mark.parametrize(
    "policy, recomputed",
    [
        (None, {"csin": 1, "ccos": 1}),  # (csin(b) is read by nothing)
        (cp.nothing_saveable, {"csin": 1, "ccos": 1}),
        (cp.everything_saveable, {}),
        (cp.save_only_these_names("a"), {"ccos": 1}),
        (cp.save_only_these_names("b"), {"csin": 1}),
        (cp.save_only_these_names("a", "b"), {}),
        (cp.save_any_names_but_these("b"), {"ccos": 1}),
        (cp.save_any_names_but_these(), {}),
        (
            cp.save_from_both_policies(cp.save_only_these_names("a"), cp.nothing_saveable),
            {"ccos": 1},
        ),
        (cp.dots_saveable, {"csin": 1, "ccos": 1}),  # (no product to save)
        (lambda prim, *_, **__: prim is ccos_p, {"csin": 1}),  # (a policy of one's own)
    ],
)
def test_what_each_policy_saves_and_recomputes(policy, recomputed):
    f = ad.checkpoint(chain, policy=policy)
    forward, backward = _forward_and_backward(f, X)
    assert forward == {"csin": 2, "ccos": 1}
    assert backward == recomputed
    np.testing.assert_allclose(
        ad.grad(lambda x: anp.sum(f(x)))(X), ad.grad(lambda x: anp.sum(chain(x)))(X)
    )


def test_without_checkpoint_nothing_is_recomputed():
    assert _forward_and_backward(chain, X) == ({"csin": 2, "ccos": 1}, {})


def test_recursive_checkpoints_recompute_as_in_jax():
    """JAX's test_remat_recursive_checkpoint_recompute_counts: (4, 2), (8, 8), (16, 24)."""

    def nested(funs, wrap):
        if len(funs) == 1:
            return funs[0]
        if len(funs) == 2:
            return lambda x: funs[0](funs[1](x))
        f1, f2 = nested(funs[: len(funs) // 2], wrap), nested(funs[len(funs) // 2 :], wrap)
        return lambda x: f1(wrap(f2)(x))

    add_one = add_one_p.bind
    for wrap in (ad.checkpoint, lambda f: ad.checkpoint(f, policy=cp.nothing_saveable)):
        for n, expected in [(4, 2), (8, 8), (16, 24)]:
            forward, backward = _forward_and_backward(nested([add_one] * n, wrap), np.ones(()))
            assert forward == {"add_one": n} and backward.get("add_one", 0) == expected
        # JAX's test_remat_eval_counter: 2 evaluations forward, 3 backward.
        f = wrap(add_one)
        g = wrap(lambda x: add_one(f(x)))
        assert _forward_and_backward(g, np.zeros(1)) == ({"add_one": 2}, {"add_one": 3})


def test_products_saved_by_dots_saveable():
    """JAX's test_remat_checkpoint_dots: the products are kept, the sines between them
    recomputed (the last one's output is read by nothing), its backward products computed."""
    calls = {"matmul": 0}
    impl = matmul_p.impl

    def counted(*args, **params):
        calls["matmul"] += 1
        return impl(*args, **params)

    def f(x):
        for _ in range(3):
            x = csin(x @ x)
        return x

    x = np.eye(3) * 0.3 + 0.05
    matmul_p.impl = counted
    try:
        for policy, recomputed_sines, products in [
            (cp.dots_saveable, 2, 6),
            (cp.dots_with_no_batch_dims_saveable, 2, 6),
            (cp.nothing_saveable, 2, 9),
            (cp.everything_saveable, 0, 6),
        ]:
            calls["matmul"] = 0
            forward, backward = _forward_and_backward(ad.checkpoint(f, policy=policy), x)
            assert forward == {"csin": 3}
            assert backward.get("csin", 0) == recomputed_sines
            assert calls["matmul"] == 3 + products
    finally:
        matmul_p.impl = impl
    check_grads(ad.checkpoint(f, policy=cp.dots_saveable), (x,), order=2, modes=("fwd", "rev"))


def test_dots_with_no_batch_dims():
    """Products with a batch axis shared by their operands are recomputed by
    dots_with_no_batch_dims_saveable, saved by dots_saveable."""
    policy = cp.dots_with_no_batch_dims_saveable
    a2, a3 = (
        ad.core.abstract.ShapedArray((2, 3), np.float64),
        ad.core.abstract.ShapedArray((4, 2, 3), np.float64),
    )
    from autodiff.ops.products import einsum_p

    assert policy(matmul_p, a2, a2) and policy(matmul_p, a3, a2)
    assert not policy(matmul_p, a3, a3) and cp.dots_saveable(matmul_p, a3, a3)
    assert policy(einsum_p, a2, a2, subscripts="ij,kj->ik", optimize=False)
    assert not policy(einsum_p, a3, a3, subscripts="nij,nkj->nik", optimize=False)
    assert not policy(einsum_p, a3, a3, subscripts="...ij,...kj->...ik", optimize=False)
    assert not cp.dots_saveable(einsum_p, a2, subscripts="ij->ji", optimize=False)
    assert not policy(sin_p, a2)


# ------------------------------------------------------------------ derivatives


def mlp(w, x):
    h = anp.tanh(x @ w[0])
    h = ad.checkpoint_name(h, "h")
    return anp.einsum("bi,ij->bj", anp.sin(h), w[1])


POLICIES = {
    "none": None,
    "nothing": cp.nothing_saveable,
    "everything": cp.everything_saveable,
    "dots": cp.dots_saveable,
    "dots_no_batch": cp.dots_with_no_batch_dims_saveable,
    "names": cp.save_only_these_names("h"),
}
W = (RNG.normal(size=(3, 4)) * 0.5, RNG.normal(size=(4, 2)) * 0.5)
XB = RNG.normal(size=(5, 3))


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
def test_derivatives_equal_those_without_checkpoint(policy):
    f = ad.checkpoint(mlp, policy=policy)

    def loss(w, x):
        return anp.sum(f(w, x) ** 2)

    def plain(w, x):
        return anp.sum(mlp(w, x) ** 2)

    want = ad.grad(plain)(W, XB)
    for got in (ad.grad(loss)(W, XB), ad.jit(ad.grad(loss))(W, XB)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    check_grads(lambda w0, x: f((w0, W[1]), x), (W[0], XB), order=2, modes=("fwd", "rev"))
    check_grads(ad.jit(lambda w0, x: f((w0, W[1]), x)), (W[0], XB), order=2, modes=("fwd", "rev"))
    # Per-example gradients (vmap of grad) and the gradient of a vmap.
    per_example = ad.vmap(ad.grad(loss), in_axes=(None, 0))(W, XB[:, None])
    loop = [ad.grad(plain)(W, x[None]) for x in XB]
    for k in range(2):
        np.testing.assert_allclose(per_example[k], np.stack([g[k] for g in loop]), rtol=1e-12)
    summed = ad.grad(lambda w: anp.sum(ad.vmap(lambda x: loss(w, x[None]))(XB)))(W)
    for g, w in zip(summed, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    # Hessian-vector products: forward over reverse, reverse over reverse.
    v = RNG.normal(size=W[0].shape)
    hvp = ad.jvp(lambda w0: ad.grad(plain)((w0, W[1]), XB)[0], (W[0],), (v,))[1]
    got = ad.jvp(lambda w0: ad.grad(loss)((w0, W[1]), XB)[0], (W[0],), (v,))[1]
    np.testing.assert_allclose(got, hvp, rtol=1e-11)
    got = ad.grad(lambda w0: anp.sum(ad.grad(loss)((w0, W[1]), XB)[0] * v))(W[0])
    np.testing.assert_allclose(got, hvp, rtol=1e-11)


def test_torch_face():
    w0 = ad.tensor(W[0], requires_grad=True)
    out = ad.checkpoint(mlp, policy=cp.dots_saveable)((w0, ad.tensor(W[1])), XB)
    anp.sum(out**2).backward()
    want = ad.grad(lambda w: anp.sum(mlp(w, XB) ** 2))(W)[0]
    np.testing.assert_allclose(w0.grad.numpy(), want, rtol=1e-12)


def test_checkpoint_name_is_the_identity_with_every_rule():
    x = RNG.normal(size=(2, 3))
    name = lambda x: ad.checkpoint_name(x, "n") * 3.0
    np.testing.assert_array_equal(name(x), x * 3.0)
    check_grads(name, (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_array_equal(ad.vmap(name)(x), x * 3.0)
    np.testing.assert_array_equal(ad.jit(name)(x), x * 3.0)
    tree = ad.checkpoint_name({"a": x, "b": (x, 2.0)}, "t")
    assert tree["b"][1] == 2.0 and tree["a"] is x


def test_names_under_vmap():
    """JAX's test_checkpoint_name_vmap: the names stay in the batched function."""

    def f(x):
        return ad.checkpoint_name(csin(x), "y") * 2.0 + 1.0

    g = ad.vmap(ad.checkpoint(f, policy=cp.save_only_these_names("y")))
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(g(x), f(x))
    forward, backward = _forward_and_backward(lambda a: anp.sum(g(a)), x)
    assert backward == {}  # (the named value is kept: nothing to recompute)
    np.testing.assert_allclose(ad.grad(lambda a: anp.sum(g(a)))(x), 2.0 * np.cos(x))


def test_custom_rules_and_control_flow_inside():
    """JAX's test_remat_custom_jvp_policy / custom_vjp_policy / checkpoint_dots_inside_scan."""

    @ad.custom_jvp
    def sin(x):
        return anp.sin(x)

    sin.defjvp(lambda p, t: (sin(p[0]), anp.cos(p[0]) * t[0]))

    @ad.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (cube(x), x), lambda x, g: (3.0 * x**2 * g,))

    @ad.checkpoint
    def plain(x):
        return x

    def f(x):
        x = x @ x
        x = sin(x * 0.1)
        x = cube(x @ x)
        return sin(x)

    x = np.eye(2) * 0.5 + 0.1
    rf = ad.checkpoint(f, policy=cp.dots_saveable)
    check_grads(rf, (x,), order=2, modes=("rev",))
    g = lambda x: ad.scan(lambda c, _: (rf(c), None), x, None, length=2)[0]
    check_grads(g, (x,), order=2, modes=("rev",))
    check_grads(ad.jit(g), (x,), order=1, modes=("rev",))
    h = ad.checkpoint(lambda x: ad.scan(lambda c, _: (anp.sin(c) @ c, None), x, None, length=3)[0],
                      policy=cp.dots_saveable)  # fmt: skip
    check_grads(h, (x,), order=2, modes=("fwd", "rev"))
    check_grads(ad.checkpoint(lambda x: plain(x) * 2.0, policy=cp.nothing_saveable), (x,))


def test_python_numbers_and_closures():
    """JAX's test_remat_basic (a Python float output) and test_remat_freevars (a closure over
    an enclosing transform's value)."""

    for wrap in (ad.checkpoint, lambda h: ad.checkpoint(h, policy=cp.nothing_saveable)):
        g = wrap(lambda x: (anp.sin(anp.sin(x)), 3.0))
        out, f_jvp = ad.linearize(lambda x: g(x)[0], 2.0)
        np.testing.assert_allclose(out, np.sin(np.sin(2.0)))
        np.testing.assert_allclose(f_jvp(3.0), np.cos(np.sin(2.0)) * np.cos(2.0) * 3.0)
        assert g(ad.tensor(1.0))[1] == 3.0

        def f2(x):
            y = 2 * anp.sin(x)
            return wrap(lambda x: anp.cos(x) * anp.sin(y))(x)

        def f1(x):
            return anp.cos(x) * anp.sin(2 * anp.sin(x))

        np.testing.assert_allclose(ad.grad(f2)(2.0), ad.grad(f1)(2.0), rtol=1e-13)
        # (staged: what the function closes over is an operand, and derivatives of every
        # order flow to it, after the transform that made it has returned too: vjp)
        check_grads(f2, (2.0,), order=2, modes=("fwd", "rev"))


# ------------------------------------------------------------------ static arguments, CSE, errors


def test_static_argnums_and_python_control_flow():
    def g(x, flag):
        if flag > 0:  # (Python control flow on a static argument)
            return anp.sin(x)
        return anp.cos(x)

    for policy in (None, cp.nothing_saveable):
        f = ad.checkpoint(g, policy=policy, static_argnums=(1,))
        np.testing.assert_allclose(ad.grad(lambda x: anp.sum(f(x, 1)))(X), np.cos(X))
        np.testing.assert_allclose(ad.grad(lambda x: anp.sum(f(x, -1)))(X), -np.sin(X))
        np.testing.assert_allclose(ad.jit(ad.grad(lambda x: anp.sum(f(x, -1))))(X), -np.sin(X))
    with pytest.raises((TypeError, ValueError), match="static_argnums"):
        ad.checkpoint(g, static_argnums=(2,))(X, 1)
    # Keyword arguments: differentiated, or static by name.
    h = ad.checkpoint(lambda x, *, scale, act: act(x) * scale, static_argnames="act")
    np.testing.assert_allclose(
        ad.grad(lambda x: anp.sum(h(x, scale=2.0, act=anp.sin)))(X), 2.0 * np.cos(X)
    )
    np.testing.assert_allclose(
        ad.grad(lambda s: anp.sum(h(X, scale=s, act=anp.tanh)))(2.0), np.sum(np.tanh(X))
    )


def test_a_concreteness_error_names_the_users_code():
    """JAX's test_concreteness_error_includes_user_code: the function is staged; Python control
    flow on a traced value raises, naming the function, its argument, and (in the traceback)
    the line; a static argument may steer it."""

    def user_function(x, flag):
        if x[0] > 0:
            return x * flag
        return anp.sin(x)

    for policy in (None, cp.nothing_saveable):
        f = ad.checkpoint(user_function, policy=policy, static_argnums=(1,))
        with pytest.raises(ConcretizationError, match="'user_function'.*It depends on x") as info:
            ad.grad(lambda x: anp.sum(f(x, 1.0)))(X)
        assert "if x[0] > 0:" in "".join(traceback.format_exception(info.value))
        assert "static_argnums" in str(info.value)
        np.testing.assert_allclose(f(X, 2.0), user_function(X, 2.0))  # (no Tensor: just runs)


def test_prevent_cse_keeps_the_recomputation_under_jit():
    """With prevent_cse (the default) the backward pass recomputes from values behind an
    optimization barrier, which jit's CSE does not merge into the forward computation; with
    prevent_cse=False it does, and the recomputation disappears."""
    counts = {}
    for prevent in (True, False, (True,)):
        f = ad.checkpoint(
            lambda x: anp.sin(anp.sin(x)), policy=cp.nothing_saveable, prevent_cse=prevent
        )
        step = ad.jit(ad.value_and_grad(lambda x: anp.sum(f(x))))
        names = [e.prim.name for e in step.graph(X).equations]
        counts[str(prevent)] = names.count("sin")
        value, grad = step(X)
        np.testing.assert_allclose(value, np.sum(np.sin(np.sin(X))))
        np.testing.assert_allclose(grad, np.cos(np.sin(X)) * np.cos(X), rtol=1e-14)
    assert counts == {"True": 3, "False": 2, "(True,)": 3}
    with pytest.raises(TypeError, match="prevent_cse"):
        ad.checkpoint(lambda x: x, policy=cp.nothing_saveable, prevent_cse=(True, False))(
            ad.tensor(X)
        )


def test_staged_checkpoint_is_one_equation_on_both_backends():
    f = ad.checkpoint(lambda x: anp.sin(anp.sin(x)) * 2.0, policy=cp.nothing_saveable)
    for backend in ("numpy", "numba"):
        jitted = ad.jit(f, backend=backend)
        np.testing.assert_allclose(jitted(X), np.sin(np.sin(X)) * 2.0)
        assert [e.prim.name for e in jitted.graph(X).equations] == ["remat"]
        grad = ad.jit(ad.grad(lambda x: anp.sum(f(x))), backend=backend)
        np.testing.assert_allclose(grad(X), 2.0 * np.cos(np.sin(X)) * np.cos(X), rtol=1e-14)


def test_errors():
    with pytest.raises(TypeError, match="policy must be callable"):
        ad.checkpoint(lambda x: x, policy="dots")
    with pytest.raises(TypeError, match="name must be a str"):
        ad.checkpoint_name(X, 3)
