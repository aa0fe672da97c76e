"""The torch-face behaviours PyTorch's own autograd tests found missing (issue 39, item 2).

Each group runs the same program on autodiff and on real torch (tests/torch_oracle.py's
`both`) and compares what user code sees: autocast's API as a no-op region on the CPU, the
`_saved_*` attributes of index, slice, select and shape nodes, the `CopyBackwards` node of a
first `.grad` made with create_graph, dtype objects with `is_floating_point`, what a graph
keeps alive (retain_grad cycles), torch's wording of in-place and custom-Function forward-mode
errors, and anomaly mode naming the forward call.
"""

from __future__ import annotations

import ast
import gc
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import autodiff
from tests.torch_oracle import both

# ---- torch.autocast on the CPU: torch's API, nothing cast ----


def _autocast_states(torch):
    seen = [torch.is_autocast_enabled(), torch.is_autocast_enabled("cpu")]
    with torch.autocast("cpu"):
        # (bfloat16: a name until the torch face has that dtype)
        dtype = str(torch.get_autocast_dtype("cpu")).replace("torch.", "")
        seen += [torch.is_autocast_enabled("cpu"), dtype]
        with torch.autocast("cpu", enabled=False):
            seen.append(torch.is_autocast_enabled("cpu"))
        seen.append(torch.is_autocast_enabled("cpu"))
    with torch.autocast(device_type="cpu", dtype=torch.float16, cache_enabled=False):
        seen += [str(torch.get_autocast_dtype("cpu")), torch.is_autocast_cache_enabled()]
    seen += [torch.is_autocast_enabled("cpu"), torch.is_autocast_cache_enabled()]

    @torch.autocast("cpu")
    def inside():
        return torch.is_autocast_enabled("cpu")

    return seen + [inside(), torch.is_autocast_enabled("cpu")]


def test_autocast_state_as_torch_reports_it():
    ours, theirs = both(_autocast_states)
    assert ours == theirs
    assert ours[2] is True and ours[-2] is True and ours[-1] is False


def test_autocast_aliases_and_torch_warnings():
    def run(torch):
        out = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.cpu.amp.autocast():
                out.append(torch.is_autocast_enabled("cpu"))
            with torch.amp.autocast("cpu", dtype=torch.float64):  # not a CPU autocast dtype
                out.append(torch.is_autocast_enabled("cpu"))
        out.append(sorted({w.category.__name__ for w in caught}))
        out.append(torch.amp.autocast is torch.autocast)
        out.append((torch.cpu.is_available(), torch.cpu.device_count()))
        return out

    ours, theirs = both(run)
    assert ours == theirs == [True, False, ["FutureWarning", "UserWarning"], True, (True, 1)]


def test_autocast_errors_and_values_unchanged():
    with pytest.raises(RuntimeError, match="device type at start of device string: gpu0"):
        autodiff.autocast("gpu0")
    with pytest.raises(TypeError, match="unexpected keyword"):
        autodiff.autocast("cpu", bogus=1)
    x = autodiff.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=autodiff.float32, requires_grad=True)
    with autodiff.autocast("cpu"):
        y = (x @ x).sum()
    y.backward()  # nothing cast: the float32 values and gradients of the plain computation
    assert y.dtype == autodiff.float32 and float(y) == 54.0
    # d/dx sum(x @ x) = 1 x^T + x^T 1 (1: the matrix of ones)
    np.testing.assert_array_equal(x.grad.numpy(), [[7.0, 11.0], [9.0, 13.0]])


# ---- _saved_* of index, select, slice, index_select and shape nodes ----

_INDEXED = [
    lambda a, i: a[:, i],
    lambda a, i: a[i],
    lambda a, i: a[1, i],
    lambda a, i: a[..., i],
    lambda a, i: a[:, 1:3, i],
    lambda a, i: a[i, :, i],
    lambda a, i: a[None, i],
    lambda a, i: a[1],
    lambda a, i: a[:, 2],
    lambda a, i: a[1:3],
    lambda a, i: a[:, 1:],
    lambda a, i: a[::2, 0],
    lambda a, i: a.select(2, 1),
    lambda a, i: a.index_select(1, i),
    lambda a, i: a.sum(),
    lambda a, i: a.sum(1),
    lambda a, i: a.mean(),
    lambda a, i: a.mean(1, keepdim=True),
    lambda a, i: a.mean((0, 2)),
    lambda a, i: a.sum(dim=(0, 1)),
    lambda a, i: a[0, 0].expand(3, 5),
]
_NAMES = (
    "_saved_indices",
    "_saved_self_sym_sizes",
    "_saved_dim",
    "_saved_index",
    "_saved_start",
    "_saved_end",
    "_saved_step",
    "_saved_keepdim",
)


def _saved_attrs(torch, expr):
    a = torch.ones(4, 3, 5, requires_grad=True)
    i = torch.tensor([0, 2])
    node = expr(a, i).grad_fn
    out = {"name": type(node).__name__}
    for attr in _NAMES:
        if hasattr(node, attr):
            value = getattr(node, attr)
            if isinstance(value, tuple):
                value = tuple(None if v is None else _plain(v) for v in value)
            out[attr] = _plain(value)
    return out


def _plain(v):
    if hasattr(v, "tolist"):
        return ("tensor", v.tolist())
    return v


@pytest.mark.parametrize("k", range(len(_INDEXED)))
def test_saved_attributes_of_index_and_shape_nodes(k):
    ours, theirs = both(lambda torch: _saved_attrs(torch, _INDEXED[k]))
    # every attribute torch's node has, with torch's value (autodiff's full sum also carries
    # the `_saved_dim`/`_saved_keepdim` of its one reduce_sum, where torch's has none)
    assert {key: ours.get(key) for key in theirs} == theirs


def test_raw_saved_indices_are_saved_tensors():
    def run(torch):
        a = torch.ones(2, 2, requires_grad=True)
        indices = torch.tensor([0, 1])
        node = a[:, indices].grad_fn
        raw = node._raw_saved_indices
        raw[1].register_hooks(lambda x: x, lambda x: x)
        with pytest.raises(RuntimeError, match="value None is forbidden"):
            raw[0].register_hooks(lambda x: x, lambda x: x)
        sizes = node._saved_self_sym_sizes
        return len(raw), type(sizes[0]).__name__, raw[1].unpack().tolist()

    ours, theirs = both(run)
    assert ours == theirs == (2, "int", [0, 1])


# ---- a first .grad made with create_graph: CopyBackwards, as torch ----


def _both_in_fresh_torch(name: str, *args):
    """`both` for a program that calls torch's `backward(create_graph=True)`: torch warns
    about that once per process, so its run here would silence the warning other tests
    compare; real torch runs this module's function `name` in a process of its own."""
    pytest.importorskip("torch")
    ours = globals()[name](autodiff, *args)
    code = (
        "import warnings, torch; warnings.simplefilter('ignore');"
        "torch.set_default_dtype(torch.float64);"
        f"from tests.test_torch_upstream_clusters import {name};"
        f"print(repr({name}(torch, *{args!r})))"
    )
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return ours, ast.literal_eval(done.stdout.strip().splitlines()[-1])


def _graph_desc(fn):
    """The graph under `fn` written out as torch's test writes it (iteratively)."""
    if fn is None:
        return "None"
    parts, stack = [], [(fn, False)]
    while stack:
        node, closing = stack.pop()
        if closing:
            parts.append(")")
            continue
        if node is None:
            parts.append("None")
            continue
        if isinstance(node, str):
            parts.append(node)
            continue
        parts.append(type(node).__name__ + "(")
        stack.append((None, True))
        children = [n for n, _ in node.next_functions]
        for pos, child in reversed(list(enumerate(children))):
            stack.append((child, False))
            if pos:
                stack.append((", ", False))
    return "".join(parts)


def _custom_function_grads(torch, once: bool):
    from_autograd = torch.autograd

    def backward(ctx, grad_output):
        t1, t2 = ctx.saved_tensors
        return grad_output + grad_output * t2, None, grad_output * ctx.k + grad_output * t1

    class Fn(from_autograd.Function):
        @staticmethod
        def forward(ctx, a, k, b):
            ctx.k = k
            ctx.save_for_backward(a, b)
            return a + k * b + a * b

    Fn.backward = staticmethod(
        from_autograd.function.once_differentiable(backward) if once else backward
    )
    x = torch.randn(3, 3, requires_grad=True)
    y = torch.randn(3, 3, requires_grad=True)
    Fn.apply(x, 2, y).sum().backward(torch.ones((), requires_grad=True), create_graph=True)
    first = (_graph_desc(x.grad.grad_fn), _graph_desc(y.grad.grad_fn))
    expected = (y + 1, x + 2)
    close = [
        np.allclose(g.detach().numpy(), e.detach().numpy())
        for g, e in zip((x.grad, y.grad), expected)
    ]
    return first, close


@pytest.mark.parametrize("once", [False, True])
def test_first_grad_with_create_graph_is_a_copy(once):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _both_in_fresh_torch("_custom_function_grads", once)
    assert ours == theirs
    assert ours[0][0].startswith("CopyBackwards(None, ")
    assert ours[1] == [True, True]


def _accumulated_twice(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    first = _graph_desc(x.grad.grad_fn)
    (x * x).sum().backward(create_graph=True)
    second = type(x.grad.grad_fn).__name__
    value = x.grad.detach().tolist()
    z = torch.tensor([1.0, 2.0], requires_grad=True)
    (z * 3).sum().backward(create_graph=True)  # a gradient with no graph of its own
    return first, second, value, z.grad.grad_fn is None, z.grad.tolist()


def test_later_grads_add_and_plain_grads_have_no_graph():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _both_in_fresh_torch("_accumulated_twice")
    assert ours == theirs
    assert ours[2] == [4.0, 8.0]


# ---- dtype objects: torch's is_floating_point and friends ----


def _dtype_facts(torch):
    x = torch.rand(4, requires_grad=True)
    outs = {
        "argmax": x.argmax(),
        "argsort": x.argsort(),
        "gt": x > 0.5,
        "searchsorted": torch.searchsorted(torch.tensor([0.1, 0.5]), x),
        "bucketize": torch.bucketize(x, torch.tensor([0.25, 0.5, 0.75])),
        "long": x.long(),
        "sin": x.sin(),
        "float": x.float(),
        "complex": torch.complex(x, x),
        "count_nonzero": x.count_nonzero(),
    }
    return {
        k: (
            str(v.dtype),
            v.dtype.is_floating_point,
            v.dtype.is_complex,
            v.dtype.is_signed,
            v.dtype.itemsize,
            v.requires_grad,
        )
        for k, v in outs.items()
    }


def test_tensor_dtypes_are_torch_dtype_objects():
    ours, theirs = both(_dtype_facts)
    assert ours == theirs


def test_torch_dtypes_still_read_as_numpy_dtypes():
    x = autodiff.ones(3, dtype=autodiff.float32)
    assert x.dtype is autodiff.float32
    assert x.dtype == np.float32 and np.dtype(x.dtype) == np.float32
    assert x.dtype.kind == "f" and x.dtype.char == "f" and x.dtype.type is np.float32
    assert np.zeros(2, dtype=x.dtype).dtype == np.float32
    assert np.asarray(x).dtype == np.float32  # (a NumPy array keeps NumPy's dtype)
    assert {np.dtype("float32"): 1}[x.dtype] == 1


def test_bucketize_as_torch():
    def run(torch):
        v = torch.tensor([[0.0, 0.25, 0.3], [0.9, 1.0, 0.5]])
        b = torch.tensor([0.25, 0.5, 0.75])
        return (
            torch.bucketize(v, b).tolist(),
            torch.bucketize(v, b, right=True).tolist(),
            str(torch.bucketize(v, b, out_int32=True).dtype),
        )

    ours, theirs = both(run)
    assert ours == theirs
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        autodiff.bucketize(autodiff.ones(2), autodiff.ones(2, 2))


# ---- what a graph keeps alive ----


def _alive_after(torch, op, retain: bool):
    x = torch.ones(5, 5, requires_grad=True)

    def make():
        y = x * 2
        if retain:
            y.retain_grad()
        return op(torch, y), torch._C._WeakTensorRef(y)

    z, ref = make()
    gc.collect()
    expired = ref.expired()
    z.sum().backward()
    return expired, x.grad.sum().item()


_OPS = {
    "div_scalar": lambda torch, y: y / 2,
    "mul_scalar": lambda torch, y: 3 * y,
    "mul_self": lambda torch, y: y * y,
    "exp": lambda torch, y: y.exp(),
    "sin": lambda torch, y: y.sin(),
    "div_by_tensor": lambda torch, y: torch.ones(5, 5) / y,
}


@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("op", sorted(_OPS))
def test_graph_keeps_alive_what_torch_keeps(op, retain):
    ours, theirs = both(lambda torch: _alive_after(torch, _OPS[op], retain))
    assert ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1])


# ---- torch's wording of errors ----


def test_inplace_error_names_legacy_type_and_producer():
    def run(torch):
        a = torch.ones(2, requires_grad=True)
        b = a * 1
        c = b.sin()
        b.add_(1)
        with pytest.raises(RuntimeError) as info:
            c.sum().backward()
        return str(info.value).split(" is at version")[0]

    ours, theirs = both(run)
    assert ours == theirs
    assert "[torch.DoubleTensor [2]], which is output 0 of Add," in ours


class _ViewFnFlags:
    OK, NOT_A_VIEW, OTHER_VIEW, BASE = "ok", "not_a_view", "not_of_inp", "not_of_base"


def _view_jvp_error(torch, flag):
    fw = torch.autograd.forward_ad

    class ViewFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.narrow(0, 0, 2)

        @staticmethod
        def jvp(ctx, t):
            res = t.narrow(0, 0, 2)
            if flag != _ViewFnFlags.OK:
                res = res.clone()
            if flag in (_ViewFnFlags.OTHER_VIEW, _ViewFnFlags.BASE):
                res = res.view_as(res)
            return res

    with fw.dual_level():
        primal = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        dual = fw.make_dual(primal, torch.ones(3, 2))
        if flag == _ViewFnFlags.BASE:
            dual = dual.view_as(dual)
        try:
            out = ViewFn.apply(dual)
        except RuntimeError as e:
            return str(e)
        return fw.unpack_dual(out).tangent.tolist()


@pytest.mark.parametrize(
    "flag",
    [_ViewFnFlags.OK, _ViewFnFlags.NOT_A_VIEW, _ViewFnFlags.OTHER_VIEW, _ViewFnFlags.BASE],
)
def test_custom_function_view_needs_a_view_tangent(flag):
    ours, theirs = both(lambda torch: _view_jvp_error(torch, flag))
    assert ours == theirs


def _noop_forward(torch, make_tangent):
    fw = torch.autograd.forward_ad

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y, x

        @staticmethod
        def jvp(ctx, xt, yt):
            return xt + yt, make_tangent(xt)

    with fw.dual_level():
        a = fw.make_dual(torch.tensor(1.0), torch.tensor(2.0))
        try:
            out = Fn.apply(a, torch.tensor(3.0))
        except RuntimeError as e:
            return str(e)
        return fw.unpack_dual(out[1]).tangent.item()


@pytest.mark.parametrize("kind", ["view_as", "self", "mul_by_2"])
def test_custom_function_returning_an_input_needs_a_view_tangent(kind):
    make = {
        "view_as": lambda t: t.view_as(t),
        "self": lambda t: t,
        "mul_by_2": lambda t: t * 2,
    }[kind]
    ours, theirs = both(lambda torch: _noop_forward(torch, make))
    assert ours == theirs
    if kind == "view_as":
        assert ours == 2.0
    else:
        assert "forward is returning a view (or an input as-is)" in ours


def test_anomaly_mode_names_the_forward_call():
    def run(torch):
        class Bad(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                raise ValueError("boom")

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.autograd.detect_anomaly():
                y = Bad.apply(torch.ones(2, requires_grad=True)).exp()
                with pytest.raises(ValueError, match="boom"):
                    y.sum().backward()
        texts = [str(w.message) for w in caught if "Error detected" in str(w.message)]
        return [t.split("\n")[0] for t in texts], any("Bad.apply(" in t for t in texts)

    ours, theirs = both(run)
    assert ours == theirs
    assert ours == (
        ["Error detected in BadBackward. Traceback of forward call that caused the error:"],
        True,
    )
