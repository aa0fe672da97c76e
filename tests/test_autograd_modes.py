"""Grad modes, forward AD under them, anomaly detection, and in-place updates with versions.

Expectations are torch 2.x behaviour for the same scripts (torch is not imported here).
"""

import re
import threading
import warnings

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff import autograd
from autodiff.autograd import forward_ad as fwAD
from autodiff.core.primitive import Primitive, bind


def leaf(*values):
    return ad.tensor(list(values), requires_grad=True)


@pytest.fixture(autouse=True)
def _modes_restored():
    yield
    assert autograd.is_grad_enabled()
    assert not autograd.is_inference_mode_enabled()
    assert not autograd.is_anomaly_enabled()


class TestGradModes:
    def test_no_grad_context(self):
        x = leaf(1.0)
        with ad.no_grad():
            assert not autograd.is_grad_enabled()
            y = x * 2
            with ad.enable_grad():
                assert (x * 2).requires_grad
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
        assert (x * 2).requires_grad

    @pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
    def test_decorators_with_and_without_parentheses(self, mode):
        x = leaf(1.0)
        ctx = getattr(ad, mode)

        @ctx
        def bare():
            """Doc."""
            return (x * 2).requires_grad

        @ctx()
        def called():
            return (x * 2).requires_grad

        assert bare() is False and called() is False
        assert bare.__name__ == "bare" and bare.__doc__ == "Doc."
        assert (x * 2).requires_grad

    def test_enable_grad_decorators(self):
        x = leaf(1.0)

        @ad.enable_grad
        def bare():
            return (x * 2).requires_grad

        @ad.enable_grad()
        def called():
            return (x * 2).requires_grad

        with ad.no_grad():
            assert bare() and called()
            assert not (x * 2).requires_grad

    def test_set_grad_enabled_as_function(self):
        x = leaf(1.0)
        ad.set_grad_enabled(False)
        try:
            assert not autograd.is_grad_enabled()
            assert not (x * 2).requires_grad
        finally:
            ad.set_grad_enabled(True)
        assert (x * 2).requires_grad

    def test_set_grad_enabled_as_context_manager(self):
        with ad.set_grad_enabled(False):
            assert not autograd.is_grad_enabled()
            with ad.set_grad_enabled(True):
                assert autograd.is_grad_enabled()
            assert not autograd.is_grad_enabled()
        assert autograd.is_grad_enabled()

    def test_set_grad_enabled_as_decorator_does_not_leak(self):
        x = leaf(1.0)

        @ad.set_grad_enabled(False)
        def f():
            return (x * 2).requires_grad

        assert autograd.is_grad_enabled()  # decorating did not switch the mode
        assert f() is False
        assert autograd.is_grad_enabled()

    def test_decorated_generator_runs_each_step_in_the_mode(self):
        def gen():
            for _ in range(2):
                yield autograd.is_grad_enabled()
            return "done"

        g = ad.no_grad(gen)()
        assert next(g) is False
        assert autograd.is_grad_enabled()  # the caller between steps is not affected
        assert next(g) is False
        with pytest.raises(StopIteration) as stop:
            next(g)
        assert stop.value.value == "done"
        assert list(ad.set_grad_enabled(False)(gen)()) == [False, False]
        assert list(ad.inference_mode()(gen)()) == [False, False]

    def test_mode_restored_after_an_exception(self):
        with pytest.raises(ValueError):
            with ad.no_grad():
                raise ValueError
        with pytest.raises(ValueError):
            with ad.inference_mode():
                raise ValueError
        with pytest.raises(ValueError):
            with ad.set_grad_enabled(False):
                raise ValueError

    def test_inference_mode(self):
        x = leaf(1.0)
        with ad.inference_mode():
            assert autograd.is_inference_mode_enabled()
            assert not autograd.is_grad_enabled()
            assert not (x * 2).requires_grad
        with ad.inference_mode(False):
            assert not autograd.is_inference_mode_enabled()
            assert (x * 2).requires_grad
        with ad.inference_mode(mode=False):
            assert (x * 2).requires_grad

    def test_grad_mode_is_thread_local(self):
        x = leaf(1.0)
        entered, checked = threading.Event(), threading.Event()
        results = {}

        def in_no_grad():
            with ad.no_grad():
                entered.set()
                checked.wait(5)
                results["no_grad thread"] = autograd.is_grad_enabled()

        def other():
            entered.wait(5)
            results["other thread"] = autograd.is_grad_enabled()
            results["other records"] = (x * 2).requires_grad
            checked.set()

        threads = [threading.Thread(target=in_no_grad), threading.Thread(target=other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == {
            "no_grad thread": False,
            "other thread": True,
            "other records": True,
        }

    def test_new_threads_start_with_grad_enabled(self):
        results = []
        with ad.no_grad():
            t = threading.Thread(target=lambda: results.append(autograd.is_grad_enabled()))
            t.start()
            t.join()
        assert results == [True]

    def test_set_multithreading_enabled_is_accepted(self):
        with autograd.set_multithreading_enabled(False):
            x = leaf(1.0)
            (x * 2).sum().backward()
        assert x.grad.tolist() == [2.0]


class TestForwardADUnderGradModes:
    def test_no_grad_keeps_dual_tangents(self):
        with fwAD.dual_level():
            d = fwAD.make_dual(ad.tensor([1.0, 2.0]), ad.tensor([1.0, 1.0]))
            with ad.no_grad():
                y = anp.sin(d)
                tangent = fwAD.unpack_dual(y).tangent
        np.testing.assert_allclose(np.asarray(tangent), np.cos([1.0, 2.0]))

    def test_inference_mode_drops_dual_tangents(self):
        with fwAD.dual_level():
            d = fwAD.make_dual(ad.tensor([1.0, 2.0]), ad.tensor([1.0, 1.0]))
            with ad.inference_mode():
                y = anp.sin(d)
                assert fwAD.unpack_dual(y).tangent is None
            assert fwAD.unpack_dual(anp.sin(d)).tangent is not None


def _failing_primitive():
    bad_p = Primitive("bad_op")
    bad_p.impl = lambda x: x * 1.0

    def vjp(ct, x, *, out):
        raise ValueError("boom in backward")

    bad_p.vjp = vjp
    return bad_p


def _nan_primitive():
    nan_p = Primitive("nan_op")
    nan_p.impl = lambda x: x * 1.0
    nan_p.vjp = lambda ct, x, *, out: (ct * np.nan,)
    return nan_p


class TestAnomalyMode:
    def test_detect_anomaly_warns_when_enabled(self):
        with pytest.warns(
            UserWarning,
            match=re.escape(
                "Anomaly Detection has been enabled. This mode will increase the runtime and should "
                "only be enabled for debugging."
            ),
        ):
            with autograd.detect_anomaly():
                assert autograd.is_anomaly_enabled()
                assert autograd.is_anomaly_check_nan_enabled()

    def test_failing_backward_warns_with_the_forward_traceback(self):
        bad_p = _failing_primitive()
        x = leaf(1.0, 2.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with autograd.detect_anomaly():
                y = bind(bad_p, x)  # the forward call the warning must show
                with pytest.raises(ValueError, match="boom in backward"):
                    y.sum().backward()
        messages = [str(w.message) for w in caught if "Error detected" in str(w.message)]
        assert len(messages) == 1
        text = messages[0]
        assert text.startswith(
            "Error detected in BadOpBackward0. Traceback of forward call that caused the error:\n"
        )
        assert __file__ in text
        assert "y = bind(bad_p, x)  # the forward call the warning must show" in text

    def test_failing_backward_without_anomaly_mode_does_not_warn(self):
        bad_p = _failing_primitive()
        x = leaf(1.0)
        y = bind(bad_p, x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="boom in backward"):
                y.sum().backward()

    def test_nan_check(self):
        nan_p = _nan_primitive()
        x = leaf(1.0, 2.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with autograd.detect_anomaly():
                y = bind(nan_p, x)
                with pytest.raises(
                    RuntimeError,
                    match=re.escape(
                        "Function 'NanOpBackward0' returned nan values in its 0th output."
                    ),
                ):
                    y.sum().backward()
        assert any(
            str(w.message).startswith("Error detected in NanOpBackward0. Traceback") for w in caught
        )
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
            with autograd.detect_anomaly(check_nan=False):
                assert not autograd.is_anomaly_check_nan_enabled()
                bind(nan_p, x).sum().backward()
        assert np.isnan(x.grad.detach().numpy()).all()
        bind(nan_p, x).sum().backward()  # no check outside anomaly mode

    def test_set_detect_anomaly(self):
        autograd.set_detect_anomaly(True)
        try:
            assert autograd.is_anomaly_enabled()
        finally:
            autograd.set_detect_anomaly(False)
        assert not autograd.is_anomaly_enabled()
        with autograd.set_detect_anomaly(True, check_nan=False):
            assert autograd.is_anomaly_enabled()
            assert not autograd.is_anomaly_check_nan_enabled()
        assert not autograd.is_anomaly_enabled() and autograd.is_anomaly_check_nan_enabled()


class TestInPlace:
    def test_in_place_on_leaf_requiring_grad(self):
        x = leaf(1.0, 2.0)
        with pytest.raises(
            RuntimeError,
            match=re.escape(
                "a leaf Variable that requires grad is being used in an in-place operation."
            ),
        ):
            x += 1
        assert x.tolist() == [1.0, 2.0] and x._version == 0

    def test_in_place_on_leaf_allowed_under_no_grad(self):
        x = leaf(1.0, 2.0)
        with ad.no_grad():
            x += 1
            x *= 2
        assert x.tolist() == [4.0, 6.0]
        assert x._version == 2
        assert x.requires_grad and x.is_leaf and x.grad_fn is None

    def test_version_counts_in_place_updates(self):
        c = ad.tensor([1.0, 2.0])
        assert c._version == 0
        c += 1
        c -= 1
        c *= 3
        assert c._version == 3
        assert c.tolist() == [3.0, 6.0]
        d = c * 1  # a new tensor starts at version 0
        assert d._version == 0

    def test_in_place_arithmetic_writes_into_the_tensors_own_data(self):
        # An optimizer step: the data are updated where they are (a detached alias sees it),
        # with NumPy's values, one version per update, and nothing recorded.
        p = leaf(1.0, 2.0)
        (p * p).sum().backward()
        alias = p.detach()
        with ad.no_grad():
            p -= 0.5 * p.grad
            p *= ad.tensor([2.0, 3.0])
            p /= 4
            p += 1
        assert p.tolist() == [1.0, 1.0] and alias.tolist() == [1.0, 1.0]
        assert p._version == 4 and p.is_leaf and p.grad_fn is None
        # What the buffer cannot hold takes the general path, with its errors.
        i = ad.tensor([1, 2])
        i += 1
        assert i.tolist() == [2, 3] and i.dtype == np.int64
        with pytest.raises(TypeError, match="can't be cast to the desired output type int64"):
            i /= 2
        f = ad.tensor([1.0, 2.0])
        f += ad.tensor([[1.0, 1.0]])[0]
        with pytest.raises(ValueError, match="non-broadcastable output operand"):
            f += ad.tensor([[1.0, 1.0], [2.0, 2.0]])
        assert f.tolist() == [2.0, 3.0] and f._version == 1

    def test_in_place_update_of_a_saved_input_is_still_detected(self):
        w = leaf(1.0, 2.0)
        x = ad.tensor([3.0, 4.0])
        y = (w * x).sum()
        x += 1  # grad mode on, but nothing here needs a gradient: written in place
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()

    def test_in_place_on_non_leaf_rebases_grad_fn(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        y += 1
        assert y._version == 1
        assert y.grad_fn.name() == "AddBackward0"
        assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
        assert not y.is_leaf and y.requires_grad
        (y * 3).sum().backward()
        assert x.grad.tolist() == [6.0, 6.0]

    def test_retain_grad_follows_an_in_place_update(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        y.retain_grad()
        y *= 3  # y is now 6 x
        assert y.retains_grad
        (y * y).sum().backward()
        assert y.grad.tolist() == [12.0, 24.0]  # the gradient of the new value
        assert x.grad.tolist() == [72.0, 144.0]

    def test_hooks_before_and_after_an_in_place_update(self):
        # A hook registered before the update sees the gradient of the old value.
        x = leaf(1.0, 2.0)
        y = x * 2
        log = []
        y.register_hook(lambda g: log.append(("before", g.tolist())))
        y *= 3
        y.register_hook(lambda g: log.append(("after", g.tolist())))
        (y * y).sum().backward()
        assert log == [("after", [12.0, 24.0]), ("before", [36.0, 72.0])]

    def test_in_place_on_constant_with_tensor_requiring_grad(self):
        x = leaf(1.0, 2.0)
        c = ad.tensor([1.0, 1.0])
        c *= x
        assert c.requires_grad and not c.is_leaf and c.grad_fn.name() == "MulBackward0"
        c.sum().backward()
        assert x.grad.tolist() == [1.0, 1.0]

    def test_in_place_under_no_grad_keeps_grad_fn(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        with ad.no_grad():
            y += 1
        assert y.grad_fn.name() == "MulBackward0" and y._version == 1

    def test_modified_saved_tensor_raises_with_versions(self):
        x = leaf(1.0, 2.0)
        y = x * 1
        w = y * y  # saves y at version 0
        y += 1  # y is now output 0 of AddBackward0, version 1
        with pytest.raises(
            RuntimeError,
            match=(
                r"^one of the variables needed for gradient computation has been modified by an "
                r"inplace operation: \[.+ \[2\]\], which is output 0 of Add, is at version 1; "
                r"expected version 0 instead\. Hint: enable anomaly detection to find the "
                r"operation that failed to compute its gradient, with "
            ),
        ):
            w.sum().backward()

    def test_modified_saved_tensor_under_no_grad_raises(self):
        x = leaf(1.0, 2.0)
        y = x * 1
        w = y * y
        with ad.no_grad():
            y *= 2
            y *= 2
        with pytest.raises(
            RuntimeError,
            match=(r"which is output 0 of Mul, is at version 2; expected version 0 instead\."),
        ):
            w.sum().backward()

    def test_modified_saved_leaf_raises(self):
        x = leaf(1.0, 2.0)
        w = x * x
        with ad.no_grad():
            x += 1
        with pytest.raises(
            RuntimeError,
            match=(
                r"^one of the variables needed for gradient computation has been modified by an "
                r"inplace operation: \[.+ \[2\]\] is at version 1; expected version 0 instead\."
            ),
        ):
            w.sum().backward()

    @pytest.mark.skipif("index_set" not in anp.FUNCTIONS, reason="no index_set primitive")
    def test_setitem(self):
        x = leaf(1.0, 2.0)
        y = x * 2
        y[0] = x[1] * 10
        assert y.tolist() == [20.0, 4.0] and y._version == 1 and not y.is_leaf
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 12.0]
        c = ad.tensor([1.0, 2.0])
        c[1] = x[0] * 3
        assert c.tolist() == [1.0, 3.0]
        assert c.requires_grad and not c.is_leaf and c._version == 1

    @pytest.mark.skipif("index_set" not in anp.FUNCTIONS, reason="no index_set primitive")
    def test_setitem_on_leaf(self):
        x = leaf(1.0, 2.0)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
            x[0] = 1.0
        with ad.no_grad():
            x[0] = 5.0
        assert x.tolist() == [5.0, 2.0] and x._version == 1 and x.is_leaf

    @pytest.mark.skipif("index_set" not in anp.FUNCTIONS, reason="no index_set primitive")
    def test_setitem_of_saved_tensor_raises(self):
        x = leaf(1.0, 2.0)
        y = x * 1
        w = y * y
        y[0] = 3.0
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
            w.sum().backward()
