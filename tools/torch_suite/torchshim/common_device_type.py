"""torch.testing._internal.common_device_type's names: instantiation on the CPU only.

`instantiate_device_type_tests(cls, scope)` adds `<cls>CPU` to `scope`, whose tests get
`device="cpu"` (and each dtype of `@dtypes`, as torch names the variants); tests for other
devices only (`onlyCUDA`, more than one device) are skipped, as torch skips them on a machine
without those devices.
"""

from __future__ import annotations

import functools
import unittest

from torchshim.common_utils import _bind, _expand

_ONLY_OTHER = "_only_other_device"


def _passthrough(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def onlyCUDA(fn):
    return unittest.skip("CUDA only (excluded: no CUDA here)")(fn)


onlyMPS = onlyXPU = onlyCUDA
onlyCPU = onlyOn = _passthrough
skipMeta = skipCUDAIfRocm = skipCPUIfNoLapack = skipCUDAIfNoMagma = _passthrough
expectedFailureMPS = _passthrough
skipCUDAIf = skipMPSIf = skipCPUIf = skipXLA = skipMPS = largeTensorTest = _passthrough
dtypesIfCUDA = dtypesIfMPS = dtypesIfCPU = precisionOverride = toleranceOverride = _passthrough


def onlyNativeDeviceTypes(fn):
    return fn


def deviceCountAtLeast(n):
    def decorator(fn):
        if n > 1:
            return unittest.skip(f"needs {n} devices (excluded: one CPU here)")(fn)

        @functools.wraps(fn)
        def wrapper(self, device, *args, **kwargs):
            return fn(self, [device], *args, **kwargs)

        return wrapper

    return decorator


class dtypes:
    def __init__(self, *args, device_type="all"):
        self.args = args

    def __call__(self, fn):
        fn._dtypes = self.args
        return fn


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _excluded(except_for, only_for) -> bool:
    def names(x):
        return [x] if isinstance(x, str) else list(x or ())

    return "cpu" in names(except_for) or (only_for is not None and "cpu" not in names(only_for))


def instantiate_device_type_tests(cls, scope, except_for=None, only_for=None, **kwargs):
    if _excluded(except_for, only_for):
        return None
    name = cls.__name__ + "CPU"
    body = {}
    for attr, fn in list(vars(cls).items()):
        if not attr.startswith("test") or not callable(fn):
            continue
        for suffix, params, decorators in _expand(fn):
            base = f"{attr}_{suffix}" if suffix else attr
            for dtype in getattr(fn, "_dtypes", [None]):
                full = f"{base}_cpu" + (f"_{_dtype_name(dtype)}" if dtype is not None else "")
                body[full] = _device_test(_bind(fn, params, decorators), dtype)
    keep = {k: v for k, v in vars(cls).items() if not k.startswith("test")}
    keep.pop("__dict__", None)
    keep.pop("__weakref__", None)
    generic = type(name, tuple(b for b in cls.__bases__), {**keep, **body, "device_type": "cpu"})
    generic.__module__ = cls.__module__
    scope[name] = generic
    return generic


def _device_test(fn, dtype):
    @functools.wraps(fn)
    def test(self):
        if dtype is None:
            return fn(self, "cpu")
        return fn(self, "cpu", dtype)

    return test
