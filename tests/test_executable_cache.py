"""The executable cache (jaxdml._runtime._executable_cache): keys computed without tracing, fallbacks on
every kind of bad entry, results identical with and without it."""

import hashlib
import os
import pickle
import subprocess
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdml
from jaxdml._runtime import _executable_cache as xc
from jaxdml import config


def _affine(x, w, *, n=2):
    """A small program to cache (a module-level test function, described by a registered name)."""
    for _ in range(n):
        x = jnp.tanh(x @ w)
    return x.sum(axis=0), x


xc.register_name(_affine, "tests._affine")


@pytest.fixture
def folder(tmp_path):
    """A private cache folder, on for the test; the process's own setting is restored."""
    saved = dict(xc._state)
    xc.configure(str(tmp_path), 1 << 30)
    xc.set_enabled(True)
    xc.clear_memory()
    yield tmp_path / "executables"
    xc._state.update(saved)
    xc.clear_memory()


def _args(n=5, d=3, dtype=np.float32):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, d)).astype(dtype), rng.standard_normal((d, d)).astype(dtype)


def _key(f, *args, **kw):
    return f.key(args, kw)[0]


def _without_cache(*args, **kw):
    """``_affine`` as a call with this layer off runs it: the reference of "the same with and
    without the cache" (compiled with the same options, jaxdml._runtime._device.quick_compile_applies)."""
    saved = xc._state["enabled"]
    xc.set_enabled(False)
    try:
        return xc.cached_jit(_affine, static_argnames=("n",))(*args, **kw)
    finally:
        xc._state["enabled"] = saved


# --------------------------------------------------------------------------- keys

def test_static_argument_changes_key():
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    assert _key(f, X, W, n=2) != _key(f, X, W, n=3)
    assert _key(f, X, W, n=2) == _key(f, X, W, n=2)


def test_shape_dtype_and_weak_type_change_key():
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    base = _key(f, X, W)
    assert _key(f, *_args(n=6)) != base  # padded shape
    assert _key(f, *_args(dtype=np.float16)) != base  # dtype
    g = xc.cached_jit(lambda x, s: x * s)
    xc.register_name(g.fn, "tests.scale")
    assert _key(g, X, 2.0) != _key(g, X, np.float32(2.0))  # a weakly typed Python scalar
    assert _key(g, X, (X, X)) != _key(g, X, [X, X])  # pytree structure


def test_method_record_and_settings_change_key():
    """The runner of minimize: the loss, the optimizer, the projection and every static setting."""
    from jaxdml.losses import lmnn, nca
    from jaxdml.projections import projection_psd
    from jaxdml.solvers._driver import _runner, make_optimizer

    lb, adam = make_optimizer("lbfgs"), make_optimizer("adam")
    base = _runner(nca, lb, None, 100, 2, (), 0)
    variants = [_runner(lmnn, lb, None, 100, 2, (), 0), _runner(nca, adam, None, 100, 2, (), 0),
                _runner(nca, lb, projection_psd, 100, 2, (), 0), _runner(nca, lb, None, 101, 2, (), 0),
                _runner(nca, lb, None, 100, 3, (), 0), _runner(nca, lb, None, 100, 2, (("k", 3),), 0)]
    keys = {base._function_key()} | {v._function_key() for v in variants}
    assert len(keys) == 1 + len(variants)
    assert _runner(nca, make_optimizer("lbfgs"), None, 100, 2, (), 0)._function_key() == base._function_key()


def test_foreign_objects_are_not_cached():
    import optax

    from jaxdml.losses import nca
    from jaxdml.solvers._driver import _runner

    with pytest.raises(xc.Undescribable):
        _runner(nca, optax.with_extra_args_support(optax.adam(0.1)), None, 10, 2, (), 0)._function_key()
    with pytest.raises(xc.Undescribable):
        xc.describe(lambda x: x)  # a user's function
    with pytest.raises(xc.Undescribable):
        xc.describe(object())


def test_describe_pins_down_static_values():
    """Equal values describe equally (whatever their memory layout or insertion order); values that
    could trace differently describe differently; what the description cannot pin down raises."""
    import functools
    import math
    import types

    from jaxdml.losses import lmnn, nca

    d = xc.describe
    assert d(0.1) == ("float", "float", (0.1).hex()) and d(np.float32(0.1)) != d(0.1)
    assert len({d(1), d(1.0), d(True), d(np.int32(1))}) == 4
    assert d(1 + 2j) == ("complex", (1.0).hex(), (2.0).hex()) != d(1 + 3j)
    assert d(np.dtype(np.float32)) == ("dtype", "<f4") != d(np.dtype(np.float64))
    assert d(float) == ("type", "builtins", "float") and d(np.float32) == ("type", "numpy", "float32")
    # arrays by content: a Fortran-ordered copy is the same value, one changed element is not
    A = np.arange(6.0).reshape(2, 3)
    B = A.copy()
    B[1, 2] += 1e-12
    assert d(np.asfortranarray(A)) == d(A) != d(B)
    assert d(A) != d(A.astype(np.float32)) and d(A) != d(A.reshape(3, 2))
    # containers: mappings and sets whatever their order; tuples and lists apart
    assert d({"a": 1, "b": 2}) == d({"b": 2, "a": 1}) == d(types.MappingProxyType({"a": 1, "b": 2}))
    assert d({"b", "a", "c"}) == d(frozenset("cab")) and d({1, 2}) != d({1, 3})
    assert d((1, 2)) != d([1, 2])
    # functions: jaxdml's by name and what they close over; partials by their arguments; jitted ones
    # by the wrapped function; JAX's and the math module's builtins by name; modules by name
    assert d(nca) != d(lmnn) and d(nca)[1].endswith("jaxdml.losses._nca.nca@" + str(nca.__code__.co_firstlineno))
    assert d(functools.partial(nca, reg=0.1)) != d(functools.partial(nca, reg=0.2))
    assert d(functools.partial(nca, reg=0.1)) == ("partial", d(nca), d(()), d({"reg": 0.1}))
    assert d(jax.jit(nca)) == ("jit", d(nca))
    assert d(math.sqrt) == ("builtin", "math", "sqrt") and d(jaxdml) == ("module", "jaxdml")
    for bad in (len, jax.jit(lambda x: x), types.SimpleNamespace(a=1), xc.Undescribable):
        with pytest.raises(xc.Undescribable):
            d(bad)
    nested = 1
    for _ in range(30):
        nested = [nested]
    d(nested)
    for _ in range(15):
        nested = [nested]
    with pytest.raises(xc.Undescribable, match="too deep"):
        d(nested)
    with pytest.raises(xc.Undescribable, match="argument of type str"):
        xc._leaf("text")  # a traced argument is an array or a number


def test_cpu_key_without_proc_cpuinfo(monkeypatch):
    """Where ``/proc/cpuinfo`` cannot be read, the CPU is described by the platform's machine and
    processor names alone."""
    import platform

    from jaxdml._runtime import _executable_key as xk

    def unreadable(path, *a, **k):
        raise OSError(f"{path}: not readable")

    monkeypatch.setattr(xk, "open", unreadable, raising=False)
    expected = hashlib.sha256("\n".join([platform.machine(), platform.processor()]).encode()).hexdigest()
    assert xk._cpu.__wrapped__() == expected


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="no /proc/cpuinfo here")
def test_cpu_key_reads_proc_cpuinfo_without_starting_a_subprocess(monkeypatch):
    """With ``/proc/cpuinfo`` the processor's model and feature flags describe it; the platform's
    processor name (``uname -p`` in a subprocess on Linux, a few ms of every process) is not asked."""
    import platform

    from jaxdml._runtime import _executable_key as xk

    monkeypatch.setattr(platform, "processor", lambda: pytest.fail("platform.processor() was called"))
    with open("/proc/cpuinfo") as fh:
        first = fh.read().split("\n\n")[0]
    key = xk._cpu.__wrapped__()
    assert "flags" not in first or key != hashlib.sha256(platform.machine().encode()).hexdigest()


def test_calls_the_key_cannot_describe_go_through_jit(folder):
    """Inside a trace, with an array committed to a device, inside a named-axis or mesh context or
    with a default device: the call is not keyed (nothing is stored) and returns what jax.jit does."""
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    expected = np.asarray(jax.jit(_affine)(X, W)[0])
    s0 = xc.stats()
    outs = [jax.jit(lambda a, b: f(a, b)[0])(X, W),  # traced arguments
            f(jax.device_put(X, jax.devices()[0]), W)[0],  # a committed array
            jax.vmap(lambda s: s * f(X, W)[0], axis_name="i")(jnp.ones(1))[0]]  # a named axis
    with jax.set_mesh(jax.make_mesh((1,), ("data",), devices=jax.devices()[:1])):
        outs.append(f(X, W)[0])
    with jax.default_device(jax.devices()[0]):
        outs.append(f(X, W)[0])
    s1 = xc.stats()
    assert s1["uncacheable"] - s0["uncacheable"] == len(outs) == 5
    assert s1["stores"] == s0["stores"]
    assert not os.path.isdir(folder) or not os.listdir(folder)
    for out in outs:  # inside a trace XLA's default options, at top level the quick ones for this small
        # program (jaxdml._runtime._device.quick_compile_applies): two float32 tanh layers fused differently
        # differ by a few ulps (float32's is 1.2e-7)
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5)


def _uniform(key, x):
    return x + jax.random.uniform(key, x.shape, x.dtype)


xc.register_name(_uniform, "tests._uniform")


def test_typed_prng_keys_are_arguments(folder):
    """A typed key array (the minibatch loops pass one) is described by its shape and key type, and
    the loaded program draws what the compiled one draws."""
    f = xc.cached_jit(_uniform)
    x = jnp.zeros(4)
    k0, k1 = jax.random.key(0), jax.random.key(1)
    assert _key(f, k0, x) == _key(f, k1, x) != _key(f, jax.random.PRNGKey(0), x)  # raw uint32 keys differ
    first = np.asarray(f(k0, x))
    xc.clear_memory()  # the next call loads the stored entry
    np.testing.assert_array_equal(np.asarray(f(k0, x)), first)
    np.testing.assert_array_equal(first, np.asarray(jax.jit(_uniform)(k0, x)))


def test_trace_settings_change_key():
    """x64, JAX's default matmul precision and jaxdml's own settings read while tracing."""
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    base = _key(f, X, W)
    with jax.enable_x64(True):
        assert _key(f, X, W) != base
    with jax.default_matmul_precision("bfloat16"):
        assert _key(f, X, W) != base
    with config.memory_budget(1 << 22):
        assert _key(f, X, W) != base
    with config.matmul_precision("high"):
        assert _key(f, X, W) != base
    assert _key(f, X, W) == base


@pytest.mark.parametrize("part", ["jax", "jaxlib", "backend", "cpu", "xla_flags", "source"])
def test_environment_changes_key(part, monkeypatch):
    """Versions, backend (platform, device kind and count), CPU features, XLA flags, jaxdml's source."""
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    xc._ENV.clear()
    base = _key(f, X, W)
    env = list(xc._environment())
    i = next(i for i, e in enumerate(env) if e[0] == part)
    env[i] = env[i][:-1] + ("other",)
    monkeypatch.setitem(xc._ENV, "env", tuple(env))
    assert _key(f, X, W) != base
    xc._ENV.clear()


def test_xla_flags_and_device_count_enter_environment(monkeypatch):
    env = dict((e[0], e[1:]) for e in xc._environment())
    assert env["backend"][3] == jax.device_count() and env["backend"][2] == jax.devices()[0].device_kind
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
    assert dict((e[0], e[1:]) for e in xc._environment())["xla_flags"][0] == "--xla_cpu_enable_fast_math=true"


# --------------------------------------------------------------------------- entries and fallbacks

def _entry(folder):
    files = sorted(p for p in os.listdir(folder) if p.endswith(".jxe"))
    assert len(files) == 1, files
    return folder / files[0]


def _run_fresh(f, *args):
    """Call as a new process would: nothing in memory."""
    xc.clear_memory()
    return f(*args)


def test_store_load_bit_identical(folder):
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    plain = _without_cache(X, W)
    s0 = xc.stats()
    first = _run_fresh(f, X, W)
    second = _run_fresh(f, X, W)
    s1 = xc.stats()
    assert s1["stores"] - s0["stores"] == 1 and s1["hits"] - s0["hits"] == 1
    for a, b, c in zip(plain, first, second):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))


def _fallback_then_replaced(f, folder, X, W, expected):
    s0 = xc.stats()
    out = _run_fresh(f, X, W)
    s1 = xc.stats()
    assert s1["fallbacks"] - s0["fallbacks"] == 1 and s1["stores"] - s0["stores"] == 1
    np.testing.assert_array_equal(np.asarray(out[1]), expected)
    out = _run_fresh(f, X, W)  # the entry was replaced by a good one
    assert xc.stats()["hits"] - s1["hits"] == 1
    np.testing.assert_array_equal(np.asarray(out[1]), expected)


def test_truncated_entry_falls_back(folder):
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    expected = np.asarray(_run_fresh(f, X, W)[1])
    path = _entry(folder)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    _fallback_then_replaced(f, folder, X, W, expected)


def test_corrupt_entry_falls_back(folder):
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    expected = np.asarray(_run_fresh(f, X, W)[1])
    path = _entry(folder)
    blob = bytearray(path.read_bytes())
    blob[-100] ^= 0xFF
    path.write_bytes(bytes(blob))
    _fallback_then_replaced(f, folder, X, W, expected)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_an_entry_that_is_not_a_regular_file_is_skipped_never_waited_on(folder, kind):
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    expected = np.asarray(_run_fresh(f, X, W)[1])
    path = _entry(folder)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)  # opening it for reading would block until a writer came
    else:
        path.mkdir()
    s0 = xc.stats()
    with pytest.warns(RuntimeWarning, match="not a regular file"):
        out = _run_fresh(f, X, W)
    assert xc.stats()["fallbacks"] - s0["fallbacks"] == 1
    np.testing.assert_array_equal(np.asarray(out[1]), expected)
    if kind == "fifo":  # replaced by a good entry
        assert path.is_file()
        s1 = xc.stats()
        _run_fresh(f, X, W)
        assert xc.stats()["hits"] - s1["hits"] == 1


def _rewrite(path, change):
    """Rewrite an entry with a valid header and checksum after ``change(description, payload)``."""
    blob = path.read_bytes()
    description, payload, in_tree, out_tree = pickle.loads(blob[xc._HEADER.size:])
    description, payload = change(description, payload)
    body = pickle.dumps((description, payload, in_tree, out_tree))
    path.write_bytes(xc._HEADER.pack(xc._MAGIC, xc._FORMAT, len(body), hashlib.sha256(body).digest()) + body)


def test_entry_of_another_jax_version_falls_back(folder):
    """An entry whose description names another jax version (as after an upgrade with a key
    collision) is never run."""
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    expected = np.asarray(_run_fresh(f, X, W)[1])
    path = _entry(folder)
    assert repr(("jax", jax.__version__)).encode() in pickle.loads(path.read_bytes()[xc._HEADER.size:])[0]
    _rewrite(path, lambda d, p: (d.replace(repr(("jax", jax.__version__)).encode(), b"('jax', '0.0.1')"), p))
    _fallback_then_replaced(f, folder, X, W, expected)


def test_undeserializable_entry_falls_back(folder):
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    expected = np.asarray(_run_fresh(f, X, W)[1])
    _rewrite(_entry(folder), lambda d, p: (d, p[: len(p) // 3]))
    _fallback_then_replaced(f, folder, X, W, expected)


def test_concurrent_writes_never_expose_a_partial_entry(folder):
    """Writers replacing one entry while readers read it: a reader sees the old or the new entry
    whole, never a mixture (entries are renamed into place under a lock)."""
    os.makedirs(folder, exist_ok=True)
    description = b"description"
    payloads = [bytes([i]) * (200_000 + 1000 * i) for i in range(8)]
    bad, done = [], threading.Event()

    def write(i):
        for _ in range(10):
            assert xc._write(str(folder), "k", description, payloads[i], None, None)

    def read():
        while not done.is_set():
            got = xc._read(str(folder), "k", description)
            if got == "bad" or (got is not None and got[0] not in payloads):
                bad.append(got)

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(i,)) for i in range(len(payloads))]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    for t in readers:
        t.join()
    assert not bad
    assert xc._read(str(folder), "k", description)[0] in payloads
    assert not [p for p in os.listdir(folder) if p.endswith(".part")]


def test_size_bound_evicts_least_recently_used(folder):
    os.makedirs(folder, exist_ok=True)
    xc._state["max_bytes"] = 250_000
    for i in range(3):
        xc._write(str(folder), f"k{i}", b"d", bytes(100_000), None, None)
        os.utime(folder / f"k{i}.jxe", ns=(10**18 + i, 10**18 + i))
    assert xc._read(str(folder), "k0", b"d") is None  # the oldest went
    assert xc._read(str(folder), "k2", b"d") is not None


def test_memory_holds_the_most_recent_programs(folder, monkeypatch):
    """Beyond the in-memory bound the least recently used program is dropped; it is then loaded from
    the folder again, not compiled."""
    monkeypatch.setattr(xc, "_MEMORY_SIZE", 2)
    f = xc.cached_jit(_affine, static_argnames=("n",))
    shapes = [_args(n=k) for k in (4, 5, 6)]
    expected = [np.asarray(_without_cache(*a)[1]) for a in shapes]
    for a in shapes:
        f(*a)
    s0 = xc.stats()
    np.testing.assert_array_equal(np.asarray(f(*shapes[2])[1]), expected[2])  # still in memory
    np.testing.assert_array_equal(np.asarray(f(*shapes[0])[1]), expected[0])  # dropped: from the folder
    s1 = xc.stats()
    assert (s1["memory_hits"] - s0["memory_hits"], s1["hits"] - s0["hits"], s1["stores"] - s0["stores"]) == (1, 1, 0)


def _doubled_on_host(x):
    return x + jax.pure_callback(lambda v: np.asarray(v) * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


xc.register_name(_doubled_on_host, "tests._doubled_on_host")


def test_writes_that_cannot_happen_leave_no_entry(folder):
    """A program with a host callback cannot be serialized, an unpicklable tree cannot be written, a
    folder that is a file or an entry path taken by a folder fail the write: the call still returns
    the right values, and no entry or temporary file is left."""
    s0 = xc.stats()
    f = xc.cached_jit(_doubled_on_host)
    np.testing.assert_array_equal(np.asarray(f(jnp.arange(3.0))), [0.0, 3.0, 6.0])
    assert xc.stats()["stores"] == s0["stores"]
    assert not os.path.isdir(folder) or not os.listdir(folder)
    assert xc._write(str(folder), "k", b"d", b"payload", lambda: None, None) is False  # unpicklable
    (folder.parent / "a-file").write_bytes(b"")
    assert xc._write(str(folder.parent / "a-file"), "k", b"d", b"payload", None, None) is False
    os.makedirs(folder / "k.jxe")  # the entry's path is taken
    assert xc._write(str(folder), "k", b"d", b"payload", None, None) is False
    assert os.path.isdir(folder / "k.jxe") and not [p for p in os.listdir(folder) if p.endswith(".part")]


def test_unbounded_folder_evicts_nothing(folder):
    os.makedirs(folder, exist_ok=True)
    xc._state["max_bytes"] = 0
    for i in range(3):
        assert xc._write(str(folder), f"k{i}", b"d", bytes(100_000), None, None)
    assert all(xc._read(str(folder), f"k{i}", b"d") is not None for i in range(3))


def test_decorator_forms_and_static_arguments_given_by_position(folder):
    """``@cached_jit(static_argnames="n")`` (a string, as jax.jit takes it): a static argument given by
    position or by name is one key; another value is another key and another program."""

    def power(x, n):
        return x ** n

    xc.register_name(power, "tests.power")
    f = xc.cached_jit(static_argnames="n")(power)
    x = np.arange(4.0, dtype=np.float32)
    assert _key(f, x, 3) == f.key((x,), {"n": 3})[0] != _key(f, x, 2)
    np.testing.assert_array_equal(np.asarray(f(x, 3)), x ** 3)
    np.testing.assert_array_equal(np.asarray(f(x, n=2)), x ** 2)
    assert f.__name__ == "power" and f.lower(x, n=2).compile() is not None


def test_environment_switch_turns_the_layer_off(folder, monkeypatch):
    """``JAXDML_EXECUTABLE_CACHE=0`` turns this layer off (unless switched on in the process): calls go
    through jax.jit and nothing is stored."""
    xc.set_enabled(None)
    monkeypatch.setenv("JAXDML_EXECUTABLE_CACHE", "0")
    assert xc.cache_dir() is None and not xc.is_enabled()
    s0 = xc.stats()
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    np.testing.assert_array_equal(np.asarray(f(X, W)[1]), np.asarray(_without_cache(X, W)[1]))
    assert xc.stats() == s0 and not os.path.isdir(folder)
    xc.set_enabled(True)
    assert xc.cache_dir() == str(folder)


def test_switch_and_opt_out(folder):
    assert xc.is_enabled()
    config.set_executable_cache(False)
    try:
        assert not xc.is_enabled() and config.get_executable_cache() is False
    finally:
        config.set_executable_cache(True)
    assert xc.is_enabled()
    with pytest.raises(ValueError):
        config.set_executable_cache("yes")


@pytest.mark.slow
def test_second_process_loads_bit_identical_fits(tmp_path):
    """Three fresh processes fit NCA and ITML on iris: without any cache, then twice with an empty
    cache folder (the second loads the stored executables without tracing); all results are
    bit-identical."""
    code = (
        "import numpy as np, jaxdml\nfrom jaxdml.solvers._driver import trace_count\n"
        "from jaxdml._runtime import _executable_cache as xc\nfrom sklearn.datasets import load_iris\n"
        "X, y = load_iris(return_X_y=True)\n"
        "a = jaxdml.NCA(max_iter=20, random_state=0).fit(X, y).components_\n"
        "b = jaxdml.ITML(random_state=0, max_iter=50).fit(X, y).components_\n"
        "print(np.concatenate([a.ravel(), b.ravel()]).tobytes().hex(), trace_count(), xc.stats()['hits'])\n"
    )
    env = {**os.environ, "JAXDML_CACHE_DIR": str(tmp_path)}
    outs = []
    for cache in ("0", "1", "1"):
        r = subprocess.run([sys.executable, "-c", code], env={**env, "JAXDML_COMPILATION_CACHE": cache},
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(r.stdout.split())
    assert outs[0][0] == outs[1][0] == outs[2][0]
    assert outs[1][1:] == ["1", "0"]  # the first process with the cache traced NCA's runner once
    assert outs[2][1:] == ["0", "2"]  # the second traced nothing: both programs were loaded


def test_a_process_with_several_devices_loads_single_device_programs(tmp_path):
    """In a process with four (simulated) devices a cached program is loaded onto the default device: the
    second process loads NCA's runner (one hit, nothing traced) and fits as the first did, instead of failing
    with a program that expects four shards."""
    code = (
        "import numpy as np, jaxdml\nfrom jaxdml.solvers._driver import trace_count\n"
        "from jaxdml._runtime import _executable_cache as xc\nfrom sklearn.datasets import load_iris\n"
        "X, y = load_iris(return_X_y=True)\n"
        "a = jaxdml.fit(X, y, loss='nca', max_iter=20, random_state=0).L\n"
        "print(np.asarray(a).tobytes().hex(), trace_count(), xc.stats()['hits'])\n"
    )
    env = {**os.environ, "JAXDML_CACHE_DIR": str(tmp_path), "JAXDML_COMPILATION_CACHE": "1",
           "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()}
    outs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(r.stdout.split())
    assert outs[0][0] == outs[1][0]
    assert outs[0][1:] == ["1", "0"] and outs[1][1:] == ["0", "1"]


# --------------------------------------------------------------------------- compile options by size

def test_small_programs_compile_with_the_quick_options_on_a_cpu(monkeypatch):
    """On a CPU a program whose traced arguments hold at most QUICK_COMPILE_MAX_ELEMENTS elements
    compiles as jax.jit with QUICK_COMPILE_OPTIONS (its compiled HLO is that one's, not the default
    one's), a larger one with XLA's defaults; the choice is part of the key."""
    from jaxdml._runtime import _device as _runtime

    suite_flags = os.environ.get("XLA_FLAGS", "")
    monkeypatch.setenv("XLA_FLAGS", "")  # no option set by the user (XLA read the real flags at start)
    f = xc.cached_jit(_affine, static_argnames=("n",))
    small, big = _args(), _args(n=_runtime.QUICK_COMPILE_MAX_ELEMENTS // 3)
    assert sum(a.size for a in big) > _runtime.QUICK_COMPILE_MAX_ELEMENTS >= sum(a.size for a in small)
    if jax.default_backend() != "cpu":
        assert f._variant(small, {}) is f.jitted
        return
    def ops(jitted, args):  # the compiled HLO's instructions, without source metadata
        text = jitted.lower(*args).compile().as_text()
        return [ln.split(", metadata=")[0] for ln in text.splitlines() if " = " in ln]

    quick = ops(jax.jit(_affine, compiler_options=dict(_runtime.QUICK_COMPILE_OPTIONS)), small)
    default = ops(jax.jit(_affine), small)
    if "--xla_cpu_use_fusion_emitters=false" not in suite_flags:  # the suite's conftest may set it
        assert quick != default  # the options change the program on this CPU
    assert f._variant(small, {}) is not f.jitted and ops(f, small) == quick
    assert f._variant(big, {}) is f.jitted and ops(f, big) == ops(jax.jit(_affine), big)
    key = _key(f, *small)
    monkeypatch.setitem(_runtime.QUICK_COMPILE_OPTIONS, "xla_backend_optimization_level", 1)
    assert _key(f, *small) != key  # the options themselves are part of the key ...
    level1 = ops(jax.jit(_affine, compiler_options=dict(_runtime.QUICK_COMPILE_OPTIONS)), small)
    assert ops(f, small) == level1  # ... and of the program compiled for it
    monkeypatch.setattr(_runtime, "QUICK_COMPILE_MAX_ELEMENTS", 0)
    assert f._variant(small, {}) is f.jitted and _key(f, *small) != key


def test_brief_programs_compile_with_the_quick_options_at_any_size(monkeypatch):
    """Inside ``brief_programs`` a program above QUICK_COMPILE_MAX_ELEMENTS takes the quick options too (a
    key of its own); outside it, and after an exception inside it, the defaults again."""
    from jaxdml._runtime import _device as _runtime

    monkeypatch.setenv("XLA_FLAGS", "")
    f = xc.cached_jit(_affine, static_argnames=("n",))
    big = _args(n=_runtime.QUICK_COMPILE_MAX_ELEMENTS // 3)
    assert f._variant(big, {}) is f.jitted
    key = _key(f, *big)
    with _runtime.brief_programs():
        if jax.default_backend() != "cpu":
            assert f._variant(big, {}) is f.jitted
            return
        assert f._variant(big, {}) is not f.jitted and _key(f, *big) != key
        with _runtime.brief_programs():  # nested
            assert _runtime.quick_compile_applies(big)
        assert _runtime.quick_compile_applies(big)
        # tanh values in [-1, 1]: two float32 builds of the same program agree to a few ulps of 1
        np.testing.assert_allclose(np.asarray(f(*big)[1]), np.asarray(jax.jit(_affine)(*big)[1]), rtol=0, atol=2e-6)
    assert f._variant(big, {}) is f.jitted and _key(f, *big) == key
    with pytest.raises(RuntimeError):
        with _runtime.brief_programs():
            raise RuntimeError("inside")
    assert not _runtime.quick_compile_applies(big)


@pytest.mark.parametrize("cache_on", [True, False])
def test_a_jaxlib_without_the_quick_options_compiles_with_the_defaults(folder, monkeypatch, cache_on):
    """An option this jaxlib does not know: the call compiles with XLA's defaults instead of failing
    (and remembers it for the process), with and without the cache."""
    from jaxdml._runtime import _device as _runtime

    monkeypatch.setattr(_runtime, "QUICK_COMPILE_OPTIONS", {"xla_no_such_option_in_any_jaxlib": True})
    monkeypatch.setitem(_runtime._QUICK, "known", True)
    xc.set_enabled(cache_on)
    f = xc.cached_jit(_affine, static_argnames=("n",))
    X, W = _args()
    out = f(X, W)
    np.testing.assert_array_equal(np.asarray(out[1]), np.asarray(jax.jit(_affine)(X, W)[1]))
    assert _runtime._QUICK["known"] is (jax.default_backend() != "cpu")


def test_options_the_user_set_in_xla_flags_win(monkeypatch):
    """A compile option would override XLA_FLAGS: jaxdml leaves out the ones the user set, and with
    none left compiles every program as plain jax.jit does."""
    from jaxdml._runtime import _device as _runtime

    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=3")
    assert _runtime.quick_compile_options() == {"xla_cpu_use_fusion_emitters": False}
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true --xla_backend_optimization_level=3")
    assert _runtime.quick_compile_options() == {}
    f = xc.cached_jit(_affine, static_argnames=("n",))
    assert not _runtime.quick_compile_applies([np.ones(3)]) and f._variant(_args(), {}) is f.jitted


def test_paused_gc_pauses_the_collector_and_restores_what_it_found():
    import gc
    import threading

    from jaxdml._runtime._device import paused_gc

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():  # re-entrant
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with paused_gc():
            raise RuntimeError("inside")
    assert gc.isenabled()  # restored on an exception too
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # a collector the caller turned off stays off
    finally:
        gc.enable()
    # two threads whose blocks overlap (A enters, B enters, A leaves, B leaves): the collector stays
    # paused until the last block ends, then runs again (it must not end up disabled)
    steps = [threading.Event() for _ in range(3)]
    seen = {}

    def a():
        with paused_gc():
            steps[0].set()
            steps[1].wait(5)
        seen["after_a"] = gc.isenabled()
        steps[2].set()

    def b():
        steps[0].wait(5)
        with paused_gc():
            steps[1].set()
            steps[2].wait(5)
            seen["inside_b"] = gc.isenabled()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"after_a": False, "inside_b": False}
    assert gc.isenabled()


_COMPILE_EVENTS = {"registered": False, "on": False, "enabled": []}


@pytest.mark.parametrize("cached", [True, False])
def test_fits_trace_and_compile_with_the_collector_paused(folder, cached):
    """The executable cache's cold path (trace, lower, compile, store), the plain ``jax.jit`` path
    and the float64 closed forms trace and compile with the collector paused: JAX's trace and
    compile events of a fit whose shapes no other test uses all fire while it is off."""
    import gc

    seen = _COMPILE_EVENTS
    if not seen["registered"]:  # (the lowest supported jax cannot unregister a listener: one for the suite)
        def listener(event, duration, **_):
            if seen["on"] and event in ("/jax/core/compile/jaxpr_trace_duration",
                                        "/jax/core/compile/backend_compile_duration"):
                seen["enabled"].append(gc.isenabled())

        jax.monitoring.register_event_duration_secs_listener(listener)
        seen["registered"] = True
    xc.set_enabled(cached)
    seen["on"], seen["enabled"] = True, []
    try:
        X = np.random.default_rng(0).normal(size=(41 + cached, 3)) + 3.0 * cached
        y = np.arange(len(X)) % 2
        jaxdml.NCA(max_iter=7).fit(X, y)  # the L-BFGS solver
        jaxdml.LDA().fit(X, y)  # a closed form, in float64
    finally:
        seen["on"] = False
    assert seen["enabled"] and not any(seen["enabled"]), seen["enabled"]
    assert gc.isenabled()
