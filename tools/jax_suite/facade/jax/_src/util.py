"""`jax._src.util`: the list helpers JAX's tests use."""

from jax._stubs import Missing


def split_list(args, ns):
    args, out = list(args), []
    for n in ns:
        out.append(args[:n])
        args = args[n:]
    return out + [args]


def unzip2(pairs):
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)


def __getattr__(name):
    return Missing(f"jax._src.util.{name}")
