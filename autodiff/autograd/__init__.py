"""autodiff.autograd: the PyTorch-compatible imperative API (torch.autograd's names and semantics).

Runs on the same core and engine as the functional transforms.
"""

# (_record first: it makes level 0 record the torch face's graph, core/trace.py)
from autodiff.autograd import (
    _record,  # noqa: F401
    forward_ad,
    functional,
    graph,
)
from autodiff.autograd._backward import backward, grad
from autodiff.autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from autodiff.autograd.function import Function, once_differentiable
from autodiff.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from autodiff.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = [
    "Function",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "GradcheckError",
    "forward_ad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
    "set_multithreading_enabled",
]
