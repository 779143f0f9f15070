"""jaxdml.load reads what FittedMetric.save and the CLI's --out write, and transforms identically."""

import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import minmax_scale

import jaxdml
from jaxdml.persistence import save


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


def _tiny_metric():
    X = np.array([[0.0, 0.1, 0.2], [0.1, 0.0, 0.3], [1.0, 0.9, 0.8], [0.9, 1.1, 1.0], [0.2, 0.2, 0.1],
                  [1.1, 1.0, 0.9]])
    y = np.array([0, 0, 1, 1, 0, 1])
    return X, jaxdml.fit(X, y, loss="lda")


def _arrays(path):
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def test_save_function_and_path_forms(tmp_path):
    X, m = _tiny_metric()
    written = save(m, tmp_path / "m")  # the module function is the method
    assert written.endswith("m.npz")
    back = jaxdml.load(str(tmp_path / "m"))  # ".npz" found when the path lacks it
    np.testing.assert_array_equal(back.transform(X), m.transform(X))
    assert back.loss == m.loss or (back.loss is None and m.loss is None)
    with pytest.raises(TypeError, match="path must be a str"):
        jaxdml.load(3)
    with pytest.raises(FileNotFoundError, match="no metric file"):
        jaxdml.load(tmp_path / "absent")
    with pytest.raises(ValueError, match="is a folder"):
        jaxdml.load(tmp_path)
    np.save(tmp_path / "single.npy", np.eye(2))
    with pytest.raises(ValueError, match="single NumPy array"):
        jaxdml.load(tmp_path / "single.npy")


def test_damaged_member_is_a_value_error(tmp_path):
    _, m = _tiny_metric()
    path = m.save(tmp_path / "m.npz")
    data = bytearray(open(path, "rb").read())
    raw = np.asarray(m.L, dtype=np.float64).tobytes()  # np.savez stores members uncompressed
    at = bytes(data).index(raw)
    data[at] ^= 0xFF  # one byte of L changed: the member's CRC no longer matches
    (tmp_path / "bad.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="damaged or not a jaxdml metric file"):
        jaxdml.load(tmp_path / "bad.npz")


def _edit(arrays, **changes):
    out = dict(arrays)
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = np.asarray(value)
    return out


# each file is the saved metric with one field missing or wrong; the error names that field
_LINEAR_CASES = [
    (dict(format_version=None), "'format_version' is missing"),
    (dict(format_version=np.array([1, 1])), "'format_version' must be a single value"),
    (dict(format_version=1.5), "'format_version' must be a int"),
    (dict(format_version=99), "'format_version' is 99"),
    (dict(kind=1), "'kind' must be a string"),
    (dict(kind="quadratic"), "'kind' must be 'linear' or 'kernel'"),
    (dict(L=np.zeros(3)), "'L' must be a 2-D array"),
    (dict(L=np.array([["a", "b"]])), "'L' must hold numbers"),
    (dict(L=np.array([[np.nan, 1.0, 0.0]])), "'L' contains NaN or infinity"),
    (dict(L=np.zeros((0, 3))), "'L' is empty"),
    (dict(n_iter=-1), "'n_iter' must be >= 0"),
    (dict(classes_kind="dict"), "'classes_kind' must be 'none', 'array' or 'str'"),
    (dict(M=np.eye(2)), "'M' must have shape"),
    (dict(input_offset=np.zeros(3)), "'input_scale' is missing"),
    (dict(input_offset=np.zeros(2), input_scale=np.ones(2)), "'input_offset' must have one entry per feature"),
]


@pytest.mark.parametrize("changes,message", _LINEAR_CASES)
def test_bad_linear_fields_are_named(tmp_path, changes, message):
    _, m = _tiny_metric()
    arrays = _arrays(m.save(tmp_path / "m.npz"))
    arrays.pop("input_offset", None), arrays.pop("input_scale", None)
    np.savez(tmp_path / "bad.npz", **_edit(arrays, **changes))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        jaxdml.load(tmp_path / "bad.npz")
    assert "bad.npz" in str(err.value)


def test_input_scaling_round_trip(tmp_path):
    X, m = _tiny_metric()
    arrays = _arrays(m.save(tmp_path / "m.npz"))
    offset, scale = np.array([0.5, -1.0, 2.0]), np.array([2.0, 0.5, 1.0])
    np.savez(tmp_path / "s.npz", **_edit(arrays, input_offset=offset, input_scale=scale))
    back = jaxdml.load(tmp_path / "s.npz")
    np.testing.assert_array_equal(back.input_scaling[0], offset)
    np.testing.assert_array_equal(back.input_scaling[1], scale)


def _kernel_arrays(tmp_path):
    X, y = _tiny_metric()[0], np.array([0, 0, 1, 1, 0, 1])
    m = jaxdml.fit(X, y, loss="kda", kernel="rbf", gamma=0.5)
    return _arrays(m.save(tmp_path / "k.npz"))


@pytest.mark.parametrize("changes,message", [
    (dict(X_fit=np.zeros((2, 3))), "'X_fit' must have one row per column of L"),
    (dict(kernel="spline"), "'kernel' must be one of"),
    (dict(kernel_params="{not json"), "'kernel_params' is not valid JSON"),
    (dict(kernel_params="[1, 2]"), "'kernel_params' must be a JSON object"),
    (dict(kernel_params='{"gamma": [1]}'), "'kernel_params' must be a JSON object"),
])
def test_bad_kernel_fields_are_named(tmp_path, changes, message):
    arrays = _kernel_arrays(tmp_path)
    np.savez(tmp_path / "bad.npz", **_edit(arrays, **changes))
    with pytest.raises(ValueError, match=message):
        jaxdml.load(tmp_path / "bad.npz")
