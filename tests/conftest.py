import os
import shutil
import tempfile
import warnings

# the suite runs in several processes (pytest -n 2): on a GPU none may take most of its memory
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

#: compile options of the suite on a CPU: it compiles hundreds of small programs whose run time is
#: negligible, so XLA's compile time dominates; the classic CPU emitter without LLVM optimisation
#: compiles them about 2.5x faster (the arithmetic is the same IEEE arithmetic;
#: JAXDML_TEST_XLA_DEFAULTS=1 runs the suite with XLA's defaults). Set before jax is imported,
#: so that subprocesses and notebook kernels started by the tests inherit it.
QUICK_XLA_FLAGS = ("--xla_cpu_use_fusion_emitters=false", "--xla_backend_optimization_level=0")


def _quick_xla_flags():
    """XLA_FLAGS with :data:`QUICK_XLA_FLAGS` added, when this jaxlib knows them (XLA aborts on an
    unknown flag: one subprocess tries them first; pytest-xdist's workers inherit the answer)."""
    import subprocess
    import sys

    flags = os.environ.get("XLA_FLAGS", "")
    extra = [f for f in QUICK_XLA_FLAGS if f.split("=")[0] not in flags]
    if not extra or os.environ.get("JAXDML_TEST_XLA_DEFAULTS", "0") == "1":
        return flags
    trial = " ".join([flags, *extra]).strip()
    probe = subprocess.run([sys.executable, "-c", "import jax; jax.jit(lambda x: x + 1)(1.0).block_until_ready()"],
                           env={**os.environ, "XLA_FLAGS": trial, "JAX_PLATFORMS": "cpu"}, capture_output=True)
    return trial if probe.returncode == 0 else flags


os.environ["XLA_FLAGS"] = _quick_xla_flags()

import jax  # noqa: E402
import numpy as np
import pytest

# the tests compare with exact float32 references: on accelerators JAX's default float32 matrix
# products are TensorFloat-32 (jaxdml's own entry points run at jaxdml.config's "highest")
jax.config.update("jax_default_matmul_precision", "highest")


def pytest_configure(config):
    """jaxdml's compilation caches are off in the suite (``JAXDML_COMPILATION_CACHE=0``, inherited
    by the subprocesses the tests start, unless the variable is set). Each worker compiles its
    programs once, and writing some 1 800 of them (jaxdml's executables and JAX's entries) to a
    folder the run then removes cost about 5 % of the suite's time, more than the few programs a
    later subprocess found there. The caches have tests of their own
    (test_compilation.py and test_executable_cache.py turn them on in their own folders, and the
    notebooks run with them on, as a user's kernel does).

    ``JAXDML_CACHE_DIR`` is still a private folder, created fresh for the run and removed at the
    end, so that a test that turns a cache on never writes the user's. Each pytest-xdist worker has
    a folder of its own (the subprocesses and notebook kernel its tests start share it)."""
    os.environ.setdefault("JAXDML_COMPILATION_CACHE", "0")
    shared = os.environ.get("JAXDML_TESTS_XLA_CACHE")
    if hasattr(config, "workerinput") and shared and os.path.isdir(shared):
        folder = os.path.join(shared, config.workerinput["workerid"])  # a worker: under the controller's folder
    else:
        folder = tempfile.mkdtemp(prefix="jaxdml-tests-xla-")
        config._jaxdml_xla_cache = os.environ["JAXDML_TESTS_XLA_CACHE"] = folder
    os.environ["JAXDML_CACHE_DIR"] = folder
    import jaxdml.compilation

    if not jaxdml.compilation.opted_out_by_environment():
        # unbounded: a bounded cache lists every entry and reads its access time on each write
        jaxdml.compilation.enable_compilation_cache(folder, max_bytes=-1)


def pytest_unconfigure(config):
    folder = getattr(config, "_jaxdml_xla_cache", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``-n 2`` schedules by work stealing unless ``--dist`` says otherwise. Each worker starts on
    one half of the suite, in file order, and takes tests from the other half only once its own are
    done, so most of a module's tests run in one process and share its compiled programs. xdist's
    default deals the tests out in small batches to both workers, and both then compiled most
    modules' programs: the default suite took 9m07s-9m51s of CPU time this way against
    10m14s-10m29s (this 2-core machine, the same hour)."""
    explicit = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if config.getvalue("dist") != "load" or any(a in ("-d", "--dist") or a.startswith("--dist=") for a in explicit):
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


#: the longest single tests (about a minute and 20 s): they run first, so that the other worker
#: takes the rest meanwhile; started near the end, one of them kept a worker busy for 45 s after
#: the other had run out of tests to take
LONGEST = ("tests/test_notebooks.py::", "tests/test_main_jobs.py::test_readme_code_blocks_run")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST))  # stable: the rest keep their order


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def x64():
    """Run the test body with 64-bit floats enabled."""
    with jax.enable_x64(True):
        yield


@pytest.fixture
def wine_scaled():
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import minmax_scale

    X, y = load_wine(return_X_y=True)
    return minmax_scale(X), y


@pytest.fixture(scope="session")
def wine_minmax():
    """wine, min-max scaled, read-only: one copy for the fits that modules share."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import minmax_scale

    X, y = load_wine(return_X_y=True)
    X = minmax_scale(X)
    X.flags.writeable = y.flags.writeable = False
    return X, y


@pytest.fixture(autouse=True)
def _quiet_convergence():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        yield


@pytest.fixture(autouse=True)
def _compilation_caches_restored():
    """The caches stay as pytest_configure set them: a test that switches them in the worker (the
    command line's ``--no-cache`` runs in process) would otherwise change them for every later test
    of that worker."""
    from jaxdml import compilation
    from jaxdml._runtime import _executable_cache

    saved = (jax.config.jax_enable_compilation_cache, jax.config.jax_compilation_cache_dir,
             dict(compilation._state), dict(_executable_cache._state))
    yield
    if (jax.config.jax_enable_compilation_cache, jax.config.jax_compilation_cache_dir) != saved[:2]:
        jax.config.update("jax_enable_compilation_cache", saved[0])
        jax.config.update("jax_compilation_cache_dir", saved[1])
    compilation._state.update(saved[2])
    _executable_cache._state.update(saved[3])


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's in-memory executables after each test module.

    One pytest process compiles thousands of programs (every method, shape and dtype the suite
    tries); kept alive together they exhaust the process's memory maps and XLA crashes inside a
    later compile. Clearing between modules keeps the footprint of one module.
    """
    yield
    jax.clear_caches()
