"""Op table: array creation from endpoints (linspace, logspace, geomspace), differentiable in
the endpoints (and logspace's base).

Each case is written once as `f(m, *arrays)` and run with the autodiff functions and with
numpy for the reference; outputs are squared (linspace is linear in its endpoints). Counts,
axes and flags live in the closures; endpoints broadcast, as NumPy's do.
"""

from functools import partial

import numpy as np
import optable
from optable import dispatched_case, squared_case

case = squared_case
# Its own generator: the shared stream of random arguments, read by the files after this
# one, stays as it was.
_rng = np.random.default_rng(28)
arr = partial(optable.arr, rng=_rng)
pos = partial(optable.pos, rng=_rng)


CASES = [
    case("linspace", lambda m, a, b: m.linspace(a, b, 5), arr(), arr()),
    case("linspace_no_endpoint", lambda m, a, b: m.linspace(a, b, 4, endpoint=False), arr(), arr()),
    case("linspace_one", lambda m, a, b: m.linspace(a, b, 1), arr(3), arr()),
    case("linspace_two", lambda m, a, b: m.linspace(a, b, 2, endpoint=False), arr(), arr(3)),
    case("linspace_broadcast", lambda m, a, b: m.linspace(a, b, 4), arr(2, 1), arr(3)),
    case("linspace_axis-1", lambda m, a, b: m.linspace(a, b, 3, axis=-1), arr(2, 1), arr(3)),
    case("linspace_axis1", lambda m, a, b: m.linspace(a, b, 3, axis=1), arr(2, 3), arr(3)),
    case("linspace_retstep", lambda m, a, b: m.linspace(a, b, 4, retstep=True), arr(2), arr()),
    case("logspace", lambda m, a, b: m.logspace(a, b, 4), arr(low=-1, high=1), arr(3, high=1)),
    case(
        "logspace_base", lambda m, a, b: m.logspace(a, b, 3, base=2.0, endpoint=False), arr(), arr()
    ),
    case(
        "logspace_array_base",
        lambda m, a, b, base: m.logspace(a, b, 3, base=base, axis=-1),
        arr(low=-1, high=1),
        arr(2, 1, low=-1, high=1),
        pos(3),
    ),
    case("geomspace", lambda m, a, b: m.geomspace(a, b, 4), pos(), pos(3, low=2.0, high=4.0)),
    case("geomspace_negative", lambda m, a, b: m.geomspace(-a, -b, 3), pos(2), pos()),
    case(
        "geomspace_no_endpoint_axis",
        lambda m, a, b: m.geomspace(a, b, 3, endpoint=False, axis=-1),
        pos(2, 1),
        pos(3),
    ),
    dispatched_case("np.linspace", lambda a, b: np.linspace(a, b, 5, axis=-1), arr(3), arr()),
    dispatched_case("np.logspace", lambda a, b: np.logspace(a, b, 3), arr(), arr(2)),
    dispatched_case("np.geomspace", lambda a, b: np.geomspace(a, b, 3), pos(2), pos()),
]
