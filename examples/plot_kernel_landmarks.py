"""
Kernel methods: landmarks against the exact kernel
==================================================

The kernel methods (:class:`jaxdml.KDA`, :class:`jaxdml.KANMM`, :class:`jaxdml.KDMLMJ`,
:class:`jaxdml.KLLDA`, :class:`jaxdml.KLMNN`, ...) form an ``n x n`` kernel matrix, which does not
scale. With ``n_landmarks=m`` they run on the Nystroem features of ``m`` landmarks chosen by k-means++
in the kernel's feature space: memory ``O(n m)`` and a ``transform`` that costs ``O(m)`` per row.
With ``n_landmarks=None`` the method is exact. This example compares both for KDA on the digits:
test 3-NN accuracy and warm fit time (compilation excluded) as the number of landmarks grows.
"""

# %%
import os
import time

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

import jaxdml

small = os.environ.get("JAXDML_GALLERY_SMALL") == "1"
X, y = load_digits(return_X_y=True)
X = X / 16.0
Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=600 if small else 1200, stratify=y, random_state=0)


def evaluate(n_landmarks):
    kda = jaxdml.KDA(n_components=9, kernel="rbf", gamma=0.05, n_landmarks=n_landmarks, random_state=0)
    kda.fit(Xtr, ytr)  # the first fit of a shape compiles; time the second
    start = time.perf_counter()
    kda.fit(Xtr, ytr)
    seconds = time.perf_counter() - start
    acc = KNeighborsClassifier(3).fit(kda.transform(Xtr), ytr).score(kda.transform(Xte), yte)
    return acc, seconds


exact_acc, exact_time = evaluate(None)
counts = [25, 100, 400]
results = [evaluate(m) for m in counts]
for m, (acc, seconds) in zip(counts, results):
    print(f"{m:4d} landmarks: 3-NN {acc:.3f} in {seconds:.2f} s")
print(f"exact kernel ({len(Xtr)} rows): 3-NN {exact_acc:.3f} in {exact_time:.2f} s")

# %%
# Accuracy and time against the number of landmarks
# -------------------------------------------------
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ax1.plot(counts, [r[0] for r in results], marker="o", label="landmarks")
ax1.axhline(exact_acc, color="k", linestyle="--", label="exact kernel")
ax1.set_xscale("log")
ax1.set_xlabel("landmarks")
ax1.set_ylabel("test 3-NN accuracy")
ax1.legend()
ax2.plot(counts, [r[1] for r in results], marker="o", label="landmarks")
ax2.axhline(exact_time, color="k", linestyle="--", label="exact kernel")
ax2.set_xscale("log")
ax2.set_xlabel("landmarks")
ax2.set_ylabel("warm fit time (s)")
ax2.legend()
fig.tight_layout()
plt.show()
