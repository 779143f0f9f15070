"""
Weak supervision: learning from pairs and calibrating a threshold
=================================================================

Often only pairs are known: "these two rows are similar" (+1) or "these two are not" (-1). The pair
learners (:class:`jaxdml.ITML`, :class:`jaxdml.MMC`, :class:`jaxdml.SDML`, ...) fit on such pairs,
given as index pairs with a ``preprocessor`` (the rows they point to) or as formed pairs of shape
``(n_pairs, 2, n_features)``. A fitted pair learner is also a classifier of pairs: ``predict`` says
+1 when a pair's learned distance is at most ``threshold_``, and :meth:`~jaxdml.ITML.calibrate_threshold`
chooses that threshold on validation pairs for a given criterion.
"""

# %%
# Pairs drawn from the digits
# ---------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score

import jaxdml

X, y = load_digits(return_X_y=True)
X = X / 16.0
rng = np.random.default_rng(0)


def draw_pairs(rows, n_pairs):
    """Index pairs among ``rows``: half of them of one class (+1), half of two classes (-1)."""
    pairs, labels = [], []
    while len(pairs) < n_pairs:
        a, b = rng.choice(rows, 2, replace=False)
        want_similar = len(pairs) % 2 == 0
        if (y[a] == y[b]) == want_similar:
            pairs.append((a, b))
            labels.append(1 if want_similar else -1)
    return np.array(pairs), np.array(labels)


order = rng.permutation(len(X))
train_rows, valid_rows, test_rows = order[:900], order[900:1300], order[1300:]
train_pairs, train_labels = draw_pairs(train_rows, 600)
valid_pairs, valid_labels = draw_pairs(valid_rows, 400)
test_pairs, test_labels = draw_pairs(test_rows, 400)

# %%
# Fit ITML on index pairs
# -----------------------
# The ``preprocessor`` is the array of rows the indices refer to.
itml = jaxdml.ITML(preprocessor=X, random_state=0).fit(train_pairs, train_labels)
euclid = np.linalg.norm(X[test_pairs[:, 0]] - X[test_pairs[:, 1]], axis=1)
auc_euclid, auc_itml = roc_auc_score(test_labels, -euclid), itml.score(test_pairs, test_labels)
print(f"ROC AUC on test pairs: Euclidean {auc_euclid:.3f}, ITML {auc_itml:.3f}")

# %%
# Calibrate the threshold on validation pairs
# -------------------------------------------
thresholds = {}
for strategy, kw in [("accuracy", {}), ("f_beta", {"beta": 1.0}), ("max_tpr", {"min_rate": 0.9})]:
    itml.calibrate_threshold(valid_pairs, valid_labels, strategy=strategy, **kw)
    thresholds[strategy] = itml.threshold_
    acc = np.mean(itml.predict(test_pairs) == test_labels)
    print(f"{strategy:9s} threshold {itml.threshold_:.3f}  test pair accuracy {acc:.3f}")

# %%
# Distances of similar and dissimilar test pairs
# ----------------------------------------------
d = itml.pair_distance(test_pairs)
fig, ax = plt.subplots(figsize=(7, 4))
bins = np.linspace(0, d.max(), 40)
ax.hist(d[test_labels > 0], bins, alpha=0.6, label="similar pairs")
ax.hist(d[test_labels < 0], bins, alpha=0.6, label="dissimilar pairs")
for (strategy, t), color in zip(thresholds.items(), ["k", "tab:red", "tab:green"]):
    ax.axvline(t, color=color, linestyle="--", label=f"threshold ({strategy})")
ax.set_xlabel("learned distance")
ax.legend()
plt.show()
