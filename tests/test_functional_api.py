"""autodiff.autograd.functional: vjp, jvp, jacobian, hessian, hvp, vhp with torch's rules."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.autograd import functional as F
from autodiff.core.trace import trace_stack_depth


@pytest.fixture(autouse=True)
def _level_stack_is_empty_after_each_test():
    yield
    assert trace_stack_depth() == 1


def value(t):
    return np.asarray(t.detach().numpy())


X = np.array([0.5, -1.0, 2.0])
Y = np.array([1.5, 0.25, -0.75])
M = np.array([[1.0, 2.0], [-0.5, 0.3]])


def pair(x, y):
    """(x * y, sum(x)): J = ((diag(y), diag(x)), (ones, zeros))."""
    return x * y, x.sum()


# ---- jacobian -----------------------------------------------------------------------------------

STRATEGIES = [
    dict(vectorize=False),
    dict(vectorize=True),
    dict(vectorize=True, strategy="forward-mode"),
]


@pytest.mark.parametrize("opts", STRATEGIES)
def test_jacobian_tensor_in_tensor_out_is_a_tensor(opts):
    J = F.jacobian(lambda x: x**2, ad.tensor(X), **opts)
    assert isinstance(J, ad.Tensor)
    np.testing.assert_allclose(value(J), np.diag(2 * X))


@pytest.mark.parametrize("opts", STRATEGIES)
def test_jacobian_shapes_follow_tensor_or_tuple(opts):
    x, m = ad.tensor(X), ad.tensor(M)
    # one input, one output: out.shape + in.shape
    J = F.jacobian(lambda m: m * 2.0, m, **opts)
    assert J.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(value(J).reshape(4, 4), 2 * np.eye(4))
    # tuple of one input: a tuple of one
    J = F.jacobian(lambda m: m.sum(axis=0), (m,), **opts)
    assert isinstance(J, tuple) and len(J) == 1 and J[0].shape == (2, 2, 2)
    # tuple output, single input: one entry per output
    J = F.jacobian(lambda x: (x.sum(), x[:2] * 3.0), x, **opts)
    assert isinstance(J, tuple) and [j.shape for j in J] == [(3,), (2, 3)]
    # tuples on both sides: [output][input]
    J = F.jacobian(lambda x, m: (x[:2] @ m, (x**2).sum()), (x, m), **opts)
    assert [[j.shape for j in row] for row in J] == [[(2, 3), (2, 2, 2)], [(3,), (2, 2)]]
    np.testing.assert_allclose(value(J[0][0]), np.hstack([M.T, np.zeros((2, 1))]))
    np.testing.assert_allclose(value(J[1][0]), 2 * X)
    np.testing.assert_allclose(value(J[1][1]), np.zeros((2, 2)))


@pytest.mark.parametrize("opts", STRATEGIES)
def test_jacobian_hand_computed_two_inputs_two_outputs(opts):
    (jxx, jxy), (jsx, jsy) = F.jacobian(pair, (ad.tensor(X), ad.tensor(Y)), **opts)
    np.testing.assert_allclose(value(jxx), np.diag(Y))
    np.testing.assert_allclose(value(jxy), np.diag(X))
    np.testing.assert_allclose(value(jsx), np.ones(3))
    np.testing.assert_allclose(value(jsy), np.zeros(3))


def test_vectorized_strategies_agree_with_the_loop():
    def f(x, m):
        return anp.sin(x[:2]) @ m, anp.exp(m).sum() * x

    inputs = (ad.tensor(X), ad.tensor(M))
    loop = F.jacobian(f, inputs)
    for opts in STRATEGIES[1:]:
        other = F.jacobian(f, inputs, **opts)
        for row_a, row_b in zip(loop, other):
            for a, b in zip(row_a, row_b):
                np.testing.assert_allclose(value(a), value(b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("opts", STRATEGIES)
def test_jacobian_without_create_graph_does_not_require_grad(opts):
    x = ad.tensor(X, requires_grad=True)
    J = F.jacobian(lambda x: x**3, x, **opts)
    assert not J.requires_grad and J.grad_fn is None


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_create_graph_is_differentiable(vectorize):
    x = ad.tensor(X, requires_grad=True)
    J = F.jacobian(lambda x: x**3, x, create_graph=True, vectorize=vectorize)
    assert J.requires_grad
    np.testing.assert_allclose(value(J), np.diag(3 * X**2))
    (g,) = ad.autograd.grad(J.sum(), x)
    np.testing.assert_allclose(value(g), 6 * X)


def test_jacobian_only_differentiates_through_the_argument():
    # torch's rule: the input is passed as a fresh Tensor, so a closure over the same
    # tensor is a constant.
    x = ad.tensor(X, requires_grad=True)
    J = F.jacobian(lambda a: a * x, x)
    np.testing.assert_allclose(value(J), np.diag(X))


def test_independent_input_gives_zeros_or_strict_error():
    x, y = ad.tensor(X), ad.tensor(Y)
    jx, jy = F.jacobian(lambda x, y: x * 2.0, (x, y))
    np.testing.assert_allclose(value(jy), np.zeros((3, 3)))
    with pytest.raises(
        RuntimeError,
        match=r"^Output 0 of the user-provided function is "
        r"independent of input 1\. This is not allowed in strict mode\.$",
    ):
        F.jacobian(lambda x, y: x * 2.0, (x, y), strict=True)


def test_strict_output_without_graph():
    with pytest.raises(
        RuntimeError,
        match="Output 0 of the user-provided function does not "
        "require gradients. The outputs must be computed in a differentiable",
    ):
        F.jacobian(lambda x: ad.tensor([1.0, 2.0]), ad.tensor(X), strict=True)


def test_strict_create_graph_constant_jacobian():
    with pytest.raises(
        RuntimeError,
        match="The jacobian of the user-provided function is "
        "independent of input 0. This is not allowed in strict mode when "
        "create_graph=True.",
    ):
        F.jacobian(lambda x: 2.0 * x, ad.tensor(X), strict=True, create_graph=True)


def test_unsupported_combinations():
    x = ad.tensor(X)
    with pytest.raises(
        RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"
    ):
        F.jacobian(lambda x: x**2, x, strict=True, vectorize=True)
    with pytest.raises(
        RuntimeError, match='`strict=True` and `strategy="forward-mode"` are not supported together'
    ):
        F.jacobian(lambda x: x**2, x, strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(lambda x: x**2, x, strategy="forward-mode")
    with pytest.raises(
        NotImplementedError,
        match='`create_graph=True` and `strategy="forward-mode"` are not supported together',
    ):
        F.jacobian(lambda x: x**2, x, create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(
        AssertionError, match='Expected strategy to be either "forward-mode" or "reverse-mode"'
    ):
        F.jacobian(lambda x: x**2, x, strategy="fwd")


def test_inputs_and_outputs_must_be_tensors():
    x = ad.tensor(X)
    with pytest.raises(
        TypeError,
        match=r"^The inputs given to jacobian must be either a Tensor "
        r"or a tuple of Tensors but the given inputs has type <class 'list'>\.$",
    ):
        F.jacobian(lambda x: x, [x])
    with pytest.raises(TypeError, match="but the value at index 1 has type <class 'float'>"):
        F.vjp(lambda x, y: x, (x, 1.0))
    with pytest.raises(
        TypeError,
        match=r"^The outputs of the user-provided function given to "
        r"jvp must be either a Tensor or a tuple of Tensors but the given outputs "
        r"of the user-provided function has type <class 'float'>\.$",
    ):
        F.jvp(lambda x: 1.0, x, ad.tensor(X))
    for opts in STRATEGIES:
        with pytest.raises(TypeError, match="the value at index 1 has type <class 'int'>"):
            F.jacobian(lambda x: (x, 3), x, **opts)


# ---- vjp / jvp ----------------------------------------------------------------------------------


def test_vjp_values_and_structure():
    x, y = ad.tensor(X), ad.tensor(Y)
    out, g = F.vjp(lambda x: x**2, x, ad.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(value(out), X**2)
    np.testing.assert_allclose(value(g), 2 * X * [1.0, 2.0, 3.0])
    (o1, o2), (gx, gy) = F.vjp(pair, (x, y), (ad.tensor(np.ones(3)), ad.tensor(2.0)))
    np.testing.assert_allclose(value(gx), Y + 2.0)
    np.testing.assert_allclose(value(gy), X)
    out, g = F.vjp(lambda x: (x**2).sum(), x)  # v may be omitted for one element
    np.testing.assert_allclose(value(g), 2 * X)
    assert not out.requires_grad and not g.requires_grad


def test_jvp_values_and_structure():
    x, y = ad.tensor(X), ad.tensor(Y)
    out, t = F.jvp(lambda x: x**3, x, ad.tensor([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(value(out), X**3)
    np.testing.assert_allclose(value(t), 3 * X**2 * [1.0, 0.0, 2.0])
    (o1, o2), (t1, t2) = F.jvp(pair, (x, y), (ad.tensor(np.ones(3)), ad.tensor(np.zeros(3))))
    np.testing.assert_allclose(value(t1), Y)
    np.testing.assert_allclose(value(t2), 3.0)
    out, t = F.jvp(lambda s: anp.sin(s), ad.tensor(0.0))  # v may be omitted for one element
    assert float(value(t)) == 1.0


def test_jvp_of_output_independent_of_inputs_is_zero():
    out, t = F.jvp(lambda x: ad.tensor([1.0, 2.0]), ad.tensor(X), ad.tensor(Y))
    np.testing.assert_allclose(value(t), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="does not require gradients"):
        F.jvp(lambda x: ad.tensor([1.0, 2.0]), ad.tensor(X), ad.tensor(Y), strict=True)
    with pytest.raises(
        RuntimeError,
        match=r"^The output of the user-provided function is "
        r"independent of input 1\. This is not allowed in strict mode\.$",
    ):
        F.jvp(
            lambda x, y: x * 2.0,
            (ad.tensor(X), ad.tensor(Y)),
            (ad.tensor(X), ad.tensor(Y)),
            strict=True,
        )


def test_vjp_and_jvp_create_graph():
    x = ad.tensor(X, requires_grad=True)
    v = ad.tensor(Y, requires_grad=True)
    out, g = F.vjp(lambda x: x**3, x, v, create_graph=True)
    assert out.requires_grad and g.requires_grad
    gx, gv = ad.autograd.grad(g.sum(), (x, v))
    np.testing.assert_allclose(value(gx), 6 * X * Y)
    np.testing.assert_allclose(value(gv), 3 * X**2)
    out, t = F.jvp(lambda x: x**3, x, v, create_graph=True)
    assert out.requires_grad and t.requires_grad
    gx, gv = ad.autograd.grad(t.sum(), (x, v))
    np.testing.assert_allclose(value(gx), 6 * X * Y)
    np.testing.assert_allclose(value(gv), 3 * X**2)


def test_results_do_not_require_grad_without_create_graph():
    x = ad.tensor(X, requires_grad=True)
    for fn in (F.vjp, F.jvp):
        out, r = fn(lambda x: x**3, x, ad.tensor(Y))
        assert not out.requires_grad and not r.requires_grad
    for fn in (F.hvp, F.vhp):
        out, r = fn(lambda x: (x**3).sum(), x, ad.tensor(Y))
        assert not out.requires_grad and not r.requires_grad


def test_works_under_no_grad():
    with ad.no_grad():
        _, g = F.vjp(lambda x: (x**2).sum(), ad.tensor(X))
        J = F.jacobian(lambda x: x**2, ad.tensor(X))
    np.testing.assert_allclose(value(g), 2 * X)
    np.testing.assert_allclose(value(J), np.diag(2 * X))


@pytest.mark.parametrize("fn", [F.vjp, F.jvp, F.hvp, F.vhp])
def test_v_errors(fn):
    x = ad.tensor(X)
    f = lambda x: (x**2).sum()
    if fn is F.vjp:
        with pytest.raises(
            RuntimeError,
            match=r"^The vector v can only be None if the "
            r"user-provided function returns a single Tensor with a single "
            r"element\.$",
        ):
            fn(lambda x: x**2, x)
        with pytest.raises(
            RuntimeError,
            match=r"^v has invalid size: should be "
            r"torch\.Size\(\[3\]\) but got torch\.Size\(\[2\]\)\.$",
        ):
            fn(lambda x: x**2, x, ad.tensor([1.0, 2.0]))
        with pytest.raises(
            RuntimeError,
            match=r"^v is a tuple of invalid length: should be 2 "
            r"but got 1\.$",
        ):
            fn(lambda x: (x, x), x, ad.tensor(X))
        return
    with pytest.raises(
        RuntimeError,
        match=r"^The vector v can only be None if the input to "
        r"the user-provided function is a single Tensor with a single element\.$",
    ):
        fn(f, x)
    with pytest.raises(RuntimeError, match=r"^The given v should contain a single Tensor\.$"):
        fn(f, x, (ad.tensor(X), ad.tensor(X)))
    with pytest.raises(
        RuntimeError,
        match=r"^Entry 1 in v has invalid size: should be "
        r"torch\.Size\(\[2, 2\]\) but got torch\.Size\(\[3\]\)\.$",
    ):
        fn(
            lambda x, m: (x**2).sum() * (m**2).sum(),
            (x, ad.tensor(M)),
            (ad.tensor(X), ad.tensor(X)),
        )


# ---- hessian, hvp, vhp --------------------------------------------------------------------------


def scalar_of_two(x, y):
    """sum(x_i^2 y_i): H_xx = diag(2y), H_xy = H_yx = diag(2x), H_yy = 0."""
    return (x**2 * y).sum()


HESSIAN_OPTS = [
    dict(),
    dict(vectorize=True),
    dict(vectorize=True, outer_jacobian_strategy="forward-mode"),
]


@pytest.mark.parametrize("opts", HESSIAN_OPTS)
def test_hessian_of_scalar_function_of_two_inputs(opts):
    (hxx, hxy), (hyx, hyy) = F.hessian(scalar_of_two, (ad.tensor(X), ad.tensor(Y)), **opts)
    np.testing.assert_allclose(value(hxx), np.diag(2 * Y))
    np.testing.assert_allclose(value(hxy), np.diag(2 * X))
    np.testing.assert_allclose(value(hyx), np.diag(2 * X))
    np.testing.assert_allclose(value(hyy), np.zeros((3, 3)))
    assert not hxx.requires_grad


@pytest.mark.parametrize("opts", HESSIAN_OPTS)
def test_hessian_shapes(opts):
    H = F.hessian(lambda m: (m**3).sum(), ad.tensor(M), **opts)
    assert isinstance(H, ad.Tensor) and H.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(value(H).reshape(4, 4), np.diag(6 * M.ravel()))
    (H,) = F.hessian(lambda m: (m**3).sum(), (ad.tensor(M),), **opts)
    assert isinstance(H, tuple) and H[0].shape == (2, 2, 2, 2)
    # a one-element output of any shape counts as a scalar
    H = F.hessian(lambda x: (x**3).sum().reshape(1, 1), ad.tensor(X), **opts)
    np.testing.assert_allclose(value(H), np.diag(6 * X))


def test_hessian_create_graph_and_errors():
    x = ad.tensor(X, requires_grad=True)
    H = F.hessian(lambda x: (x**3).sum(), x, create_graph=True)
    (g,) = ad.autograd.grad(H.sum(), x)
    np.testing.assert_allclose(value(g), 6 * np.ones(3))
    with pytest.raises(
        RuntimeError,
        match=r"^The Tensor returned by the function given to "
        r"hessian should contain a single element$",
    ):
        F.hessian(lambda x: x**2, x)
    with pytest.raises(
        RuntimeError,
        match=r"^The function given to hessian should return a "
        r"single Tensor$",
    ):
        F.hessian(lambda x: (x.sum(),), x)
    with pytest.raises(
        RuntimeError,
        match="While computing the hessian, found that the "
        "jacobian of the user-provided function with respect to input 0 is "
        "independent of the input",
    ):
        F.hessian(lambda x: (2.0 * x).sum(), x, strict=True)


def test_hvp_and_vhp_agree_with_the_hessian():
    def f(x, m):
        return (anp.sin(x[:2]) @ m).sum() * anp.exp(x).sum()

    inputs = (ad.tensor(X), ad.tensor(M))
    v = (ad.tensor(Y), ad.tensor(np.array([[0.2, -0.1], [0.4, 1.0]])))
    H = F.hessian(f, inputs)
    n = [3, 4]
    dense = np.block([[value(H[i][j]).reshape(n[i], n[j]) for j in range(2)] for i in range(2)])
    flat_v = np.concatenate([value(t).ravel() for t in v])
    out_h, hv = F.hvp(f, inputs, v)
    out_v, vh = F.vhp(f, inputs, v)
    np.testing.assert_allclose(value(out_h), value(out_v))
    expected = dense @ flat_v
    np.testing.assert_allclose(np.concatenate([value(t).ravel() for t in hv]), expected)
    np.testing.assert_allclose(np.concatenate([value(t).ravel() for t in vh]), flat_v @ dense)
    for a, b in zip(hv, vh):
        np.testing.assert_allclose(value(a), value(b), rtol=1e-12)


def test_hvp_hand_computed_and_create_graph():
    x = ad.tensor(X, requires_grad=True)
    v = ad.tensor(Y)
    out, hv = F.hvp(lambda x: (x**3).sum(), x, v)
    np.testing.assert_allclose(value(out), (X**3).sum())
    np.testing.assert_allclose(value(hv), 6 * X * Y)
    out, hv = F.hvp(lambda x: (x**3).sum(), x, v, create_graph=True)
    assert hv.requires_grad
    (g,) = ad.autograd.grad(hv.sum(), x)
    np.testing.assert_allclose(value(g), 6 * Y)
    out, vh = F.vhp(lambda x: (x**4).sum(), x, v, create_graph=True)
    (g,) = ad.autograd.grad(vh.sum(), x)
    np.testing.assert_allclose(value(g), 24 * X * Y)


def test_hvp_errors_and_strict():
    x = ad.tensor(X)
    with pytest.raises(
        RuntimeError,
        match=r"^The Tensor returned by the function given to hvp "
        r"should contain a single element$",
    ):
        F.hvp(lambda x: x**2, x, ad.tensor(Y))
    with pytest.raises(
        RuntimeError,
        match=r"^The function given to vhp should return a single "
        r"Tensor$",
    ):
        F.vhp(lambda x: (x.sum(), x.sum()), x, ad.tensor(Y))
    # an input the output ignores: zeros, or an error in strict mode
    _, (hx, hy) = F.hvp(lambda x, y: (x**3).sum(), (x, ad.tensor(Y)), (x, x))
    np.testing.assert_allclose(value(hy), np.zeros(3))
    with pytest.raises(
        RuntimeError,
        match="The output of the user-provided function is "
        "independent of input 1. This is not allowed in strict mode.",
    ):
        F.vhp(lambda x, y: (x**3).sum(), (x, ad.tensor(Y)), (x, x), strict=True)


def test_level_stack_and_grad_mode_survive_errors():
    def boom(x):
        raise ValueError("boom")

    for fn in (F.vjp, F.jvp, F.hvp, F.vhp):
        with pytest.raises(ValueError, match="boom"):
            fn(boom, ad.tensor(X), ad.tensor(Y))
    with pytest.raises(ValueError, match="boom"):
        F.jacobian(boom, ad.tensor(X), vectorize=True, strategy="forward-mode")
    assert ad.autograd.is_grad_enabled()
