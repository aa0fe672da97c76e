"""Structured control flow: cond, switch, while_loop, fori_loop, scan (JAX's lax signatures).

Outside every transform they run as Python runs them. Inside one (or `jit`), each is one
primitive whose branches and bodies are staged graphs (autodiff/staging/), so that it is one
equation of a staged graph and every transform applies to it:

- `cond_p` (cond and switch): forward mode through the chosen branch; reverse mode through
  the chosen branch's pullback; under vmap with a batched index, every branch runs and a
  select picks each member's result.
- `while_p`: forward mode (the tangents loop along); reverse mode raises, as in JAX (the
  trip count is dynamic: use scan or a fori_loop with static bounds); under vmap, the loop
  runs until every member is done, finished members unchanged.
- `scan_p` (scan, and fori_loop with static bounds): forward mode; reverse mode saves the
  residuals of each iteration, stacked, and runs the body's backward graph in reverse
  (`checkpoint` inside a body keeps only its inputs instead); vmap.

Values a branch or body closes over (an enclosing transform's tracers) become operands of
the primitive, so derivatives flow to them too.

`associative_scan` is no primitive: log2(n) calls of its function on slices.
"""

from autodiff.control.associative import associative_scan
from autodiff.control.branches import cond, cond_p, switch
from autodiff.control.scans import fori_loop, map, scan, scan_p
from autodiff.control.whiles import while_loop, while_p

__all__ = [
    "associative_scan",
    "cond",
    "cond_p",
    "fori_loop",
    "map",
    "scan",
    "scan_p",
    "switch",
    "while_loop",
    "while_p",
]
