"""torch.autograd.forward_ad, on autodiff's dual levels (which, unlike torch's, nest).

`_current_level` reads as torch's module attribute: the innermost live dual level of this
thread, -1 when there is none.
"""

import contextlib

from autodiff.core.trace import state
from autodiff.forward_ad.dual import (
    UnpackedDualTensor,
    _dual_traces,
    dual_level,
    enter_dual_level,
    exit_dual_level,
    make_dual,
    unpack_dual,
)


def __getattr__(name: str):
    if name == "_current_level":
        return len(_dual_traces()) - 1
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_fwd_grad_enabled() -> bool:
    """Whether dual levels propagate tangents in this thread (off in inference mode).

    Example:
        >>> _is_fwd_grad_enabled()
        True
    """
    return state().fw_grad_enabled


@contextlib.contextmanager
def _set_fwd_grad_enabled(mode: bool):
    """Switch tangent propagation of dual levels on or off inside the block.

    Example:
        >>> with _set_fwd_grad_enabled(False):
        ...     print(_is_fwd_grad_enabled())
        False
    """
    st = state()
    previous = st.fw_grad_enabled
    st.fw_grad_enabled = bool(mode)
    try:
        yield
    finally:
        st.fw_grad_enabled = previous


__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]
