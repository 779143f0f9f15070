"""
Decision regions of k-NN under a learned metric
===============================================

Two features, three classes, and only the second feature carries the labels: the first has a
large spread that drowns the class structure under the Euclidean distance. A metric learned by NCA
shrinks the first axis, and the regions of a 3-NN classifier follow the classes.
:func:`jaxdml.plotting.plot_metric_comparison` draws the 3-NN regions under the Euclidean distance,
under the learned distance (in the original space) and in the learned embedding.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

import jaxdml
from jaxdml.plotting import plot_decision_regions, plot_metric_comparison

rng = np.random.default_rng(0)
y = np.arange(240) % 3
X = np.c_[rng.normal(size=240) * 3.0, rng.normal(size=240) * 0.35 + 1.0 * y]

nca = jaxdml.NCA(random_state=0).fit(X, y)
print("learned M:\n", np.round(nca.get_mahalanobis_matrix(), 3))

# %%
# Euclidean, learned and embedded regions
# ---------------------------------------
fig = plot_metric_comparison(X, y, nca, k=3, resolution=100, names=("Euclidean", "NCA"))
plt.show()

# %%
# The regions of other learners, side by side
# -------------------------------------------
# :func:`~jaxdml.plotting.plot_decision_regions` draws one panel; ``metric`` may be any fitted learner.
learners = {"LMNN": jaxdml.LMNN(), "LDA": jaxdml.LDA(), "ITML": jaxdml.ITML(random_state=0)}
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
for ax, (name, learner) in zip(axes, learners.items()):
    plot_decision_regions(X, y, learner.fit(X, y), k=3, ax=ax, resolution=100, title=name)
fig.tight_layout()
plt.show()
