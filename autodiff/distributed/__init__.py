"""Scale-out: the chunks of batched transforms as tasks of an executor, and Dask arrays.

With `executor=` (a `dask.distributed.Client`, `"dask"` for the default client, or any
`concurrent.futures.Executor`), `vmap`, `jacfwd`, `jacrev`, `hessian` and the torch face's
`autograd.functional.jacobian`/`hessian` run each chunk of batch members or basis rows as one
task (`chunk_size` sets the grain); `vmap` over a `dask.array.Array` builds a Dask array
blockwise. The transforms pass in what to run, so this package imports none of them.

May import core. Dask, cloudpickle, tqdm and IPython are imported inside the functions that
use them: `import autodiff` never loads them (Dask is the optional extra
`pip install "autodiff[distributed]"`).
"""

from autodiff.distributed.arrays import has_dask_array, is_dask_array, vmap_dask
from autodiff.distributed.chunks import map_basis, map_batch
from autodiff.distributed.executors import EXTRA, DaskMissingError, resolve

__all__ = [
    "EXTRA",
    "DaskMissingError",
    "has_dask_array",
    "is_dask_array",
    "map_basis",
    "map_batch",
    "resolve",
    "vmap_dask",
]
