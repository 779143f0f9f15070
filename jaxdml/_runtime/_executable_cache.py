"""Executable cache: a second process loads a fit's compiled program without tracing it.

JAX's persistent compilation cache (:mod:`jaxdml.compilation`) is keyed by the lowered program, so
every process traces and lowers each program before it can look it up. This cache sits above it:
:func:`cached_jit` wraps a function like ``jax.jit`` and stores each compiled executable
(``jax.experimental.serialize_executable``) under a key computed *without tracing*, from

* the function (module, qualified name, first line) and everything it closes over or is given as a
  static argument (described recursively; numbers, strings, arrays by content, jaxdml functions by
  name, optimizers made by :func:`jaxdml.solvers.make_optimizer` by name),
* the pytree structure, shapes, dtypes and weak types of the traced arguments,
* JAX's trace context (x64, default matmul precision, dtype promotion, ...), jaxdml's own settings
  read while tracing (memory budget, matmul precision),
* the jax, jaxlib, optax and Python versions, the backend, its version, the device kind and count,
  the process count, the CPU (features XLA compiles for), ``XLA_FLAGS`` and the compiler options,
* a hash of jaxdml's source files.

Anything that cannot be described this way (a user's loss or optimizer, a callback, a mesh, a
committed array) is simply not cached here: the call goes through ``jax.jit`` as usual. An entry
holds the full key description; a missing, unreadable, truncated or corrupt entry, one whose
description differs (hash collision, other versions) or one that fails to deserialize is ignored:
the program is compiled the normal way and the entry replaced. Entries are written to a temporary
file and renamed (readers never see half an entry), writes and evictions hold a file lock, and the
folder is bounded in size (least recently used entries go first).

It is on wherever jaxdml turned its persistent compilation cache on (same opt-out:
``JAXDML_COMPILATION_CACHE=0`` or :func:`jaxdml.compilation.disable_compilation_cache`), in the
``executables`` sub-folder of that cache folder; ``JAXDML_EXECUTABLE_CACHE=0`` or
:func:`jaxdml.config.set_executable_cache` turns this layer off alone.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import stat
import struct
import tempfile
import threading
from collections import OrderedDict

import numpy as np

from ._executable_key import _ENV, Undescribable, _context, _environment, _leaf, add_context, describe, register_name  # noqa: F401
from ._warnings import warn as _warn

__all__ = ["cached_jit", "register_name", "describe", "Undescribable", "stats", "clear_memory",
           "set_enabled", "is_enabled", "cache_dir", "add_context"]

_MAGIC = b"JAXDMLXC"
_FORMAT = 1
_HEADER = struct.Struct("<8sIQ32s")  # magic, format, payload length, sha256 of the payload
_OFF = ("0", "false", "off", "no")
_SUFFIX = ".jxe"

_state = {"enabled": None, "dir": None, "max_bytes": 2 * 1024**3}
_lock = threading.Lock()
_memory: OrderedDict = OrderedDict()  # key -> jax.stages.Compiled, this process
_MEMORY_SIZE = 256
_STATS = {"hits": 0, "misses": 0, "stores": 0, "fallbacks": 0, "uncacheable": 0, "memory_hits": 0}


# --------------------------------------------------------------------------- switch and folder

def set_enabled(on: bool | None) -> None:
    """Turn this layer on or off for the process (``None``: the default, i.e. on wherever jaxdml's
    persistent compilation cache is on and ``JAXDML_EXECUTABLE_CACHE`` is not ``0``)."""
    _state["enabled"] = None if on is None else bool(on)


def is_enabled() -> bool:
    return cache_dir() is not None


def configure(path: str | None, max_bytes: int) -> None:
    """Called by :func:`jaxdml.compilation.enable_compilation_cache` (``path=None``: off)."""
    _state["dir"] = None if path is None else os.path.join(path, "executables")
    _state["max_bytes"] = int(max_bytes)


def cache_dir() -> str | None:
    """The folder in use, or None when this layer is off."""
    if _state["enabled"] is False or _state["dir"] is None:
        return None
    if _state["enabled"] is None and os.environ.get("JAXDML_EXECUTABLE_CACHE", "1").strip().lower() in _OFF:
        return None
    return _state["dir"]  # None once jaxdml.compilation turned the caches off (configure(None, 0))


def stats() -> dict:
    """Counters of this process (for tests and benchmarks)."""
    return dict(_STATS)


def clear_memory() -> None:
    """Forget the executables held in this process (the folder is untouched)."""
    with _lock:
        _memory.clear()


# --------------------------------------------------------------------------- folder

def _entry_path(folder: str, key: str) -> str:
    return os.path.join(folder, key + _SUFFIX)


def _read(folder: str, key: str, description: bytes):
    """The stored ``(payload, in_tree, out_tree)``, or None when missing or not usable."""
    path = _entry_path(folder, key)
    try:
        # non-blocking: opening a named pipe left at an entry's name must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            _warn(f"jaxdml's executable cache: {path} is not a regular file; it is skipped and the program compiled "
                  "afresh.", RuntimeWarning)
            return "bad"
        with os.fdopen(fd, "rb") as fh:
            fd = None
            blob = fh.read()
    except OSError:
        return None
    finally:
        if fd is not None:
            os.close(fd)
    try:
        magic, fmt, length, digest = _HEADER.unpack_from(blob, 0)
        body = blob[_HEADER.size:]
        if magic != _MAGIC or fmt != _FORMAT or length != len(body) or hashlib.sha256(body).digest() != digest:
            return "bad"
        stored, payload, in_tree, out_tree = pickle.loads(body)
        if stored != description:
            return "bad"
    except Exception:
        return "bad"
    try:
        os.utime(path)  # least recently used goes first
    except OSError:
        pass
    return payload, in_tree, out_tree


def _file_lock(folder: str):
    try:
        import filelock

        return filelock.FileLock(os.path.join(folder, ".lock"), timeout=60)
    except Exception:  # pragma: no cover - filelock missing: renames alone keep entries whole
        import contextlib

        return contextlib.nullcontext()


def _write(folder: str, key: str, description: bytes, payload: bytes, in_tree, out_tree) -> bool:
    try:
        body = pickle.dumps((description, payload, in_tree, out_tree), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # a tree node that cannot be pickled: keep it in memory only
        return False
    blob = _HEADER.pack(_MAGIC, _FORMAT, len(body), hashlib.sha256(body).digest()) + body
    try:
        os.makedirs(folder, exist_ok=True)
        with _file_lock(folder):
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=_SUFFIX + ".part")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(blob)
                os.replace(tmp, _entry_path(folder, key))
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            _evict(folder)
    except Exception:
        return False
    return True


def _evict(folder: str) -> None:
    bound = _state["max_bytes"]
    if bound is None or bound <= 0:
        return
    entries = []
    with os.scandir(folder) as it:
        for e in it:
            if e.name.endswith(_SUFFIX):
                try:
                    st = e.stat()
                except OSError:
                    continue
                entries.append((st.st_mtime_ns, st.st_size, e.path))
    total = sum(s for _, s, _ in entries)
    for _, size, path in sorted(entries):
        if total <= bound:
            break
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass


# --------------------------------------------------------------------------- the wrapper

@functools.lru_cache(maxsize=1)
def _prepare_runtime() -> None:
    """What lowering would have set up: CPU LAPACK kernels resolve SciPy's LAPACK functions on the
    first lowering of a linear-algebra operation (a program loaded before that crashes in them)."""
    import jax

    if jax.default_backend() == "cpu":
        from jax._src.lax import linalg

        if hasattr(linalg, "initialize_lapack"):
            linalg.initialize_lapack()
        else:  # jax < 0.9: the same registration, one level down
            from jax._src.lib import lapack

            lapack._lapack.initialize()


_JAX_HITS = {"count": 0, "listening": False}
_FRESH = threading.Lock()


def _count_jax_hits(event, **_):
    if event == "/jax/compilation_cache/cache_hits":
        _JAX_HITS["count"] += 1


def _compile_fresh(lowered):
    """``(compiled, fresh)``: compile ``lowered`` by XLA itself, not from JAX's persistent cache.

    An executable that JAX loaded from its own cache serializes without its compiled kernels (a
    program loaded from such bytes fails with "Function ... not found"), so JAX's cache is bypassed
    for this compile. ``fresh`` is False if that could not be ensured (the entry is then not
    stored)."""
    import jax

    if not _JAX_HITS["listening"]:
        jax.monitoring.register_event_listener(_count_jax_hits)
        _JAX_HITS["listening"] = True
    try:
        from jax._src import compilation_cache as cc

        mutex, saved = cc._cache_initialized_mutex, (cc._cache_checked, cc._cache_used)
    except Exception:  # pragma: no cover - another jax: compile, but do not store
        return lowered.compile(), False
    with _FRESH:
        before = _JAX_HITS["count"]
        with mutex:
            saved = (cc._cache_checked, cc._cache_used)
            cc._cache_checked, cc._cache_used = True, False
        try:
            compiled = lowered.compile()
        finally:
            with mutex:
                cc._cache_checked, cc._cache_used = saved
        return compiled, _JAX_HITS["count"] == before


class _CachedJit:
    def __init__(self, fn, static_argnames, jit_kwargs):
        import jax

        self.fn = fn
        self.static_argnames = tuple(static_argnames)
        self.jit_kwargs = dict(jit_kwargs)
        self.jitted = jax.jit(fn, static_argnames=self.static_argnames or None, **jit_kwargs)
        self._quick = {}  # the same with the quick compile options, per options in effect, made on first use
        self._static = None
        self._static_pos = {}  # position -> name of static parameters that may come positionally
        if self.static_argnames:
            import inspect

            try:
                params = list(inspect.signature(fn).parameters.values())
            except (TypeError, ValueError):
                params = []
            for i, p in enumerate(params):
                if p.name in self.static_argnames and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    self._static_pos[i] = p.name
        functools.update_wrapper(self, fn)

    def lower(self, *args, **kwargs):
        return self._variant(args, kwargs).lower(*args, **kwargs)

    def _options(self, args, kwargs):
        """The quick compile options a call compiles with, as a sorted tuple (:func:`jaxdml._runtime.
        quick_compile_applies`: a small program on a CPU), or None for XLA's defaults (also inside
        another trace: options only go on a top-level jit)."""
        import jax

        from ._device import quick_compile_applies, quick_compile_options

        leaves = jax.tree_util.tree_leaves((args, kwargs))
        if ("compiler_options" in self.jit_kwargs or any(isinstance(x, jax.core.Tracer) for x in leaves)
                or not quick_compile_applies(leaves)):
            return None
        return tuple(sorted(quick_compile_options().items()))

    def _variant(self, args, kwargs):
        """The jitted function a call compiles with (one per set of options, made on first use). The
        cached and the uncached path take the same one, so a result never depends on the cache."""
        import jax

        options = self._options(args, kwargs)
        if options is None:
            return self.jitted
        if options not in self._quick:
            self._quick[options] = jax.jit(self.fn, static_argnames=self.static_argnames or None,
                                           compiler_options=dict(options), **self.jit_kwargs)
        return self._quick[options]

    def _call(self, jitted, args, kwargs):
        """Call through ``jax.jit`` (which traces and compiles on a shape's first call: the
        collector is paused, :func:`jaxdml._runtime._device.paused_gc`)."""
        from ._device import call_quick, paused_gc

        with paused_gc():
            if jitted is self.jitted:
                return jitted(*args, **kwargs)
            return call_quick(jitted, self.jitted, *args, **kwargs)

    def _function_key(self):
        if self._static is None:
            try:
                self._static = ("ok", describe(self.fn), describe(self.jit_kwargs))
            except Undescribable as exc:
                self._static = ("no", str(exc))
        if self._static[0] != "ok":
            raise Undescribable(self._static[1])
        return self._static[1:]

    def key(self, args, kwargs):
        """``(hex key, description bytes, dynamic args, dynamic kwargs)``; raises
        :class:`Undescribable`."""
        import jax

        options = self._options(args, kwargs)
        static = {k: kwargs[k] for k in self.static_argnames if k in kwargs}
        dynamic = {k: v for k, v in kwargs.items() if k not in static}
        if self._static_pos:
            static.update({self._static_pos[i]: a for i, a in enumerate(args) if i in self._static_pos})
            args = tuple(a for i, a in enumerate(args) if i not in self._static_pos)
        leaves, tree = jax.tree_util.tree_flatten((args, dynamic))
        if "env" not in _ENV:
            _ENV["env"] = _environment()
        parts = (_FORMAT, self._function_key(), describe(static), str(tree), tuple(_leaf(x) for x in leaves),
                 _context(), _ENV["env"], ("compiler_options", options))
        text = repr(parts).encode()
        return hashlib.sha256(text).hexdigest(), text, args, dynamic

    def __call__(self, *args, **kwargs):
        folder = cache_dir()
        if folder is None:
            return self._call(self._variant(args, kwargs), args, kwargs)
        try:
            key, description, dyn_args, dynamic = self.key(args, kwargs)
        except Undescribable:
            _STATS["uncacheable"] += 1
            return self._call(self._variant(args, kwargs), args, kwargs)
        compiled = _memory.get(key)
        if compiled is not None:
            _STATS["memory_hits"] += 1
            with _lock:
                _memory.move_to_end(key)
            return compiled(*dyn_args, **dynamic)
        compiled = self._load(folder, key, description)
        if compiled is not None:
            try:
                out = compiled(*dyn_args, **dynamic)
            except (TypeError, ValueError):  # the loaded program does not take these arguments
                _STATS["fallbacks"] += 1
                compiled = None
            else:
                self._remember(key, compiled)
                return out
        from ._device import paused_gc

        try:
            with paused_gc():  # tracing and compiling: no collector passes over the whole heap
                compiled, fresh = _compile_fresh(self.lower(*args, **kwargs))
                if fresh:
                    self._store(folder, key, description, compiled)
        except Exception as exc:  # a jaxlib without one of the quick options: XLA's defaults
            if "compile option" not in str(exc) or self._options(args, kwargs) is None:
                raise
            from ._device import _QUICK

            _QUICK["known"] = False
            return self(*args, **kwargs)
        self._remember(key, compiled)
        return compiled(*dyn_args, **dynamic)

    @staticmethod
    def _remember(key, compiled):
        with _lock:
            _memory[key] = compiled
            while len(_memory) > _MEMORY_SIZE:
                _memory.popitem(last=False)

    @staticmethod
    def _load(folder, key, description):
        entry = _read(folder, key, description)
        if entry is None:
            _STATS["misses"] += 1
            return None
        if entry == "bad":
            _STATS["fallbacks"] += 1
            return None
        from jax.experimental.serialize_executable import deserialize_and_load

        payload, in_tree, out_tree = entry
        try:
            _prepare_runtime()
            # the cached programs run on one device (arguments on several are never cached): load onto the
            # default device, not onto every local device (a process with several would expect as many shards)
            compiled = deserialize_and_load(payload, in_tree, out_tree, execution_devices=[_default_device()])
        except Exception:
            _STATS["fallbacks"] += 1
            return None
        _STATS["hits"] += 1
        return compiled

    @staticmethod
    def _store(folder, key, description, compiled):
        from jax.experimental.serialize_executable import serialize

        try:
            payload, in_tree, out_tree = serialize(compiled)
        except Exception:  # e.g. host callbacks: not serializable
            return
        if _write(folder, key, description, payload, in_tree, out_tree):
            _STATS["stores"] += 1



def _default_device():
    """The device uncommitted arrays live on (``jax_default_device`` when set, else the first device)."""
    import jax

    dev = jax.config.jax_default_device
    if dev is None:
        return jax.devices()[0]
    return jax.devices(dev)[0] if isinstance(dev, str) else dev  # a platform name, or a device

def cached_jit(fn=None, *, static_argnames=(), **jit_kwargs):
    """``jax.jit(fn, static_argnames=..., **jit_kwargs)`` whose compiled executables also go to the
    executable cache (see the module docstring). Usable as a decorator, with or without arguments."""
    if fn is None:
        return functools.partial(cached_jit, static_argnames=static_argnames, **jit_kwargs)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    return _CachedJit(fn, static_argnames, jit_kwargs)
