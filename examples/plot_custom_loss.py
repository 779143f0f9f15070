"""
A composed loss and a hand-written loss
=======================================

Every gradient method of jaxdml is a pure function ``loss(L, problem, **hyper)`` of the linear map
``L`` and the problem pytree. :func:`jaxdml.fit` accepts a built-in name, a ``{name: weight}`` dict
that adds built-in losses, or any function with that signature, written in plain JAX. Each fit
records the loss at every iterate in ``loss_history``.
"""

# %%
import jax.numpy as jnp
import matplotlib.pyplot as plt
from sklearn.datasets import load_wine
from sklearn.preprocessing import minmax_scale

import jaxdml

X, y = load_wine(return_X_y=True)
X = minmax_scale(X)

# %%
# A weighted sum of built-in losses
# ---------------------------------
combo = jaxdml.fit(X, y, loss={"lmnn": 1.0, "nca": 0.5}, max_iter=60)
print(combo.method, "final loss", combo.loss, "after", combo.n_iter, "iterations")

# %%
# A loss written by hand
# ----------------------
# NCA's softmax over the rows' distances, written with a log-sum-exp, plus a penalty that keeps
# ``M = L^T L`` close to the identity. ``problem.X`` holds the (centred) rows, ``problem.y``
# the class codes and ``problem.sample_mask`` is 0 on the padding rows that bucket the shapes.


def nca_near_identity(L, problem, *, strength=0.05):
    Z = problem.X @ L.T
    sq = jnp.sum(Z**2, axis=1)
    D = sq[:, None] + sq[None, :] - 2 * Z @ Z.T
    mask = problem.sample_mask
    n = mask.shape[0]
    valid = (mask[None, :] > 0) & ~jnp.eye(n, dtype=bool)
    logits = jnp.where(valid, -D, -jnp.inf)
    log_p = logits - jnp.max(logits, axis=1, keepdims=True)
    log_p = log_p - jnp.log(jnp.sum(jnp.exp(log_p), axis=1, keepdims=True))
    same = (problem.y[:, None] == problem.y[None, :]) & valid
    p_correct = jnp.sum(jnp.where(same, jnp.exp(log_p), 0.0), axis=1)
    M = L.T @ L
    penalty = jnp.sum((M - jnp.eye(M.shape[0])) ** 2)
    return -jnp.sum(mask * p_correct) / jnp.sum(mask) + strength * penalty


custom = jaxdml.fit(X, y, loss=nca_near_identity, strength=0.01, max_iter=60)
builtin = jaxdml.fit(X, y, loss="nca", max_iter=60)

# %%
# The loss curves
# ---------------
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
for ax, (title, metric) in zip(axes, [("lmnn + 0.5 nca", combo), ("hand-written NCA + penalty", custom),
                                       ("built-in nca", builtin)]):
    ax.plot(metric.loss_history, marker=".")
    ax.set_title(f"{title}\n{metric.n_iter} iterations, converged={metric.converged}")
    ax.set_xlabel("iteration")
axes[0].set_ylabel("loss")
fig.tight_layout()
plt.show()
