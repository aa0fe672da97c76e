"""The torch face's state, per thread: anomaly mode, saved-tensor hooks, level-0 sequence
numbers and the backward pass running (what its hooks may ask)."""

from __future__ import annotations

import threading


class AutogradState(threading.local):
    """This thread's torch-face state (grad modes are core's: level 0 reads them, see
    core/trace.py)."""

    def __init__(self):
        self.anomaly = False  # detect_anomaly: record forward tracebacks, check for nan
        self.anomaly_check_nan = True
        self.seq = 0  # sequence numbers of level-0 nodes (per thread, as in torch)
        self.saved_tensors_hooks: list = []  # (pack, unpack) pairs, innermost last
        self.saved_tensors_hooks_disabled: str | None = None  # the error, while disabled
        self.backward_pass_id = 0  # which backward pass is running (multi-grad hooks)
        self.pass_nodes: frozenset | set = frozenset()  # the nodes that pass will run
        self.passes: list = []  # the torch-style backward passes running, innermost last
        self.view_replay = False  # (_force_original_view_tracking's mode)
        self.multithreading = True  # (set_multithreading_enabled's mode)
        # A compiled training step being staged on this thread (torch/compile_step.py):
        # `backward()`, `.grad` and optimizer steps go to it while it stages.
        self.step_capture = None


_state = AutogradState()


def autograd_state() -> AutogradState:
    """This thread's torch-face state."""
    return _state


def next_sequence_number() -> int:
    """A new level-0 node sequence number (grows with creation, per thread, as in torch)."""
    _state.seq += 1
    return _state.seq
