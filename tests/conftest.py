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
    """The persistent compilation cache is on: the suite uses (and exercises) it in a private, fresh
    folder, removed at the end, and never writes the user's cache. Each pytest-xdist worker has a
    folder of its own (the subprocesses and notebook kernel its tests start share it, with jaxdml's
    default settings), unbounded in the worker: a bounded cache lists and reads every entry's access
    time on each write (about 30 ms per compiled program here once the folder holds a few hundred),
    which costs the suite more than the programs the two workers could share."""
    shared = os.environ.get("JAXDML_TESTS_XLA_CACHE")
    if hasattr(config, "workerinput") and shared and os.path.isdir(shared):
        folder = os.path.join(shared, config.workerinput["workerid"])  # a worker: under the controller's folder
    else:
        folder = tempfile.mkdtemp(prefix="jaxdml-tests-xla-")
        config._jaxdml_xla_cache = os.environ["JAXDML_TESTS_XLA_CACHE"] = folder
    os.environ["JAXDML_CACHE_DIR"] = folder
    import jaxdml.compilation

    if not jaxdml.compilation.opted_out_by_environment():
        jaxdml.compilation.enable_compilation_cache(folder, max_bytes=-1)


def pytest_unconfigure(config):
    folder = getattr(config, "_jaxdml_xla_cache", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


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


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's in-memory executables after each test module.

    One pytest process compiles thousands of programs (every method, shape and dtype the suite
    tries); kept alive together they exhaust the process's memory maps and XLA crashes inside a
    later compile. Clearing between modules keeps the footprint of one module.
    """
    yield
    jax.clear_caches()
