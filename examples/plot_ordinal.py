"""
An ordinal learner: grades, not classes
=======================================

When the labels are ordered grades (ratings, severity levels, ages in bands), a confusion between
grades 1 and 2 is milder than one between 1 and 5. The ordinal learners (:class:`jaxdml.LODML`,
:class:`jaxdml.CMOML` and their kernel forms) learn a metric in which rows of nearby grades are
near; :class:`jaxdml.KNeighborsOrdinal` predicts the median grade of the nearest neighbours and is
scored by the mean absolute error. Here the grades come from a hidden score that depends on 3 of 12
features; the other 9 are noise of a larger scale.
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

import jaxdml

rng = np.random.default_rng(0)
n = 1200
informative = rng.normal(size=(n, 3))
noise = 3.0 * rng.normal(size=(n, 9))
X = np.c_[informative, noise]
score = informative @ np.array([1.0, -0.7, 0.5]) + 0.2 * rng.normal(size=n)
y = np.digitize(score, np.quantile(score, [0.2, 0.4, 0.6, 0.8])) + 1  # grades 1..5
Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=800, random_state=0)

# %%
# Euclidean, LODML and CMOML under the same ordinal k-NN
# ------------------------------------------------------
warnings.filterwarnings("ignore", message=".*did not converge")
models = {
    "Euclidean": jaxdml.KNeighborsOrdinal(5),
    "LODML": jaxdml.KNeighborsOrdinal(5, metric_learner=jaxdml.LODML(n_components=2, random_state=0)),
    "CMOML": jaxdml.KNeighborsOrdinal(5, metric_learner=jaxdml.CMOML(n_components=2, random_state=0)),
}
mae = {}
for name, model in models.items():
    model.fit(Xtr, ytr)
    mae[name] = np.mean(np.abs(model.predict(Xte) - yte))
    print(f"{name:10s} test mean absolute error {mae[name]:.3f}")

# %%
# The mean absolute error and LODML's two-dimensional embedding
# -------------------------------------------------------------
Z = models["LODML"].metric_learner_.transform(Xte)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.bar(list(mae), list(mae.values()), color=["tab:gray", "tab:blue", "tab:green"])
ax1.set_ylabel("test mean absolute error (grades)")
points = ax2.scatter(Z[:, 0], Z[:, 1], c=yte, cmap="viridis", s=12)
fig.colorbar(points, ax=ax2, label="grade")
ax2.set_title("LODML embedding of the test rows")
fig.tight_layout()
plt.show()
