"""`jax._src.test_util`: the pieces of JAX's test utilities its control-flow and API tests use.

Comparisons follow JAX's test utilities (tolerances by dtype, dtype checks); derivative checks
are autodiff.testing.check_grads. The device is always the CPU.
"""

import contextlib
import functools
import io
import math
import sys
import unittest
import warnings

import ml_dtypes
import numpy as np
from absl.testing import parameterized

import jax
from autodiff.testing import check_grads as _check_grads

_TOLERANCE = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-15}
_TOLERANCE.update(complex64=1e-6, complex128=1e-15)


def _dtype(x):
    return np.result_type(getattr(x, "dtype", None) or np.asarray(x).dtype)


def _tolerance(dtype, given):
    """`given` is a number, a {dtype: number} dict or None (JAX's default for the dtype)."""
    default = _TOLERANCE.get(np.dtype(dtype).name, 0.0)
    if isinstance(given, dict):
        return given.get(np.dtype(dtype), default)
    return default if given is None else given


def _is_sequence(x):
    return isinstance(x, (list, tuple)) and not hasattr(x, "__array__")


class JaxTestCase(parameterized.TestCase):
    """JAX's assertions on arrays and pytrees."""

    def assertDtypesMatch(self, actual, desired, *, canonicalize_dtypes=True):
        self.assertEqual(_dtype(actual), _dtype(desired))

    def assertArraysEqual(self, actual, desired, *, check_dtypes=True, err_msg="", **kw):
        if check_dtypes:
            self.assertDtypesMatch(actual, desired)
        np.testing.assert_array_equal(np.asarray(actual), np.asarray(desired), err_msg=err_msg)

    def assertArraysAllClose(
        self, actual, desired, *, check_dtypes=True, atol=None, rtol=None, err_msg=""
    ):
        self.assertEqual(np.shape(actual), np.shape(desired))
        atol = max(_tolerance(_dtype(actual), atol), _tolerance(_dtype(desired), atol))
        rtol = max(_tolerance(_dtype(actual), rtol), _tolerance(_dtype(desired), rtol))
        actual, desired = np.asarray(actual), np.asarray(desired)
        if actual.dtype == np.dtype("V2") or desired.dtype == np.dtype("V2"):  # float0
            np.testing.assert_array_equal(actual, desired)
        else:
            np.testing.assert_allclose(actual, desired, atol=atol, rtol=rtol, err_msg=err_msg)
        if check_dtypes:
            self.assertDtypesMatch(actual, desired)

    def assertAllClose(
        self,
        actual,
        desired,
        *,
        check_dtypes=True,
        atol=None,
        rtol=None,
        canonicalize_dtypes=True,
        err_msg="",
    ):
        kw = dict(check_dtypes=check_dtypes, atol=atol, rtol=rtol, err_msg=err_msg)
        if isinstance(actual, dict):
            self.assertIsInstance(desired, dict)
            self.assertEqual(set(actual), set(desired))
            for k in actual:
                self.assertAllClose(actual[k], desired[k], **kw)
        elif _is_sequence(actual):
            self.assertTrue(_is_sequence(desired), f"Expected sequence, got {desired}")
            self.assertEqual(len(actual), len(desired))
            for a, d in zip(actual, desired):
                self.assertAllClose(a, d, **kw)
        elif hasattr(actual, "__array__") or np.isscalar(actual):
            self.assertTrue(hasattr(desired, "__array__") or np.isscalar(desired))
            if check_dtypes:
                self.assertDtypesMatch(actual, desired)
            self.assertArraysAllClose(
                actual, desired, check_dtypes=False, atol=atol, rtol=rtol, err_msg=err_msg
            )
        elif actual != desired:
            raise TypeError((type(actual), type(desired)))

    @contextlib.contextmanager
    def assertNoWarnings(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            yield

    def rng(self):
        return np.random.RandomState(0)


BufferDonationTestCase = JaxTestCase


def _check_dtypes_match(xs, ys):
    for x, y in zip(jax.tree.leaves(xs), jax.tree.leaves(ys)):
        assert _dtype(x) == _dtype(y), f"{_dtype(x)} != {_dtype(y)}"


default_gradient_tolerance = {np.dtype(np.float32): 1e-2, np.dtype(np.float64): 1e-5}


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """autodiff.testing.check_grads; a {dtype: tolerance} dict is read for the arguments' dtype."""
    dtype = max((_dtype(x) for x in jax.tree.leaves(args)), key=lambda d: d.itemsize)
    atol, rtol = (t.get(dtype) if isinstance(t, dict) else t for t in (atol, rtol))
    _check_grads(f, args, order=order, modes=modes, atol=atol, rtol=rtol, eps=eps)


def check_eq(xs, ys, err_msg=""):
    """Leaf by leaf, as JAX's check_eq compares pytrees."""
    assert jax.tree.structure(xs) == jax.tree.structure(ys), err_msg
    for x, y in zip(jax.tree.leaves(xs), jax.tree.leaves(ys)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), err_msg=err_msg)


def check_raises(thunk, err_type, msg):
    try:
        thunk()
    except err_type as e:
        assert str(e).startswith(msg), f"\n{e}\n\n{msg}\n"
    else:
        raise AssertionError(f"no {err_type.__name__} raised")


def _identity_decorator(*args, **kwargs):
    return lambda f: f


thread_unsafe_test = thread_unsafe_test_class = with_config = _identity_decorator
skip_on_devices = skip_on_flag = _identity_decorator


def device_under_test():
    return "cpu"


def test_device_matches(devices):
    return "cpu" in devices


def run_on_devices(*devices):
    return lambda f: f if "cpu" in devices else unittest.skip("not on the CPU")(f)


def device_supports_buffer_donation():
    return unittest.skip("no buffer donation on the CPU")


class dtypes:
    """The dtype lists of JAX's parameterized tests (x64 enabled)."""

    floating = [np.float32, np.float64]
    complex = [np.complex64, np.complex128]
    all_integer = [np.int8, np.int16, np.int32, np.int64]
    all_unsigned = [np.uint8, np.uint16, np.uint32, np.uint64]
    integer = all_integer
    inexact = floating + complex
    all_floating = [np.float16] + floating
    all_inexact = all_floating + complex
    boolean = [np.bool_]
    all = boolean + all_integer + all_unsigned + all_inexact
    custom_floats = [ml_dtypes.bfloat16]


def ignore_warning(**kw):
    def decorate(f):
        @functools.wraps(f)
        def run(*args, **kwargs):
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", **kw)
                return f(*args, **kwargs)

        return run

    return decorate


def sample_product(*groups, **kwargs):
    """Ten cases of the product, chosen as JAX's test utilities choose them (the same cases)."""
    axes = [list(g) for g in groups] + [[{k: v} for v in vs] for k, vs in kwargs.items()]
    n = math.prod(len(a) for a in axes)
    cases = []
    for i in np.random.RandomState(42).choice(n, size=min(n, 10), replace=False):
        case = {}
        for a in axes:
            case.update(a[i % len(a)])
            i //= len(a)
        cases.append(case)
    return parameterized.parameters(*cases)


def format_shape_dtype_string(shape, dtype):
    dtype = np.dtype(dtype).name
    return f"{dtype}[{','.join(map(str, shape))}]" if shape != () else f"{dtype}[]"


def rand_default(rng, scale=3):
    return lambda shape, dtype: (scale * rng.standard_normal(shape)).astype(dtype)


def rand_small(rng):
    return rand_default(rng, scale=1e-3)


@contextlib.contextmanager
def capture_stdout():

    out, sys.stdout = sys.stdout, io.StringIO()
    try:
        yield lambda: sys.stdout.getvalue()
    finally:
        sys.stdout = out


def _noop_jit(fun, *args, **kwargs):
    return fun


_noop_jit._name = "noop"
JIT_IMPLEMENTATION = (functools.partial(jax.jit), _noop_jit)
JIT_IMPLEMENTATION[0]._name = "jit"
