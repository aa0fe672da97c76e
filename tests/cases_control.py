"""Op table: structured control flow (cond, switch, scan, fori_loop) and staged calls (jit), each
with a plain-NumPy reference written with Python's own control flow."""

import numpy as np
from optable import OpCase

import autodiff as ad
import autodiff.numpy as anp


def _np_scan(f, init, xs):
    carry, ys = init, []
    for x in xs:
        carry, y = f(carry, x)
        ys.append(y)
    return carry, np.stack(ys)


def _cond(m, x):
    if m is np:
        return np.sin(x) * x if np.sum(x) > 0 else np.cos(x)
    return ad.cond(anp.sum(x) > 0, lambda v: anp.sin(v) * v, lambda v: anp.cos(v), x)


def _switch(m, x):
    branches = [lambda v: v * 2.0, lambda v: m.tanh(v) * v, lambda v: m.exp(v)]
    if m is np:
        return branches[1](x)
    return ad.switch(1, branches, x)


def _scan(m, x):
    def step(c, xi):
        return c * 0.9 + m.sin(xi), m.sin(c) * xi

    if m is np:
        return _np_scan(step, x[0], x)
    return ad.scan(step, x[0], x)


def _scan_reverse(m, x):
    def step(c, xi):
        return m.tanh(c + xi), c * xi

    if m is np:
        carry, ys = _np_scan(step, x[-1], x[::-1])
        return carry, ys[::-1]
    return ad.scan(step, x[-1], x, reverse=True)


def _fori(m, x):
    def body(i, v):
        return m.tanh(v) * 1.5 + x * i

    if m is np:
        v = x
        for i in range(3):
            v = body(i, v)
        return v
    return ad.fori_loop(0, 3, body, x)


def _jit_call(m, x, y):
    f = (
        (lambda a, b: m.exp(a) * b - m.sin(a * b))
        if m is np
        else ad.jit(lambda a, b: anp.exp(a) * b - anp.sin(a * b))
    )
    return f(x, y) + x


# (its own generator: drawing from optable's shared one would change every later family's values)
_rng = np.random.default_rng(11)


def arr(*shape):
    return _rng.uniform(-2.0, 2.0, size=shape)


def pos(*shape):
    return _rng.uniform(0.5, 2.0, size=shape)


def case(name, f, *args, **kwargs) -> OpCase:
    return OpCase(name, lambda *xs: f(anp, *xs), args, ref=lambda *xs: f(np, *xs), **kwargs)


CASES = [
    case("cond_true", _cond, pos(4)),
    case("cond_false", _cond, -pos(4)),
    case("cond_matrix", _cond, pos(2, 3)),
    case("switch", _switch, arr(3)),
    case("scan", _scan, arr(4)),
    case("scan_rows", _scan, arr(3, 4)),
    case("scan_reverse", _scan_reverse, arr(5)),
    case("fori_loop", _fori, arr(3)),
    case("jit_call", _jit_call, arr(3), arr(3)),
    case("jit_call_broadcast", _jit_call, arr(2, 3), arr(3)),
]


def _map(batch_size):
    def f(m, xs, w):
        def body(x):
            return m.tanh(x * w) * m.sum(x * x)

        if m is np:
            return np.stack([body(x) for x in xs])
        return ad.map(body, xs, batch_size=batch_size)

    return f


CASES += [
    case("map", _map(None), arr(4, 3), arr(3)),
    case("map_batched", _map(3), arr(5, 2), arr(2)),
]
