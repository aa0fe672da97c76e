"""The functional face raises JAX's exception types, with messages that carry JAX's key
phrases (so that a JAX user's `pytest.raises(match=...)` still matches) and name what is
wrong. Each case runs on autodiff and, when JAX is installed, on JAX itself with the same
type and phrase. The torch face keeps torch's errors (the last tests).
"""

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.trace import trace_stack_depth


@pytest.fixture(autouse=True)
def _level_stack_is_clean_after_each_error():
    yield
    assert trace_stack_depth() == 1


def _f(x):
    return x


def _sum_sq(x):
    return (x * x).sum()


# (id, case(api, np_), exception type, key phrase). `api` is autodiff or jax, `np_` its NumPy.
CASES = [
    # grad of a non-scalar output
    (
        "grad-array-output",
        lambda api, np_: api.grad(lambda x: x * 2.0)(np.ones(3)),
        TypeError,
        r"Gradient only defined for scalar-output functions\. Output had shape: \(3,\)",
    ),
    (
        "grad-tuple-output",
        lambda api, np_: api.grad(lambda x: (x, x))(1.0),
        TypeError,
        "Gradient only defined for scalar-output functions. ",
    ),
    (
        "grad-empty-tuple-output",
        lambda api, np_: api.grad(lambda x: ())(np.zeros(3)),
        TypeError,
        "Gradient only defined for scalar-output functions. ",
    ),
    (
        "value_and_grad-array-output",
        lambda api, np_: api.value_and_grad(lambda x: x)(np.zeros(3)),
        TypeError,
        r"Output had shape: \(3,\)\..*output\.sum\(\)",
    ),
    (
        "grad-size-one-output-hint",
        lambda api, np_: api.grad(lambda x: np_.reshape(x**2, (1,)))(1.0),
        TypeError,
        r"output\.reshape\(\(\)\) or output\[0\]",
    ),
    # dtypes and holomorphic
    (
        "grad-complex-output",
        lambda api, np_: api.grad(lambda x: x**2 + 1j)(3.0),
        TypeError,
        r"grad requires real-valued outputs \(output dtype that is a sub-dtype of np\.floating\)",
    ),
    (
        "grad-integer-input",
        lambda api, np_: api.grad(lambda x: x**2)(3),
        TypeError,
        r"grad requires real- or complex-valued inputs \(input dtype that is a sub-dtype of "
        r"np\.inexact\), but got int",
    ),
    (
        "grad-holomorphic-real-input",
        lambda api, np_: api.grad(lambda x: x**2, holomorphic=True)(3.0),
        TypeError,
        "grad with holomorphic=True requires inputs with complex dtype, but got float",
    ),
    (
        "jacrev-holomorphic-real-input",
        lambda api, np_: api.jacrev(lambda x: x**2, holomorphic=True)(3.0),
        TypeError,
        "jacrev with holomorphic=True requires inputs with complex dtype, but got float",
    ),
    (
        "jacfwd-holomorphic-real-input",
        lambda api, np_: api.jacfwd(lambda x: x**2, holomorphic=True)(3.0),
        TypeError,
        "jacfwd with holomorphic=True requires inputs with complex dtype, but got float",
    ),
    (
        "jacfwd-complex-input",
        lambda api, np_: api.jacfwd(lambda x: x**2)(3.0 + 1j),
        TypeError,
        r"jacfwd requires real-valued inputs \(input dtype that is a sub-dtype of np\.floating\)",
    ),
    (
        "jacrev-complex-output",
        lambda api, np_: api.jacrev(lambda x: np_.sin(x))(1 + 2j),
        TypeError,
        r"jacrev requires real-valued outputs \(output dtype that is a sub-dtype of np\.floating\)",
    ),
    (
        "hessian-holomorphic-real-input",
        lambda api, np_: api.hessian(lambda x: x**3, holomorphic=True)(3.0),
        TypeError,
        "with holomorphic=True requires inputs with complex dtype",
    ),
    # argnums
    (
        "grad-argnums-without-the-arguments",
        lambda api, np_: api.grad(lambda x, y: x + y, argnums=0)(x=0.0, y=1.0),
        TypeError,
        "differentiating with respect to argnums=0 requires at least 1 positional arguments to "
        "be passed by the caller, but got only 0 positional arguments",
    ),
    # has_aux
    (
        "grad-has_aux-three-values",
        lambda api, np_: api.grad(lambda x: (1, 2, 3), has_aux=True)(1.0),
        TypeError,
        "two-element tuple",
    ),
    (
        "grad-has_aux-no-tuple",
        lambda api, np_: api.grad(lambda x: x, has_aux=True)(1.0),
        TypeError,
        "two-element tuple",
    ),
    (
        "vjp-has_aux-one-value",
        lambda api, np_: api.vjp(lambda x: (x,), 1.0, has_aux=True),
        TypeError,
        "two-element tuple",
    ),
    (
        "jvp-has_aux-no-tuple",
        lambda api, np_: api.jvp(lambda x: x, (1.0,), (1.0,), has_aux=True),
        TypeError,
        "two-element tuple",
    ),
    # values that are not arrays
    (
        "grad-string-argument",
        lambda api, np_: api.grad(_f)("foo"),
        TypeError,
        r"'foo' of type <class 'str'> is not a valid JAX type",
    ),
    (
        "grad-object-array",
        lambda api, np_: api.grad(_f)(np.array([1, 2, 3], dtype=object)),
        TypeError,
        "is not a valid JAX type",
    ),
    (
        "vjp-string-argument",
        lambda api, np_: api.vjp(_f, "foo"),
        TypeError,
        "is not a valid JAX type",
    ),
    (
        "jvp-string-argument",
        lambda api, np_: api.jvp(_f, ("foo",), ("foo",)),
        TypeError,
        "is not a valid JAX type",
    ),
    (
        "vmap-non-array-output",
        lambda api, np_: api.vmap(lambda x: "hello")(np.arange(5)),
        TypeError,
        "Output from batched function.*is not a valid JAX type",
    ),
    # vjp pullbacks
    (
        "vjp-cotangent-tree",
        lambda api, np_: api.vjp(lambda x, y: x * y, np.float32(3), np.float32(4))[1](
            (np.float32(7), np.float32(100))
        ),
        ValueError,
        "unexpected tree structure",
    ),
    (
        "vjp-cotangent-dtype",
        lambda api, np_: api.vjp(lambda x, y: x * y, np.float32(3), np.float32(4))[1](
            np.float16(42)
        ),
        ValueError,
        r"unexpected JAX type \(e\.g\. shape/dtype\) for argument to VJP function",
    ),
    (
        "vjp-cotangent-shape",
        lambda api, np_: api.vjp(
            lambda x, y: np_.matmul(x, y), np.ones((2, 5), np.float32), np.ones((5, 3), np.float32)
        )[1](np.ones((2, 4), np.float32)),
        ValueError,
        "unexpected JAX type",
    ),
    (
        "vjp-pullback-two-arguments",
        lambda api, np_: api.vjp(lambda x: (x, x), 1.0)[1](1.0, 1.0),
        TypeError,
        "applied to <lambda> was called with 2 arguments",
    ),
    # linearize tangents
    (
        "linearize-integer-tangent",
        lambda api, np_: api.linearize(_f, 1.0)[1](1),
        ValueError,
        "linearized function called on tangent values inconsistent with the original primal",
    ),
    (
        "linearize-tangent-for-integer-primal",
        lambda api, np_: api.linearize(_f, np.ones(2, np.int32))[1](np.ones(2, np.int32)),
        ValueError,
        "tangent values inconsistent",
    ),
    # jvp
    (
        "jvp-not-tuples",
        lambda api, np_: api.jvp(lambda x, y: x + y, 0.0, (1.0,)),
        TypeError,
        "primal and tangent arguments to .*jvp must be tuples or lists; found float and tuple",
    ),
    (
        "jvp-tree-structure",
        lambda api, np_: api.jvp(lambda x, y: x * y, (np.float32(2),), ()),
        TypeError,
        "primal and tangent arguments to .*jvp must have the same tree structure",
    ),
    (
        "jvp-dtypes",
        lambda api, np_: api.jvp(lambda x: -x, (np.float16(2),), (np.float32(4),)),
        TypeError,
        "primal and tangent arguments to .*jvp do not match",
    ),
    (
        "jvp-shapes",
        lambda api, np_: api.jvp(lambda x: x + 1, (np.ones(3),), (np.ones(4),)),
        ValueError,
        "jvp called with different primal and tangent shapes",
    ),
    # vmap
    (
        "vmap-inconsistent-sizes",
        lambda api, np_: api.vmap(lambda a, b: a + b, in_axes=(0, 1))(
            np.ones((10, 4), np.float32), np.ones((10, 2), np.float32)
        ),
        ValueError,
        r"vmap got inconsistent sizes for array axes to be mapped:\n"
        r"  \* one axis had size 10: axis 0 of argument a of type float32\[10,4\];\n"
        r"  \* one axis had size 2: axis 1 of argument b of type float32\[10,2\]",
    ),
    (
        "vmap-inconsistent-sizes-most-axes",
        lambda api, np_: api.vmap(lambda x, y, z: x, in_axes=(0, 1, 0))(
            np.ones((10, 4), np.float32), np.ones((10, 2), np.float32), np.ones((10, 4), np.float32)
        ),
        ValueError,
        r"  \* most axes \(2 of them\) had size 10, e\.g\. axis 0 of argument x of type "
        r"float32\[10,4\];\n  \* one axis had size 2: axis 1 of argument y",
    ),
    (
        "vmap-inconsistent-sizes-keyword",
        lambda api, np_: api.vmap(lambda x, y: x + y)(np.ones(1), y=np.ones(2)),
        ValueError,
        r"vmap got inconsistent sizes.*\n.*argument x.*\n.*axis 0 of kwargs\['y'\]",
    ),
    (
        "vmap-axis_size-mismatch",
        lambda api, np_: api.vmap(lambda x: x, axis_size=2)(np.arange(8, dtype=np.int32)),
        ValueError,
        r"  \* the `axis_size` argument was 2;\n  \* one axis had size 8",
    ),
    (
        "vmap-rank-too-small",
        lambda api, np_: api.vmap(lambda x: x, in_axes=1)(np.array([1.0, 2.0])),
        ValueError,
        r"vmap was requested to map its argument along axis 1, which implies that its rank "
        r"should be at least 2, but is only 1 \(its shape is \(2,\)\)",
    ),
    (
        "vmap-in_axes-bool",
        lambda api, np_: api.vmap(_f, in_axes=False)(np.zeros(3)),
        TypeError,
        "must be an int",
    ),
    (
        "vmap-in_axes-dict-not-in-a-tuple",
        lambda api, np_: api.vmap(lambda x: x["a"], in_axes={"a": 0}),
        TypeError,
        "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
        "positional arguments passed to the function, but got",
    ),
    (
        "vmap-in_axes-array-leaf",
        lambda api, np_: api.vmap(_f, in_axes=(np.array([1.0, 2.0]),))(np.ones(2)),
        TypeError,
        "vmap in_axes must be an int, None, or",
    ),
    (
        "vmap-in_axes-tuple-length-with-kwargs",
        lambda api, np_: api.vmap(lambda a, b, c: a + b + c, in_axes=(0, 0, None))(
            a=np.ones(2), b=np.ones(2), c=0.5
        ),
        ValueError,
        r"but got len\(in_axes\)=3, len\(args\)=0\. Note that the function was called with "
        r"keyword arguments \['a', 'b', 'c'\]",
    ),
    (
        "vmap-in_axes-not-a-prefix",
        lambda api, np_: api.vmap(_f, in_axes=([0],))(np.ones(3)),
        ValueError,
        r"(?s)vmap in_axes specification must be a tree prefix of the corresponding value;"
        r".*Mismatch details.*different types",
    ),
    (
        "vmap-nothing-mapped",
        lambda api, np_: api.vmap(_f, in_axes=None)(np.array([1.0, 2.0])),
        ValueError,
        "vmap must have at least one non-None value in in_axes",
    ),
    (
        "vmap-no-arrays",
        lambda api, np_: api.vmap(_f)({}),
        ValueError,
        "vmap wrapped function must be passed at least one argument containing an array or "
        "axis_size must be specified",
    ),
    (
        "vmap-out_axes-none-for-a-mapped-output",
        lambda api, np_: api.vmap(_f, out_axes=None)(np.array([1.0, 2.0])),
        ValueError,
        "at vmap out_axes",
    ),
    (
        "vmap-out_axes-none-named-axis",
        lambda api, np_: api.vmap(_f, out_axes=None, axis_name="foo")(np.array([1.0, 2.0])),
        ValueError,
        r"vmap has mapped output.*axis_name=foo.*but out_axes is None",
    ),
    (
        "vmap-out_axes-out-of-bounds",
        lambda api, np_: api.vmap(_f, out_axes=-4)(np.ones((3, 4, 5))),
        ValueError,
        "axis -4 is out of bounds",
    ),
    (
        "vmap-out_axes-not-a-prefix",
        lambda api, np_: api.vmap(_f, out_axes=(2, 3))(np.array([1.0, 2.0])),
        ValueError,
        "vmap out_axes specification must be a tree prefix of the corresponding value",
    ),
    (
        "vmap-out_axes-array-leaf",
        lambda api, np_: api.vmap(_f, out_axes=(np.array([1.0, 2.0]),))(np.ones(2)),
        TypeError,
        "vmap out_axes must be an int, None, or",
    ),
]


# Phrases of JAX's current source (its tests/api_test.py) that the installed JAX may predate:
# for these only the exception type is compared with JAX.
_NEWER_JAX = {
    "value_and_grad-array-output",
    "grad-size-one-output-hint",
    "jvp-has_aux-no-tuple",
    "vmap-in_axes-tuple-length-with-kwargs",
}


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


@pytest.mark.parametrize("case, exc, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_functional_face_raises_jax_errors(case, exc, phrase):
    with pytest.raises(exc, match=phrase) as info:
        case(ad, anp)
    assert type(info.value) is exc or issubclass(type(info.value), exc)


@pytest.mark.parametrize("name, case, exc, phrase", CASES, ids=[c[0] for c in CASES])
def test_jax_raises_the_same(name, case, exc, phrase):
    """The same call on JAX raises the same type with the same key phrase (the check that
    the phrases are JAX's)."""
    jax, jnp = _jax()
    with pytest.raises(exc, match=None if name in _NEWER_JAX else phrase):
        case(jax, jnp)


def test_messages_name_the_function_and_argument():
    def loss(params, data):
        return anp.sum(params["w"] * data)

    with pytest.raises(TypeError, match="argument 1 of loss"):
        ad.grad(loss, argnums=1)({"w": np.ones(2)}, "data")
    with pytest.raises(TypeError, match="Argument 1 of loss has dtype int64"):
        ad.grad(loss, argnums=(0, 1))({"w": np.ones(2)}, np.arange(2))
    with pytest.raises(ValueError, match="output 0 of <lambda> had type float64"):
        ad.vjp(lambda x: x * 2.0, np.ones(2))[1](np.ones(3))


def test_vmap_keyword_arguments_are_mapped_along_axis_0():
    def f(a, b):
        return (2 * a, 3 * b)

    x = ad.vmap(f)(np.array([1.0]), np.array([2.0]))
    y = ad.vmap(f)(a=np.array([1.0]), b=np.array([2.0]))
    np.testing.assert_array_equal(x[0], y[0])
    np.testing.assert_array_equal(x[1], y[1])
    # a tuple in_axes covers the positional arguments only
    out = ad.vmap(lambda a, b: a * b, in_axes=(None,))(np.ones(2), b=np.arange(3.0))
    assert out.shape == (3, 2)


def test_vmap_in_axes_leaves_numpy_integers_none_and_lists():
    x, y = np.ones((3, 2)), np.arange(4.0)
    out = ad.vmap(lambda p: anp.outer(p[0], p[1][0]), in_axes=([np.int64(0), [None]],))([x, [y]])
    assert out.shape == (3, 2, 4)
    out = ad.vmap(lambda a, b: a + b, in_axes=[0, None])(x, 1.0)
    np.testing.assert_array_equal(out, x + 1.0)


def test_vmap_preserves_the_docstring_in_jax_form():
    def superfun(a):
        """Does things with stuff."""
        return a

    doc = ad.vmap(superfun).__doc__
    assert doc.startswith("Vectorized version of superfun.")
    assert doc.endswith("\n\nOriginal documentation:\n\nDoes things with stuff.")
    assert ad.vmap(superfun).__name__ == "superfun"


def test_vmap_rejects_spmd_axis_name_clearly():
    with pytest.raises(ValueError, match="spmd_axis_name.*one CPU device"):
        ad.vmap(_f, spmd_axis_name="x")


def test_non_callables_are_refused():
    for transform in (ad.grad, ad.value_and_grad, ad.jacrev, ad.jacfwd, ad.hessian, ad.vmap):
        with pytest.raises(TypeError, match="Expected a callable value"):
            transform(1.0)


def test_errors_leave_state_unchanged_and_transforms_still_work():
    for _, case, exc, _phrase in CASES:
        with pytest.raises(exc):
            case(ad, anp)
    assert trace_stack_depth() == 1
    assert float(ad.grad(_sum_sq)(3.0)) == 6.0


# ------------------------------------------------------------------------- the torch face


def test_torch_face_keeps_torch_errors():
    from autodiff import autograd

    x = ad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        autograd.grad(x * 2, x)
    with pytest.raises(RuntimeError, match="Mismatch in shape: grad_output\\[0\\]"):
        autograd.grad(x * 2, x, grad_outputs=ad.ones(3))
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        ad.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        autograd.grad(ad.tensor(1.0) * 2, x)
