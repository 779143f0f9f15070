"""The executable cache's key: a description of a call computed without tracing it.

Functions by module, qualified name and first line plus what they close over; static values
recursively; traced arguments by shape, dtype and weak type; JAX's trace context and the settings
that layers above register with :func:`add_context` (jaxdml.config registers the memory budget and
the matmul precision); the versions, backend, devices, CPU and ``XLA_FLAGS`` of the process; a hash
of jaxdml's source. :mod:`jaxdml._runtime._executable_cache` stores and loads programs under it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import sys
import types

import numpy as np

__all__ = ["Undescribable", "describe", "register_name", "add_context"]

_names: dict = {}  # id(obj) -> (obj, name): objects described by a registered name
_CONTEXT_PROVIDERS: list = []  # callables returning a hashable value read while tracing
_ENV: dict = {}


class Undescribable(Exception):
    """An object the key cannot describe: the call is not cached (it goes through ``jax.jit``)."""


def add_context(provider) -> None:
    """Add ``provider()`` (a value read while tracing, e.g. a setting of a layer above) to every key."""
    if provider not in _CONTEXT_PROVIDERS:
        _CONTEXT_PROVIDERS.append(provider)


def register_name(obj, name: str):
    """Describe ``obj`` (e.g. a cached default optimizer) by ``name`` in keys; returns ``obj``."""
    _names[id(obj)] = (obj, str(name))
    return obj


# --------------------------------------------------------------------------- key

def _fn_name(fn) -> str:
    code = getattr(fn, "__code__", None)
    line = code.co_firstlineno if code is not None else -1
    return f"{fn.__module__}.{fn.__qualname__}@{line}"


def describe(obj, _depth: int = 0):
    """A deterministic, hashable-by-repr description of a static value; raises
    :class:`Undescribable` for anything whose behaviour the description would not pin down."""
    if _depth > 40:
        raise Undescribable("too deep")
    d = _depth + 1
    hit = _names.get(id(obj))
    if hit is not None and hit[0] is obj:
        return ("name", hit[1])
    if obj is None or isinstance(obj, (bool, str, bytes)):
        return (type(obj).__name__, obj)
    if isinstance(obj, (int, np.integer)):
        return ("int", type(obj).__name__, int(obj))
    if isinstance(obj, (float, np.floating)):
        return ("float", type(obj).__name__, float(obj).hex())
    if isinstance(obj, complex):
        return ("complex", obj.real.hex(), obj.imag.hex())
    if isinstance(obj, np.dtype):
        return ("dtype", obj.str)
    if isinstance(obj, type) and isinstance(obj, type) and obj.__module__ in ("builtins", "numpy"):
        return ("type", obj.__module__, obj.__qualname__)
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.shape, hashlib.sha256(np.ascontiguousarray(obj).tobytes()).hexdigest())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # NamedTuple
        return ("namedtuple", type(obj).__module__, type(obj).__qualname__,
                tuple(describe(v, d) for v in obj))
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__, tuple(describe(v, d) for v in obj))
    if isinstance(obj, (dict, types.MappingProxyType)):
        items = [(describe(k, d), describe(v, d)) for k, v in obj.items()]
        return ("dict", tuple(sorted(items, key=repr)))
    if isinstance(obj, (set, frozenset)):
        return ("set", tuple(sorted((describe(v, d) for v in obj), key=repr)))
    if isinstance(obj, functools.partial):
        return ("partial", describe(obj.func, d), describe(obj.args, d), describe(obj.keywords or {}, d))
    if isinstance(obj, types.FunctionType):
        module = obj.__module__ or ""
        if not (module == "jaxdml" or module.startswith("jaxdml.")):
            raise Undescribable(f"function {obj!r} outside jaxdml")
        cells = tuple(describe(c.cell_contents, d) for c in (obj.__closure__ or ()))
        return ("fn", _fn_name(obj), cells, describe(obj.__defaults__, d), describe(obj.__kwdefaults__ or {}, d))
    if isinstance(obj, types.BuiltinFunctionType) or type(obj).__name__ == "PjitFunction":
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None:
            return ("jit", describe(wrapped, d))
        module = getattr(obj, "__module__", "") or ""
        if module.startswith(("jax", "numpy", "math")):
            return ("builtin", module, obj.__qualname__)
        raise Undescribable(f"{obj!r}")
    if isinstance(obj, types.ModuleType):
        return ("module", obj.__name__)
    raise Undescribable(f"{type(obj).__module__}.{type(obj).__qualname__}")


@functools.lru_cache(maxsize=1)
def _source_hash() -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the whole jaxdml package
    h = hashlib.sha256()
    for base, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(base, name)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as fh:
                    h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _cpu() -> str:
    """The processor XLA compiles for: model and feature flags (``/proc/cpuinfo`` on Linux)."""
    info = [platform.machine()]
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key = line.split(":", 1)[0].strip()
                if key in ("model name", "flags", "Features", "CPU implementer", "CPU part", "vendor_id"):
                    info.append(line.strip())
                if not line.strip():  # the first processor is enough
                    break
    except OSError:  # no /proc: the platform's own name (on Linux it runs a subprocess, so only here)
        info.append(platform.processor())
    return hashlib.sha256("\n".join(info).encode()).hexdigest()


def _environment():
    """What the process compiles for (fixed once the backend started)."""
    import jax
    import jaxlib
    import optax

    dev = jax.devices()[0]
    return (
        ("jax", jax.__version__), ("jaxlib", jaxlib.__version__), ("optax", optax.__version__),
        ("numpy", np.__version__), ("python", sys.version),
        ("backend", dev.platform, dev.client.platform_version, dev.device_kind, jax.device_count(),
         jax.local_device_count(), jax.process_count(), dev.id),
        ("cpu", _cpu()),
        ("xla_flags", os.environ.get("XLA_FLAGS", ""), os.environ.get("LIBTPU_INIT_ARGS", "")),
        ("source", _source_hash()),
    )


def _context():
    """What tracing reads besides the arguments: JAX's trace context and jaxdml's settings."""
    from jax._src import config as jcfg

    try:
        names = jcfg.trace_context_names()
    except Exception:  # pragma: no cover - older jax: positional values only
        names = None
    values = jcfg.trace_context()
    out = []
    for i, v in enumerate(values):
        name = names[i] if names is not None and i < len(names) else str(i)
        if type(v).__name__ == "AxisEnv":
            v = (v.axis_sizes, v.spmd_axis_names, v.explicit_mesh_axis_names)
            if any(v):
                raise Undescribable("inside a named-axis context")
        elif v is not None and not isinstance(v, (bool, int, float, str, tuple)) and not hasattr(v, "value"):
            if name.endswith("context_manager") and not v:
                v = ()
            else:
                raise Undescribable(f"trace context {name}={v!r}")
        if isinstance(v, tuple) and v and (names is None or name.endswith("context_manager")):
            # a named axis or a mesh (jax < 0.9 gives no names: its axis environment is a tuple of
            # (name, size) pairs, so any non-empty tuple counts)
            raise Undescribable(f"inside {name}")
        out.append((name, repr(v)))
    return tuple(out), tuple(provider() for provider in _CONTEXT_PROVIDERS)


def _leaf(x):
    """Shape, dtype and weak type of a traced argument."""
    import jax

    if isinstance(x, jax.core.Tracer):
        raise Undescribable("called inside a trace")
    if isinstance(x, jax.Array):
        if getattr(x, "committed", False) or len(x.sharding.device_set) != 1:
            raise Undescribable("an array placed on a chosen device")
        return ("a", x.shape, str(x.dtype), bool(getattr(x, "weak_type", False)))  # typed PRNG keys have none
    if isinstance(x, (np.ndarray, np.generic)):
        return ("a", x.shape, str(x.dtype), False)
    if isinstance(x, (bool, int, float, complex)):
        from jax._src.core import shaped_abstractify

        a = shaped_abstractify(x)
        return ("a", a.shape, str(a.dtype), bool(a.weak_type))
    raise Undescribable(f"argument of type {type(x).__name__}")
