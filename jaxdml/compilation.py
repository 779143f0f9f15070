"""Persistent XLA compilation cache (opt-in; the CLI turns it on)."""

from __future__ import annotations

import os

__all__ = ["enable_compilation_cache", "default_cache_dir"]


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))
    return os.path.join(base, "jaxdml", "xla")


def enable_compilation_cache(path: str | None = None) -> str:
    """Store compiled executables on disk so that a new process does not recompile.

    Uses JAX's own persistent cache (``jax_compilation_cache_dir``); every compilation is cached
    (no minimum compile time / entry size). Returns the directory used.
    """
    import jax

    path = path or os.environ.get("JAXDML_CACHE_DIR") or default_cache_dir()
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
