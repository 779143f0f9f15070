"""The method record: everything that is specific to one metric learning method, and the optimisation
defaults of a gradient loss (:class:`LossSpec`), which a gradient method's record carries."""

from __future__ import annotations

import numbers
from typing import Callable, NamedTuple, Optional

import optax

from ..._validation import Interval, Options
from ...kernels import KERNELS
from ._sampling import stratified_subsample

__all__ = ["Method", "LossSpec", "Route", "MeasuredLoss", "SETTINGS", "GRADIENT_SETTINGS", "SETTING_CONSTRAINTS",
           "check_neighbour_count"]

#: ``jaxdml.fit`` settings beyond the core (n_components, max_iter, tol, random_state, verbose), with
#: the value that means "not set". A method receives the ones it lists in ``Method.settings``; giving
#: another one a value raises.
SETTINGS = dict(init="auto", optimizer=None, learning_rate=None, n_neighbors=None, projection="auto",
                pad_to="auto", batch_size="auto", n_candidates="auto", devices=None, callback=None)
#: the settings of the optax-driven loss methods (all of them)
GRADIENT_SETTINGS = frozenset(SETTINGS)
#: what a set value of each setting may be (a record that lists a setting in its own ``constraints``,
#: e.g. LSI's ``learning_rate`` or DMLMJ's ``n_neighbors``, is checked by that entry instead)
SETTING_CONSTRAINTS = dict(
    init=[Options({"auto", "identity", "pca", "lda", "random"}), "array-like"],
    optimizer=[str, optax.GradientTransformation],
    learning_rate=[Interval(numbers.Real, 0, None, closed="neither")],
    n_neighbors=[Interval(numbers.Integral, 1, None)],
    projection=[Options({"auto"}), "callable", None],
    pad_to=[Options({"auto"}), Interval(numbers.Integral, 1, None), None],
    batch_size=[Options({"auto"}), Interval(numbers.Integral, 1, None), None],
    n_candidates=[Options({"auto"}), Interval(numbers.Integral, 1, None), None],
    devices=[Options({"all"}), list, tuple],
    callback=["callable"],
)

POSITIVE_INT = [Interval(numbers.Integral, 1, None)]
POSITIVE_REAL = [Interval(numbers.Real, 0, None, closed="neither")]
#: ``max_rows`` of the methods that fit a subsample of large data (MLKR, the ordinal learners)
MAX_ROWS = [Options({"auto"}), Interval(numbers.Integral, 20, None), None]


def check_neighbour_count(n_neighbors: int, n: int, owner: str) -> None:
    """The one data-dependent check of ``n_neighbors`` (the settings table checks its type and range): a
    method that pulls each row towards its ``n_neighbors`` nearest rows of its class needs more rows than that."""
    if n_neighbors >= n:
        raise ValueError(f"{owner}: n_neighbors={n_neighbors} must be smaller than n_samples={n}.")


def rows_to_fit(codes, max_rows, auto: int, random_state, *, min_per_class: int = 1):
    """Sorted indices of the rows a method fits under its ``max_rows`` rule (None: every row): above
    the limit (``"auto"``: ``auto``) a class-stratified random subsample of that size (one class: a
    uniform one)."""
    limit = auto if isinstance(max_rows, str) else max_rows
    if limit is None or len(codes) <= limit:
        return None
    return stratified_subsample(codes, int(limit), random_state, min_per_class=min_per_class)
KERNEL_CONSTRAINTS = {
    "kernel": [Options(KERNELS), "callable"],
    "gamma": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "degree": [Interval(numbers.Integral, 1, None)],
    "coef0": [Interval(numbers.Real, None, None)],
    # the Nystrom landmark path (jaxdml.methods.core._landmarks)
    "n_landmarks": [Options({"auto"}), Interval(numbers.Integral, 1, None), None],
}
KERNEL_DEFAULTS = dict(kernel="rbf", gamma=None, degree=3, coef0=1.0, n_landmarks="auto")
# kernel methods without dense eigensolves (truncated eigensolver)
EIGEN_SOLVER = [Options({"auto", "dense", "truncated"})]
EIGEN_SOLVER_DOC = """
    eigen_solver : {"auto", "dense", "truncated"}, default="auto"
        ``"truncated"``: only the ``n_components`` leading eigenpairs, by block Krylov iterations after a Cholesky
        reduction (no dense ``n x n`` eigendecomposition; :func:`jaxdml.eigen.leading_eigh`), checked by
        its residuals, with a dense fallback that ``result_.info["eigen_solver"]`` reports.
        ``"auto"``: truncated when ``n_components <= 50`` and there are at least 400 training samples;
        ``"dense"``: full eigendecompositions (all eigenvalues in ``info``)."""


class LossSpec(NamedTuple):
    """How the driver should treat a registered loss.

    Attributes
    ----------
    fn : the pure loss ``fn(params, problem, **hyper) -> scalar``.
    param : ``"L"`` (linear map, any n_components) or ``"M"`` (PSD metric, full dimension).
    needs : problem fields the loss requires (``"targets"``, ``"centroids"``).
    optimizer : default optimizer name (see :func:`jaxdml.solvers.make_optimizer`).
    learning_rate : default learning rate for first-order optimizers (ignored by L-BFGS).
    max_iter : default iteration budget.
    projection : name of the projection applied after each step (``"psd"``) or None.
    batch_size : default minibatch size (None: full batch). The loss must accept ``anchors=``.
    large_n : sample count above which ``large`` replaces the defaults the user did not set
        (e.g. switch a full-batch L-BFGS method to minibatch Adam on large data).
    large : overrides for large data (keys among optimizer, learning_rate, max_iter, batch_size, and
        ``hyper``: values of hyper-parameters left at ``"auto"``, when the fit also keeps the method's
        optimizer).
    auto_hyper : the value of each hyper-parameter that may be ``"auto"``, on the default path.
    candidates_above : sample count above which each minibatch step compares its anchors with
        ``n_candidates`` uniformly sampled rows instead of every sample (the loss must accept
        ``candidates=``).
    n_candidates : size of that sample.
    """

    fn: Callable
    param: str
    needs: frozenset = frozenset()
    optimizer: str = "lbfgs"
    learning_rate: Optional[float] = None
    max_iter: int = 100
    projection: Optional[str] = None
    batch_size: Optional[int] = None
    large_n: Optional[int] = None
    large: Optional[dict] = None
    candidates_above: Optional[int] = None
    n_candidates: int = 4096
    auto_hyper: dict = {}


class MeasuredLoss(NamedTuple):
    """Where the defaults protocol measured a method's default fit below Euclidean k-NN on real data, at full
    size, though it beat Euclidean on a 2 000-row subset of the same data (``benchmarks/PROTOCOL.md``):
    :func:`jaxdml.methods.run` warns when a fit has at least ``rows`` training rows.

    Attributes
    ----------
    rows : int
        The fewest training rows of the data sets where the loss was measured.
    text : str
        What was measured (data sets, rows, points against Euclidean), ending the warning.
    """

    rows: int
    text: str


class Route(NamedTuple):
    """A solver that replaces the optax driver for some fits of a gradient method (its large-data path):
    the routing policy of the method, held by its record (``Method.route``) and applied once, by
    :func:`jaxdml.methods.core._plan.plan`.

    Attributes
    ----------
    name : str
        What ``info["solver"]`` reports (e.g. ``"active_set"``).
    applies : callable
        ``applies(spec, n, *, optimizer, batch_size, n_candidates, devices, callback, problem_kw) -> bool``:
        whether this fit of ``n`` samples takes the route, given the settings as the user passed them
        (``problem_kw``: the names of the problem hyper-parameters the user set).
    solve : callable
        ``solve(plan) -> FittedMetric``: the solve step on a :class:`~jaxdml.methods.core._plan.GradientPlan`.
    subsample : callable or None
        ``subsample(codes, n_neighbors, random_state) -> row indices or None``: the rows the route fits
        (None: all of them).
    driver : bool
        Whether the route's solver runs the optax driver itself (e.g. MLKR's early stopping, which restarts
        it): the plan then resolves the driver's arguments (optimizer, ``max_iter``, ...) as for a plain
        fit; otherwise it leaves them unresolved.
    """

    name: str
    applies: Callable
    solve: Callable
    subsample: Optional[Callable] = None
    driver: bool = False


class Method(NamedTuple):
    """One metric learning method, as :func:`jaxdml.fit`, the estimators and the experiment runner
    see it.

    Attributes
    ----------
    name : str
        The name ``jaxdml.fit(X, y, loss=name)`` accepts.
    learns : {"L", "M", "A"}
        The linear map ``L``, the PSD metric ``M`` (for gradient methods: the parameter of the
        loss), or the kernel coefficients ``A`` of the representer theorem.
    solve : callable
        ``solve(X, codes, n_classes, *, n_components, random_state, max_iter, tol, verbose,
        **hyper)``: the host-side preparation and the solve step, on validated float64 data and
        label codes (``None`` for unlabelled data). ``max_iter``/``tol`` are None when the user did
        not set them. Returns a dict with ``L`` or ``metric`` (and optionally ``n_iter``,
        ``converged``, ``loss_history``, ``loss``, ``info``) or a ready ``FittedMetric``.
    defaults : dict
        Hyper-parameter -> default, handed to ``solve`` on every fit: the one place to change a
        default (a pure loss's own keyword defaults only serve direct calls of the loss).
    constraints : dict
        Hyper-parameter -> accepted values (scikit-learn's parameter-constraint vocabulary); also
        the list of accepted hyper-parameters: any other raises.
    settings : frozenset
        Which ``jaxdml.fit`` settings of :data:`SETTINGS` the solve step takes.
    supervised : bool
        Whether labels are required (False: ``y`` may be None).
    max_components : callable or None
        ``max_components(n_features, n_classes)``, the largest ``n_components`` (None: n_features).
    full_rank_only : bool
        The method learns a full-dimensional metric (``n_components`` must be None or d).
    loss : LossSpec or None
        Gradient methods: the pure loss, its parametrisation, the problem fields it needs and its
        optimisation defaults, including the large-data policy (``large_n``/``large``,
        ``candidates_above``/``n_candidates``).
    estimator : str or None
        The name of the scikit-learn estimator class of the method.
    labels : bool
        Whether a given ``y`` is read as class labels (checked as such: not continuous, not mixed
        types); False for methods that ignore ``y`` (PCA, Euclidean) or, with ``supervised=True``,
        regress real-valued targets (MLKR: ``y`` reaches the solve step as float64 targets in
        place of the label codes, with ``n_classes=0``; no classes are recorded).
    min_classes : int
        The fewest classes a supervised fit accepts (2; NCA takes one class, as scikit-learn's).
    route : Route or None
        Gradient methods: the solver that replaces the optax driver when its ``applies`` says so (LMNN's
        active set on large data); None: always the driver.
    batchable : bool
        Whether the tuning grid may fit its points as one vectorised program: the solve step is the plain
        gradient plan (``execute(plan(...))`` of ``loss``, possibly behind a guard that only resolves
        settings), so a grid of float hyper-parameters shares one compiled trajectory.
    measured_loss : MeasuredLoss or None
        Where the defaults protocol measured the default fit below Euclidean k-NN at full size after a gain on a
        2 000-row subset (the method's own objective, not an approximation of it); a fit at that size warns.
    """

    name: str
    learns: str
    solve: Callable
    defaults: dict = {}
    constraints: dict = {}
    settings: frozenset = frozenset()
    supervised: bool = True
    max_components: Optional[Callable] = None
    full_rank_only: bool = False
    loss: Optional[LossSpec] = None
    estimator: Optional[str] = None
    labels: bool = True
    min_classes: int = 2
    route: Optional[Route] = None
    batchable: bool = False
    measured_loss: Optional[MeasuredLoss] = None
