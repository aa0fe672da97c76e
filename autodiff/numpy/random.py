"""`import autodiff.numpy.random` (HIPS autograd's `autograd.numpy.random`): NumPy's functions.

Random draws are constants to every transform, so autodiff wraps nothing here: every name
is numpy.random's own object (`RandomState`, `default_rng`, `randn`, ...). Loaded on first
use (`anp.random` or this import): numpy.random's own import is slow.

Example:
    >>> import numpy as np
    >>> import autodiff.numpy.random as npr
    >>> npr.RandomState is np.random.RandomState
    True
"""

import numpy.random as _random
from numpy.random import *  # noqa: F403 (numpy.random's public names, unwrapped)
from numpy.random import __all__  # noqa: F401


def __getattr__(name: str):
    return getattr(_random, name)
