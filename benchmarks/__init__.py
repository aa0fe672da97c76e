"""Benchmark suite: autodiff against HIPS autograd, torch and jax, one process per framework.

Run `python -m benchmarks --help`; see benchmarks/README.md.
"""
