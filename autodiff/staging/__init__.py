"""Staging and compilation: `jit`, `make_graph`, the Graph IR, its passes and executors.

Imports the transforms (their rules re-stage a staged call); nothing below imports it.
"""
