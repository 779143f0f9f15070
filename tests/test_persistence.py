"""jaxdml.load reads what FittedMetric.save and the CLI's --out write, and transforms identically."""

import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import minmax_scale

import jaxdml


@pytest.fixture
def iris():
    X, y = load_iris(return_X_y=True)
    return minmax_scale(X), y


@pytest.mark.parametrize("loss", ["lda", "itml", "nca"])
def test_linear_round_trip(tmp_path, iris, loss):
    X, y = iris
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    m = jaxdml.fit(X, labels, loss=loss, max_iter=20)
    written = m.save(tmp_path / "m")  # numpy appends .npz: the path returned says so
    assert written.endswith("m.npz")
    back = jaxdml.load(written)
    np.testing.assert_array_equal(back.L, m.L)
    np.testing.assert_array_equal(back.M, m.M)
    np.testing.assert_array_equal(back.transform(X), m.transform(X))
    assert back.method == loss and back.n_iter == m.n_iter and back.converged == m.converged
    assert list(back.classes) == list(m.classes)


@pytest.mark.parametrize("kernel,params", [("rbf", dict(gamma=0.7)), ("poly", dict(degree=2, coef0=0.5))])
def test_kernel_round_trip(tmp_path, iris, kernel, params):
    X, y = iris
    m = jaxdml.fit(X, y, loss="kda", kernel=kernel, **params)
    back = jaxdml.load(m.save(tmp_path / "k.npz"))
    assert isinstance(back, jaxdml.KernelFittedMetric) and back.kernel == kernel
    Xn = np.random.default_rng(0).random((7, 4))
    np.testing.assert_allclose(back.transform(Xn), m.transform(Xn), rtol=1e-12, atol=1e-12)


def test_callable_kernel_and_bad_files(tmp_path, iris):
    X, y = iris
    m = jaxdml.fit(X, y, loss="kda", kernel=lambda A, B: A @ B.T)
    with pytest.raises(ValueError, match="callable"):
        m.save(tmp_path / "c.npz")
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a jaxdml metric file"):
        jaxdml.load(tmp_path / "other.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="not a jaxdml metric file"):
        jaxdml.load(tmp_path / "text.npz")


def test_cli_out_transforms_raw_data(tmp_path, capsys):
    from jaxdml.cli import main

    out = tmp_path / "mm"
    assert main(["fit", "--loss", "lda", "--dataset", "iris", "--folds", "3", "--quiet", "--out", str(out)]) == 0
    assert f"{out}.npz" in capsys.readouterr().out
    back = jaxdml.load(f"{out}.npz")
    X, y = load_iris(return_X_y=True)
    ref = jaxdml.fit(minmax_scale(X), y, loss="lda")
    np.testing.assert_allclose(back.transform(X), ref.transform(minmax_scale(X)), rtol=1e-6, atol=1e-8)


def test_cli_unwritable_out_fails_before_fitting(tmp_path, capsys):
    from jaxdml.cli import main

    assert main(["fit", "--loss", "lda", "--dataset", "iris", "--quiet", "--out",
                 str(tmp_path / "missing" / "m.npz")]) == 2
    captured = capsys.readouterr()
    assert "cannot write --out" in captured.err and "accuracy" not in captured.out


@pytest.mark.slow
def test_estimators_with_optax_optimizers_pickle_across_processes(tmp_path, iris):
    import pickle

    import optax

    X, y = iris
    est = jaxdml.NCA(optimizer=optax.chain(optax.clip(1.0), optax.adam(1e-2)), max_iter=5).fit(X, y)
    path = tmp_path / "est.pkl"
    path.write_bytes(pickle.dumps(est))
    code = ("import pickle, sys, numpy as np; est = pickle.loads(open(sys.argv[1], 'rb').read()); "
            "from sklearn.datasets import load_iris; from sklearn.preprocessing import minmax_scale; "
            "X = minmax_scale(load_iris(return_X_y=True)[0]); np.save(sys.argv[2], est.transform(X)); "
            "est.fit(X, load_iris(return_X_y=True)[1])")  # the restored optimizer still trains
    res = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "z.npy")], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    np.testing.assert_array_equal(np.load(tmp_path / "z.npy"), est.transform(X))
