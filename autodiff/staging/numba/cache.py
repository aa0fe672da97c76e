r"""The disk cache of the Numba code `autodiff.jit` generates: `load(source, names)`.

Numba caches only functions defined in a real file, so the generated module text is written
to one and imported from there. Its key is the SHA-256 of the source text, the Numba options
and the versions of autodiff, Numba, NumPy, llvmlite and Python. On disk:

    <dir>/adjit_<key[:32]>.py                          the source, byte for byte
    <numba>/adjit_<key[:32]>.<function>-<line>.pyXY.nbi  Numba's index of a function's code
    <numba>/adjit_<key[:32]>.<function>-<line>.pyXY.N.nbc  one compiled signature

`<dir>` is `$NUMBA_CACHE_DIR/autodiff-jit` when NUMBA_CACHE_DIR is set, else `jit` in
`autodiff.kernels._numba.user_cache_dir()`. `<numba>` is wherever Numba puts its files: a
directory under NUMBA_CACHE_DIR when that is set, else `__pycache__` beside the module.
A module is imported under its file's name, unique to its key, and stays in `sys.modules`,
where Numba's cached code looks for its globals, until it is evicted (the MAX_MODULES least
recently used are kept). It runs `source` itself rather than the file
read back, so the code that runs is always the code the key describes.

Concurrency: a file's name follows from its content, so every writer of a name writes the
same bytes. Each writes a temporary file of its own in the same directory and renames it over
the name (atomic), so a reader finds no file, an old (perhaps corrupt) one or a complete one,
never part of one. A file that already holds the source is not rewritten: that would change its
mtime, which Numba before 0.68 took for a changed source, forcing a recompile in every other
process. Numba writes its own files the same way, so processes that compile the same
function at once all succeed, and the last rename leaves equivalent code.

Failures fall back rather than fail:
- `<dir>` cannot be made or written to (tested by creating a file in it): a directory of this
  user's own in `tempfile.gettempdir()`; failing that, no disk cache at all: the source runs
  in memory and its functions compile without `cache`.
- Numba finds nowhere to put its files (`njit(cache=True)` raises): no `cache`.
- A module file that does not hold the source (truncated, garbage) is replaced.
- A garbled or truncated .nbi or .nbc file: Numba (0.68) raises the unpickling error from
  every compilation that reads it, in every process, and never replaces it. So each
  dispatcher's cache is wrapped (`_RepairingCache`): such an error deletes the module's Numba
  files and counts as a miss, and Numba compiles and saves new ones. Numba asks its cache only
  when it compiles: the dispatchers returned are Numba's own, and a call costs what any Numba
  call costs.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import platform
import stat
import sys
import tempfile
import threading
import types
import uuid
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from autodiff.kernels._numba import _import_numba, user_cache_dir

# The modules loaded in this process, by key, least recently used first. Beyond MAX_MODULES
# the oldest leaves it and `sys.modules`: its functions live on while something calls them,
# and a later `load` of its source imports it again (Numba then loads from its disk cache).
MAX_MODULES = 256
_modules: dict[str, types.ModuleType] = {}  # (in order of use: the last used last)
_lock = threading.Lock()


def load(
    source: str,
    names: Sequence[str],
    options: Mapping[str, object] = types.MappingProxyType({}),
    inline: Sequence[str] = (),
) -> dict[str, Callable]:
    r"""The functions `names` of the module `source`, each `numba.njit(cache=True, **options)`.

    Each function named is replaced, in the module and in the order given, by its Numba
    dispatcher, so that functions calling one another by name call the compiled versions.
    Nothing compiles here: Numba compiles, or loads from its cache, at the first call. The
    same source and options give the same dispatchers while the module stays loaded (the
    MAX_MODULES least recently used stay).

    Arguments:
        source: a whole module's text, importing what it uses (`import numpy as np`).
        names: the functions to compile.
        options: Numba options, such as `{"fastmath": True}`.
        inline: functions of `names` compiled with `inline="always"` as well (Numba inlines
            them into their callers, where LLVM can vectorize them).

    Returns:
        `{name: dispatcher}`.

    Raises:
        RuntimeError: when Numba cannot be imported.

    Example:
        >>> source = "def double(x):\n    return 2.0 * x\n"
        >>> double = load(source, ["double"])["double"]
        >>> double(1.5)
        3.0
        >>> load(source, ["double"])["double"] is double
        True
    """
    numba = _import_numba()
    if numba is None:
        raise RuntimeError("autodiff.jit's Numba backend needs Numba, which cannot be imported")
    key = _key(source, {**options, "inline ": tuple(inline)} if inline else options, numba)
    with _lock:
        module = _modules.get(key)
        if module is None:
            module = _modules[key] = _import_module(source, f"adjit_{key[:32]}")
            _evict()
        else:
            _modules[key] = _modules.pop(key)
        cache = getattr(module, "__file__", None) is not None
        for name in names:
            function = getattr(module, name)
            if isinstance(function, types.FunctionType):
                opts = {**options, "inline": "always"} if name in inline else options
                setattr(module, name, _njit(numba, function, opts, cache))
        return {name: getattr(module, name) for name in names}


def _evict() -> None:
    """The least recently used modules beyond MAX_MODULES, forgotten (with `_lock` held)."""
    while len(_modules) > MAX_MODULES:
        module = _modules.pop(next(iter(_modules)))
        if sys.modules.get(module.__name__) is module:
            del sys.modules[module.__name__]


def cache_directory() -> str | None:
    """The directory `load` writes modules to, made if missing; None if none can be written.

    Example:
        >>> directory = cache_directory()
        >>> directory is None or os.path.isdir(directory)
        True
    """
    numba_cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    try:
        if numba_cache_dir:
            return _writable_directory(os.path.join(numba_cache_dir, "autodiff-jit"))
        return _writable_directory(os.path.join(user_cache_dir(), "jit"))
    except OSError:
        pass
    try:
        temporary = os.path.join(tempfile.gettempdir(), f"autodiff-jit-{os.getuid()}")
        return _writable_directory(temporary, private=True)
    except OSError:
        return None


def _writable_directory(path: str, private: bool = False) -> str:
    """`path`, made if missing, once a file could be created in it; else raises OSError.

    A `private` directory (in a shared temp dir) must be this user's and writable by no one
    else: whoever made it could otherwise choose the code we import and unpickle.
    """
    os.makedirs(path, mode=0o700 if private else 0o777, exist_ok=True)
    if private:
        status = os.lstat(path)
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid():
            raise PermissionError(f"{path} is not this user's directory")
        if status.st_mode & 0o022:
            raise PermissionError(f"{path} is writable by others")
    # Only creating a file tells: os.access says yes to root whatever the directory.
    with tempfile.TemporaryFile(dir=path):
        pass
    return path


def _key(source: str, options: Mapping[str, object], numba: types.ModuleType) -> str:
    # NUL cannot occur in Python source, so the parts cannot run into one another.
    parts = (source, repr(sorted(options.items())), _versions(numba))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _versions(numba: types.ModuleType) -> str:
    """The versions of everything besides the source that the compiled code depends on."""
    import llvmlite

    return (
        f"autodiff {_autodiff_version()}, numba {numba.__version__}, numpy {np.__version__}, "
        f"llvmlite {llvmlite.__version__}, "
        f"{platform.python_implementation()} {platform.python_version()}"
    )


def _autodiff_version() -> str:
    package = sys.modules.get("autodiff")  # (imported by the time anything compiles)
    version = getattr(package, "__version__", None)
    if version is None:
        import importlib.metadata  # (slow to import: only here)

        try:
            version = importlib.metadata.version("autodiff")
        except importlib.metadata.PackageNotFoundError:
            version = "dev"
    return str(version)


def _import_module(source: str, name: str) -> types.ModuleType:
    """The module `name` running `source`: from a file in `cache_directory()` if possible."""
    directory = cache_directory()
    path = None if directory is None else _publish(os.path.join(directory, name + ".py"), source)
    if path is None:
        module = types.ModuleType(name)
        code = compile(source, f"<autodiff jit {name}>", "exec")
    else:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        code = compile(source, path, "exec")
    sys.modules[name] = module  # where Numba's cached code looks for its globals
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _publish(path: str, source: str) -> str | None:
    """`path`, once the file holds `source` (written atomically unless it already did); None
    if it cannot be written."""
    data = source.encode()
    with contextlib.suppress(OSError), open(path, "rb") as file:
        if file.read() == data:
            return path
    temporary = f"{path}.{uuid.uuid4().hex[:16]}.tmp"
    try:
        try:
            with open(temporary, "xb") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(temporary)
            raise
    except OSError:
        return None
    return path


def _njit(numba: types.ModuleType, function: Callable, options: Mapping[str, object], cache: bool):
    """`numba.njit(cache=cache, **options)(function)`; uncached if Numba has nowhere to cache."""
    if cache:
        try:
            dispatcher = numba.njit(cache=True, **options)(function)
        except RuntimeError:  # "no locator available": no writable place for Numba's files
            pass
        else:
            dispatcher._cache = _RepairingCache(dispatcher._cache, function.__module__)
            return dispatcher
    return numba.njit(**options)(function)


class _RepairingCache:
    """A dispatcher's Numba cache, for which an unreadable file is a miss rather than an error.

    A file that cannot be read (see the module docstring) deletes the module's Numba files,
    so that the compilation that follows saves new ones; a file that cannot be saved costs a
    compilation in the next process rather than this call. All else is Numba's cache.
    """

    def __init__(self, cache, module_name: str):
        self._cache = cache
        self._prefix = module_name + "."  # Numba names its files "<module>.<function>-..."

    def __getattr__(self, name):
        return getattr(self._cache, name)

    def load_overload(self, sig, target_context):
        try:
            return self._cache.load_overload(sig, target_context)
        except Exception:
            self._remove_files()
            return None

    def save_overload(self, sig, data):
        with contextlib.suppress(Exception):
            self._cache.save_overload(sig, data)

    def _remove_files(self) -> None:
        directory = self._cache.cache_path
        with contextlib.suppress(OSError):
            for name in os.listdir(directory):
                if name.startswith(self._prefix) and name.endswith((".nbi", ".nbc")):
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(directory, name))
