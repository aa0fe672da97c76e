"""Converting a value to a Python number: an error inside transforms where it would drop a
derivative, torch's behaviour (and warning) on the torch face, NumPy's everywhere else."""

import math
import operator
import warnings

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core import tensor as tensor_module
from autodiff.core.trace import state, trace_stack_depth

# (importing torch's forward AD warns about torch.jit.script)
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

# Each conversion of a scalar to a Python value (math functions call __float__, list indexing
# and range() call __index__, a format spec formats the number).
CONVERSIONS = {
    "float": float,
    "int": int,
    "complex": complex,
    "item": lambda x: x.item(),
    "tolist": lambda x: x.tolist(),
    "math.exp": math.exp,
    "operator.index": operator.index,
    "format": lambda x: f"{x:.3f}",
}


def _uses(conversion):
    """A function of a scalar that converts it, then computes with it."""

    def f(x):
        conversion(x)
        return anp.sin(x) * 2.0

    return f


def _scalar_output(fun):
    return lambda x: anp.sum(fun(x))


# Each transform applied to a function of one float64 scalar (vmap: of a batch of them).
TRANSFORMS = {
    "grad": lambda f: ad.grad(f)(3.0),
    "value_and_grad": lambda f: ad.value_and_grad(f)(3.0),
    "vjp": lambda f: ad.vjp(f, 3.0)[1](1.0),
    "jvp": lambda f: ad.jvp(f, (3.0,), (1.0,)),
    "linearize": lambda f: ad.linearize(f, 3.0)[1](1.0),
    "jacfwd": lambda f: ad.jacfwd(f)(3.0),
    "jacrev": lambda f: ad.jacrev(f)(3.0),
    "hessian": lambda f: ad.hessian(f)(3.0),
    "hvp": lambda f: ad.hvp(f, (3.0,), (1.0,)),
    "grad of grad": lambda f: ad.grad(ad.grad(f))(3.0),
    "vmap": lambda f: ad.vmap(f)(np.array([1.0, 2.0, 3.0])),
    "vmap of size 1": lambda f: ad.vmap(f)(np.array([3.0])),
    "vmap of grad": lambda f: ad.vmap(ad.grad(f))(np.array([1.0, 2.0])),
    "grad of vmap": lambda f: ad.grad(lambda x: anp.sum(ad.vmap(f)(x)))(np.array([1.0, 2.0])),
    "jit": lambda f: ad.jit(f)(3.0),
    "jit of grad": lambda f: ad.jit(ad.grad(f))(3.0),
}


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_conversion_inside_a_transform_raises(conversion, transform):
    depth, grad_mode = trace_stack_depth(), state().grad_enabled
    with pytest.raises(ad.TracerConversionError) as info:
        TRANSFORMS[transform](_uses(CONVERSIONS[conversion]))
    if "jit" in transform:
        assert isinstance(info.value, ad.ConcretizationError)
    else:
        assert "stop_gradient" in str(info.value)
    # Nothing is left behind: the level stack and grad mode are as before.
    assert trace_stack_depth() == depth and state().grad_enabled == grad_mode
    assert float(ad.grad(anp.sin)(0.0)) == 1.0


def _outcome(conversion, value):
    try:
        return "value", conversion(value)
    except TypeError as e:
        return "error", type(e)


@pytest.mark.parametrize("value", [3.0, 2.5, -1.0, 3, np.float32(0.5)])
@pytest.mark.parametrize("conversion", CONVERSIONS)
def test_conversion_outside_transforms_is_numpys(conversion, value):
    convert = CONVERSIONS[conversion]
    expected = _outcome(convert, np.asarray(value))
    assert _outcome(convert, ad.tensor(value)) == expected
    assert _outcome(convert, ad.stop_gradient(ad.tensor(value))) == expected


def test_the_issue_example_raises_instead_of_a_wrong_gradient():
    w = np.array([3.0, 2.0])
    with pytest.raises(ad.TracerConversionError, match=r"float\(\)"):
        ad.grad(lambda w: float(w[0]) * w[1])(w)
    np.testing.assert_array_equal(ad.grad(lambda w: w[0] * w[1])(w), [2.0, 3.0])
    # A constant meant on purpose says so.
    np.testing.assert_array_equal(
        ad.grad(lambda w: float(ad.stop_gradient(w[0])) * w[1])(w), [0.0, 3.0]
    )


@pytest.mark.parametrize("transform", ["grad", "jvp", "jacfwd", "jacrev", "hessian", "linearize"])
def test_values_without_a_derivative_still_convert_inside_transforms(transform):
    constant = ad.tensor(4.0)
    seen = []

    def f(x):
        # A closed-over Tensor, a stopped value, integer results and comparisons carry no
        # derivative: converting them drops nothing.
        seen.append(
            float(constant) + ad.stop_gradient(x).item() + int(anp.argmax(anp.stack([x, 0.0])))
        )
        seen.append(bool(x > 0) and not bool(x < 0))
        seen.append([0, 1, 2][operator.index(anp.floor(x).astype(np.int64) - 2)])
        return anp.sin(x) * 2.0

    TRANSFORMS[transform](f)
    assert seen[:3] == [7.0, True, 1]


def test_bool_of_a_tracer_is_python_control_flow():
    # As in HIPS autograd and PyTorch: a branch on a concrete value works, and the branch
    # taken is differentiated.
    def relu(x):
        return x * 2.0 if x > 0 else x * 0.0

    assert float(ad.grad(relu)(3.0)) == 2.0 and float(ad.grad(relu)(-3.0)) == 0.0
    assert float(ad.grad(lambda x: x * 3.0 if x else x)(1.0)) == 3.0  # bool() of a float tracer
    assert float(ad.jvp(lambda x: anp.sin(x) if x > 1 else x, (2.0,), (1.0,))[1]) == math.cos(2)
    assert ad.hessian(lambda x: x**3 if bool(x > 0) else -x)(2.0) == 12.0
    # Under vmap a value has no single truth value, and under jit none at all (as before: a
    # TypeError).
    with pytest.raises(ad.TracerConversionError):
        ad.vmap(relu)(np.array([1.0, -1.0]))
    with pytest.raises(ad.ConcretizationError):
        ad.jit(relu)(1.0)


def test_integer_inputs_convert_inside_grad():
    def f(x, n):
        return x * float(int(n) + operator.index(n))

    assert float(ad.grad(f)(1.0, np.int64(3))) == 6.0
    assert ad.grad(lambda n: n * 1.0 + int(n), allow_int=True)(np.int64(2)).dtype == ad.float0


def test_format_without_a_spec_shows_the_tracer():
    shown = []
    ad.grad(lambda x: shown.append(f"{x}") or x * 1.0)(3.0)
    assert len(shown) == 1 and shown[0].startswith("ReverseTracer")


def test_error_inside_nested_transforms_leaves_state_clean():
    depth = trace_stack_depth()
    with ad.no_grad(), pytest.raises(ad.TracerConversionError):
        ad.grad(lambda x: ad.grad(lambda y: y * float(x))(x) * x)(3.0)
    assert trace_stack_depth() == depth and state().grad_enabled
    assert float(ad.grad(lambda x: x * x)(3.0)) == 6.0


# ---- the torch face, against real torch ----

TORCH_VALUES = {
    "leaf requiring grad": lambda m: m.tensor(3.0, requires_grad=True),
    "result of a recorded op": lambda m: m.tensor(3.0, requires_grad=True) * 2.0,
    "1-element leaf": lambda m: m.tensor([3.0], requires_grad=True),
    "no grad": lambda m: m.tensor(3.0),
    "detached": lambda m: m.tensor(3.0, requires_grad=True).detach(),
    "integer": lambda m: m.tensor(3),
}
TORCH_CONVERSIONS = {
    **{name: CONVERSIONS[name] for name in ("float", "int", "complex", "item", "tolist")},
    "math.exp": math.exp,
    "bool": bool,
    "format": lambda x: f"{x:.3f}",
    "format without spec": lambda x: f"{x}",
    "operator.index": operator.index,
}


def _torch_outcome(module, make, convert, mode=None):
    """What `convert` gives, or the type of the error it raises, and the UserWarnings shown."""
    value = make(module)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        try:
            if mode is None:
                result = convert(value)
            else:
                with getattr(module, mode)():
                    result = convert(value)
        except (TypeError, ValueError, RuntimeError) as e:
            result = type(e).__name__
    # (torch appends the C++ file it warned from)
    messages = [str(w.message).split(" (Triggered internally")[0] for w in shown]
    return result, [m for w, m in zip(shown, messages) if w.category is UserWarning]


@pytest.fixture(scope="module")
def real_torch():
    torch = pytest.importorskip("torch")
    always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # its once-per-process warning, each time: compared case by case
    yield torch
    torch.set_warn_always(always)


@pytest.fixture
def warn_each_time(monkeypatch):
    monkeypatch.setattr(tensor_module, "_requires_grad_scalar_warned", False, raising=False)
    return lambda: monkeypatch.setattr(
        tensor_module, "_requires_grad_scalar_warned", False, raising=False
    )


@pytest.mark.parametrize("mode", [None, "no_grad", "inference_mode"])
@pytest.mark.parametrize("value", TORCH_VALUES)
@pytest.mark.parametrize("conversion", TORCH_CONVERSIONS)
def test_torch_face_converts_as_torch(real_torch, warn_each_time, conversion, value, mode):
    make, convert = TORCH_VALUES[value], TORCH_CONVERSIONS[conversion]
    expected = _torch_outcome(real_torch, make, convert, mode)
    warn_each_time()
    assert _torch_outcome(ad, make, convert, mode) == expected


def test_torch_face_warns_once_per_process_as_torch(warn_each_time):
    # Measured with torch 2.13: float() and complex() of a tensor that requires grad warn
    # (TORCH_WARN_ONCE: the first time in the process, and only with grad mode on).
    t = ad.tensor(3.0, requires_grad=True)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with ad.no_grad():
            float(t)
        assert shown == []
        float(t), complex(t * 2.0), math.exp(t)
    assert [str(w.message) for w in shown] == [
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
        "behavior.\nConsider using tensor.detach() first."
    ]
    assert shown[0].category is UserWarning and shown[0].filename == __file__


def test_torch_training_loop_logs_with_item_without_warning():
    w = ad.tensor([1.0, -1.0], requires_grad=True)
    x = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            loss = ((x @ w) ** 2).mean()
            loss.backward()
            with ad.no_grad():
                w -= 0.01 * w.grad
                w.grad.zero_()
            losses.append(loss.item())
            f"{loss:.4f}"
    assert losses[2] < losses[0]


def test_dual_tensors_convert_as_torch(real_torch):
    fwad, torch_fwad = ad.autograd.forward_ad, real_torch.autograd.forward_ad
    results = []
    for module, fw in ((ad, fwad), (real_torch, torch_fwad)):
        with fw.dual_level(), warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            d = fw.make_dual(module.tensor(3.0), module.tensor(1.0))
            results.append((float(d), int(d), d.item(), f"{d * 2.0:.1f}", bool(d > 1)))
    assert results[0] == results[1]
