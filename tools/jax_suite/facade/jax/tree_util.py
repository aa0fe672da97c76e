"""`jax.tree_util`: autodiff.tree_util."""

from autodiff.tree_util import *  # noqa: F403
