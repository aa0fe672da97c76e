"""`autodiff.compiler` (torch.compiler): `reset` the compiled signatures, `is_compiling`."""

from __future__ import annotations

from autodiff.torch.compile import GraphBreakError, is_compiling, reset

__all__ = ["GraphBreakError", "is_compiling", "reset"]
