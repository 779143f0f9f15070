"""Persistent XLA compilation cache: compile once per machine, not once per process.

jaxdml turns JAX's own persistent cache on at the start of the first fit of a process, so a second
Python process on the same machine loads the compiled programs instead of compiling them again.
The cache lives under the user's cache folder (``$XDG_CACHE_HOME/jaxdml/xla``, by default
``~/.cache/jaxdml/xla``; ``JAXDML_CACHE_DIR`` moves it), is bounded in size (least recently used
entries are evicted beyond :data:`DEFAULT_MAX_BYTES`) and every read and write holds a file lock,
so concurrent processes never see a half-written entry.

Turning it off: ``JAXDML_COMPILATION_CACHE=0`` in the environment, or
:func:`disable_compilation_cache` before the first fit. It stays off in multi-process
(``jax.distributed``) runs, whose executables must not be loaded by a single-process run. A cache
directory the user configured in JAX itself (``jax_compilation_cache_dir``) is respected and left
alone.

(It was opt-in for a while: a long test session aborted inside XLA while the cache was on. A later
crash with the cache off showed the cause: one process holding every compiled program of the
suite exhausted the kernel's memory-map limit, which the test configuration now prevents. With the
cache on in fresh folders the suite ran without a crash, holding at most ~19 000 of the 65 530
memory maps.)
"""

from __future__ import annotations

import os
from ._runtime import _executable_cache
from ._runtime._warnings import warn as _warn

__all__ = [
    "enable_compilation_cache",
    "disable_compilation_cache",
    "ensure_default_cache",
    "opted_out_by_environment",
    "default_cache_dir",
    "DEFAULT_MAX_BYTES",
]

#: size bound of the default cache (least recently used entries are evicted beyond it)
DEFAULT_MAX_BYTES = 2 * 1024**3

_OFF = ("0", "false", "off", "no")
_state = {"decided": False, "disabled": False}


def default_cache_dir() -> str:
    """``$JAXDML_CACHE_DIR``, else ``$XDG_CACHE_HOME/jaxdml/xla`` (``~/.cache/jaxdml/xla``)."""
    if os.environ.get("JAXDML_CACHE_DIR"):
        return os.environ["JAXDML_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxdml", "xla")


def enable_compilation_cache(path: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Store compiled executables on disk so that a new process does not recompile.

    Uses JAX's persistent cache (``jax_compilation_cache_dir``); every compilation is cached (no
    minimum compile time or entry size). With ``max_bytes > 0`` the cache is bounded and its reads
    and writes are serialised by a file lock (safe under concurrent processes).

    Parameters
    ----------
    path : str, optional
        Cache folder; default :func:`default_cache_dir`.
    max_bytes : int, default=2 GiB
        Size bound; ``-1`` for none (then JAX takes no lock).

    Returns
    -------
    str
        The folder used.
    """
    import jax

    path = path or default_cache_dir()
    os.makedirs(path, exist_ok=True)
    if max_bytes > 0:
        _add_missing_access_times(path)
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_max_size", int(max_bytes))
    _executable_cache.configure(path, max_bytes)
    _state.update(decided=True, disabled=False)
    return path


def _add_missing_access_times(path: str) -> None:
    """Give every entry an access-time record.

    A bounded cache evicts by the ``<key>-atime`` file next to each ``<key>-cache``; an entry written
    without one (by a process that used the folder with no size bound) would make every later
    write fail, so the missing records are added (as "used now").
    """
    import time

    try:
        names = set(os.listdir(path))
    except OSError:
        return
    stamp = time.time_ns().to_bytes(8, "little")
    for name in names:
        if name.endswith("-cache") and name[: -len("-cache")] + "-atime" not in names:
            try:
                with open(os.path.join(path, name[: -len("-cache")] + "-atime"), "xb") as fh:
                    fh.write(stamp)
            except OSError:
                pass  # another process added it, or the folder is read-only: nothing to repair


def disable_compilation_cache() -> None:
    """Turn the persistent cache off for this process (also stops the default from turning it on)."""
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    _executable_cache.configure(None, 0)
    _state.update(decided=True, disabled=True)


def opted_out_by_environment() -> bool:
    """Whether ``JAXDML_COMPILATION_CACHE`` turns the cache off (``0``, ``false``, ``off`` or ``no``)."""
    return os.environ.get("JAXDML_COMPILATION_CACHE", "1").strip().lower() in _OFF


def ensure_default_cache() -> None:
    """Turn the default cache on once per process (called by every fit).

    Does nothing when the user opted out (``JAXDML_COMPILATION_CACHE=0``, or
    :func:`disable_compilation_cache`), already chose a cache in JAX, runs several processes with
    ``jax.distributed`` (their executables must not be shared with single-process runs), or the
    folder cannot be created (then a warning says so and fits run without the cache).
    """
    if _state["decided"]:
        return
    _state["decided"] = True
    if opted_out_by_environment():
        return
    import jax

    if jax.config.jax_compilation_cache_dir:  # the user's own JAX setting wins
        return
    if jax.process_count() > 1:
        # executables compiled by a multi-process (jax.distributed) client must not be loaded by a
        # single-process one: the default cache stays off there (enable it explicitly if wanted)
        return
    try:
        enable_compilation_cache()
    except OSError as exc:
        _warn(
            f"jaxdml: cannot create the compilation cache folder ({exc}); compiling without a "
            "persistent cache. Set JAXDML_CACHE_DIR to a writable folder, or "
            "JAXDML_COMPILATION_CACHE=0 to silence this.", RuntimeWarning
        )
