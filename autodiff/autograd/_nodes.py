"""The torch face's node classes: what `tensor.grad_fn` is, as torch's grad_fn objects are.

Every level-0 node (autograd/_record.py) is an instance of a class named as torch names it:
`MulBackward0`, `AccumulateGrad` for a leaf, `MyFnBackward` for a custom Function, made once
per name (`node_class`) and chosen when the node is recorded, so that recording and the
engine cost nothing more. Beyond core's Node they offer torch's introspection:

- `_saved_self`, `_saved_other`, `_saved_result`, ... (the names torch's node of that op
  has): the values the node saved, as torch unpacks them (an input as the very tensor that
  was saved; the output as a new tensor whose grad_fn is the node), raising torch's error
  once the graph has been freed or an in-place operation changed them;
- `_raw_saved_*`: a `SavedTensor`, on which `register_hooks(pack, unpack)` sets that saved
  value's own pair of saved-tensor hooks;
- calling the node, `grad_fn(*grad_outputs)`, applies its derivative rule (recorded when
  grad mode is on, as torch's);
- a custom Function's node (`BackwardCFunction`) reads its ctx's attributes, as torch's
  (where the node is the ctx): `saved_tensors`, `needs_input_grad`, ...

Nodes are recorded as core's plain Node and take their class when user code first sees them
(`tensor.grad_fn`, `next_functions`: core's `observed`), so that the nodes a backward pass
runs are all of one class and the engine's attribute reads stay on CPython's specialized
path. A node keeps what its rule needs until a backward pass without `retain_graph` frees
it; one whose torch counterpart saves no tensor (AddBackward0, SumBackward0, ...) keeps only
the shapes its rule reads and may run again (core's `Node.release`, `_saves_no_tensor`).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from autodiff.autograd._accumulate_grad import accumulate_grad
from autodiff.autograd._saved import (
    SAVED_FOR_PARTNERS,
    check_versions,
    node_residuals,
    unpacked,
)
from autodiff.core.graph import (
    KEEPS_SHAPES,
    RELEASED,
    Node,
    Packed,
    edge_pair,
    set_torch_face,
    version_of,
)
from autodiff.core.tensor import Tensor
from autodiff.core.trace import state
from autodiff.ops.elementwise import conj_complex
from autodiff.reverse.accumulate import RELEASED_MESSAGE
from autodiff.reverse.plan import node_needs
from autodiff.torch._node_names import name_of

PACK_IN_PLACE_MESSAGE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to "
    "pack hook cannot be modified by in-place operations as this can lead to unexpected "
    "side-effects. Please open an issue if you need to perform in-place operations on the "
    "input to a pack hook."
)

# torch's names of the inputs a node saves, by node name (default: `self` for one input;
# `self`, `other` for two).
_INPUT_NAMES = {
    "PowBackward0": ("self", "exponent"),
    "MmBackward0": ("self", "mat2"),
    "WhereBackward0": ("condition", "self", "other"),
    "MeanBackward0": (),
}


# Nodes whose torch counterpart saves tensors although this primitive's rule reads only
# shapes (an index tensor), and the reverse (only sizes).
_SAVES_TENSORS = frozenset({"IndexBackward0"})
_SAVES_NO_TENSOR = frozenset({"SplitWithSizesBackward0", "UnbindBackward0", "MeanBackward0"})


class InputMetadata(NamedTuple):
    """What a node knows of one of its gradient inputs (a forward output): shape and dtype."""

    shape: tuple
    dtype: np.dtype


class TorchNode(Node):
    """A level-0 node: core's Node with torch's grad_fn API (see the module docstring)."""

    __slots__ = ()
    _torch_name = "Node"  # torch's name() of this class's nodes

    def name(self) -> str:
        """torch's name of this node (`MulBackward0`, `torch::autograd::AccumulateGrad`)."""
        extra = self.extra
        if extra is not None and extra.name is not None:
            return extra.name
        return self._torch_name

    def __reduce_ex__(self, protocol):
        raise TypeError(f"cannot pickle '{type(self).__name__}' object")

    @property
    def next_functions(self) -> tuple:
        """One `(node, output_index)` per input; `(None, 0)` for inputs that need no gradient."""
        pairs = Node.next_functions.fget(self)
        return pairs[:1] if _scalar_operand(self) else pairs

    def __call__(self, *grad_outputs):
        """The node's derivative rule applied to `grad_outputs` (one per forward output):
        the gradients of its inputs (one, or a tuple), recorded when grad mode is on."""
        n_out = self.n_outputs
        if len(grad_outputs) != n_out:
            raise TypeError(f"expected {n_out} arguments, got {len(grad_outputs)} instead")
        parents = self.parents
        if all(g is None for g in grad_outputs):
            results = [None] * len(parents)
        else:
            create = state().grad_enabled
            primals, out = node_residuals(self, create)
            cts = [
                None if g is None else conj_complex(_as_cotangent(g, create)) for g in grad_outputs
            ]
            prim = self.prim
            rule = prim.vjp or prim.rule("vjp")
            ct = tuple(cts) if prim.multiple_results else cts[0]
            if prim.vjp_takes_needs:
                in_cts = rule(ct, *primals, out=out, needs=node_needs(parents), **self.params)
            else:
                in_cts = rule(ct, *primals, out=out, **self.params)
            results = [
                None if edge is None or g is None else _as_result(conj_complex(g))
                for edge, g in zip(parents, in_cts)
            ]
        if _scalar_operand(self):
            results = results[:1]
        return results[0] if len(results) == 1 else tuple(results)

    @property
    def _input_metadata(self) -> tuple:
        """Per gradient input of the node (forward output): its shape and dtype."""
        out = self.out
        if out is None:
            raise RuntimeError(RELEASED_MESSAGE)
        outs = out if self.prim.multiple_results else (out,)
        return tuple(InputMetadata(*_shape_dtype(o)) for o in outs)

    def _sequence_nr(self) -> int:
        return self.seq


def _saved_property(name: str, raw: bool) -> property:
    """`node._saved_<name>` (`raw`: `_raw_saved_<name>`), where the node saved that value;
    an AttributeError elsewhere (so `hasattr` tells, as on torch's nodes)."""

    def get(node):
        slot = _saved_slots(node).get(name)
        if slot is None:
            prefix = "_raw_saved_" if raw else "_saved_"
            raise AttributeError(
                f"'{type(node).__name__}' object has no attribute '{prefix}{name}'"
            )
        return SavedTensor._of(node, slot) if raw else _saved_value(node, slot)

    doc = f"The saved `{name}` ({'a SavedTensor' if raw else 'as the backward pass reads it'})."
    return property(get, doc=doc)


# (Properties rather than a __getattr__: a class with one loses CPython's fast attribute
# access for every attribute, and the engine reads node attributes in its hot loop.)
for _name in ("self", "other", "result", "exponent", "mat2", "condition"):
    setattr(TorchNode, f"_saved_{_name}", _saved_property(_name, False))
    setattr(TorchNode, f"_raw_saved_{_name}", _saved_property(_name, True))


class AccumulateGrad(TorchNode):
    """The node where a leaf's gradient accumulates into its `.grad`."""

    __slots__ = ()
    _torch_name = "torch::autograd::AccumulateGrad"

    def __call__(self, *grad_outputs):
        """Accumulate `grad` into the leaf's `.grad`, as the node does in a backward pass."""
        if len(grad_outputs) != 1:
            raise TypeError(f"expected 1 arguments, got {len(grad_outputs)} instead")
        tensor = self.variable
        if tensor is not None and grad_outputs[0] is not None:
            accumulate_grad(tensor, grad_outputs[0], state().grad_enabled)
        return ()

    @property
    def _input_metadata(self) -> tuple:
        tensor = self.variable
        return () if tensor is None else (InputMetadata(tensor.shape, tensor.dtype),)


class BackwardCFunction(TorchNode):
    """The node of a custom autograd.Function (torch's name): its class is the Function's
    `_backward_cls`, and it reads the attributes of the call's ctx, as torch's node (which is
    the ctx) does."""

    __slots__ = ()

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.params["ctx"], name)

    def __call__(self, *grad_outputs):
        raise TypeError(f"'{type(self).__name__}' object is not callable")

    @property
    def saved_tensors(self) -> tuple:
        """What the Function saved with `save_for_backward` (torch's error once freed)."""
        return self.params["ctx"]._ad_saved_of(self)

    @property
    def _raw_saved_tensors(self) -> tuple:
        """The saved values as SavedTensor objects (their own saved-tensor hooks)."""
        ctx = self.params["ctx"]
        if self.primals is None or self.out is None:
            raise RuntimeError(RELEASED_MESSAGE)
        return tuple(SavedTensor._of(self, ("ref", k)) for k in range(len(ctx._ad_refs or ())))


# ---------------------------------------------------------------------------------------------
# One class per node name

_BY_NAME: dict[str, type] = {}
_BY_PRIM: dict = {}  # primitive -> class, where the node name does not depend on params
_LOCK = threading.Lock()


def class_named(name: str, base: type = TorchNode) -> type:
    """The node class of torch's node name `name` (made on first use)."""
    cls = _BY_NAME.get(name)
    if cls is None:
        with _LOCK:
            cls = _BY_NAME.get(name)
            if cls is None:
                short = name.rsplit("::", 1)[-1]
                cls = type(
                    short,
                    (base,),
                    {
                        "__slots__": (),
                        "_torch_name": name,
                        "__module__": __name__,
                        **_SAVED_ATTRS.get(name, {}),
                    },
                )
                _BY_NAME[name] = cls
    return cls


# node name -> the `_saved_*` properties its class gets (`register_saved_attrs`)
_SAVED_ATTRS: dict[str, dict[str, property]] = {}


def register_saved_attrs(name: str, getters: dict, raw: dict | None = None) -> None:
    """Give the nodes named `name` a `_saved_<k>` property per getter (a function of the
    node) and a `_raw_saved_<k>` one per `raw` getter (autograd/_saved_args.py's table)."""
    props = {f"_saved_{k}": _named_property(f"_saved_{k}", g) for k, g in getters.items()}
    for k, g in (raw or {}).items():
        props[f"_raw_saved_{k}"] = _named_property(f"_raw_saved_{k}", g)
    with _LOCK:
        _SAVED_ATTRS.setdefault(name, {}).update(props)
        cls = _BY_NAME.get(name)
        for attr, prop in props.items() if cls is not None else ():
            setattr(cls, attr, prop)


def _named_property(attr: str, getter) -> property:
    def get(node):
        try:
            return getter(node)
        except AttributeError:
            raise AttributeError(
                f"'{type(node).__name__}' object has no attribute '{attr}'"
            ) from None

    return property(get, doc=f"The `{attr}` torch's node of this name carries.")


def node_class(prim, params) -> type:
    """The class of a level-0 node of `prim` applied with `params` (record's: see
    `NODE_CLASSES` for the fast lookup)."""
    cls = _BY_PRIM.get(prim)
    if cls is not None:
        return cls
    name = name_of(prim)
    if type(name) is str:
        cls = _BY_PRIM[prim] = class_named(name)
        return cls
    return class_named(name(params))


def function_node_class(name: str) -> type:
    """A new node class for a custom Function class (each its own, as torch's
    `_backward_cls`)."""
    return type(name, (BackwardCFunction,), {"__slots__": (), "_torch_name": name})


def register_node_class(prim, cls: type) -> None:
    """Make `cls` the class of `prim`'s level-0 nodes (a custom Function's `_backward_cls`)."""
    _BY_PRIM[prim] = cls


_BY_NAME["torch::autograd::AccumulateGrad"] = AccumulateGrad


def _classify(node) -> None:
    """Give a level-0 node its torch class, when user code first sees it (core's `observed`)."""
    if node.prim is None:
        node.__class__ = AccumulateGrad
        return
    if node.extra is not None and node.extra.name is not None:  # (core's name_node)
        node.__class__ = class_named(node.extra.name)
    else:
        node.__class__ = node_class(node.prim, node.params)
    _bind_params(node)


def rename(result, name: str):
    """Give the node of `result` (a level-0 Tensor recorded by a composite's last primitive)
    torch's name of the composite's node, e.g. MeanBackward0 for `sum / n`."""
    edge = getattr(result, "_edge", None)
    if type(edge) is tuple and edge[0].versions is not None:
        edge[0].__class__ = class_named(name)
        _bind_params(edge[0])
    return result


# The non-tensor arguments a node saves, as torch's node names them (`_saved_dim`,
# `_saved_keepdim`, ...): primitive parameter -> torch's argument name.
_PARAM_NAMES = {
    "axis": "dim",
    "axes": "dim",
    "dim": "dim",
    "keepdims": "keepdim",
    "keepdim": "keepdim",
    "p": "p",
    "eps": "eps",
    "rounding_mode": "rounding_mode",
    "mode": "mode",
    "correction": "correction",
    "unbiased": "unbiased",
    "diagonal": "diagonal",
    "dim1": "dim1",
    "dim2": "dim2",
    "chunks": "chunks",
    "split_size": "split_size",
    "split_sizes": "split_sizes",
    "repeats": "repeats",
    "alpha": "alpha",
    "beta": "beta",
    "negative_slope": "negative_slope",
    "threshold": "threshold",
    "value": "value",
    "min": "min",
    "max": "max",
    "approximate": "approximate",
}
_BOUND: set = set()  # (class, parameter names) already given their properties


def _bind_params(node) -> None:
    """Give the node's class a `_saved_<name>` property for each parameter of the node that
    torch's node saves by that name (made once per class and set of parameters; a node of the
    class without that parameter raises AttributeError, so `hasattr` tells)."""
    params = node.params
    if not params or type(params) is not dict:
        return
    cls = type(node)
    key = (cls, tuple(params))
    if key in _BOUND:
        return
    with _LOCK:
        for param in params:
            torch_name = _PARAM_NAMES.get(param)
            if torch_name is None or hasattr(cls, f"_saved_{torch_name}"):
                continue
            setattr(cls, f"_saved_{torch_name}", _param_property(torch_name))
        _BOUND.add(key)


def _param_property(torch_name: str) -> property:
    params_of = [p for p, t in _PARAM_NAMES.items() if t == torch_name]

    def get(node):
        params = node.params
        for param in params_of:
            if type(params) is dict and param in params:
                return _as_python(params[param])
        raise AttributeError(
            f"'{type(node).__name__}' object has no attribute '_saved_{torch_name}'"
        )

    return property(get, doc=f"The `{torch_name}` argument the node saved (as torch's node).")


def _as_python(value):
    """A saved argument as torch's bindings return it: Python numbers, tuples of them."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return tuple(_as_python(v) for v in value)
    return value


# ---------------------------------------------------------------------------------------------
# Saved values


def _saves_no_tensor(node) -> bool:
    """Whether torch's node of this level-0 node saves no tensor: then it may run again after
    a backward pass (core's `Node.release` keeps what its rule reads of shapes)."""
    prim = node.prim
    renamed = type(node) is not Node or (node.extra is not None and node.extra.name is not None)
    if not renamed:  # (the answer is the primitive's, where it has one)
        keeps = _KEEPS.get(prim)
        if keeps is not None:
            return keeps
    if prim is None:
        return False
    ctx = node.params.get("ctx")
    if isinstance(ctx, _FunctionCtx):  # a custom Function: whether it saved any tensor
        return not ctx._ad_saves_tensors()
    name = node.name()
    keeps = name in _SAVES_NO_TENSOR or not (
        prim.saves_inputs or prim.saves_output or name in _SAVES_TENSORS
    )
    if not renamed and type(name_of(prim)) is str:
        _KEEPS[prim] = keeps
    return keeps


_KEEPS = KEEPS_SHAPES  # primitive -> _saves_no_tensor of its (not renamed) nodes


class _FunctionCtx:
    """(Replaced by function.py's FunctionCtx when it is defined: see `set_function_ctx`.)"""


def set_function_ctx(cls) -> None:
    """The class of a custom Function's ctx (function.py imports this module)."""
    global _FunctionCtx
    _FunctionCtx = cls


set_torch_face(_saves_no_tensor, _classify)


def _saved_slots(node) -> dict:
    """torch's names of what `node` saved: name -> ("in", i) | ("out", 0)."""
    prim = node.prim
    slots: dict = {}
    if prim is None:
        return slots
    n = len(node.parents)
    if prim.saves_inputs:
        names = _INPUT_NAMES.get(node._torch_name)
        if names is None:
            names = ("self",) if n == 1 else ("self", "other") if n == 2 else ()
        for i, saved_name in enumerate(names[:n]):
            slots[saved_name] = ("in", i)
    if prim.saves_output and not prim.multiple_results and node._torch_name not in _SAVES_NO_TENSOR:
        slots["result"] = ("out", 0)
    return slots


def _linked(tensor: Tensor, edge):
    """`tensor`'s value with the graph of `edge` (the one the saved value had)."""
    if edge is None:
        return tensor
    node, index = edge_pair(edge)
    value = tensor._value
    if node.prim is None:  # a leaf's: the unpacked value accumulates where the leaf does
        t = Tensor._from(value)
        t._requires_grad = True
        t._accumulator = node
        return t
    return Tensor._from(value, (node, index))


def unpack_saved(packed: Packed, edge):
    """A value saved through hooks, unpacked (a Tensor, torch's check) with the graph of `edge`
    (the one it had when saved; None: none)."""
    return _linked(unpacked(packed), edge)


def _scalar_operand(node) -> bool:
    """Whether torch's node has one input where this one has two: `x ** 2` (a Scalar
    overload, whose number is no input of torch's node)."""
    if node._torch_name != "PowBackward0":
        return False
    primals = node.primals
    return (
        primals is not None
        and len(primals) == 2
        and isinstance(primals[1], (int, float, complex, np.number))
    )


def _is_saved(node, i: int) -> bool:
    """Whether `node` saved its input `i` (a product saves only what its gradients read)."""
    table = SAVED_FOR_PARTNERS.get(node.prim)
    if table is None:
        return True
    p0, p1 = node.parents
    return table[(p0 is not None) + 2 * (p1 is not None)][i]


def _saved_value(node, slot):
    """What `node._saved_<name>` returns for the saved value at `slot`."""
    kind, i = slot
    if kind == "out":
        out = node.out
        if out is None:
            raise RuntimeError(RELEASED_MESSAGE)
        if isinstance(out, Packed):
            return _linked(unpacked(out), (node, 0))
        return Tensor._from(out, (node, 0))
    primals = node.primals
    if primals is None:
        raise RuntimeError(RELEASED_MESSAGE)
    value = primals[i]
    if isinstance(value, Packed):
        return _linked(unpacked(value), node.parents[i])
    if not _is_saved(node, i):
        return None  # (not saved: no gradient reads it, as torch's undefined saved variable)
    saved = node.versions[i] if node.versions is not None else None
    if saved is not None:
        check_versions(node, (saved,))
        return saved[0]  # the tensor itself, as torch unpacks an input it saved
    if isinstance(value, (np.ndarray, np.generic)):
        return Tensor._from(np.asarray(value))
    return value


def _as_cotangent(g, create: bool):
    if isinstance(g, Tensor):
        return g if create else g.detach()._value
    return np.asarray(g)


def _as_result(g):
    return g if isinstance(g, Tensor) else Tensor._from(np.asarray(g))


def _shape_dtype(value) -> tuple:
    if isinstance(value, Packed):
        value = unpacked(value)
    return tuple(np.shape(value)), (
        value.dtype if hasattr(value, "dtype") else np.asarray(value).dtype
    )


class SavedTensor:
    """One value a node saved for its backward pass (torch's `SavedTensor`): `data`,
    `unpack()`, and `register_hooks(pack_hook, unpack_hook)` to save it in packed form
    (`pack_hook` runs at once; `unpack_hook` when the value is needed)."""

    __slots__ = ("_node", "_slot")

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")

    @classmethod
    def _of(cls, node, slot) -> SavedTensor:
        saved = object.__new__(cls)
        saved._node = node  # (it keeps the node alive, as torch's does)
        saved._slot = slot
        return saved

    # ---- where the value lives: a node's input or output slot, or a Function's saved ref ----
    def _node_or_raise(self):
        return self._node

    def _where(self) -> tuple:
        """`(node, kind, index)` of the stored value: kind "in", "out" or "const" (a value a
        Function saved that is neither its input nor its output)."""
        node = self._node_or_raise()
        kind, k = self._slot
        if kind != "ref":
            return node, kind, k
        ref = node.params["ctx"]._ad_refs[k]
        if ref is None:
            return node, "none", k
        if ref[0] == "in":
            return node, "in", ref[1]
        if ref[0] == "out":
            return node, "out", ref[1]
        return node, "const", k

    def _stored(self):
        """The stored value (or RELEASED)."""
        node, kind, i = self._where()
        if kind == "none":
            return None
        if kind == "const":
            if node.primals is None:
                return RELEASED
            return node.params["ctx"]._ad_refs[i][1]
        if kind == "out":
            out = node.out
            if out is None:
                return RELEASED
            return out[i] if node.prim.multiple_results else out
        primals = node.primals
        if primals is None:
            return RELEASED
        return primals[i] if self._slot[0] == "ref" or _is_saved(node, i) else None

    def _store(self, value) -> None:
        node, kind, i = self._where()
        if kind == "const":
            ctx = node.params["ctx"]
            refs = list(ctx._ad_refs)
            refs[i] = ("const", value)
            ctx._ad_refs = tuple(refs)
        elif kind == "out":
            if node.prim.multiple_results:
                out = list(node.out)
                out[i] = value
                node.out = tuple(out)
            else:
                node.out = value
        else:
            primals = list(node.primals)
            primals[i] = value
            node.primals = primals
        node.raw = False  # (packed values take the engine's general path)
        node._extra()

    # ---- torch's API ----
    def unpack(self):
        """The saved value, as the backward pass reads it."""
        node, kind, i = self._where()
        if kind == "none":
            return None
        if kind in ("in", "out") and self._slot[0] != "ref":
            return _saved_value(node, (kind, i))
        if node.primals is None:
            raise RuntimeError(RELEASED_MESSAGE)
        return node.params["ctx"]._ad_saved_of(node)[self._slot[1]]

    @property
    def data(self):
        """The packed object when hooks are set, else the saved tensor."""
        stored = self._stored()
        if stored is RELEASED:
            raise RuntimeError(RELEASED_MESSAGE)
        if isinstance(stored, Packed):
            return stored.packed
        node, kind, _ = self._where()
        value = self.unpack()
        if kind == "out" and isinstance(value, Tensor):
            return value.detach()  # (an output is saved without its graph: no cycle)
        return value

    @property
    def unpack_hook(self):
        """The unpack hook set on this value, or None."""
        stored = self._stored()
        return stored.unpack if isinstance(stored, Packed) else None

    def register_hooks(self, *args, **kwargs) -> None:
        """Save this value as `pack_hook(tensor)`, read back as `unpack_hook(packed)`."""
        if kwargs or len(args) != 2 or not all(callable(a) for a in args):
            raise TypeError(
                "register_hooks(): incompatible function arguments. The following argument types "
                "are supported:\n    1. (self: SavedTensor, arg0: Callable, arg1: Callable) -> "
                f"None\n\nInvoked with: {self!r}, {', '.join(repr(a) for a in args)}"
            )
        pack_hook, unpack_hook = args
        stored = self._stored()
        if stored is RELEASED:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through "
                "the graph a second time or if you need to access saved variables after "
                "calling backward."
            )
        if stored is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor with value None is forbidden"
            )
        if isinstance(stored, Packed):
            raise RuntimeError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. "
                "Hint: only one pair of hooks is allowed at a time."
            )
        tensor = self.unpack()
        self._store(pack(pack_hook, unpack_hook, tensor))

    def __repr__(self):
        return f"<autodiff.autograd.graph.SavedTensor object at {hex(id(self))}>"


class _LooseSavedTensor(SavedTensor):
    """A SavedTensor of no node (`torch._C._autograd._make_saved_tensor`): the value saved as a
    node saves it, through the saved-tensor hooks in use, checked against in-place changes."""

    __slots__ = ("_value", "_version", "_edge", "_is_output")

    @classmethod
    def _make(cls, tensor: Tensor, is_output: bool, hooks, edge) -> _LooseSavedTensor:
        """`tensor` (whose gradient edge is `edge`) saved through `hooks` (a (pack, unpack)
        pair, or None)."""
        saved = object.__new__(cls)
        saved._node = None
        saved._slot = None
        saved._is_output = bool(is_output)
        saved._edge = edge
        saved._version = 0 if tensor is None else version_of(tensor)  # (None: an absent input)
        saved._value = tensor if hooks is None else pack(hooks[0], hooks[1], tensor)
        return saved

    def _stored(self):
        return self._value

    def unpack(self):
        """The saved value (the unpack hook's result, with the saved tensor's graph)."""
        value = self._value
        if isinstance(value, Packed):
            return _linked(unpacked(value), self._edge)
        if value is None:
            return None
        check_versions(None, ((value, self._version),))
        if self._is_output and self._edge is not None:
            return Tensor._from(value._value, edge_pair(self._edge))
        return value

    @property
    def data(self):
        """The packed object when hooks are set, else the saved tensor."""
        value = self._value
        return value.packed if isinstance(value, Packed) else value

    def register_hooks(self, *args, **kwargs) -> None:
        """Save this value as `pack_hook(tensor)`, read back as `unpack_hook(packed)`."""
        if kwargs or len(args) != 2 or not all(callable(a) for a in args):
            return SavedTensor.register_hooks(self, *args, **kwargs)  # (torch's TypeError)
        if self._value is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor with value None is forbidden"
            )
        if isinstance(self._value, Packed):
            raise RuntimeError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. "
                "Hint: only one pair of hooks is allowed at a time."
            )
        self._value = pack(args[0], args[1], self.unpack())
        return None


def pack(pack_hook, unpack_hook, tensor: Tensor) -> Packed:
    """`tensor` saved through a pair of hooks: the pack hook runs with grad mode off, as in
    torch (what it computes is not recorded), and must not modify `tensor` in place."""
    st = state()
    enabled = st.grad_enabled
    version = version_of(tensor)
    st.grad_enabled = False
    try:
        packed = pack_hook(tensor)
    finally:
        st.grad_enabled = enabled
    if tensor._vc != version:
        raise RuntimeError(PACK_IN_PLACE_MESSAGE)
    return Packed(packed, unpack_hook)


__all__ = [
    "AccumulateGrad",
    "BackwardCFunction",
    "InputMetadata",
    "SavedTensor",
    "TorchNode",
    "class_named",
    "function_node_class",
    "node_class",
    "pack",
    "register_node_class",
    "register_saved_attrs",
    "rename",
    "set_function_ctx",
    "unpack_saved",
]
