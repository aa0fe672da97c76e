"""vmap: BatchTrace (values with a batch dimension) and the vmap transform."""

from autodiff.vmap.trace import BatchTrace, BatchTracer, move_batch_axis
from autodiff.vmap.transform import vmap

__all__ = ["BatchTrace", "BatchTracer", "move_batch_axis", "vmap"]
