import os
import shutil
import tempfile
import warnings

# the suite runs in several processes (pytest -n 2): on a GPU none may take most of its memory
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import numpy as np
import pytest


def pytest_configure(config):
    """The persistent compilation cache is on by default: the suite uses (and exercises) it in a
    private, fresh folder, removed at the end, and never writes the user's cache. Subprocesses the
    tests start inherit the folder."""
    folder = tempfile.mkdtemp(prefix="jaxdml-tests-xla-")
    config._jaxdml_xla_cache = folder
    os.environ["JAXDML_CACHE_DIR"] = folder


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
