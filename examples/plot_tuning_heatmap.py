"""
A tuning heatmap
================

:func:`jaxdml.tune_knn` cross-validates a k-NN classifier on a metric learner for every point of a
grid of hyper-parameters, and reports the learner's diagnostics beside the accuracy. A grid that
only changes float hyper-parameters of a gradient learner runs as one compiled program. Here NCA
trained by Adam is tuned over its learning rate and the strength of its penalty ``reg`` on the wine
data, and the mean 3-NN accuracy is drawn as a heatmap.
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.preprocessing import minmax_scale

import jaxdml

X, y = load_wine(return_X_y=True)
X = minmax_scale(X)
rates = [0.001, 0.002, 0.005, 0.01]
regs = [0.0, 1e-4, 1e-3, 1e-2]
# 100 Adam steps rarely meet NCA's tolerance: the fits warn that they stopped at max_iter
warnings.filterwarnings("ignore", message=".*did not converge")
res = jaxdml.tune_knn(jaxdml.NCA(optimizer="adam", max_iter=100), X, y, 3,
                      tune_args={"learning_rate": rates, "reg": regs}, n_folds=5, seed=0)
print("best:", res.best_params, f"3-NN {res.best_score:.3f}", "| one compiled program:", res.vectorised)

# %%
# The grid as a heatmap
# ---------------------
# ``res.results`` is a dict of columns (``pandas.DataFrame(res.results)`` makes a table of it).
table = np.full((len(regs), len(rates)), np.nan)
for rate, reg, score in zip(res.results["learning_rate"], res.results["reg"], res.results["3-NN"]):
    table[regs.index(reg), rates.index(rate)] = score
fig, ax = plt.subplots(figsize=(6, 4))
image = ax.imshow(table, cmap="viridis", origin="lower")
ax.set_xticks(range(len(rates)), [str(r) for r in rates])
ax.set_yticks(range(len(regs)), [str(r) for r in regs])
ax.set_xlabel("learning_rate")
ax.set_ylabel("reg")
for i in range(len(regs)):
    for j in range(len(rates)):
        ax.text(j, i, f"{table[i, j]:.3f}", ha="center", va="center", color="w", fontsize=8)
fig.colorbar(image, label="5-fold 3-NN accuracy")
ax.set_title("NCA (Adam, 100 steps) on wine")
plt.show()
