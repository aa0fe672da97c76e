"""`jax._src`: only test_util has a file; the other modules are placeholders (jax/_stubs.py)."""
