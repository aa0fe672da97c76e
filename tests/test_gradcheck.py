"""gradcheck / gradgradcheck: pass on correct derivatives, fail (with torch's messages) on wrong ones.

Wrong derivative rules are small custom Primitives with a deliberate bug.
"""

import re
import warnings

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.autograd import GradcheckError, gradcheck, gradgradcheck
from autodiff.core.primitive import Primitive, bind
from autodiff.core.trace import trace_stack_depth


@pytest.fixture(autouse=True)
def _level_stack_is_empty_after_each_test():
    yield
    assert trace_stack_depth() == 1


def leaf(values, dtype=np.float64):
    return ad.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def sine(name="sine", vjp_scale=1.0, jvp_scale=1.0):
    """sin as a primitive whose vjp / jvp rules are multiplied by a (wrong, if != 1) factor."""
    p = Primitive(name)
    p.impl = np.sin
    p.vjp = lambda g, x, *, out: (g * anp.cos(x) * vjp_scale,)
    p.jvp = lambda primals, tangents, *, out: tangents[0] * anp.cos(primals[0]) * jvp_scale
    return p


X = [0.1, 0.7, 1.3]


# ---- passing checks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opts",
    [
        dict(),
        dict(fast_mode=True),
        dict(check_forward_ad=True),
        dict(check_forward_ad=True, fast_mode=True),
        dict(check_forward_ad=True, check_backward_ad=False),
        dict(check_batched_grad=True, check_forward_ad=True, check_batched_forward_grad=True),
    ],
)
def test_gradcheck_passes_on_correct_functions(opts):
    x, m = leaf(X), leaf([[0.5, -0.2], [0.3, 0.9]])

    def f(x, m):
        return anp.tanh(x[:2]) @ m, (x**2).sum() * anp.exp(m), x[0]

    assert gradcheck(f, (x, m), **opts) is True
    assert gradcheck(lambda x: bind(sine(), x), x, **opts) is True


def test_gradcheck_accepts_constants_and_non_tensor_inputs_and_outputs():
    x = leaf(X)
    assert gradcheck(lambda x, n, c: (x * n + c, 3, None), (x, 3, ad.tensor(X)))
    assert gradcheck(lambda x: ad.tensor([1.0, 2.0]), (x,))  # no differentiable output
    assert gradcheck(lambda x: x.sum() * 2, leaf(2.0), fast_mode=True, check_forward_ad=True)


@pytest.mark.parametrize("opts", [dict(), dict(fast_mode=True), dict(check_fwd_over_rev=True)])
def test_gradgradcheck_passes(opts):
    x, y = leaf(X), leaf([0.3, -0.2, 0.5])
    assert gradgradcheck(lambda x, y: (anp.sin(x) * y, (x**3).sum()), (x, y), **opts)
    assert gradgradcheck(lambda x: bind(sine(), x), x, **opts)


def test_gradgradcheck_with_given_and_non_contiguous_grad_outputs():
    x = leaf(X)
    assert gradgradcheck(lambda x: x**3, (x,), (leaf([1.0, -2.0, 0.5]),))
    assert gradgradcheck(lambda x: x**3, (x,), ad.tensor([1.0, -2.0, 0.5]))
    assert gradgradcheck(lambda x: anp.exp(x), (x,), gen_non_contig_grad_outputs=True)


# ---- failing checks and their messages --------------------------------------------------------


def test_wrong_vjp_fails_with_torch_message():
    x = leaf(X)
    bad = sine("bad_vjp", vjp_scale=1.1)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda x: bind(bad, x), (x,))
    message = str(info.value)
    assert message.startswith(
        "Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor("
    )
    numerical, analytical = re.fullmatch(
        r"Jacobian mismatch for output 0 with respect to input 0,\nnumerical:(.*)\n"
        r"analytical:(.*)\n",
        message,
        re.S,
    ).groups()
    assert "0.99500417" in numerical  # cos(0.1)
    assert "1.09450458" in analytical  # 1.1 cos(0.1)
    assert isinstance(info.value, RuntimeError)
    assert gradcheck(lambda x: bind(bad, x), (x,), raise_exception=False) is False


def test_mismatch_names_output_and_input_indices():
    x, y = leaf(X), leaf([0.3, -0.2, 0.5])
    bad = sine("bad_vjp2", vjp_scale=0.5)
    with pytest.raises(
        GradcheckError, match=r"^Jacobian mismatch for output 1 with respect to input 1,"
    ):
        gradcheck(lambda x, y: (x * 2, bind(bad, y)), (x, y))


def test_fast_mode_failure_reports_slow_mode_jacobians():
    bad = sine("bad_vjp_fast", vjp_scale=1.1)
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda x: bind(bad, x), (leaf(X),), fast_mode=True)
    message = str(info.value)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,\n")
    assert "Below, we recompute numerical and analytical jacobians in slow mode" in message
    assert "The max per-element difference (slow mode) is: 0.0995" in message


def test_wrong_jvp_fails_in_forward_mode_only():
    bad = sine("bad_jvp", jvp_scale=0.9)
    x = leaf(X)
    assert gradcheck(lambda x: bind(bad, x), (x,))
    for fast in (False, True):
        with pytest.raises(
            GradcheckError,
            match="^Jacobian computed with forward mode mismatch "
            "for output 0 with respect to input 0,\nnumerical:",
        ):
            gradcheck(lambda x: bind(bad, x), (x,), check_forward_ad=True, fast_mode=fast)


def test_gradgradcheck_catches_a_wrong_second_derivative():
    # cos with a wrong vjp, used only inside sin's (correct) vjp and jvp rules
    bad_cos = Primitive("cos_wrong_vjp")
    bad_cos.impl = np.cos
    bad_cos.vjp = lambda g, x, *, out: (g * anp.sin(x),)  # should be -sin
    bad_cos.jvp = lambda primals, tangents, *, out: -tangents[0] * anp.sin(primals[0])
    s = Primitive("sin_via_bad_cos")
    s.impl = np.sin
    s.vjp = lambda g, x, *, out: (g * bind(bad_cos, x),)
    s.jvp = lambda primals, tangents, *, out: tangents[0] * bind(bad_cos, primals[0])
    x = leaf(X)
    assert gradcheck(lambda x: bind(s, x), (x,), check_forward_ad=True)
    with pytest.raises(
        GradcheckError, match="^Jacobian mismatch for output 0 with respect to input 0,"
    ):
        gradgradcheck(lambda x: bind(s, x), (x,))
    # forward over reverse differentiates the same vjp with bad_cos's (correct) jvp
    assert gradgradcheck(
        lambda x: bind(s, x),
        (x,),
        check_fwd_over_rev=True,
        check_rev_over_rev=False,
        check_undefined_grad=False,
    )


def test_nondeterministic_backward():
    rng = np.random.default_rng(1)
    noisy = Primitive("noisy_sin")
    noisy.impl = np.sin
    noisy.vjp = lambda g, x, *, out: (g * (anp.cos(x) + rng.standard_normal() * 1e-9),)
    with pytest.raises(
        GradcheckError,
        match="^Backward is not reentrant, i.e., running "
        "backward with same input and grad_output multiple times gives "
        "different values",
    ):
        gradcheck(lambda x: bind(noisy, x), (leaf(X),))
    assert gradcheck(lambda x: bind(noisy, x), (leaf(X),), nondet_tol=1e-6)


def test_gradient_dtype_and_size_checks():
    to32 = Primitive("grad_in_float32")
    to32.impl = np.sin
    to32.vjp = lambda g, x, *, out: (anp.astype(g * anp.cos(x), np.float32),)
    x = leaf(X)
    with pytest.raises(GradcheckError, match="^Gradient has dtype mismatch$"):
        gradcheck(lambda x: bind(to32, x), (x,), check_grad_dtypes=True)
    with pytest.raises(GradcheckError, match="^grad is incorrect type$"):
        gradcheck(lambda x: bind(to32, x), (x,))
    summed = Primitive("grad_wrong_size")
    summed.impl = np.sin
    summed.vjp = lambda g, x, *, out: (anp.sum(g * anp.cos(x)),)
    with pytest.raises(GradcheckError, match="^Analytical gradient has incorrect size$"):
        gradcheck(lambda x: bind(summed, x), (x,))


def test_backward_not_multiplied_by_grad_output():
    p = Primitive("sum_ignoring_g")
    p.impl = np.sum
    p.vjp = lambda g, x, *, out: (anp.ones_like(x) + 0 * g,)  # right for g = 1 only
    with pytest.raises(GradcheckError, match="^backward not multiplied by grad_output$"):
        gradcheck(lambda x: bind(p, x), (leaf(X),))


def test_undefined_tangent_must_be_handled_by_jvp_rules():
    p = Primitive("mul_no_symbolic_zero")
    p.impl = np.multiply
    p.vjp = lambda g, a, b, *, out: (g * b, g * a)
    p.jvp = lambda primals, tangents, *, out: (
        tangents[0] * primals[1] + primals[0] * tangents[1]  # fails on a None tangent
    )
    args = (leaf(X), leaf([0.3, -0.2, 0.5]))
    assert gradcheck(
        lambda a, b: bind(p, a, b), args, check_forward_ad=True, check_undefined_grad=False
    )
    with pytest.raises(GradcheckError, match="to handle an undefined tangent"):
        gradcheck(lambda a, b: bind(p, a, b), args, check_forward_ad=True)


def test_batched_grad_failure():
    p = Primitive("vjp_converts_to_numpy")
    p.impl = np.sin
    p.vjp = lambda g, x, *, out: (ad.tensor(np.asarray(g) * np.cos(np.asarray(x))),)
    x = leaf(X)
    assert gradcheck(lambda x: bind(p, x), (x,))
    with pytest.raises(GradcheckError, match="^While computing batched gradients, got: "):
        gradcheck(lambda x: bind(p, x), (x,), check_batched_grad=True)


def test_non_differentiable_output_that_changes():
    x = leaf(X)
    for fast in (False, True):
        with pytest.raises(
            GradcheckError, match="^Numerical gradient for function expected to be zero$"
        ):
            gradcheck(lambda x: anp.sin(x.detach()), (x,), fast_mode=fast)


# ---- complex ------------------------------------------------------------------------------


def squared_modulus(vjp):
    """|z|^2 (real output) with the given vjp rule. Rules transpose plainly (g * 2 conj(z));
    the user-visible gradient is then torch's 2z (see conj_complex)."""
    p = Primitive("squared_modulus")
    p.impl = lambda z: np.abs(z) ** 2
    p.vjp = vjp
    p.jvp = lambda primals, tangents, *, out: 2 * anp.real(anp.conj(primals[0]) * tangents[0])
    return p


def test_complex_input_follows_torch_convention():
    z = ad.tensor(np.array([1 + 2j, 0.5 - 1j]), requires_grad=True)
    good = squared_modulus(lambda g, z, *, out: (g * 2 * anp.conj(z),))
    for fast in (False, True):
        assert gradcheck(lambda z: bind(good, z), (z,), check_forward_ad=True, fast_mode=fast)
    conjugated = squared_modulus(lambda g, z, *, out: (g * 2 * z,))
    with pytest.raises(GradcheckError, match=r"numerical:tensor\(\[\[2\.\+4\.j"):
        gradcheck(lambda z: bind(conjugated, z), (z,))


# ---- argument checks ----------------------------------------------------------------------


def test_input_checks():
    with pytest.raises(
        ValueError,
        match="gradcheck expects at least one input tensor to "
        "require gradient, but none of them have requires_grad=True.",
    ):
        gradcheck(lambda x: x * 2, (ad.tensor(X),))
    overlapping = ad.Tensor(np.broadcast_to(np.array([1.0]), (3,)), requires_grad=True)
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda x: x * 2, (overlapping,))
    with pytest.raises(
        AssertionError,
        match="Expected at least one of check_forward_ad or check_backward_ad to be True",
    ):
        gradcheck(lambda x: x, leaf(X), check_backward_ad=False)
    with pytest.raises(AssertionError, match="check_batched_grad=True requires check_backward_ad"):
        gradcheck(
            lambda x: x,
            leaf(X),
            check_batched_grad=True,
            check_backward_ad=False,
            check_forward_ad=True,
        )
    with pytest.raises(
        AssertionError, match="check_undefined_grad=True requires check_rev_over_rev"
    ):
        gradgradcheck(lambda x: x, leaf(X), check_rev_over_rev=False, check_fwd_over_rev=True)


def test_single_precision_input_warns():
    x = leaf([0.1, 0.7], dtype=np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert gradcheck(lambda x: x * 2, (x,), atol=1e-2, rtol=1e-2)
    messages = [str(w.message) for w in caught]
    assert any(
        m.startswith(
            "Input #0 requires gradient and is not a double precision floating "
            "point or complex. This check will likely fail if all the inputs "
            "are not of double precision floating point or complex."
        )
        for m in messages
    )
    assert caught[0].filename == __file__


def test_inputs_are_restored_after_the_check():
    x = leaf(X)
    before = x.detach().numpy().copy()
    gradcheck(lambda x: anp.sin(x), (x,))
    bad = sine("restored", vjp_scale=2.0)
    assert not gradcheck(lambda x: bind(bad, x), (x,), raise_exception=False)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x._version == 0 and x.grad is None
