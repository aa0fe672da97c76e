"""A pytest plugin for run.py: records each case's outcome (and first error line) as JSON.

Each case has a time limit: one over it is interrupted by SIGALRM and recorded as failed, so
one hang does not stop the measurement.
"""

import json
import os
import signal

import pytest

_OUTCOMES: dict[str, str] = {}
_ERRORS: dict[str, str] = {}
_LIMIT = int(os.environ.get("JAX_SUITE_TIMEOUT", "60"))


class CaseTimeout(Exception):
    """A case ran over JAX_SUITE_TIMEOUT seconds."""


def _alarm(signum, frame):
    raise CaseTimeout(f"over {_LIMIT} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)


def pytest_runtest_logreport(report):
    # A failure in setup or teardown counts against the case; a pass needs the call phase.
    if report.when == "call" or report.outcome != "passed":
        previous = _OUTCOMES.get(report.nodeid)
        if previous in (None, "passed"):
            _OUTCOMES[report.nodeid] = report.outcome
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None and report.nodeid not in _ERRORS:
            _ERRORS[report.nodeid] = crash.message.splitlines()[0][:300]


def pytest_sessionfinish(session):
    with open(os.environ["JAX_SUITE_OUT"], "w") as f:
        json.dump(_OUTCOMES, f, indent=0, sort_keys=True)
    with open(os.environ["JAX_SUITE_OUT"] + ".errors", "w") as f:
        json.dump(_ERRORS, f, indent=0, sort_keys=True)
