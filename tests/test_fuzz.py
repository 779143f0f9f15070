"""Seeded fuzzing of every method: data shapes, scales, dtypes, label types and hyper-parameters.

The invariant: ``jaxdml.fit`` either raises a clear error (``ValueError``/``TypeError`` raised by
jaxdml's own validation, with a message) or returns a finite metric whose ``M`` is positive
semidefinite, with honest flags (``converged=False`` comes with a ``ConvergenceWarning``).
"""

import warnings
import zlib

import numpy as np
import pytest

import jaxdml
from jaxdml.exceptions import ConvergenceWarning

METHODS = jaxdml.available_methods()
SCALES = (1e-30, 1e-9, 1e-3, 1.0, 1e3, 1e9, 1e30)


def _case(rng):
    """One random input: (X, y, kwargs)."""
    n = int(rng.choice([6, 20, 31]))
    d = int(rng.choice([1, 3, 5]))
    n_classes = int(rng.choice([1, 2, 3]))
    X = rng.normal(size=(n, d)) * float(rng.choice(SCALES)) + float(rng.choice([0.0, 5.0]))
    if rng.random() < 0.15:
        X[:, rng.integers(d)] = 0.0  # a constant column
    dtype = rng.choice(["float64", "float32", "int"])
    if dtype == "int" and np.abs(X).max() < 1e15:
        X = np.round(X).astype(np.int64)
    else:
        X = X.astype("float32" if dtype == "float32" else "float64")
    codes = np.arange(n) % n_classes
    kind = rng.choice(["int", "str", "float", "bool", "continuous"])
    y = {"int": codes, "str": np.array(["a", "b", "c"])[codes], "float": codes.astype(float),
         "bool": codes.astype(bool), "continuous": rng.random(n)}[kind]
    kw = dict(max_iter=int(rng.choice([1, 3, 8])))
    if rng.random() < 0.3:
        kw["n_components"] = int(rng.integers(0, d + 2))
    if rng.random() < 0.2:
        kw["tol"] = float(rng.choice([0.0, 1e-12, 1e-3, -1.0]))
    return X, y, kw


def _check_result(m, caught, method):
    L, M = np.asarray(m.L), np.asarray(m.M)
    assert np.all(np.isfinite(L)) and np.all(np.isfinite(M)), f"{method}: non-finite metric"
    w = np.linalg.eigvalsh(0.5 * (M + M.T))
    assert w[0] >= -1e-6 * max(abs(w[-1]), 1e-30), f"{method}: M is not PSD (eigenvalues {w[:3]})"
    if not m.converged:
        assert any(issubclass(c.category, (ConvergenceWarning, RuntimeWarning)) for c in caught), \
            f"{method}: converged=False without a warning"


@pytest.mark.parametrize("method", METHODS)
def test_clear_error_or_finite_psd_metric_with_honest_flags(method):
    rng = np.random.default_rng(zlib.crc32(method.encode()))  # the same cases in every run
    outcomes = {"error": 0, "result": 0}
    for _ in range(5):
        X, y, kw = _case(rng)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                m = jaxdml.fit(X, y, loss=method, random_state=0, **kw)
            except (ValueError, TypeError) as exc:
                # a clear error: raised by jaxdml or scikit-learn validation, saying something
                tb = exc.__traceback__
                while tb.tb_next is not None:
                    tb = tb.tb_next
                origin = tb.tb_frame.f_code.co_filename
                assert "/jax/" not in origin and "/jaxlib/" not in origin, f"{method}: error from inside JAX: {exc}"
                assert len(str(exc)) > 15, f"{method}: unhelpful message {exc!r}"
                outcomes["error"] += 1
                continue
        _check_result(m, caught, method)
        outcomes["result"] += 1
    assert sum(outcomes.values()) == 5
