"""The persistent compilation cache: on by default (opt-out), bounded, shared safely by concurrent processes."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = str(pathlib.Path(__file__).resolve().parents[1])

SCRIPT = textwrap.dedent("""
    import json, sys, warnings, jax, numpy as np, jaxdml
    if "--disable" in sys.argv:
        jaxdml.compilation.disable_compilation_cache()
    hits = []
    jax.monitoring.register_event_listener(lambda name, **kw: hits.append(name) if name.endswith("cache_hits") else None)
    X = np.random.default_rng(0).random((50, 3)); y = np.arange(50) % 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jaxdml.fit(X, y, loss="nca", max_iter=3)
    bad = [str(w.message) for w in caught if "compilation cache" in str(w.message)]
    print(json.dumps(dict(hits=len(hits), xhits=jaxdml._runtime._executable_cache.stats()["hits"],
                          dir=jax.config.jax_compilation_cache_dir, bad=bad)))
""")


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAXDML_", "JAX_COMPILATION"))}
    env.update(XDG_CACHE_HOME=str(tmp_path / "home-cache"), JAX_PLATFORMS="cpu", **extra)
    return env


def _run(env, *args):
    out = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two processes; the default suite checks the default folder and switches in-process
def test_default_cache_serves_a_second_process(tmp_path):
    env = _env(tmp_path)  # no JAXDML_ setting at all: the default
    folder = tmp_path / "home-cache" / "jaxdml" / "xla"
    folder.mkdir(parents=True)
    # an entry written by a process that used the folder without a size bound (no "-atime" record):
    # it must not make the bounded cache's writes fail
    (folder / "jit_foreign-0123-cache").write_bytes(b"x")
    first, second = _run(env), _run(env)
    assert first["dir"] == str(folder) and any(folder.iterdir())
    # the second process loads, not compiles: the fit's program from the executable cache (without
    # tracing it), anything else from JAX's cache
    assert first["hits"] == first["xhits"] == 0 and second["xhits"] >= 1
    assert not first["bad"] and not second["bad"]


@pytest.mark.slow
def test_opt_out_by_environment_and_by_function(tmp_path):
    for env, args in ((_env(tmp_path, JAXDML_COMPILATION_CACHE="0"), ()), (_env(tmp_path), ("--disable",))):
        res = _run(env, *args)
        assert res["dir"] in (None, "") and res["hits"] == res["xhits"] == 0
        assert not (tmp_path / "home-cache" / "jaxdml").exists()


@pytest.mark.slow
def test_concurrent_processes_share_the_cache(tmp_path):
    env = _env(tmp_path, JAXDML_CACHE_DIR=str(tmp_path / "shared"))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env, cwd=ROOT) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        res = json.loads(out.strip().splitlines()[-1])
        assert res["dir"] == str(tmp_path / "shared") and not res["bad"]
    later = _run(env)  # loads, from JAX's cache or (the fit's program, without tracing) the executable cache
    assert later["hits"] + later["xhits"] >= 1


def test_disable_in_process():
    import jax

    from jaxdml import compilation

    # tests/conftest.py turns the caches back to the suite's settings after the test
    compilation.disable_compilation_cache()
    compilation.ensure_default_cache()  # must not turn it back on
    assert jax.config.jax_enable_compilation_cache is False


def test_enable_in_process_repairs_a_bounded_folder_and_stores_programs(tmp_path):
    """In this process (the suite runs with the caches off; tests/conftest.py restores them afterwards):
    a bounded cache adds the access-time record that an entry written without a bound lacks (else JAX's
    eviction fails on every later write), sets every threshold to "cache everything", and a fit then
    writes its program there."""
    import jax
    import numpy as np

    import jaxdml
    from jaxdml import compilation

    folder = tmp_path / "bounded"
    folder.mkdir()
    (folder / "jit_f-0123-cache").write_bytes(b"an entry from an unbounded process")
    (folder / "jit_g-4567-cache").write_bytes(b"an entry with its record")
    (folder / "jit_g-4567-atime").write_bytes(b"\0" * 8)
    assert compilation.enable_compilation_cache(str(folder), max_bytes=10**8) == str(folder)
    assert (folder / "jit_f-0123-atime").stat().st_size == 8  # added
    assert (folder / "jit_g-4567-atime").read_bytes() == b"\0" * 8  # left as it was
    assert jax.config.jax_enable_compilation_cache is True
    assert jax.config.jax_compilation_cache_dir == str(folder)
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0
    assert jax.config.jax_compilation_cache_max_size == 10**8
    before = {p.name for p in folder.iterdir()}
    X = np.random.default_rng(3).random((37, 3))
    jaxdml.fit(X, np.arange(37) % 2, loss="nca", max_iter=2)
    assert {p.name for p in folder.iterdir()} - before  # the fit stored what it compiled


def test_cross_validation_folds_share_one_program_and_nothing_else_compiles():
    """Folds of 160 and 161 rows (wine's) land in one bucket; a fit compiles its solver loop and no
    conversion or seeding program besides."""
    import jax
    import numpy as np

    import jaxdml
    from jaxdml._runtime._padding import bucket_size

    assert bucket_size(160) == bucket_size(161) == bucket_size(187) == 192
    assert bucket_size(1000) == 1024 and bucket_size(4000) <= 4000 * 1.125
    compiled = []

    def listen(event, duration, fun_name=None, **_):
        if event.endswith("backend_compile_duration"):
            compiled.append(fun_name)

    X = np.random.default_rng(1).random((161, 11))
    y = np.arange(161) % 3
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        for n in (160, 161):
            jaxdml.fit(X[:n], y[:n], loss="nca", max_iter=4)
    finally:
        unregister = getattr(jax.monitoring, "unregister_event_duration_listener", None)
        if unregister is None:  # jax < 0.9 has only the private form
            from jax._src import monitoring as _monitoring

            unregister = _monitoring._unregister_event_duration_listener_by_callback
        unregister(listen)
    assert compiled == ["jit(run)"], compiled


def test_quick_compile_options_fall_back_where_xla_does_not_know_them(monkeypatch):
    """The tuning grid's compile options: a jaxlib without one of them compiles with XLA's defaults
    (and remembers that), instead of failing the call."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxdml._runtime import _device as _runtime

    f = _runtime.jit_quick_compile(lambda x: 2.0 * x + 1.0)
    np.testing.assert_array_equal(np.asarray(f(jnp.arange(3.0))), [1.0, 3.0, 5.0])
    monkeypatch.setattr(_runtime, "QUICK_COMPILE_OPTIONS", {"xla_no_such_option_in_any_jaxlib": True})
    monkeypatch.setitem(_runtime._QUICK, "known", True)
    g = _runtime.jit_quick_compile(lambda x: 3.0 * x)
    np.testing.assert_array_equal(np.asarray(g(jnp.arange(3.0))), [0.0, 3.0, 6.0])
    assert _runtime._QUICK["known"] is (jax.default_backend() != "cpu")
    np.testing.assert_array_equal(np.asarray(g(jnp.arange(2.0))), [0.0, 3.0])  # no second attempt needed


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    from jaxdml.compilation import default_cache_dir

    monkeypatch.delenv("JAXDML_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "jaxdml" / "xla")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg in (None, ""):  # unset or empty: ~/.cache
        if xdg is None:
            monkeypatch.delenv("XDG_CACHE_HOME")
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert default_cache_dir() == str(tmp_path / "home" / ".cache" / "jaxdml" / "xla")
    monkeypatch.setenv("JAXDML_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == str(tmp_path / "mine")


def test_bounded_cache_adds_the_missing_access_time_records(tmp_path):
    """An entry without its ``-atime`` record (written by an unbounded use of the folder) gets one,
    stamped now; existing records and other files are left alone; a missing folder is no error."""
    import time

    from jaxdml.compilation import _add_missing_access_times

    (tmp_path / "a-cache").write_bytes(b"x")
    (tmp_path / "b-cache").write_bytes(b"x")
    (tmp_path / "b-atime").write_bytes(b"old")
    (tmp_path / "notes.txt").write_bytes(b"")
    before = time.time_ns()
    _add_missing_access_times(str(tmp_path))
    after = time.time_ns()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-atime", "a-cache", "b-atime", "b-cache", "notes.txt"]
    stamp = (tmp_path / "a-atime").read_bytes()
    assert len(stamp) == 8 and before <= int.from_bytes(stamp, "little") <= after
    assert (tmp_path / "b-atime").read_bytes() == b"old"
    _add_missing_access_times(str(tmp_path / "nope"))
    assert not (tmp_path / "nope").exists()


def test_default_cache_is_left_off_where_it_must_be(monkeypatch, tmp_path):
    """ensure_default_cache turns the cache on once, and not when the user opted out, set a folder in
    JAX, runs several jax.distributed processes, or the folder cannot be created (a warning then)."""
    import jax

    from jaxdml import compilation
    from jaxdml._runtime import _executable_cache

    saved_enabled = jax.config.jax_enable_compilation_cache
    saved_executables = dict(_executable_cache._state)
    calls = []  # tests/conftest.py restores the JAX cache settings after the test

    def fresh():
        monkeypatch.setattr(compilation, "_state", {"decided": False, "disabled": False})

    jax.config.update("jax_compilation_cache_dir", None)
    # the folder cannot be created (a file stands in its way): a warning, nothing switched on
    (tmp_path / "file").write_bytes(b"")
    monkeypatch.setenv("JAXDML_CACHE_DIR", str(tmp_path / "file" / "xla"))
    monkeypatch.delenv("JAXDML_COMPILATION_CACHE", raising=False)
    fresh()
    with pytest.warns(RuntimeWarning, match=r"cannot create the compilation cache folder .*JAXDML_CACHE_DIR"):
        compilation.ensure_default_cache()
    assert compilation._state["decided"] and jax.config.jax_compilation_cache_dir is None
    assert jax.config.jax_enable_compilation_cache == saved_enabled
    assert _executable_cache._state == saved_executables
    # the other cases, with the switch itself replaced by a spy
    monkeypatch.setattr(compilation, "enable_compilation_cache", lambda *a, **k: calls.append(a))
    for off in ("0", " Off ", "false", "no"):
        fresh()
        monkeypatch.setenv("JAXDML_COMPILATION_CACHE", off)
        compilation.ensure_default_cache()
    monkeypatch.delenv("JAXDML_COMPILATION_CACHE")
    fresh()
    with monkeypatch.context() as m:
        m.setattr(jax, "process_count", lambda: 2)
        compilation.ensure_default_cache()
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "users-own"))
    fresh()
    compilation.ensure_default_cache()
    assert calls == []
    jax.config.update("jax_compilation_cache_dir", None)
    fresh()
    compilation.ensure_default_cache()
    compilation.ensure_default_cache()  # decided once per process
    assert calls == [()]
