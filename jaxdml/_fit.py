"""``jaxdml.fit``: look the method up, run its record (validate once -> solve -> FittedMetric).

The work happens in the method layer: :func:`jaxdml.methods.resolve` finds the record (a name, a
weighted combination of gradient losses or a callable loss) and :func:`jaxdml.methods.run`
validates the data and parameters once and runs the record's solve step.
"""

from __future__ import annotations

from ._runtime._device import blas_single_threaded
from .compilation import ensure_default_cache
from .methods import resolve, run
from .solvers._result import FittedMetric

__all__ = ["fit"]


@blas_single_threaded
def fit(
    X=None,
    y=None,
    *,
    loss="nca",
    n_components: int | None = None,
    max_iter: int | None = None,
    tol: float | None = None,
    optimizer=None,
    learning_rate: float | None = None,
    init="auto",
    n_neighbors: int | None = None,
    projection="auto",
    random_state=None,
    pad_to="auto",
    verbose: int = 0,
    batch_size="auto",
    n_candidates="auto",
    devices=None,
    callback=None,
    euclidean_blend=None,
    **hyper,
) -> FittedMetric:
    """Learn a distance metric from labelled data.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Class labels (any hashable values; strings work). Optional for unsupervised methods.
    loss : str, dict or callable, default="nca"
        A registered method name (see :func:`jaxdml.methods`: ``"nca"``, ``"lmnn"``,
        ``"lmnn_metric"``, ``"pca"``, ``"lda"``, ..., or one added with
        :func:`jaxdml.register_method`), a weighted combination of gradient losses
        such as ``{"lmnn": 1.0, "nca": 0.5}`` (minimised by the optax driver, never by a method's own
        large-data solver such as LMNN's active set), or a callable ``f(L, problem) -> scalar``.
    n_components : int, optional
        Output dimension (rows of ``L``). Default: full dimension (LDA: ``n_classes - 1``).
    max_iter : int, optional
        Iteration budget (default per method).
    tol : float, optional
        Stopping tolerance: for the optax-driven losses (default 1e-5) the relative improvement
        below which the optimisation stops; registered solvers use their own default and meaning
        (e.g. ITML: the relative change of its dual variables over a sweep).
    optimizer : optax.GradientTransformation or str, optional
        Default per method (L-BFGS for smooth full-batch losses, Adam for projected ones).
    learning_rate : float, optional
        For first-order optimizers.
    init : {"auto", "identity", "pca", "lda", "random"} or array, default="auto"
    n_neighbors : int, optional
        Neighbourhood size: target neighbours per sample for LMNN-type and callable losses
        (default 3); passed to other methods that take ``n_neighbors`` (e.g. DMLMJ, KLMNN).
    projection : "auto", callable or None
        Applied after each step; "auto" uses the method's own (PSD cone for metric losses).
    random_state : int, RandomState or None
    pad_to : "auto", int or None
        Pad the training rows to a bucket size so that similar-sized data reuse compiled code.
    verbose : int
        Print the loss every ``verbose`` iterations (every 10 for 1).
    batch_size : "auto", int or None, default="auto"
        Minibatch training over anchor rows (``max_iter`` still counts optimizer steps; needs a
        first-order optimizer). None forces full-batch steps; "auto" uses the method's default
        (e.g. NCA: 256 anchors per step, i.e. full batch on data with at most 256 samples).
    n_candidates : "auto", int or None, default="auto"
        Minibatch steps compare their anchors with this many uniformly sampled rows instead of
        every sample (a stochastic approximation for very large data). "auto": the method's rule
        (exact below its size threshold); None: always exact.
    devices : None, "all" or a sequence of jax devices
        Split each step's anchors across several devices (data parallelism with ``shard_map``);
        None uses the default device. The rows are padded to a multiple of the device count.
    callback : callable, optional
        Gradient methods: ``callback(params, n_iter, loss)`` on the host after every optimiser step
        (monitoring, early stopping by raising, logging to your tools); it slows the loop down.
    euclidean_blend : {"auto", "off"} or float in [0, 1], optional
        Default (None): :func:`jaxdml.config.get_euclidean_blend`, itself ``"auto"``: on more than 4096
        training rows a full-dimensional linear metric learned from class labels is blended with the
        Euclidean one, ``(1 - t) (tr M / d) I + t M``, with the weight ``t`` of 0, 1/4, 1/2, 3/4, 1 whose
        leave-one-out 3-NN accuracy on 2 000 training rows is the best (ties: the largest ``t``; the
        method's own metric unless a blend scores higher; a warning says when ``t < 1``; the scores are in
        ``info["euclidean_blend"]``). ``"off"``: never; a float: that weight at any size.
    **hyper
        Method hyper-parameters (e.g. ``mu``, ``margin`` for LMNN). Floats are traced (changing
        them does not recompile).

    Returns
    -------
    FittedMetric

    Examples
    --------
    >>> import jaxdml
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> metric = jaxdml.fit(X, y, loss="lmnn", max_iter=20)
    >>> metric.transform(X).shape
    (150, 4)
    """
    ensure_default_cache()
    settings = dict(init=init, optimizer=optimizer, learning_rate=learning_rate, n_neighbors=n_neighbors,
                    projection=projection, pad_to=pad_to, batch_size=batch_size, n_candidates=n_candidates,
                    devices=devices, callback=callback)
    return run(resolve(loss), X, y, n_components=n_components, max_iter=max_iter, tol=tol,
               random_state=random_state, verbose=verbose, settings=settings, hyper=hyper,
               euclidean_blend=euclidean_blend)
