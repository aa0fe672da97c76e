"""vmap: BatchTrace (values with a batch dimension) and the vmap transform.

May import core and ops.
"""

from autodiff.ops.structural import move_batch_axis
from autodiff.vmap.trace import BatchTrace, BatchTracer
from autodiff.vmap.transform import vmap

__all__ = ["BatchTrace", "BatchTracer", "move_batch_axis", "vmap"]
