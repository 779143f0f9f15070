"""The solve step shared by every gradient-trained method: a pure loss driven by optax.

:func:`gradient_method` makes the record of such a method; its solve step ``solve_loss`` is
``execute(plan(...))`` (:mod:`._plan`: the padded problem, initial parameters, optimizer, projection,
batching and the method's route, then the driver or the route's solver).
"""

from __future__ import annotations

import functools
import numbers

from ..._validation import Interval
from ._plan import PROBLEM_KEYS, execute, finish, plan
from ._record import GRADIENT_SETTINGS, LossSpec, Method, Route

__all__ = ["gradient_method", "solve_loss", "finish", "combined_loss", "GRADIENT_CONSTRAINTS", "BLOCK_ELEMENTS",
           "PROBLEM_KEYS"]

#: what every gradient loss accepts besides its own hyper-parameters (passed to make_problem)
GRADIENT_CONSTRAINTS = {"n_impostors": [Interval(numbers.Integral, 1, None), None]}
#: the row-block size of the losses that evaluate their pair terms blockwise
BLOCK_ELEMENTS = {"block_elements": [Interval(numbers.Integral, 1, None), None]}


def gradient_method(name: str, spec: LossSpec, *, defaults=None, constraints=None, estimator=None, probe=False,
                    weights=None, route: Route | None = None) -> Method:
    """The record of a method trained by minimising ``spec.fn`` with the optax driver.

    ``constraints`` lists the loss's own hyper-parameters (e.g. ``mu``, ``margin``) and
    ``defaults`` their default values (handed to the loss on every fit; the loss's own keyword
    defaults only serve direct calls). ``probe``: check first that ``spec.fn`` returns a
    scalar (a user's callable); ``weights``: the weights of a combined loss; ``route``: the solver that
    replaces the optax driver when it applies (the method's large-data policy, :class:`Route`).
    """
    solve = functools.partial(solve_loss, spec, name, probe=probe, weights=weights, route=route)
    return Method(
        name=name, learns=spec.param, solve=solve,
        defaults=dict(defaults or {}),
        constraints={**GRADIENT_CONSTRAINTS, **(constraints or {})}, settings=GRADIENT_SETTINGS,
        loss=spec, estimator=estimator, route=route, batchable=True,
    )


@functools.lru_cache(maxsize=None)
def combined_loss(fns: tuple, accepted: tuple, name: str):
    """``sum_i weights[i] * fns[i](params, problem, **hyper_i)``; each loss gets the hyper-parameters
    its record accepts (``accepted[i]``). Cached, so that a combination reuses its compiled code."""

    def combined(params, problem, *, weights, **hyper):
        total = 0.0
        for i, (f, acc) in enumerate(zip(fns, accepted)):
            total = total + weights[i] * f(params, problem, **{k: v for k, v in hyper.items() if k in acc})
        return total

    combined.__name__ = name
    return combined


def solve_loss(spec: LossSpec, name: str, X, codes, n_classes, **kwargs):
    """Minimise the method's loss from validated data (``jaxdml.fit``'s settings and the hyper-parameters as
    keywords; see :func:`._plan.plan`); returns a :class:`FittedMetric`."""
    return execute(plan(spec, name, X, codes, n_classes, **kwargs))
