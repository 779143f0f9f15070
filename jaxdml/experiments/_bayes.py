r"""Bayesian sign test between two algorithms' per-dataset scores (Benavoli et al., 2017).

The differences :math:`z_i = a_i - b_i` over the datasets are modelled with a Dirichlet process
prior :math:`DP(s, \delta_{z_0})` (strength ``prior_strength`` :math:`s`, pseudo-observation
``prior_place`` :math:`z_0`). Partitioning the real line into
:math:`(r, \infty)` (the first algorithm is better), :math:`[-r, r]` (the rope: practically
equivalent) and :math:`(-\infty, -r)` (the second is better), the posterior probabilities of the
three regions are

.. math::

    (\theta_1, \theta_0, \theta_2) \sim \mathrm{Dirichlet}(n_1 + s\,[z_0 > r],\;
    n_0 + s\,[|z_0| \le r],\; n_2 + s\,[z_0 < -r])

where :math:`n_1, n_0, n_2` count the datasets in each region. The test reports, from samples of
that posterior, the probability that each region is the most probable one:
``p_first = P(theta_1 > max(theta_0, theta_2))`` and likewise ``p_rope`` and ``p_second``. The
paper's setting is ``rope = 0.01``, ``prior_strength = 1``, ``prior_place = 0`` (the prior mass
sits in the rope).

baycomp's ``SignTest`` expresses the same prior (``prior=1`` on the rope) but adds ``1e-4`` to
every Dirichlet parameter; here the parameters are exact (a region with no observation and no
prior mass has probability 0), and the tests check both agree where the ``1e-4`` is negligible.

References
----------
A. Benavoli, G. Corani, J. Demsar, M. Zaffalon. Time for a change: a tutorial for comparing
multiple classifiers through Bayesian analysis. JMLR 18(77), 2017.
A. Benavoli, F. Mangili, G. Corani, M. Zaffalon, F. Ruggeri. A Bayesian Wilcoxon signed-rank test
based on the Dirichlet process. ICML 2014.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["SignTestResult", "bayesian_sign_test", "compare_columns"]

# scores are means of fold accuracies: a difference of exactly the rope width can come out as
# 0.010000000000000009; treat it as inside the (closed) rope
_EDGE = 1e-12


class SignTestResult(NamedTuple):
    """Outcome of :func:`bayesian_sign_test`.

    ``p_first``, ``p_rope``, ``p_second``: posterior probabilities that the first algorithm is
    better, that they are practically equivalent, that the second is better (they sum to 1).
    ``counts``: datasets in each region ``(first, rope, second)``; ``alpha``: the posterior
    Dirichlet parameters; ``samples``: posterior samples ``(n_samples, 3)`` in the same order.
    """

    p_first: float
    p_rope: float
    p_second: float
    names: tuple
    counts: tuple
    alpha: np.ndarray
    samples: np.ndarray
    rope: float
    prior_strength: float
    prior_place: float

    @property
    def probabilities(self) -> tuple:
        """``(p_first, p_rope, p_second)``: the posterior probabilities of the three regions."""
        return (self.p_first, self.p_rope, self.p_second)

    def __str__(self) -> str:
        a, b = self.names
        n = sum(self.counts)
        w = max(len(a), len(b)) * 2 + 6
        return "\n".join([
            f"Bayesian sign test on {n} datasets (rope [{-self.rope:g}, {self.rope:g}], prior strength "
            f"{self.prior_strength:g}, prior pseudo-observation {self.prior_place:g})",
            f"  datasets: {a} better {self.counts[0]}, rope {self.counts[1]}, {b} better {self.counts[2]}",
            f"  {'P(' + a + ' > ' + b + ')':<{w}} = {self.p_first:.4f}",
            f"  {'P(rope)':<{w}} = {self.p_rope:.4f}",
            f"  {'P(' + b + ' > ' + a + ')':<{w}} = {self.p_second:.4f}",
        ])


def bayesian_sign_test(a, b, *, rope: float = 0.01, prior_strength: float = 1.0, prior_place: float = 0.0,
                       n_samples: int = 50000, random_state=0, names=("A", "B")) -> SignTestResult:
    """Bayesian sign test of scores ``a`` (first algorithm) against ``b`` (second), paired by dataset.

    Parameters
    ----------
    a, b : array-like of shape (n_datasets,)
        Scores (e.g. mean accuracies) of the two algorithms on the same datasets.
    rope : float, default=0.01
        Half-width of the region of practical equivalence ``[-rope, rope]``.
    prior_strength : float, default=1.0
        Strength ``s`` of the Dirichlet process prior.
    prior_place : float, default=0.0
        Pseudo-observation ``z_0`` of the prior (0: in the rope).
    n_samples : int, default=50000
        Posterior samples used to estimate the probabilities.
    random_state : int or numpy Generator, default=0
    names : tuple of two str

    Returns
    -------
    SignTestResult

    Examples
    --------
    >>> r = bayesian_sign_test([0.9, 0.8, 0.85, 0.7], [0.8, 0.7, 0.85, 0.6], names=("NCA", "Euclidean"))
    >>> r.counts, round(r.p_first + r.p_rope + r.p_second, 6)
    ((3, 1, 0), 1.0)
    """
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"the two score vectors must have the same length; got {a.size} and {b.size}.")
    if a.size == 0:
        raise ValueError("no paired scores to compare (every dataset has a missing value?).")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("scores must be finite; drop datasets with missing results first.")
    if not (np.isfinite(rope) and rope >= 0):
        raise ValueError(f"rope must be a non-negative number; got {rope!r}.")
    if not (np.isfinite(prior_strength) and prior_strength >= 0):
        raise ValueError(f"prior_strength must be a non-negative number; got {prior_strength!r}.")
    if int(n_samples) < 1:
        raise ValueError(f"n_samples must be positive; got {n_samples!r}.")
    z = a - b
    n_first = int(np.sum(z > rope + _EDGE))
    n_second = int(np.sum(z < -rope - _EDGE))
    n_rope = int(z.size - n_first - n_second)
    prior = np.array([prior_place > rope + _EDGE, abs(prior_place) <= rope + _EDGE, prior_place < -rope - _EDGE],
                     dtype=np.float64) * float(prior_strength)
    alpha = np.array([n_first, n_rope, n_second], dtype=np.float64) + prior
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    samples = rng.dirichlet(alpha, size=int(n_samples))  # alpha_j = 0 gives theta_j = 0 exactly
    winners = np.argmax(samples, axis=1)
    p = np.bincount(winners, minlength=3) / len(winners)
    return SignTestResult(float(p[0]), float(p[1]), float(p[2]), tuple(names), (n_first, n_rope, n_second),
                          alpha, samples, float(rope), float(prior_strength), float(prior_place))


def compare_columns(table, first: str, second: str, **kwargs) -> SignTestResult:
    """Sign test between two columns of a :class:`~jaxdml.experiments.Table` (datasets where either
    has no value are left out)."""
    i, j = table._col(first), table._col(second)
    a, b = table.values[:, i], table.values[:, j]
    ok = ~(np.isnan(a) | np.isnan(b))
    if not ok.any():
        raise ValueError(f"{table.columns[i]!r} and {table.columns[j]!r} have no dataset with both results.")
    kwargs.setdefault("names", (table.columns[i], table.columns[j]))
    return bayesian_sign_test(a[ok], b[ok], **kwargs)
