"""
NCA on 200 000 rows
===================

NCA's objective compares every row with every other row: ``O(n^2)`` per step. Above 2 000 rows
jaxdml's default switches to minibatches: 1000 Adam steps, each with 256 anchor rows compared with
1024 rows sampled uniformly (a sampled softmax), so a step's cost does not grow with ``n``. The loss
history of a minibatch fit records one (noisy) value per step. This example fits 200 000 synthetic
rows of 20 features and 10 classes (50 000 with ``JAXDML_GALLERY_SMALL=1``) and scores 3-NN on
held-out rows.
"""

# %%
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.neighbors import KNeighborsClassifier

import jaxdml

n_train = 50_000 if os.environ.get("JAXDML_GALLERY_SMALL") == "1" else 200_000
X, y = make_classification(n_samples=n_train + 2_000, n_features=20, n_informative=8, n_redundant=4,
                           n_classes=10, n_clusters_per_class=1, class_sep=1.0, random_state=0)
X = X.astype(np.float32)
Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:], y[n_train:]

# %%
# Fit with the default settings
# -----------------------------
# On this data the 1000 minibatch steps end before the stopping test passes, so the fit warns that
# it did not converge; the loss history below shows where it stands.
warnings.filterwarnings("ignore", message=".*did not converge")
start = time.perf_counter()
metric = jaxdml.fit(Xtr, ytr, loss="nca", random_state=0)
seconds = time.perf_counter() - start
print(f"NCA on {n_train} x {X.shape[1]} rows: {metric.n_iter} steps in {seconds:.1f} s (compilation included)")

# %%
# 3-NN on held-out rows (the references are 10 000 training rows)
# ---------------------------------------------------------------
ref = slice(0, 10_000)
euclidean = KNeighborsClassifier(3).fit(Xtr[ref], ytr[ref]).score(Xte, yte)
learned = KNeighborsClassifier(3).fit(metric.transform(Xtr[ref]), ytr[ref]).score(metric.transform(Xte), yte)
print(f"3-NN accuracy: Euclidean {euclidean:.3f}, NCA {learned:.3f}")

# %%
# The loss history, with a running mean over 50 steps
# ---------------------------------------------------
history = np.asarray(metric.loss_history)
smooth = np.convolve(history, np.ones(50) / 50, mode="valid")
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(history, alpha=0.3, label="minibatch loss")
ax.plot(np.arange(49, len(history)), smooth, label="running mean (50 steps)")
ax.set_xlabel("Adam step")
ax.set_ylabel("NCA loss")
ax.set_title(f"NCA, {n_train} rows: 3-NN {euclidean:.3f} -> {learned:.3f}")
ax.legend()
plt.show()
