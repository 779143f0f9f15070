"""
An embedding before and after LMNN and NCA
==========================================

The wine data set has 13 features on very different scales and three classes. Projected to two
dimensions by PCA, the classes overlap; a two-dimensional map learned by NCA or LMNN pulls each
class together. This example fits both with :func:`jaxdml.fit` and draws the three embeddings with
:func:`jaxdml.plotting.plot_projection`.
"""

# %%
# Data: min-max scaled wine
# -------------------------
import matplotlib.pyplot as plt
from sklearn.datasets import load_wine
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import minmax_scale

import jaxdml
from jaxdml.plotting import plot_projection

X, y = load_wine(return_X_y=True)
X = minmax_scale(X)

# %%
# Three two-dimensional maps
# --------------------------
# PCA ignores the labels; NCA maximises the expected leave-one-out accuracy of a stochastic nearest
# neighbour; LMNN pulls each row's three target neighbours in and pushes differently labelled rows
# out of their margin. All three return a :class:`jaxdml.FittedMetric` whose ``L`` has two rows.
metrics = {
    "PCA": jaxdml.fit(X, y, loss="pca", n_components=2),
    "NCA": jaxdml.fit(X, y, loss="nca", n_components=2, random_state=0),
    "LMNN": jaxdml.fit(X, y, loss="lmnn", n_components=2, n_neighbors=3, random_state=0),
}

# %%
# The embeddings, with their cross-validated 3-NN accuracy
# --------------------------------------------------------
# (the maps are learned on all rows here, so the accuracy is only indicative)
fig, axes = plt.subplots(1, 3, figsize=(12, 4))
for ax, (name, metric) in zip(axes, metrics.items()):
    Z = metric.transform(X)
    acc = cross_val_score(KNeighborsClassifier(3), Z, y, cv=5).mean()
    plot_projection(X, y, metric, ax=ax, title=f"{name}: 3-NN {acc:.3f}")
fig.tight_layout()
plt.show()
