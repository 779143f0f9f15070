"""
Deep metric learning and retrieval: Recall@K
============================================

:mod:`jaxdml.losses.deep` holds the losses and miners of deep metric learning as pure functions of a
batch ``(embeddings, labels)``, for any JAX model; :mod:`jaxdml.retrieval` scores an embedding by
retrieval (precision@1, R-precision, MAP@R, Recall@K) from one blockwise nearest-neighbour search.
This example trains a small MLP embedding of the digits with the triplet loss on semi-hard triplets,
drawing batches of 8 classes x 16 rows with :class:`jaxdml.losses.deep.PKSampler`, and compares the
Recall@K of held-out queries with the raw pixels and with NCA's linear map.
"""

# %%
import os
import warnings

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import optax
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import jaxdml
from jaxdml.losses import deep
from jaxdml.retrieval import retrieval_scores

X, y = load_digits(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split((X / 16.0).astype(np.float32), y, train_size=1200, stratify=y,
                                      random_state=0)
n_batches = 100 if os.environ.get("JAXDML_GALLERY_SMALL") == "1" else 300

# %%
# A two-layer MLP, unit-normalised embeddings
# -------------------------------------------
k1, k2 = jax.random.split(jax.random.key(0))
params = {"W1": jax.random.normal(k1, (64, 128)) / 8.0, "b1": jnp.zeros(128),
          "W2": jax.random.normal(k2, (128, 32)) / np.sqrt(128.0), "b2": jnp.zeros(32)}


def embed(p, x):
    z = jax.nn.relu(x @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    return z / jnp.linalg.norm(z, axis=1, keepdims=True)


def loss_fn(p, x, labels):
    return deep.triplet_margin(embed(p, x), labels, margin=0.2, miner=deep.semi_hard)


opt = optax.adam(1e-3)
state = opt.init(params)


@jax.jit
def step(p, state, x, labels):
    loss, grads = jax.value_and_grad(loss_fn)(p, x, labels)
    updates, state = opt.update(grads, state, p)
    return optax.apply_updates(p, updates), state, loss


losses = []
for rows in deep.PKSampler(ytr, p=8, k=16, n_batches=n_batches, seed=0):
    params, state, loss = step(params, state, Xtr[rows], ytr[rows])
    losses.append(float(loss))

# %%
# Recall@K of the test rows, each querying the other test rows
# ------------------------------------------------------------
ks = (1, 2, 4, 8, 16)
warnings.filterwarnings("ignore", message=".*did not converge")  # NCA's default budget, 100 iterations
nca = jaxdml.fit(Xtr, ytr, loss="nca", n_components=32, random_state=0)
embeddings = {"pixels (Euclidean)": Xte, "NCA (linear)": nca.transform(Xte),
              "MLP + triplets": np.asarray(embed(params, Xte))}
recall = {}
for name, Z in embeddings.items():
    scores = retrieval_scores(Z, yte, k=ks)
    recall[name] = [scores[f"recall_at_{k}"] for k in ks]
    print(f"{name:20s} P@1 {scores['precision_at_1']:.3f}  MAP@R {scores['map_at_r']:.3f}  "
          + "  ".join(f"R@{k} {r:.3f}" for k, r in zip(ks, recall[name])))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.plot(losses, alpha=0.4)
ax1.plot(np.convolve(losses, np.ones(25) / 25, mode="valid"))
ax1.set_xlabel("step")
ax1.set_ylabel("triplet loss (semi-hard)")
for name, values in recall.items():
    ax2.plot(ks, values, marker="o", label=name)
ax2.set_xscale("log", base=2)
ax2.set_xlabel("K")
ax2.set_ylabel("Recall@K")
ax2.legend()
fig.tight_layout()
plt.show()
