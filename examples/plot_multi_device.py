"""
Several devices (simulated on a CPU)
====================================

``devices="all"`` (or a list of :func:`jax.devices`) splits each step's anchor rows across the
devices with ``shard_map``; data and parameters are replicated and XLA all-reduces the gradient, so
several devices learn the metric of one: the per-device partial sums are added in another order,
so the two fits differ by float round-off, which the L-BFGS iterations carry along. On a machine without accelerators,
XLA can pretend that the CPU is several devices: the flag must be set before JAX is imported, as at
the top of this script. On GPUs or TPUs nothing changes but the devices listed.
"""

# %%
import os

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"

import time
import warnings

import jax
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import minmax_scale

import jaxdml

# jaxdml's on-disk executable cache does not yet tell a one-device fit from a sharded fit of the same
# shapes when a process sees several devices (a later process can load the wrong program); it is
# turned off here until its key includes the devices of the fit
executable_cache = jaxdml.config.get_executable_cache()
jaxdml.config.set_executable_cache(False)
print("devices:", jax.devices())
if len(jax.devices()) == 1:
    # XLA reads the flag when JAX starts its backend (the first call that needs a device): in a process
    # where that happened before this script (e.g. a documentation build running every example in one
    # process) there is one device, and devices="all" below is that device
    print("one device only: JAX's backend had started before XLA_FLAGS was set")
X, y = load_breast_cancer(return_X_y=True)
X = minmax_scale(X)
warnings.filterwarnings("ignore", message=".*did not converge")  # 25 iterations: a short demonstration

# %%
# The same NCA fit on one device and on four
# ------------------------------------------
fits, seconds = {}, {}
sharded = f"all {len(jax.devices())} devices"
for name, devices in [("1 device", None), (sharded, "all")]:
    start = time.perf_counter()
    fits[name] = jaxdml.fit(X, y, loss="nca", max_iter=25, devices=devices, random_state=0)
    seconds[name] = time.perf_counter() - start
    print(f"{name}: loss {fits[name].loss:.6f} after {fits[name].n_iter} iterations, {seconds[name]:.1f} s "
          f"(compilation included; the {len(jax.devices())} simulated devices share the same CPU cores)")
M1, M4 = fits["1 device"].M, fits[sharded].M
# float32: the losses agree to about six digits; M to a small fraction of its largest entry
print("largest difference of M relative to its largest entry: %.2e" % (np.abs(M1 - M4).max() / np.abs(M1).max()))

jaxdml.config.set_executable_cache(executable_cache)

# %%
# Both loss histories
# -------------------
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
for name, metric in fits.items():
    ax1.plot(metric.loss_history, label=name, linestyle="-" if name == "1 device" else "--")
ax1.set_xlabel("L-BFGS iteration")
ax1.set_ylabel("NCA loss")
ax1.legend()
ax2.scatter(M1.ravel(), M4.ravel(), s=4)
ax2.set_xlabel("M entries, 1 device")
ax2.set_ylabel(f"M entries, {sharded}")
fig.tight_layout()
plt.show()
