"""Node: one recorded primitive application in a reverse-mode graph (both the functional
ReverseTrace and the torch face's level-0 graph, autograd/_record.py, record these), and the
torch-facing Node API.

A node keeps what its vjp rule needs (`primals`, `out`, `params`: its saved
residuals), the edges `(node, output_index)` of its inputs (`parents`, None for
constants; in a functional trace, the edge to a node with one output is the node itself,
see `edge_pair`) and a sequence number that grows with creation, so parents always
have smaller numbers than their consumers. A leaf node (`prim is None`) stands
for a leaf tensor: torch's AccumulateGrad.
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy import ndarray  # (numpy's module __getattr__ makes `np.ndarray` a slow load)


def edge_pair(edge) -> tuple:
    """`(node, output_index)` for an edge. An edge is that pair, or, in a functional trace
    (reverse/graph.py), the node itself when it has a single output: one tuple less to
    allocate, and for the cycle collector to traverse, per recorded operation. Code that
    may see a functional trace's edges reads them through this (or `edge_node`)."""
    return edge if type(edge) is tuple else (edge, 0)


def edge_node(edge):
    """The node of an edge (see `edge_pair`)."""
    return edge[0] if type(edge) is tuple else edge


class _NodeExtra:
    """Rarely used per-node state, allocated only when something is registered."""

    __slots__ = (
        "tensor_pre_hooks",
        "pre_hooks",
        "post_hooks",
        "retains",
        "metadata",
        "variable",
        "anomaly_trace",
        "anomaly_parent",
        "post_accumulate_hooks",
        "name",
        "dual",
        "grad_dtype",
    )

    def __init__(self):
        self.tensor_pre_hooks = None  # {output index: [hook(grad) -> grad | None]}
        self.pre_hooks = None  # [hook(grad_outputs) -> grad_outputs | None]
        self.post_hooks = None  # [hook(grad_inputs, grad_outputs) -> grad_inputs | None]
        self.retains = None  # {output index: weakref to the tensor that retains its grad}
        self.metadata = None
        self.variable = None  # leaf nodes: weakref to the leaf tensor
        self.anomaly_trace = None
        self.anomaly_parent = None  # the node whose backward recorded this one (anomaly mode)
        self.post_accumulate_hooks = None  # leaf nodes: [hook(tensor)]
        self.name = None
        # Set by a torch-style dual level whose operation this node records:
        # (dual trace, the dual arguments, output tangents). A create_graph backward
        # pass inside that level computes with them, so gradients carry tangents
        # (forward-over-reverse through the imperative API, as torch's saved variables).
        self.dual = None
        # Leaf nodes: the dtype the leaf's `.grad` takes (torch's `grad_dtype`): SAME_DTYPE
        # (the leaf's own), a NumPy dtype, or None (any: gradients are not cast).
        self.grad_dtype = SAME_DTYPE


class VersionCounter:
    """The version counter of tensors that alias one another's data (`detach()`, a base and its
    views): an in-place modification of any bumps them all, as torch's. A Tensor holds a plain
    int in `_vc` until it shares its counter (`share_version`); then this, which adds and
    compares as that int.

    Example:
        >>> vc = VersionCounter(2)
        >>> vc += 1
        >>> vc == 3, vc > 2, int(vc), f"{vc}"
        (True, True, 3, '3')
    """

    __slots__ = ("value", "views", "prune_at")
    __hash__ = None  # (mutable)

    def __init__(self, value: int = 0):
        self.value = int(value)
        # weakrefs to the tensors sharing this memory (a base's views, the sources of
        # `detach()` aliases: core/views.py), made on need
        self.views = None
        self.prune_at = 16

    def __iadd__(self, n):
        self.value += int(n)
        return self

    def __add__(self, n) -> int:
        return self.value + int(n)

    __radd__ = __add__

    def __sub__(self, n) -> int:
        return self.value - int(n)

    def __rsub__(self, n) -> int:
        return int(n) - self.value

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __eq__(self, other) -> bool:
        return self.value == int(other)

    def __ne__(self, other) -> bool:
        return self.value != int(other)

    def __lt__(self, other) -> bool:
        return self.value < int(other)

    def __le__(self, other) -> bool:
        return self.value <= int(other)

    def __gt__(self, other) -> bool:
        return self.value > int(other)

    def __ge__(self, other) -> bool:
        return self.value >= int(other)

    def __repr__(self) -> str:
        return repr(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


def share_version(source, alias) -> None:
    """Make `alias` (a tensor sharing `source`'s data) share its version counter (which keeps a
    weak reference to `source`: a write through `alias` may change what `source`'s producer
    saved, core/views.py's `memory_written`)."""
    vc = source._vc
    if type(vc) is int:
        vc = source._vc = VersionCounter(vc)
    alias._vc = vc
    remember(vc, source)


def remember(vc: VersionCounter, tensor) -> None:
    """Add `tensor` to the tensors `vc` knows share its memory (weakly; the dead ones are
    dropped now and then, so the list stays as long as the live ones)."""
    views = vc.views
    if views is None:
        vc.views = views = []
    if len(views) >= vc.prune_at:
        views[:] = [r for r in views if r() is not None]
        vc.prune_at = max(16, 2 * len(views))
    views.append(weakref.ref(tensor))


def version_of(tensor) -> int:
    """`tensor`'s version as an int (a snapshot, also of a shared counter)."""
    vc = tensor._vc
    return vc if type(vc) is int else vc.value


class _RemovableHandle:
    """Returned by hook registration; `.remove()` unregisters the hook."""

    __slots__ = ("_list_ref", "_hook")

    def __init__(self, hooks: list, hook):
        self._list_ref = hooks
        self._hook = hook

    def remove(self) -> None:
        try:
            self._list_ref.remove(self._hook)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# Residuals a rule reads only the shape and dtype of (Primitive.saves_inputs/saves_output
# False) are kept as stand-ins from this size on: a graph then holds the memory its backward
# pass needs, as torch's saved variables do, and no more.
STAND_IN_MIN_SIZE = 1 << 14


def lean_residuals(prim, primals, out) -> tuple:
    """`(primals, out)` as a node of `prim` keeps them: stand-ins for what its rule reads only
    the shape and dtype of."""
    if not prim.saves_inputs:
        primals = tuple([stand_in(p) for p in primals])
    if not prim.saves_output and not prim.multiple_results:
        out = stand_in(out)
    return primals, out


# primitive -> whether its torch-face nodes (not renamed) save no tensor, as the torch face
# found it (autograd/_nodes.py): the engine's hot loop reads it.
KEEPS_SHAPES: dict = {}


def keep_shapes(node) -> None:
    """Replace the large float arrays among `node`'s residuals by stand-ins (`stand_in`): what
    a rule that reads only shapes and dtypes needs, holding no memory."""
    p1 = node.p1
    if p1 is MANY:
        node.x0 = tuple([stand_in(p) for p in node.x0])
    else:
        x0 = node.x0
        if type(x0) is ndarray and x0.size >= STAND_IN_MIN_SIZE:
            node.x0 = stand_in(x0)
        if p1 is not ONE:
            x1 = node.x1
            if type(x1) is ndarray and x1.size >= STAND_IN_MIN_SIZE:
                node.x1 = stand_in(x1)
    out = node.out
    if type(out) is tuple:
        node.out = tuple([stand_in(o) for o in out])
    elif type(out) is ndarray and out.size >= STAND_IN_MIN_SIZE:
        node.out = stand_in(out)


def stand_in(value):
    """For a large float array: a read-only zero-strided array of its shape and dtype (which is
    all a shape-reading rule needs), holding one element of memory. Anything else: itself."""
    if (
        type(value) is not np.ndarray
        or value.size < STAND_IN_MIN_SIZE
        or value.dtype.kind not in "fc"
    ):
        return value  # small, or not differentiable (index arrays are read by their rules)
    out = np.ndarray(
        value.shape, value.dtype, buffer=np.zeros(1, value.dtype), strides=(0,) * value.ndim
    )
    out.flags.writeable = False
    return out


def _marker(name: str):
    """A unique object that reprs as `name`."""
    return type(name, (), {"__slots__": (), "__repr__": lambda self: name})()


# Markers in a Node's slots (see Node): its p1 for one input, and for other counts; its x0
# once its residuals are released.
ONE = _marker("ONE")
MANY = _marker("MANY")
RELEASED = _marker("RELEASED")
# A leaf's gradient dtype when none was set: the leaf's own (_NodeExtra.grad_dtype).
SAME_DTYPE = _marker("SAME_DTYPE")


class Node:
    """A recorded primitive application (or, with `prim=None`, a leaf's gradient accumulator).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0], requires_grad=True)
        >>> node = (x * 2).grad_fn
        >>> node.name(), node.next_functions[0][0].name()
        ('MulBackward0', 'torch::autograd::AccumulateGrad')
    """

    __slots__ = (
        "prim",
        "params",
        "out",
        "seq",
        "versions",
        "extra",
        "raw",
        "p0",
        "p1",
        "x0",
        "x1",
        "__weakref__",
    )

    # No __init__: nodes are made by `new_node` (calling a class whose __init__ is written in
    # Python costs a second interpreter frame, about twice the cost of the node's stores).

    # A node's input edges (`parents`) and saved inputs (`primals`) are kept without tuples
    # for the commonest arities, one and two inputs: a graph lives until its backward pass,
    # and every object in it that the cycle collector tracks makes each collection walk
    # further and come sooner (in a process whose heap is large, Numba's once loaded, they
    # took a sixth of the ode workload's time: benchmarks/README.md). So:
    #   two inputs:   p0, p1 = the edges;      x0, x1 = the saved inputs
    #   one input:    p0 = the edge, p1 = ONE;  x0 = the saved input
    #   other counts: p0 = the edges' tuple, p1 = MANY; x0 = the saved inputs' tuple
    # and x0 is RELEASED once the residuals are dropped. `parents` and `primals` read and
    # write this as tuples (the engine's loop reads the slots itself); `set_inputs` sets both.

    @property
    def parents(self) -> tuple:
        """The edges of the inputs (None for an input that needs no gradient)."""
        p1 = self.p1
        if p1 is ONE:
            return (self.p0,)
        if p1 is MANY:
            return self.p0
        return (self.p0, p1)

    @property
    def primals(self) -> tuple | None:
        """The saved inputs, or None once released."""
        x0 = self.x0
        if x0 is RELEASED:
            return None
        p1 = self.p1
        if p1 is ONE:
            return (x0,)
        if p1 is MANY:
            return x0
        return (x0, self.x1)

    @primals.setter
    def primals(self, value) -> None:
        if value is None:  # (released)
            self.x0 = RELEASED
            self.x1 = None
            return
        p1 = self.p1
        if p1 is ONE:
            (self.x0,) = value
        elif p1 is MANY:
            self.x0 = tuple(value)
        else:
            self.x0, self.x1 = value

    def set_inputs(self, parents: tuple, primals: tuple) -> None:
        """Set `parents` and `primals` (of equal lengths)."""
        if len(parents) == 2:
            self.p0, self.p1 = parents
            self.x0, self.x1 = primals
        elif len(parents) == 1:
            (self.p0,) = parents
            self.p1 = ONE
            (self.x0,) = primals
            self.x1 = None
        else:
            self.p0 = tuple(parents)
            self.p1 = MANY
            self.x0 = tuple(primals)
            self.x1 = None

    # ---- torch.autograd.graph.Node API ----
    def name(self) -> str:
        """`MulBackward0`-style name; `AccumulateGrad` for a leaf."""
        if self.extra is not None and self.extra.name is not None:
            return self.extra.name
        if self.prim is None:
            return "torch::autograd::AccumulateGrad"
        return _torch_face.node_name(self.prim, self.params)

    @property
    def next_functions(self) -> tuple:
        """One `(node, output_index)` per input; `(None, 0)` for inputs that need no gradient."""
        pairs = [(None, 0) if e is None else edge_pair(e) for e in self.parents]
        return tuple((None, 0) if n is None else (observed(n), i) for n, i in pairs)

    @property
    def metadata(self) -> dict:
        extra = self._extra()
        if extra.metadata is None:
            extra.metadata = {}
        return extra.metadata

    @property
    def variable(self):
        """The leaf tensor of an AccumulateGrad node."""
        ref = self.extra.variable if self.extra is not None else None
        return ref() if ref is not None else None

    def register_hook(self, fn):
        """`fn(grad_inputs, grad_outputs)` runs after the node; it may return new grad_inputs."""
        extra = self._extra()
        if extra.post_hooks is None:
            extra.post_hooks = []
        extra.post_hooks.append(fn)
        return _RemovableHandle(extra.post_hooks, fn)

    def register_prehook(self, fn):
        """`fn(grad_outputs)` runs before the node; it may return new grad_outputs."""
        extra = self._extra()
        if extra.pre_hooks is None:
            extra.pre_hooks = []
        extra.pre_hooks.append(fn)
        return _RemovableHandle(extra.pre_hooks, fn)

    def _register_tensor_pre_hook(self, index: int, fn):
        extra = self._extra()
        if extra.tensor_pre_hooks is None:
            extra.tensor_pre_hooks = {}
        hooks = extra.tensor_pre_hooks.setdefault(index, [])
        hooks.append(fn)
        return _RemovableHandle(hooks, fn)

    def _retain(self, index: int, tensor) -> None:
        extra = self._extra()
        if extra.retains is None:
            extra.retains = {}
        extra.retains[index] = weakref.ref(tensor)

    def _extra(self) -> _NodeExtra:
        if self.extra is None:
            self.extra = _NodeExtra()
        return self.extra

    @property
    def n_outputs(self) -> int:
        return len(self.out) if self.prim is not None and self.prim.multiple_results else 1

    def release(self) -> None:
        """Drop the saved residuals; the graph structure (parents) stays. A torch-face node
        whose torch counterpart saves no tensor (AddBackward0, SumBackward0) keeps stand-ins
        of the shapes its rule reads instead, and may run again (`keeps_shapes`)."""
        if self.versions is not None and self.x0 is not RELEASED and self.keeps_shapes():
            keep_shapes(self)
            return
        self.x0 = RELEASED  # (self.primals = None)
        self.x1 = None
        self.out = None

    def keeps_shapes(self) -> bool:
        """Whether `release` keeps the node runnable (stand-ins of the shapes its rule reads:
        the torch face's nodes that, as torch's, save no tensor)."""
        return self.versions is not None and _torch_face.keeps_shapes(self)

    def __repr__(self):
        # torch's repr: the class name (CopySlices for torch::autograd::CopySlices)
        name = "AccumulateGrad" if self.prim is None else self.name().rsplit("::", 1)[-1]
        return f"<{name} object at {hex(id(self))}>"


class _TorchFace:
    """What the torch face tells core about its nodes: which keep their shapes when released,
    the class a node takes once user code sees it (autograd/_nodes.py), and its name
    (torch's "MulBackward0": autodiff/torch/_node_names.py, a torch convention core cannot
    import, being below it)."""

    @staticmethod
    def node_name(prim, params) -> str:
        return prim.name

    @staticmethod
    def keeps_shapes(node) -> bool:
        return False

    @staticmethod
    def classify(node) -> None:
        return None


_torch_face = _TorchFace()


def set_torch_face(keeps_shapes, classify) -> None:
    """Install the torch face's `keeps_shapes(node)` and `classify(node)` (see `observed`)."""
    _torch_face.keeps_shapes = keeps_shapes
    _torch_face.classify = classify


def set_node_namer(node_name) -> None:
    """Install the torch face's `node_name(prim, params)`, which names nodes (`Node.name`)."""
    _torch_face.node_name = node_name


def node_name(prim, params) -> str:
    """The name of the node of `prim` applied with `params` (torch's, once installed)."""
    return _torch_face.node_name(prim, params)


def name_node(result, name: str):
    """Name the torch-face node that produced `result` as torch names the composite operation
    that computed it (e.g. MeanBackward0 for `sum / n`); `result` itself is returned. Values
    of function transforms and results without a node are left alone."""
    edge = getattr(result, "_edge", None)
    if type(edge) is tuple and edge[0].versions is not None:
        edge[0]._extra().name = name
    return result


def observed(node):
    """`node` as user code sees it (`grad_fn`, `next_functions`): a torch-face node takes its
    torch class (MulBackward0, AccumulateGrad, ...) here, when first seen. Recorded as plain
    Nodes, the nodes a backward pass runs are all of one class, so that the engine's reads of
    their attributes stay on CPython's fast (specialized) path."""
    if type(node) is Node and node.versions is not None:
        _torch_face.classify(node)
    return node


def new_node(
    prim, params, primals, out, parents, seq: int, raw: bool = False, cls: type = Node
) -> Node:
    """A node of `prim` with its residuals (`primals`, `out`, `params`), the edges of its inputs
    (`parents`) and its sequence number; `raw`: are the residuals plain NumPy values? (Then a
    pass nobody records may run the primitive's `vjp_numpy` rule.) `cls`: Node or a subclass
    (the torch face's node classes)."""
    node = cls()
    node.prim = prim
    node.params = params
    node.set_inputs(parents, primals)
    node.out = out
    node.seq = seq
    node.versions = None
    node.extra = None
    node.raw = raw
    return node


class Packed:
    """A saved residual in packed form (a torch-face saved-tensor hook's `pack` result),
    unpacked by `unpack` when the rule needs it (reverse/engine.py)."""

    __slots__ = ("packed", "unpack")

    def __init__(self, packed, unpack):
        self.packed = packed
        self.unpack = unpack
