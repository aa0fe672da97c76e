"""Anomaly detection: forward tracebacks on backward errors, and a check for nan gradients."""

from __future__ import annotations

import contextlib
import warnings

from autodiff.core.trace import state


class detect_anomaly(contextlib.ContextDecorator):
    """Enable anomaly detection for a block (or a decorated function).

    Each recorded node keeps the traceback of the forward call that created it; an
    error in its backward is preceded by a warning showing that traceback. With
    `check_nan`, a backward function returning nan raises
    `RuntimeError: Function '<Node>' returned nan values in its <i>th output.`
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self):
        st = state()
        self.prev = (st.anomaly, st.anomaly_check_nan)
        st.anomaly, st.anomaly_check_nan = True, self.check_nan

    def __exit__(self, *exc):
        st = state()
        st.anomaly, st.anomaly_check_nan = self.prev
        return False


class set_detect_anomaly:
    """Turn anomaly detection on or off now (function) or for a block (context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        st = state()
        self.prev = (st.anomaly, st.anomaly_check_nan)
        st.anomaly, st.anomaly_check_nan = bool(mode), check_nan

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        st = state()
        st.anomaly, st.anomaly_check_nan = self.prev
        return False


def is_anomaly_enabled() -> bool:
    return state().anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return state().anomaly_check_nan
