"""The Numba backend of `autodiff.jit`: generated Python source compiled with Numba."""
