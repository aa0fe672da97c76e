"""torch's names of the graph's nodes, and which primitives return views at level 0.

Both are torch's conventions, so they live with the torch face, not on `Primitive` (which
holds only what every face needs). Core reads them through two hooks it keeps (core imports
nothing above it): `core.graph.set_node_namer` (Node.name(), grad_fn's class names) and
`core.views.VIEW_PRIMITIVES` (a level-0 result that shares its operand's memory is a view of
it). `install()` fills both when `autodiff` is imported.

A primitive's node is named `<Name>Backward0` from the primitive's name ("sin" ->
"SinBackward0", "arcsin" -> "AsinBackward0"), unless `NODE_NAMES` names it (or gives a
function of the node's params, where torch's name depends on them); a primitive made at run
time (a custom Function's) is named with `name_primitive`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autodiff.core import graph as _graph
from autodiff.core import views as _views
from autodiff.core.primitive import Primitive


def _getitem_node_name(params: dict) -> str:
    """torch's name for the node of `x[index]`: IndexBackward0 for advanced indices; for basic
    ones torch applies the index's elements in turn, and the node is the last one's that is
    not a no-op (`:`, `...`): select, slice or unsqueeze (none: an alias). A lone slice is
    one slice (`x[:]`: torch takes its fast path, which makes a node of it even whole)."""
    index = params["index"]
    if len(index) == 1 and type(index[0]) is slice:
        return "SliceBackward0"
    name = "AliasBackward0"
    for i in index:
        if isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            name = "SelectBackward0"
        elif i is None:
            name = "UnsqueezeBackward0"
        elif type(i) is slice:
            if i != slice(None):
                name = "SliceBackward0"
        elif i is not Ellipsis:
            return "IndexBackward0"  # (an integer or boolean array: a gather)
    return name


# By primitive name: torch's node names that the rule of the module docstring does not give.
NODE_NAMES: dict[str, str | Callable[[dict], str]] = {
    # ops
    "absolute": "AbsBackward0",
    "astype": "ToCopyBackward0",
    "broadcast_to": "ExpandBackward0",
    "concatenate": "CatBackward0",
    "copy": "CloneBackward0",
    "divide": "DivBackward0",
    "dynamic_slice": "SliceBackward0",
    "dynamic_update_slice": "SliceScatterBackward0",
    "expand_reduced": "ExpandBackward0",
    "fft": "FftC2CBackward0",
    "getitem": _getitem_node_name,
    "index_set": "IndexPutBackward0",
    "irfft": "FftC2RBackward0",
    "log1p": "Log1PBackward0",
    "matmul": "MmBackward0",
    "multiply": "MulBackward0",
    "negative": "NegBackward0",
    "power": "PowBackward0",
    "reduce_prod": "ProdBackward0",
    "reduce_sum": "SumBackward0",
    "repeat": "RepeatInterleaveBackward0",
    "reshape": "ViewBackward0",
    "rfft": "FftR2CBackward0",
    "split": "SplitWithSizesBackward0",
    "subtract": "SubBackward0",
    "transpose": "PermuteBackward0",
    "unstack": "UnbindBackward0",
    # the transforms' and autograd's own primitives
    "copy_slices": "torch::autograd::CopySlices",
    "delayed_error": "torch::autograd::Error",
    "remat": "CheckpointBackward0",
}

# The primitives whose impl may return a view of its first operand (reshape, transpose, basic
# indexing, ...): at level 0 such a result, when it does share the operand's memory, is a view
# of it (core/views.py).
VIEWS = frozenset(
    {"broadcast_to", "getitem", "imag", "real", "reshape", "split", "transpose", "unstack"}
)

# Primitives made at run time, named by the torch face (custom Functions: "MyFnBackward").
_NAMED: dict[Primitive, str] = {}
_DERIVED: dict[str, str] = {}


def name_primitive(prim: Primitive, name: str) -> None:
    """Name the nodes of `prim`, a primitive made at run time (before any node of it)."""
    _NAMED[prim] = name


def _derived(name: str) -> str:
    torch_name = "a" + name[3:] if name.startswith("arc") else name
    return "".join(p.capitalize() for p in torch_name.split("_")) + "Backward0"


def name_of(prim: Primitive) -> str | Callable[[dict], str]:
    """The torch name of `prim`'s nodes: a string, or a function of a node's params."""
    name = _NAMED.get(prim)
    if name is not None:
        return name
    name = NODE_NAMES.get(prim.name)
    if name is not None:
        return name
    derived = _DERIVED.get(prim.name)
    if derived is None:
        derived = _DERIVED[prim.name] = _derived(prim.name)
    return derived


def node_name(prim: Primitive, params: dict) -> str:
    """The torch name of the node of `prim` applied with `params` ("MulBackward0")."""
    name = name_of(prim)
    return name if type(name) is str else name(params)


def install() -> None:
    """Give core the names and the view primitives (at `import autodiff`)."""
    _graph.set_node_namer(node_name)
    _views.VIEW_PRIMITIVES.update(VIEWS)
