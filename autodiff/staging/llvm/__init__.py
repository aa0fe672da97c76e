"""The LLVM backend of jit: generated segment code compiled by LLVM directly (llvmlite)."""
