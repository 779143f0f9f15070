"""
Accuracy against dimension (the paper's dimensionality experiment)
==================================================================

The tutorial's Section 5 measures how the k-NN accuracy of dimensionality-reducing learners (PCA,
LDA, ANMM, DMLMJ, NCA, LMNN) changes with the number of dimensions kept.
:func:`jaxdml.experiments.run_experiment` runs it: on KEEL's 10-fold partitions when a folder of them
is given (``data_dir``), otherwise on scikit-learn's bundled data with stratified folds, as here on
the wine data (3 folds). :func:`jaxdml.plotting.plot_dim_curves` draws its table.
The command line runs the same experiment: ``jaxdml experiment dim --data KEEL_FOLDER``.
"""

# %%
import os
import tempfile
import warnings

import matplotlib.pyplot as plt

from jaxdml.experiments import run_experiment
from jaxdml.plotting import plot_dim_curves

warnings.filterwarnings("ignore", message=".*did not converge")  # short fits on a few folds
small = os.environ.get("JAXDML_GALLERY_SMALL") == "1"
algorithms = ["PCA", "LDA"] if small else ["PCA", "LDA", "DMLMJ"]
out = tempfile.mkdtemp(prefix="jaxdml-dim-")
# run_experiment looks for a KEEL folder ($JAXDML_KEEL_DIR, then a "shared/keel" folder nearby); point it at an
# empty folder so that this example always uses the bundled data
os.environ["JAXDML_KEEL_DIR"] = tempfile.mkdtemp(prefix="jaxdml-no-keel-")
result = run_experiment("dim", datasets=["wine"], k=3, algorithms=algorithms,
                        dims=[1, 2, 4, "max"], n_folds=3, out_dir=out, progress=False)
print(sorted(result.tables))

# %%
# The test-accuracy table of the wine data and its curves
# -------------------------------------------------------
test, train = result.tables["dim-3nn-wine-test"], result.tables["dim-3nn-wine-train"]
print(test.to_markdown())
fig = plot_dim_curves(test, train, title="wine: 3-NN accuracy against dimension")
plt.show()
