"""Anomaly detection: forward tracebacks on backward errors, and a check for nan gradients."""

from __future__ import annotations

import contextlib
import warnings

from autodiff.autograd._state import autograd_state


class detect_anomaly(contextlib.ContextDecorator):
    """Enable anomaly detection for a block (or a decorated function).

    Each recorded node keeps the traceback of the forward call that created it; an
    error in its backward is preceded by a warning showing that traceback. With
    `check_nan`, a backward function returning nan raises
    `RuntimeError: Function '<Node>' returned nan values in its <i>th output.`

    Example:
        >>> import autodiff as ad, autodiff.numpy as anp, warnings
        >>> x = ad.tensor([0.0], requires_grad=True)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # detect_anomaly's warnings
        ...     with detect_anomaly():
        ...         (anp.sqrt(x) * 0.0).sum().backward()  # 0 * inf
        Traceback (most recent call last):
            ...
        RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self):
        st = autograd_state()
        self.prev = (st.anomaly, st.anomaly_check_nan)
        st.anomaly, st.anomaly_check_nan = True, self.check_nan

    def __exit__(self, *exc):
        st = autograd_state()
        st.anomaly, st.anomaly_check_nan = self.prev
        return False


class set_detect_anomaly:
    """Turn anomaly detection on or off now (function) or for a block (context manager).

    Example:
        >>> with set_detect_anomaly(True, check_nan=False):
        ...     print(is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        True False
        >>> is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        st = autograd_state()
        self.prev = (st.anomaly, st.anomaly_check_nan)
        st.anomaly, st.anomaly_check_nan = bool(mode), check_nan

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        st = autograd_state()
        st.anomaly, st.anomaly_check_nan = self.prev
        return False


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in this thread.

    Example:
        >>> with set_detect_anomaly(True):
        ...     print(is_anomaly_enabled())
        True
        >>> is_anomaly_enabled()
        False
    """
    return autograd_state().anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward outputs for nan.

    Example:
        >>> with set_detect_anomaly(True, check_nan=False):
        ...     print(is_anomaly_check_nan_enabled())
        False
        >>> is_anomaly_check_nan_enabled()
        True
    """
    return autograd_state().anomaly_check_nan
