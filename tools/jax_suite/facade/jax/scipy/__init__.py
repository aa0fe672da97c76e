"""`jax.scipy`: autodiff.scipy's namespaces."""

from autodiff.scipy import integrate, linalg, optimize, signal, special, stats

__all__ = ["integrate", "linalg", "optimize", "signal", "special", "stats"]
