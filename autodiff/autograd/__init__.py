"""autodiff.autograd: the PyTorch-compatible imperative API (torch.autograd's names and semantics).

Runs on the same core and engine as the functional transforms.
"""

# (_record first: it makes level 0 record the torch face's graph, core/trace.py)
from autodiff.autograd import (
    _record,
    _saved_args,
    _views,  # (in-place operations on views: CopySlices)
    forward_ad,
    functional,
    graph,
    profiler,
)
from autodiff.autograd._backward import backward, grad
from autodiff.autograd._nodes import SavedTensor  # (documented in autograd.graph)
from autodiff.autograd.anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from autodiff.autograd.function import Function, once_differentiable
from autodiff.autograd.grad_mode import (
    _force_original_view_tracking as _force_original_view_tracking,
)
from autodiff.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_view_replay_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from autodiff.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from autodiff.autograd.graph import (
    _unsafe_preserve_version_counter as _unsafe_preserve_version_counter,
)
from autodiff.autograd.variable import Variable


def _calculate_shape(output, grad, is_grads_batched: bool) -> tuple:
    """`(output's shape, grad's shape)` as torch's backward checks compare them (without the
    batch dimension of a batched grad).

    Example:
        >>> import autodiff as ad
        >>> _calculate_shape(ad.zeros(2, 3), ad.zeros(4, 2, 3), True)
        ((2, 3), (2, 3))
    """
    grad_shape = tuple(grad.shape)
    return tuple(output.shape), grad_shape[1:] if is_grads_batched else grad_shape


def kineto_available() -> bool:
    """torch's profiler backend is not part of autodiff.

    Example:
        >>> kineto_available()
        False
    """
    return False


__all__ = [
    "Function",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "GradcheckError",
    "Variable",
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
    "is_view_replay_enabled",
    "no_grad",
    "once_differentiable",
    "profiler",
    "set_detect_anomaly",
    "set_grad_enabled",
    "set_multithreading_enabled",
]
