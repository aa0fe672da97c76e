"""torch's random state: `Generator`, the default generator, seeding and the RNG state."""

from __future__ import annotations

import builtins
import operator
import threading
from typing import Any

import numpy as np

from autodiff.torch.types import CPU, check_device, device


class Generator:
    """`torch.Generator`: a seeded random stream, safe to share between threads.

    Every random factory (`rand`, `randn`, `randint`, `randperm`, `*_like`, `normal_`,
    `uniform_`, ...) draws from `default_generator` unless given `generator=`. The draws
    are NumPy's PCG64 stream, not torch's: a seed reproduces autodiff's numbers, not
    torch's.

    Example:
        >>> g = Generator().manual_seed(0)
        >>> a = g.random((2,)); g.manual_seed(0) is g, bool((g.random((2,)) == a).all())
        (True, True)
    """

    _DEFAULT_SEED = 67280421310721  # (torch's default generator's initial seed)

    def __init__(self, device: str | device = "cpu") -> None:
        check_device(device)
        self.device = CPU
        self._lock = threading.Lock()
        self._seed = self._DEFAULT_SEED
        self._stream: np.random.Generator | None = None

    @property
    def _rng(self) -> np.random.Generator:
        """The NumPy stream, seeded with `_seed` at its first use (read under the lock): the
        default generator is made at `import autodiff`, which need not import numpy.random."""
        if self._stream is None:
            self._stream = np.random.Generator(np.random.PCG64(self._seed & 0xFFFFFFFFFFFFFFFF))
        return self._stream

    def manual_seed(self, seed) -> Generator:
        """Seed this generator; returns it."""
        seed = operator.index(seed)
        with self._lock:
            self._seed = seed
            self._stream = None
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        seed = builtins.int(np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self) -> dict:
        with self._lock:
            return dict(self._rng.bit_generator.state)

    def set_state(self, state: dict) -> Generator:
        with self._lock:
            self._rng.bit_generator.state = state
        return self

    # The draws (each under the lock: one stream, any number of threads).
    def random(self, shape) -> np.ndarray:
        with self._lock:
            return self._rng.random(shape)

    def standard_normal(self, shape) -> np.ndarray:
        with self._lock:
            return self._rng.standard_normal(shape)

    def integers(self, low, high, shape) -> np.ndarray:
        with self._lock:
            return self._rng.integers(low, high, shape)

    def permutation(self, n: int) -> np.ndarray:
        with self._lock:
            return self._rng.permutation(n)

    def exponential(self, shape) -> np.ndarray:
        with self._lock:
            return self._rng.standard_exponential(shape)

    def __repr__(self) -> str:
        return f"<autodiff.Generator seed={self._seed}>"


default_generator = Generator()
_staged_draws = threading.local()  # (autodiff.compile's source of staged draws: `feed`)


def staged_uniform(shape: tuple) -> Any:
    """Uniform [0, 1) samples of the default generator's stream as `autodiff.compile` stages
    them (a staged value, drawn before each compiled call in the order eager draws), or None
    when not staging a compiled call: then draw as usual."""
    feed = getattr(_staged_draws, "feed", None)
    return None if feed is None else feed(tuple(shape))


def rng(generator) -> Any:
    """The stream to draw from: `generator` (a Generator or a NumPy Generator) or the
    default one."""
    if generator is None:
        return default_generator
    if isinstance(generator, (Generator, np.random.Generator)):
        return generator
    raise TypeError(f"generator must be an autodiff.Generator, got {type(generator).__name__}")


def _normal(gen, shape) -> np.ndarray:
    return gen.standard_normal(shape)


def _uniform(gen, shape) -> np.ndarray:
    return gen.random(shape)


def _integers(gen, low, high, shape) -> np.ndarray:
    return gen.integers(low, high, shape)


# ---- random state ----


def manual_seed(seed) -> Generator:
    """`torch.manual_seed(seed)`: seed the default generator that every random factory uses
    (process-wide, as torch's; draws are thread-safe). Returns it.

    Example:
        >>> import autodiff as torch
        >>> a = torch.manual_seed(0) and torch.rand(3)
        >>> b = torch.manual_seed(0) and torch.rand(3)
        >>> bool((a == b).all())
        True
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    """`torch.seed()`: seed the default generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """`torch.initial_seed()`: the default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state() -> dict:
    """`torch.get_rng_state()`: the default generator's state (a dict here)."""
    return default_generator.get_state()


def set_rng_state(new_state: dict) -> None:
    """`torch.set_rng_state(state)`: restore a state `get_rng_state` returned."""
    default_generator.set_state(new_state)
