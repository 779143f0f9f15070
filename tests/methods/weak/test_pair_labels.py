"""One pair-label convention inside the library: +1 similar / -1 dissimilar.

Every door that takes pair labels (``jaxdml.fit(..., pairs=, similar=)``, the estimators' ``fit(X,
pairs=, similar=)``, metric-learn's ``fit(pairs, y)``, ``score``, ``calibrate_threshold``,
``make_pairs_problem``) accepts +1/-1, 1/0 and booleans and converts them once
(:func:`jaxdml._validation.check_pair_labels`); anything else raises a ``ValueError`` that names the
argument and the problem. Below the door the library holds +1/-1 only.
"""

import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import jaxdml
from jaxdml._validation import check_pair_labels
from jaxdml.methods.gradient import _collapse
from jaxdml.methods.weak import _pairs
from jaxdml.methods.core._tuples import fit_kwargs, prepare_tuples
from jaxdml.problems import labelled_pairs, pairs_from_labels


@pytest.fixture(scope="module")
def wine_pairs():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(X), 120), rng.integers(0, len(X), 120)
    keep = a != b
    P = np.stack([a[keep], b[keep]], axis=1)
    flags = (y[P[:, 0]] == y[P[:, 1]]).astype(int)  # 1/0
    return X, y, P, flags


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _conventions(flags):
    """The same labels written in every accepted form."""
    return {"1/0 int": flags, "1/0 float": flags.astype(float), "+1/-1": 2 * flags - 1,
            "+1/-1 float": (2 * flags - 1).astype(float), "bool": flags.astype(bool), "list": flags.tolist()}


# --------------------------------------------------------------------------- (a) every form, one fit
@pytest.mark.parametrize("loss,kw", [("itml", {}), ("lsi", dict(max_iter=50)), ("mmc", dict(max_iter=50)),
                                     ("dml_eig", dict(max_iter=30)), ("sdml", {}), ("gmml", {})])
def test_label_forms_give_the_same_fit_through_jaxdml_fit(loss, kw, wine_pairs):
    X, _, P, flags = wine_pairs
    fits = {name: jaxdml.fit(X, None, loss=loss, pairs=P, similar=lab, random_state=0, **kw)
            for name, lab in _conventions(flags).items()}
    ref = fits.pop("1/0 int")
    for name, m in fits.items():
        np.testing.assert_array_equal(m.M, ref.M, err_msg=name)


@pytest.mark.parametrize("cls,kw", [(jaxdml.ITML, {}), (jaxdml.MMC, dict(max_iter=50)),
                                    (jaxdml.SDML, {}), (jaxdml.LDML, dict(max_iter=30))])
def test_label_forms_give_the_same_fit_through_the_estimators(cls, kw, wine_pairs):
    X, _, P, flags = wine_pairs
    pm = 2 * flags - 1
    ref = cls(random_state=0, **kw).fit(X[P], pm)  # metric-learn's form and convention
    threshold, auc = ref.threshold_, ref.score(X[P], pm)
    f_beta = ref.calibrate_threshold(X[P], pm, strategy="f_beta").threshold_
    for name, lab in _conventions(flags).items():
        est = cls(random_state=0, **kw).fit(X[P], lab)
        np.testing.assert_array_equal(est.metric_, ref.metric_, err_msg=name)
        assert est.threshold_ == threshold, name
        assert est.score(X[P], lab) == auc, name
        assert est.calibrate_threshold(X[P], lab, strategy="f_beta").threshold_ == f_beta, name
    if cls is not jaxdml.LDML:  # index pairs into X by keyword
        by_flags = cls(random_state=0, **kw).fit(X, pairs=P, similar=flags.astype(bool)).metric_
        np.testing.assert_array_equal(by_flags, cls(random_state=0, **kw).fit(X, pairs=P, similar=pm).metric_)


def test_all_one_kind_reads_the_same_in_both_conventions():
    np.testing.assert_array_equal(check_pair_labels([1, 1, 1], 3, "t"), [1, 1, 1])
    np.testing.assert_array_equal(check_pair_labels([0, 0], 2, "t"), [-1, -1])
    np.testing.assert_array_equal(check_pair_labels([-1.0, -1.0], 2, "t"), [-1, -1])
    np.testing.assert_array_equal(check_pair_labels(np.array([True, False]), 2, "t"), [1, -1])
    out = check_pair_labels(np.array([1, 0, 1], dtype=np.uint8), 3, "t")
    assert out.dtype == np.int64 and out.tolist() == [1, -1, 1]


# --------------------------------------------------------------------------- (b) anything else: a clear error
BAD = {
    "2": ([2, 0, 1], r"must be \+1/-1 or 1/0.*found \[2\.0\]"),
    "0.5": ([1, 0.5, 0], r"must be \+1/-1 or 1/0.*found \[0\.5\]"),
    "NaN": ([1, np.nan, 0], r"must be \+1/-1 or 1/0.*found \[nan\]"),
    "-1, 0 and 1": ([1, 0, -1], "mix the two conventions: they hold both -1"),
    "-1 and 0": ([0, -1, 0], "mix the two conventions"),
    "strings": (np.array(["1", "0", "1"]), "got string values"),
    "None in objects": (np.array([1, None, 0], dtype=object), "got object values"),
    "length": ([1, 0], r"one label per pair \(3\); got shape \(2,\)"),
    "2-D": ([[1], [0], [1]], r"one label per pair \(3\); got shape \(3, 1\)"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_labels_raise_a_clear_error_at_every_door(case, wine_pairs):
    X, _, P, _ = wine_pairs
    lab, msg = BAD[case]
    P3 = P[:3]
    doors = {
        "jaxdml.fit": (lambda: jaxdml.fit(X, None, loss="lsi", pairs=P3, similar=lab), "method 'lsi': .*similar"),
        "fit(X, pairs=, similar=)": (lambda: jaxdml.ITML().fit(X, pairs=P3, similar=lab), "method 'itml': .*similar"),
        "fit(pairs, y)": (lambda: jaxdml.ITML().fit(X[P3], lab), r"ITML\.fit: .*y"),
        "fit(index pairs, y)": (lambda: jaxdml.LDML(preprocessor=X).fit(P3, lab), r"LDML\.fit: .*y"),
        "make_pairs_problem": (lambda: jaxdml.make_pairs_problem(X, P3, lab), "make_pairs_problem: .*similar"),
    }
    for door, (call, who) in doors.items():
        with pytest.raises(ValueError) as err:
            call()
        text = str(err.value)
        assert re.search(msg, text), f"{door}: {text}"
        assert re.search(who, text), f"{door}: {text}"


def test_bad_labels_rejected_by_score_and_calibration(wine_pairs):
    X, _, P, flags = wine_pairs
    est = jaxdml.ITML(random_state=0).fit(X[P], flags)
    mixed = flags.copy()
    mixed[:2] = [-1, 0]
    for bad in ([2] * len(P), mixed, flags + 0.5):
        with pytest.raises(ValueError, match=r"ITML\.score: pair labels y"):
            est.score(X[P], bad)
        with pytest.raises(ValueError, match=r"ITML\.calibrate_threshold: pair labels y"):
            est.calibrate_threshold(X[P], bad)


def test_one_rule_for_index_pairs(wine_pairs):
    """``make_pairs_problem`` checks its pairs with ``index_tuples``, as ``jaxdml.fit`` does: whole-number
    floats are indices, fractions and booleans are not."""
    X, _, P, flags = wine_pairs
    as_float = jaxdml.make_pairs_problem(X, P.astype(float), flags)
    np.testing.assert_array_equal(np.asarray(as_float.a), P[:, 0])
    np.testing.assert_array_equal(np.asarray(as_float.b), P[:, 1])
    np.testing.assert_array_equal(jaxdml.fit(X, None, loss="itml", pairs=P.astype(float), similar=flags,
                                             random_state=0).M,
                                  jaxdml.fit(X, None, loss="itml", pairs=P, similar=flags, random_state=0).M)
    for bad, msg in ((P + 0.5, "not whole numbers"), (P.astype(bool), "integer row indices"),
                     (P[:, :1], r"shape \(n, 2\)"), (P + len(X), re.escape(f"[0, {len(X) - 1}]"))):
        for call in (lambda: jaxdml.make_pairs_problem(X, bad, flags[: len(bad)]),
                     lambda: jaxdml.fit(X, None, loss="itml", pairs=bad, similar=flags[: len(bad)])):
            with pytest.raises(ValueError, match=msg):
                call()


# --------------------------------------------------------------------------- (c) +1/-1 inside
def test_the_problem_holds_plus_minus_one(wine_pairs):
    X, _, P, flags = wine_pairs
    for lab in _conventions(flags).values():
        prob = jaxdml.make_pairs_problem(X, P, lab, pad_to=len(P) + 5)
        labels = np.asarray(prob.labels)
        np.testing.assert_array_equal(labels[: len(P)], 2 * flags - 1)
        np.testing.assert_array_equal(labels[len(P):], 0)  # padding: no label, pair_mask 0
        np.testing.assert_array_equal(np.asarray(prob.pair_mask), np.r_[np.ones(len(P)), np.zeros(5)])
        # the 0/1 views the losses read, derived from the labels
        np.testing.assert_array_equal(np.asarray(prob.similar), np.r_[flags, np.zeros(5)])
        np.testing.assert_array_equal(np.asarray(prob.dissimilar), np.r_[1 - flags, np.zeros(5)])
    assert "labels" in jaxdml.PairsProblem._fields and "similar" not in jaxdml.PairsProblem._fields


def test_the_solvers_receive_plus_minus_one(wine_pairs, monkeypatch):
    X, y, P, flags = wine_pairs
    seen = []
    real = jaxdml.make_pairs_problem

    def spy(*args, **kw):
        prob = real(*args, **kw)
        seen.append(np.asarray(prob.labels)[np.asarray(prob.pair_mask) > 0])
        return prob

    monkeypatch.setattr(_pairs, "make_pairs_problem", spy)
    monkeypatch.setattr(_collapse, "make_pairs_problem", spy)
    jaxdml.fit(X, None, loss="lsi", pairs=P, similar=flags.astype(bool), max_iter=5)  # given pairs
    jaxdml.fit(X, y, loss="dml_eig", n_constraints=40, max_iter=5, random_state=0)  # pairs sampled from labels
    jaxdml.LDML(max_iter=5).fit(X[P], flags)  # LDML's own solve step
    assert len(seen) == 3
    for labels in seen:
        assert set(np.unique(labels)) == {-1.0, 1.0}
    np.testing.assert_array_equal(np.sort(seen[0]), np.sort(2.0 * flags - 1))
    # the door's outputs
    sup = _pairs.supervision("itml", X, None, 0, P, flags.astype(float))
    assert sup[2].dtype == np.int64 and np.array_equal(sup[2], 2 * flags - 1)
    data = prepare_tuples(X[P], flags, arities=(2,))
    assert data.y.dtype == np.int64 and np.array_equal(data.y, 2 * flags - 1)
    assert np.array_equal(fit_kwargs(data)["similar"], 2 * flags - 1)
    a, b, s = _pairs.sample_pairs(y.astype(np.int32), 10, 10, np.random.RandomState(0))
    assert set(s.tolist()) == {-1, 1} and np.array_equal(s > 0, y[a] == y[b])


def test_results_keep_their_documented_meaning(wine_pairs):
    """``info["similar"]`` (ITML, SDML) and ``pairs_from_labels`` keep their 0/1 flags; the +1/-1 labels
    sit beside them."""
    X, y, P, flags = wine_pairs
    for loss in ("itml", "sdml"):
        m = jaxdml.fit(X, None, loss=loss, pairs=P, similar=2 * flags - 1, random_state=0)
        labels, similar = m.info["labels"], m.info["similar"]
        assert set(np.unique(labels).tolist()) == {-1, 1}
        np.testing.assert_array_equal(similar, (labels > 0).astype(float))
        Q = m.info["pairs"]
        np.testing.assert_array_equal(similar, (y[Q[:, 0]] == y[Q[:, 1]]).astype(float))
    a, b, s = pairs_from_labels(y, n_similar=20, n_dissimilar=20, random_state=0)
    a2, b2, labels = labelled_pairs(y, n_similar=20, n_dissimilar=20, random_state=0)
    assert s.dtype == np.float64 and set(s.tolist()) == {0.0, 1.0}
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    np.testing.assert_array_equal(s, (labels > 0).astype(float))
    np.testing.assert_array_equal(s == 1, y[a] == y[b])
