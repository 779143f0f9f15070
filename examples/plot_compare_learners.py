"""
Comparing learners: accuracy and fit time
=========================================

Cross-validated 3-NN accuracy of several metric learners on the wine data, each inside a
scikit-learn :class:`~sklearn.pipeline.Pipeline` (scaling, metric learner, k-NN), with the mean
time of a fold's fit. The first fold of each learner includes JAX's compilation; the other folds
reuse the compiled program, because their rows are padded to the same bucket size.
"""

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler

import jaxdml

X, y = load_wine(return_X_y=True)
learners = {
    "Euclidean": "passthrough",
    "LDA": jaxdml.LDA(),
    "ITML": jaxdml.ITML(random_state=0),
    "NCA": jaxdml.NCA(),
    "LMNN": jaxdml.LMNN(),
}

# %%
# Five stratified folds for every learner
# ---------------------------------------
cv = StratifiedKFold(5, shuffle=True, random_state=0)
accuracy, fit_time = {}, {}
for name, learner in learners.items():
    pipe = Pipeline([("scale", MinMaxScaler()), ("dml", learner), ("knn", KNeighborsClassifier(3))])
    start = time.perf_counter()
    res = cross_validate(pipe, X, y, cv=cv)
    accuracy[name] = res["test_score"].mean()
    fit_time[name] = np.median(res["fit_time"])  # the median skips the compiling fold
    print(f"{name:10s} 3-NN {accuracy[name]:.3f}  median fit {fit_time[name] * 1000:6.1f} ms"
          f"  (all 5 folds {time.perf_counter() - start:.2f} s)")

# %%
# Accuracy against time
# ---------------------
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
names = list(learners)
ax1.barh(names, [accuracy[n] for n in names], color="tab:blue")
ax1.set_xlim(0.85, 1.0)
ax1.set_xlabel("5-fold 3-NN accuracy")
ax2.barh(names, [fit_time[n] * 1000 for n in names], color="tab:orange")
ax2.set_xlabel("median fit time of a fold (ms)")
fig.tight_layout()
plt.show()
