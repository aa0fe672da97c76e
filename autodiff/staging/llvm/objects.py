"""The disk cache of the LLVM backend's object code: `load(ir)`, `save(ir, code)`.

A module's object code is kept in `<dir>/llvm_<key[:32]>.o`, where `<dir>` is the directory
of the Numba backend's cache (`cache.cache_directory()`: under NUMBA_CACHE_DIR when set,
else the user's cache directory) and the key is the SHA-256 of the IR text, the host
(llvmlite's version, target triple, CPU name and features: `engine.host()`) and autodiff's
version. The file holds the key and the SHA-256 of the code before the code: a file whose
code does not match (truncated, garbage) is a miss and is replaced (LLVM crashes loading
damaged object code rather than failing). A file is written to a temporary name and renamed
over its own (atomic: a reader finds no file or a complete one). A file that cannot be read
or written is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid

from autodiff.staging.llvm import engine
from autodiff.staging.numba.cache import _autodiff_version, cache_directory

_MAGIC = b"ADLLVM1\0"  # (then the key again, so a file is checked against its name)


def _path(ir: str) -> tuple[str | None, bytes]:
    parts = (ir, engine.host(), _autodiff_version())
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    directory = cache_directory()
    if directory is None:
        return None, b""
    return os.path.join(directory, f"llvm_{key[:32]}.o"), _MAGIC + key.encode()


def load(ir: str) -> bytes | None:
    """The cached object code of module `ir`, or None."""
    path, tag = _path(ir)
    if path is None:
        return None
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        return None
    digest, code = data[len(tag) : len(tag) + 32], data[len(tag) + 32 :]
    if not data.startswith(tag) or hashlib.sha256(code).digest() != digest:
        return None  # (LLVM would crash loading a damaged file, not fail)
    return code


def save(ir: str, code: bytes) -> None:
    """Keep `code`, the object code of module `ir` (silently not, if it cannot be written)."""
    path, tag = _path(ir)
    if path is None:
        return
    temporary = f"{path}.{uuid.uuid4().hex[:16]}.tmp"
    try:
        with open(temporary, "xb") as file:
            file.write(tag + hashlib.sha256(code).digest() + code)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(temporary)


__all__ = ["load", "save"]
