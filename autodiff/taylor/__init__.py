"""Taylor mode: `jet` pushes truncated Taylor series through functions on its own level of the
trace stack (JetTrace), with each primitive's `taylor` rule (autodiff/ops/series.py's
arithmetic) or, without one, its jvp rule; `derivatives` gives a scalar function's first n
derivatives. Builds on ops and core.
"""

from autodiff.taylor.api import derivatives, jet
from autodiff.taylor.trace import JetTrace, JetTracer

__all__ = ["JetTrace", "JetTracer", "derivatives", "jet"]
