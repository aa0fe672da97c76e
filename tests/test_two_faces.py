"""Two faces, one Tensor: every name NumPy's ndarray and torch.Tensor both define, tested
from both faces (API.md section A, autodiff/torch/faces.py's docstring).

For each shared name, `TABLE` lists calls in NumPy's spelling and calls in torch's:

- NumPy's run on a NumPy-face value (a tracer of `autodiff.grad` over a NumPy array) and
  must give what NumPy gives on the array;
- torch's run on a torch-face value (`autodiff.tensor`) and must give what real torch gives
  (values and gradients), when torch is installed;
- calls whose meanings differ run staged (inside `jit`, where the face is unknown) and must
  raise a TypeError naming both readings, while calls both libraries read alike run.

NumPy's in-place methods (`sort`, `put`, `resize`) cannot run on a traced value: they
raise there, with the functional spelling in the message.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.core.errors import TracerConversionError
from autodiff.core.sizes import Size
from autodiff.core.tensor import face_of

X = np.array([[0.5, -1.5, 2.0], [3.0, -0.25, 1.0]])
Z = np.array([[1.0 + 2.0j, -0.5j, 3.0]])
ONE = np.array([[2.5]])
R3 = np.arange(24.0).reshape(2, 3, 4) / 7.0 - 1.0

# The shared names (NumPy 2's ndarray and torch.Tensor, public attributes); a test checks this
# list against both libraries when torch is installed.
SHARED = [
    "T", "all", "any", "argmax", "argmin", "argsort", "clip", "conj", "cumprod", "cumsum",
    "data", "device", "diagonal", "dot", "dtype", "flatten", "imag", "item", "itemsize", "mT",
    "max", "mean", "min", "nbytes", "ndim", "nonzero", "prod", "put", "ravel", "real",
    "repeat", "reshape", "resize", "round", "shape", "size", "sort", "squeeze", "std", "sum",
    "swapaxes", "take", "tolist", "trace", "transpose", "var", "view",
]  # fmt: skip


def row(numpy=(), torch=(), numpy_raises=(), torch_raises=(), differ=(), agree=(), data=X):
    """The calls of one name: expressions in `x` (and `o`, another array of x's shape)."""
    return {
        "numpy": list(numpy),
        "torch": list(torch),
        "numpy_raises": list(numpy_raises),
        "torch_raises": list(torch_raises),
        "differ": list(differ),
        "agree": list(agree),
        "data": data,
    }


TABLE = {
    "T": row(["x.T"], ["x.T"], agree=["x.T"]),
    "all": row(
        ["(x > 0).all()", "(x > 0).all(1)", "(x > 0).all(axis=0, keepdims=True)"],
        [
            "(x > 0).all()",
            "(x > 0).all(1)",
            "(x > 0).all(dim=0, keepdim=True)",
            "(x > 0).all(1, True)",
        ],
        agree=["(x > 0).all(1)"],
    ),
    "any": row(
        ["(x > 2).any()", "(x > 2).any(0)", "(x > 2).any(axis=1, keepdims=True)"],
        ["(x > 2).any()", "(x > 2).any(0)", "(x > 2).any(1, True)", "(x > 2).any(dim=1)"],
        agree=["(x > 2).any(0)"],
    ),
    "argmax": row(
        ["x.argmax()", "x.argmax(1)", "x.argmax(axis=0, keepdims=True)"],
        ["x.argmax()", "x.argmax(1)", "x.argmax(1, True)", "x.argmax(dim=0, keepdim=True)"],
        agree=["x.argmax(1)"],
    ),
    "argmin": row(
        ["x.argmin()", "x.argmin(0)"],
        ["x.argmin()", "x.argmin(0)", "x.argmin(0, True)"],
        agree=["x.argmin(0)"],
    ),
    "argsort": row(
        ["x.argsort()", "x.argsort(0)", "x.argsort(axis=1, kind='stable')"],
        ["x.argsort()", "x.argsort(0)", "x.argsort(1, True)", "x.argsort(dim=0, descending=True)"],
        agree=["x.argsort(0)"],
    ),
    "clip": row(
        ["x.clip(-1, 1)", "x.clip(min=0)"],
        ["x.clip(-1, 1)", "x.clip(min=0)"],
        agree=["x.clip(-1, 1)"],
    ),
    "conj": row(["x.conj()"], ["x.conj()"], agree=["x.conj()"], data=Z),
    "cumprod": row(
        ["x.cumprod()", "x.cumprod(1)", "x.cumprod(axis=0)"],
        ["x.cumprod(1)", "x.cumprod(dim=0)"],
        agree=["x.cumprod(1)", "x.cumprod()"],
    ),
    "cumsum": row(
        ["x.cumsum()", "x.cumsum(0)", "x.cumsum(axis=1)"],
        ["x.cumsum(0)", "x.cumsum(dim=1)", "x.cumsum(-1)"],
        agree=["x.cumsum(0)", "x.cumsum()"],
    ),
    "data": row(
        [],
        ["x.data"],
        numpy_raises=[("x.data", TracerConversionError)],
    ),
    "device": row(["x.device"], ["str(x.device)"]),
    "diagonal": row(
        ["x.diagonal()", "x.diagonal(1)", "x.diagonal(0, 1, 0)"],
        ["x.diagonal()", "x.diagonal(1)", "x.diagonal(0, 1, 0)", "x.diagonal(dim1=1, dim2=0)"],
        agree=["x.diagonal(1)"],
    ),
    "dot": row(
        ["x.dot(o.T)", "x[0].dot(o[0])"],
        ["x[0].dot(o[0])"],
        torch_raises=[("x.dot(o.T)", RuntimeError)],
        agree=["x[0].dot(o[0])"],
    ),
    "dtype": row(["x.dtype"], ["str(x.dtype).replace('torch.', '')"]),
    "flatten": row(
        ["x.flatten()", "x.flatten('F')"],
        ["x.flatten()", "x.flatten(1)", "x.flatten(0, 1)"],
        agree=["x.flatten()"],
        data=R3,
    ),
    "imag": row(["x.imag"], [], torch_raises=[("x.imag", RuntimeError)], agree=["x.imag"]),
    "item": row([], ["x.item()"], numpy_raises=[("x.item()", TracerConversionError)], data=ONE),
    "itemsize": row(["x.itemsize"], ["x.itemsize"], agree=["x.itemsize"]),
    "mT": row(["x.mT"], ["x.mT"], agree=["x.mT"], data=R3),
    "max": row(
        ["x.max()", "x.max(1)", "x.max(axis=0, keepdims=True)"],
        ["x.max()", "x.max(1)", "x.max(0, True)", "x.max(dim=1).values", "x.max(o)"],
        differ=["x.max(1)", "x.max(axis=0)"],
        agree=["x.max()"],
    ),
    "mean": row(
        ["x.mean()", "x.mean(1)", "x.mean(axis=0, keepdims=True)"],
        ["x.mean()", "x.mean(1)", "x.mean(1, True)", "x.mean(dim=0, keepdim=True)"],
        agree=["x.mean(1)", "x.mean(1, True)"],
    ),
    "min": row(
        ["x.min()", "x.min(0)", "x.min(axis=1, keepdims=True)"],
        ["x.min()", "x.min(0)", "x.min(1, keepdim=True)", "x.min(o)"],
        differ=["x.min(0)"],
        agree=["x.min()"],
    ),
    "nbytes": row(["x.nbytes"], ["x.nbytes"], agree=["x.nbytes"]),
    "ndim": row(["x.ndim"], ["x.ndim"], agree=["x.ndim"]),
    "nonzero": row(["x.nonzero()"], ["x.nonzero()", "x.nonzero(as_tuple=True)"]),
    "prod": row(
        ["x.prod()", "x.prod(1)", "x.prod(axis=0, keepdims=True)"],
        ["x.prod()", "x.prod(1)", "x.prod(0, True)"],
        agree=["x.prod(1)"],
    ),
    "put": row(
        [],
        [
            "x.put(ad_or_torch.tensor([0, 4]), ad_or_torch.tensor([9.0, 8.0], dtype=ad_or_torch.float64))"
        ],
        numpy_raises=[("x.put([0, 4], [9.0, 8.0])", TypeError)],
        differ=["x.put([0], [1.0])"],
    ),
    "ravel": row(["x.ravel()"], ["x.ravel()"], agree=["x.ravel()"]),
    "real": row(["x.real"], ["x.real"], agree=["x.real"], data=Z),
    "repeat": row(
        ["x.repeat(2)", "x.repeat(2, 1)", "x.repeat(2, axis=0)"],
        ["x.repeat(2, 1)", "x.repeat(1, 2)", "x.repeat(2, 1, 1)"],
        differ=["x.repeat(2, 1)"],
        agree=["x.repeat(2, axis=0)"],
    ),
    "reshape": row(
        ["x.reshape(3, 2)", "x.reshape((3, 2))", "x.reshape(-1)", "x.reshape(3, 2, order='F')"],
        ["x.reshape(3, 2)", "x.reshape((3, 2))", "x.reshape(-1)", "x.reshape(1, -1)"],
        agree=["x.reshape(3, 2)"],
    ),
    "resize": row(
        [],
        ["x.resize(3, 2)"],
        numpy_raises=[("x.resize(3, 2)", TypeError)],
        differ=["x.resize(3, 2)"],
    ),
    "round": row(
        ["x.round()", "x.round(1)", "x.round(decimals=1)"],
        ["x.round()", "x.round(decimals=1)"],
        agree=["x.round()"],
        data=X * 1.37,
    ),
    "shape": row(["x.shape"], ["tuple(x.shape)"], agree=["x.shape"]),
    "size": row(["x.size"], ["x.size()", "x.size(1)", "x.size(-2)", "x.numel()"]),
    "sort": row(
        [],
        ["x.sort()", "x.sort(0)", "x.sort(1, True)", "x.sort(dim=0, descending=True).values"],
        numpy_raises=[("x.sort()", TypeError)],
        differ=["x.sort()"],
    ),
    "squeeze": row(
        ["x.squeeze()", "x.squeeze(0)", "x.squeeze(axis=(0, 2))"],
        ["x.squeeze()", "x.squeeze(0)", "x.squeeze(1)", "x.squeeze(dim=2)"],
        numpy_raises=[("x.squeeze(1)", ValueError)],
        agree=["x.squeeze(0)"],
        data=X[None, :1, :, None][:, :, :, 0].reshape(1, 3, 1),
    ),
    "std": row(
        ["x.std()", "x.std(1)", "x.std(ddof=1)", "x.std(axis=0, keepdims=True)"],
        [
            "x.std()",
            "x.std(1)",
            "x.std(1, False)",
            "x.std(dim=0, correction=0)",
            "x.std(unbiased=False)",
        ],
        differ=["x.std()", "x.std(1)"],
        agree=["x.std(ddof=1)", "x.std(1, unbiased=False)"],
    ),
    "sum": row(
        ["x.sum()", "x.sum(1)", "x.sum(axis=0, keepdims=True)", "x.sum((0, 1))"],
        [
            "x.sum()",
            "x.sum(1)",
            "x.sum(1, True)",
            "x.sum(dim=(0, 1))",
            "x.sum(dim=0, keepdim=True)",
        ],
        agree=["x.sum(1)", "x.sum(1, True)", "x.sum(dim=0)"],
    ),
    "swapaxes": row(["x.swapaxes(0, 1)"], ["x.swapaxes(0, 1)"], agree=["x.swapaxes(0, 1)"]),
    "take": row(
        ["x.take([0, 4])"], ["x.take(ad_or_torch.tensor([0, 4]))"], agree=["x.take([0, 4])"]
    ),
    "tolist": row([], ["x.tolist()"], numpy_raises=[("x.tolist()", TracerConversionError)]),
    "trace": row(["x.trace()"], ["x.trace()"], agree=["x.trace()"]),
    "transpose": row(
        ["x.transpose()", "x.transpose(1, 0)", "x.transpose((1, 0))", "x.transpose(0, 1)"],
        ["x.transpose(0, 1)", "x.transpose(1, 0)", "x.transpose(-1, -2)"],
        differ=["x.transpose(0, 1)"],
        agree=["x.transpose()", "x.transpose(1, 0)"],
    ),
    "var": row(
        ["x.var()", "x.var(0)", "x.var(ddof=1)", "x.var(axis=1, keepdims=True)"],
        ["x.var()", "x.var(0)", "x.var(0, False)", "x.var(1, keepdim=True)", "x.var(correction=0)"],
        differ=["x.var()", "x.var(axis=0)"],
        agree=["x.var(ddof=1)", "x.var(correction=0)"],
    ),
    "view": row(
        ["x.view(np.float64)"], ["x.view(3, 2)", "x.view(-1)", "x.view((6,))"], agree=["x.view(-1)"]
    ),
}


def _numpy_face_value(expression: str, data: np.ndarray):
    """`expression` with `x` a NumPy-face tracer (inside autodiff.jvp) over `data`, its
    result captured as NumPy values."""
    captured = []

    def f(x):
        assert face_of(x) == "numpy" and x._trace is not ad.core.trace.EVAL_TRACE
        captured.append(_concrete(eval(expression, {"x": x, "o": data[::-1].copy(), "np": np})))
        return anp.sum(x)

    ad.jvp(f, (data,), (np.ones_like(data),))
    return captured[0]


def _concrete(value):
    if isinstance(value, ad.Tensor):
        return np.asarray(value.primal())
    if isinstance(value, (tuple, list)) and not isinstance(value, Size):
        return tuple(_concrete(v) for v in value)
    return value


def _same(got, want, where: str) -> None:
    if isinstance(want, (tuple, list)) and not isinstance(want, (str,)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (where, got, want)
        for g, w in zip(got, want):
            _same(g, w, where)
        return
    if isinstance(want, (np.ndarray, np.generic)):
        got = np.asarray(got)
        assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype, (
            where,
            got,
            want,
        )
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=where)
        return
    assert got == want, (where, got, want)


# Calls spelled in one library's signature only: on the other face they run with that
# library's meaning (there is no other reading). NumPy's spellings on torch-face tensors are
# compared with NumPy; torch's on NumPy-face values with the torch face (tested above).
NUMPY_SPELLINGS_ON_TORCH = [
    ("x.cumsum()", X),
    ("x.cumprod()", X),
    ("x.transpose()", R3),
    ("x.transpose((1, 0))", X),
    ("x.transpose(2, 0, 1)", R3),
    ("x.repeat(2, axis=0)", X),
    ("x.repeat(2)", X),
    ("x.sum(0, np.float32)", X),
    ("x.var(0, np.float64)", X),
    ("x.max(axis=0, initial=10.0)", X),
    ("x.argsort(kind='stable')", X),
    ("x.argsort(0, 'stable')", X),
    ("x.flatten('F')", X),
    ("x.std(ddof=1)", X),
]
TORCH_SPELLINGS_ON_NUMPY = [
    ("x.sum(1, True)", X),
    ("x.all(0, True)", X),
    ("x.argmax(1, True)", X),
    ("x.max(o)", X),
    ("x.min(o)", X),
    ("x.flatten(1)", R3),
    ("x.flatten(0, 1)", R3),
    ("x.view(3, 2)", X),
    ("x.var(1, False)", X),
    ("x.std(0, True, True)", X),
    ("x.argsort(1, True)", X),
]


@pytest.mark.parametrize("expression, data", NUMPY_SPELLINGS_ON_TORCH)
def test_numpy_spellings_on_the_torch_face_have_numpy_meaning(expression, data):
    want = eval(expression, {"x": data.copy(), "np": np})
    got = eval(expression, {"x": ad.tensor(data), "np": np})
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("expression, data", TORCH_SPELLINGS_ON_NUMPY)
def test_torch_spellings_on_the_numpy_face_have_torch_meaning(expression, data):
    o = data[::-1].copy()
    want = eval(expression, {"x": ad.tensor(data), "o": ad.tensor(o)})
    got = _numpy_face_value(expression, data)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


CASES_NUMPY = [
    pytest.param(name, e, id=f"{name}:{e}") for name, r in TABLE.items() for e in r["numpy"]
]
CASES_TORCH = [
    pytest.param(name, e, id=f"{name}:{e}") for name, r in TABLE.items() for e in r["torch"]
]


def test_the_table_has_every_shared_name():
    assert sorted(TABLE) == sorted(SHARED)
    for name in SHARED:
        assert hasattr(ad.Tensor, name), name


def test_shared_names_are_those_of_numpy_and_torch():
    torch = pytest.importorskip("torch")
    numpy_names = {n for n in dir(np.ndarray) if not n.startswith("_")}
    torch_names = {n for n in dir(torch.Tensor) if not n.startswith("_")}
    assert sorted(numpy_names & torch_names) == sorted(SHARED)


@pytest.mark.parametrize("name, expression", CASES_NUMPY)
def test_numpy_face_matches_numpy(name, expression):
    data = TABLE[name]["data"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = eval(expression, {"x": data.copy(), "o": data[::-1].copy(), "np": np})
        got = _numpy_face_value(expression, data)
    _same(got, want, expression)


@pytest.mark.parametrize(
    "name, expression, error",
    [
        pytest.param(name, e, err, id=f"{name}:{e}")
        for name, r in TABLE.items()
        for e, err in r["numpy_raises"]
    ],
)
def test_numpy_face_raises_where_numpy_cannot_run_on_a_traced_value(name, expression, error):
    with pytest.raises(error):
        _numpy_face_value(expression, TABLE[name]["data"])


def _torch_run(T, expression: str, data: np.ndarray):
    dtype = T.complex128 if np.iscomplexobj(data) else T.float64
    x = T.tensor(data, dtype=dtype, requires_grad=not np.iscomplexobj(data))
    o = T.tensor(data[::-1].copy(), dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's deprecation of x.T on 3-d, resize, ...)
        out = eval(expression, {"x": x, "o": o, "ad_or_torch": T})
    grad = None
    outs = out if isinstance(out, tuple) else (out,)
    floats = [
        t for t in outs if isinstance(t, T.Tensor) and t.requires_grad and t.is_floating_point()
    ]
    if floats:
        rng = np.random.default_rng(1)
        loss = sum((t * T.tensor(rng.standard_normal(tuple(t.shape)))).sum() for t in floats)
        loss.backward()
        grad = x.grad.numpy()
    return _plain(out), grad


def _plain(value):
    if hasattr(value, "detach"):
        return np.asarray(value.detach().resolve_conj().numpy())
    if isinstance(value, tuple) and not type(value).__name__ == "Size":
        return tuple(_plain(v) for v in value)
    if type(value).__name__ in ("Size",):
        return tuple(value)
    return value


@pytest.mark.parametrize("name, expression", CASES_TORCH)
def test_torch_face_matches_torch(name, expression):
    torch = pytest.importorskip("torch")
    data = TABLE[name]["data"]
    want, want_grad = _torch_run(torch, expression, data)
    got, got_grad = _torch_run(ad, expression, data)
    _same(got, want, expression)
    if want_grad is not None and got_grad is None:
        # (torch's round gives a result that requires grad, with a zero gradient; autodiff's
        # is a constant)
        assert not np.any(want_grad), expression
    elif want_grad is not None:
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-12, err_msg=expression)


@pytest.mark.parametrize(
    "name, expression, error",
    [
        pytest.param(name, e, err, id=f"{name}:{e}")
        for name, r in TABLE.items()
        for e, err in r["torch_raises"]
    ],
)
def test_torch_face_raises_as_torch(name, expression, error):
    data = TABLE[name]["data"]
    x = ad.tensor(data)
    o = ad.tensor(data[::-1].copy())
    with pytest.raises(error):
        eval(expression, {"x": x, "o": o})
    torch = pytest.importorskip("torch")
    with pytest.raises(error):
        eval(expression, {"x": torch.tensor(data), "o": torch.tensor(data[::-1].copy())})


@pytest.mark.parametrize(
    "name, expression",
    [pytest.param(name, e, id=f"{name}:{e}") for name, r in TABLE.items() for e in r["differ"]],
)
def test_staged_values_refuse_a_call_the_two_libraries_read_differently(name, expression):
    data = TABLE[name]["data"]

    def f(x):
        return eval(expression, {"x": x})

    with pytest.raises(TypeError, match="in NumPy but .* in torch") as info:
        ad.jit(f)(data)
    assert "autodiff.numpy" in str(info.value) or "x.at[" in str(info.value)


@pytest.mark.parametrize(
    "name, expression",
    [pytest.param(name, e, id=f"{name}:{e}") for name, r in TABLE.items() for e in r["agree"]],
)
def test_staged_values_run_a_call_both_libraries_read_alike(name, expression):
    data = TABLE[name]["data"]
    o = data[::-1].copy()
    try:  # (NumPy's value; a torch-only spelling: the torch face's, tested against torch above)
        want = eval(expression, {"x": data.copy(), "o": o, "np": np})
    except TypeError:
        want = _concrete(eval(expression, {"x": ad.tensor(data), "o": ad.tensor(o), "np": np}))
    got = ad.jit(lambda x: eval(expression, {"x": x, "o": o, "np": np}))(data)
    if isinstance(want, (np.ndarray, np.generic)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    else:
        assert got == want


def test_a_tracer_has_the_face_of_what_it_traces():
    seen = []

    def f(x):
        seen.append(face_of(x))
        return (x * x).sum()

    ad.grad(f)(np.ones(2))
    ad.grad(f)(ad.ones(2))
    ad.vmap(f)(np.ones((2, 2)))
    ad.vmap(f)(ad.ones(2, 2))
    ad.autograd.functional.jacobian(f, ad.ones(2))
    assert seen == ["numpy", "torch", "numpy", "torch", "torch"]
    assert face_of(ad.ones(2) * np.ones(2)) == "torch"  # (results inherit it)


def test_the_same_function_reads_each_face_its_way():
    data = np.array([[1.0, 2.0], [4.0, 8.0]])

    def spread(x):
        return x.var()

    # NumPy's biased variance for a NumPy array, torch's unbiased one for a tensor
    value, _ = ad.value_and_grad(spread)(data)
    assert float(value) == pytest.approx(np.var(data))
    assert spread(ad.tensor(data)).item() == pytest.approx(np.var(data, ddof=1))
    # transpose(0, 1) of a matrix: the identity in NumPy, a swap in torch
    g_numpy = ad.grad(lambda x: x.transpose(0, 1)[0, 1])(data)
    assert g_numpy.tolist() == [[0.0, 1.0], [0.0, 0.0]]
    t = ad.tensor(data, requires_grad=True)
    t.transpose(0, 1)[0, 1].backward()
    assert t.grad.tolist() == [[0.0, 0.0], [1.0, 0.0]]
