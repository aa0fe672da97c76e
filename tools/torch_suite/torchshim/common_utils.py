"""torch.testing._internal.common_utils's names, as small helpers of our own.

What the tests read from it: `TestCase` (torch's `assertEqual` on tensors, numbers and
sequences, with dtype-based tolerances; `assertExpected` reading the test's .expect file),
`parametrize`/`subtest`/`instantiate_parametrized_tests`, skip decorators and platform flags,
and autodiff's own `gradcheck`/`gradgradcheck`.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import gc
import itertools
import os
import re
import sys
import unittest
import warnings

import numpy as np

import autodiff as torch
from autodiff.autograd.gradcheck import gradcheck, gradgradcheck
from torchshim.stand_ins import OutOfScope

__all__ = ["TestCase", "gradcheck", "gradgradcheck", "parametrize", "subtest", "run_tests"]

IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform == "darwin"
IS_LINUX = sys.platform.startswith("linux")
IS_FBCODE = IS_SANDCASTLE = IS_ARM64 = IS_JETSON = IS_PPC = IS_S390X = False
TEST_CUDA = TEST_XPU = TEST_MPS = TEST_WITH_ROCM = TEST_WITH_ASAN = TEST_WITH_TSAN = False
TEST_WITH_CROSSREF = TEST_WITH_TORCHDYNAMO = TEST_WITH_TORCHINDUCTOR = TEST_WITH_UBSAN = False
TEST_WITH_SLOW = TEST_WITH_SLOW_GRADCHECK = TEST_PRIVATEUSE1 = False
TEST_MKL = TEST_NUMPY = True
TEST_SCIPY = True
SEED = 1234
GRADCHECK_NONDET_TOL = 1e-12


class HardwareClassification(enum.Enum):
    GENERIC = "generic"
    CPU = "cpu"
    GPU = "gpu"
    ACCELERATOR = "accelerator"


def _skip(reason):
    def decorator(obj=None):
        if obj is None or not callable(obj):
            return unittest.skip(reason)
        return unittest.skip(reason)(obj)

    return decorator


def _skip_if(condition_reason_first: bool):
    """Decorators `skipIfX(fn)` and `skipIfX("reason")(fn)`: never skip on this machine."""

    def decorator(arg=None, *args, **kwargs):
        if callable(arg):
            return arg
        return lambda fn: fn

    return decorator


skipIfTorchDynamo = skipIfMPS = skipIfXpu = skipIfWindows = skipIfRocm = _skip_if(True)
skipIfNoLapack = skipIfCrossRef = skipIfTorchInductor = skipIfNoSciPy = _skip_if(True)
skipIfMPSVersionLessThan = skipIfHpu = skipIfSlowGradcheckEnv = _skip_if(True)
xfailIfTorchDynamo = skipIfNoLapack


def skipCUDANonDefaultStreamIf(condition):
    return lambda fn: fn


def slowTest(fn):
    return fn


def serialTest(*args):
    return args[0] if args and callable(args[0]) else (lambda fn: fn)


def suppress_warnings(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)

    return wrapper


@contextlib.contextmanager
def disable_gc():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def set_warn_always_context(new_val: bool):
    yield


def scoped_load_inline(fn):
    """C++ extensions: out of scope."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        raise OutOfScope("cpp_extension", "C++ extensions (load_inline)")

    return wrapper


def run_tests():
    unittest.main()


def load_tests(loader, tests, pattern):
    return tests


# ---- parametrization ----


class subtest:
    def __init__(self, arg_values, name=None, decorators=None):
        self.arg_values = arg_values
        self.name = name
        self.decorators = decorators or []


def _value_name(value) -> str:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return str(value)
    if hasattr(value, "__name__"):
        return value.__name__
    return re.sub(r"\W", "_", str(value))


class parametrize:
    def __init__(self, arg_str, arg_values, name_fn=None):
        self.arg_names = [s.strip() for s in arg_str.split(",") if s.strip()]
        self.arg_values = list(arg_values)
        self.name_fn = name_fn

    def __call__(self, fn):
        fn.__dict__.setdefault("_parametrize", []).append(self)
        return fn

    def variants(self):
        for value in self.arg_values:
            decorators = []
            name = None
            if isinstance(value, subtest):
                decorators, name, value = value.decorators, value.name, value.arg_values
            values = (value,) if len(self.arg_names) == 1 else tuple(value)
            if name is None:
                name = (
                    self.name_fn(*values)
                    if self.name_fn
                    else "_".join(
                        f"{n}_{_value_name(v)}" if len(self.arg_names) > 1 else _value_name(v)
                        for n, v in zip(self.arg_names, values, strict=False)
                    )
                )
            yield name, dict(zip(self.arg_names, values, strict=False)), decorators


def _expand(fn):
    layers = fn.__dict__.get("_parametrize", [])
    for combo in itertools.product(*(list(p.variants()) for p in reversed(layers))):
        names = [c[0] for c in combo]
        kwargs = {}
        decorators = []
        for _, kw, decs in combo:
            kwargs.update(kw)
            decorators.extend(decs)
        yield "_".join(n for n in names if n), kwargs, decorators


def _bind(fn, kwargs, decorators):
    @functools.wraps(fn)
    def test(self, *args, **kw):
        return fn(self, *args, **kwargs, **kw)

    test.__dict__.pop("_parametrize", None)
    for decorator in decorators:
        test = decorator(test)
    return test


def instantiate_parametrized_tests(cls):
    for attr in list(vars(cls)):
        fn = getattr(cls, attr)
        if not attr.startswith("test") or not hasattr(fn, "_parametrize"):
            continue
        delattr(cls, attr)
        for suffix, kwargs, decorators in _expand(fn):
            setattr(cls, f"{attr}_{suffix}" if suffix else attr, _bind(fn, kwargs, decorators))
    return cls


# ---- comparison ----

_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def _as_array(x):
    if isinstance(x, torch.Tensor):
        return np.asarray(x.detach().numpy())
    return np.asarray(x)


def _is_tensorlike(x) -> bool:
    return isinstance(x, (torch.Tensor, np.ndarray))


class TestCase(unittest.TestCase):
    """unittest's TestCase with torch's comparisons (tolerances by dtype, tensors as values)."""

    precision = 1e-5
    rel_tol = 0.0
    _do_cuda_memory_leak_check = False
    _ignore_not_implemented_error = False

    def setUp(self):
        super().setUp()
        torch.manual_seed(SEED)
        np.random.seed(SEED)

    def _tolerances(self, x, y, atol, rtol):
        if atol is not None or rtol is not None:
            return (rtol or 0.0), (atol or 0.0)
        names = [str(np.asarray(_as_array(v)).dtype) for v in (x, y) if _is_tensorlike(v)]
        tols = [_TOLERANCES.get(n, (0.0, 0.0)) for n in names] or [(1.3e-6, 1e-5)]
        return max(t[0] for t in tols), max(t[1] for t in tols)

    def _fail(self, msg, detail):
        self.fail(f"{detail}\n{msg}" if msg else detail)

    def assertEqual(self, x, y, msg=None, *, atol=None, rtol=None, equal_nan=True,
                    exact_dtype=True, exact_device=False, exact_layout=False,
                    exact_stride=False, exact_is_coalesced=False, **kwargs):  # fmt: skip
        if callable(msg):
            msg = msg()
        if _is_tensorlike(x) or _is_tensorlike(y):
            return self._assert_tensor_equal(x, y, msg, atol, rtol, equal_nan, exact_dtype)
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                self._fail(msg, f"lengths differ: {len(x)} != {len(y)} ({x!r} vs {y!r})")
            for a, b in zip(x, y, strict=False):
                self.assertEqual(a, b, msg, atol=atol, rtol=rtol, exact_dtype=exact_dtype)
            return None
        if isinstance(x, dict) and isinstance(y, dict):
            self.assertEqual(sorted(x), sorted(y), msg)
            for k in x:
                self.assertEqual(x[k], y[k], msg, atol=atol, rtol=rtol, exact_dtype=exact_dtype)
            return None
        if _number(x) and _number(y):
            return self._assert_number_equal(x, y, msg, atol, rtol, equal_nan)
        if x != y:
            self._fail(msg, f"{x!r} != {y!r}")
        return None

    def _assert_number_equal(self, x, y, msg, atol, rtol, equal_nan):
        x, y = complex(x), complex(y)
        if x == y or (equal_nan and np.isnan(x) and np.isnan(y)):
            return
        given = atol is not None or rtol is not None
        rtol_, atol_ = (rtol or 0.0, atol or 0.0) if given else (1e-7, 1e-7)
        if not abs(x - y) <= atol_ + rtol_ * abs(y):
            self._fail(msg, f"Scalars are not close: {x} vs {y}")

    def _assert_tensor_equal(self, x, y, msg, atol, rtol, equal_nan, exact_dtype):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and exact_dtype:
            if x.dtype != y.dtype:
                self._fail(msg, f"dtypes differ: {x.dtype} != {y.dtype}")
        a, b = _as_array(x), _as_array(y)
        if not (_is_tensorlike(x) and _is_tensorlike(y)):
            b = np.broadcast_to(b, a.shape) if _is_tensorlike(x) else b
            a = np.broadcast_to(a, b.shape) if _is_tensorlike(y) else a
        if a.shape != b.shape:
            self._fail(msg, f"shapes differ: {a.shape} != {b.shape}")
        rtol_, atol_ = self._tolerances(x, y, atol, rtol)
        if a.dtype == bool or b.dtype == bool:
            ok = np.array_equal(a, b)
        else:
            ok = np.allclose(a, b, rtol=rtol_, atol=atol_, equal_nan=equal_nan)
        if not ok:
            self._fail(msg, f"Tensor-likes are not close!\n{a}\n{b}")

    def assertNotEqual(self, x, y, msg=None, *args, **kwargs):
        try:
            self.assertEqual(x, y, msg, *args, **kwargs)
        except AssertionError:
            return
        self.fail(msg or f"{x!r} == {y!r}")

    assertEqualIgnoreType = functools.partialmethod(assertEqual, exact_dtype=False)

    def assertExpected(self, s, subname=None):
        path = _expect_path(self, subname)
        if path is None or not os.path.exists(path):
            raise OutOfScope("expect_file", "the test's .expect file is not available")
        with open(path) as f:
            expected = f.read()
        self.assertEqual(s.strip(), expected.strip())

    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertEqual(str(actual).strip(), str(expect).strip())

    def assertExpectedRaisesInline(self, exc_type, callable_, expect, **kwargs):
        with self.assertRaises(exc_type) as ctx:
            callable_()
        self.assertExpectedInline(str(ctx.exception), expect)

    @contextlib.contextmanager
    def assertWarnsOnceRegex(self, category, regex=""):
        with self.assertWarnsRegex(category, regex):
            yield

    @contextlib.contextmanager
    def assertNotWarn(self, msg=""):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        self.assertEqual(len(caught), 0, f"{msg}: {[str(w.message) for w in caught]}")

    def assertLeaksNoCudaTensors(self, name=None):
        return contextlib.nullcontext()

    def assertAtenOp(self, *args, **kwargs):
        raise OutOfScope("aten", "torch.ops.aten")

    def run(self, result=None):
        return super().run(result)


def _number(x) -> bool:
    return isinstance(x, (bool, int, float, complex, np.number))


def _expect_path(case, subname):
    module = sys.modules.get(type(case).__module__)
    source = getattr(module, "__file__", None)
    if source is None:
        return None
    test = case._testMethodName
    name = f"{type(case).__name__}.{test}" + (f"-{subname}" if subname else "")
    return os.path.join(os.path.dirname(source), "expect", name + ".expect")
