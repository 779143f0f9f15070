"""The iterative solvers of ITML, LSI, DML-eig, SDML and SCML moved from jaxdml.losses to jaxdml.solvers:
the old names still resolve to the same objects, with a DeprecationWarning naming the new place, and the
maths layer still never imports the optimisation layer."""

import ast
import os
import warnings

import pytest

import jaxdml
import jaxdml.losses
import jaxdml.solvers

MOVED = ["itml_bregman", "ITMLState", "lsi_solve", "lsi_whitening", "LSIState", "LSIWhitening",
         "dml_eig_solve", "DMLEigState", "sdml_admm", "SDMLState", "scml_rda", "SCMLState"]


@pytest.mark.parametrize("name", MOVED)
def test_old_name_is_the_solver_with_a_deprecation_warning(name):
    with pytest.warns(DeprecationWarning, match=rf"jaxdml\.losses\.{name} .*moved to jaxdml\.solvers\.{name} ") as rec:
        obj = getattr(jaxdml.losses, name)
    assert obj is getattr(jaxdml.solvers, name)
    assert [w.filename for w in rec if w.category is DeprecationWarning] == [__file__]  # the caller's line
    assert name in jaxdml.solvers.__all__
    assert name not in jaxdml.losses.__all__


def test_from_import_of_an_old_name_warns_and_gives_the_solver():
    with pytest.warns(DeprecationWarning, match=r"jaxdml\.solvers\.itml_bregman"):
        from jaxdml.losses import itml_bregman
    assert itml_bregman is jaxdml.solvers.itml_bregman


def test_other_names_are_untouched():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for the names that stayed, nor for a missing one
        assert jaxdml.losses.itml_objective is jaxdml.losses._itml.itml_objective
        with pytest.raises(AttributeError, match="has no attribute 'no_such_loss'"):
            jaxdml.losses.no_such_loss  # noqa: B018
        assert not hasattr(jaxdml.losses, "no_such_loss")
        namespace = {}
        exec("from jaxdml.losses import *", namespace)  # noqa: S102  (a star import needs a module scope)
    assert not set(MOVED) & set(namespace)
    assert {"itml_objective", "lsi_objective", "dml_eig_objective", "sdml_objective", "scml_objective"} <= set(namespace)


def _imported_modules(path, package):
    """Absolute names of what a module of ``package`` imports (``from . import x`` counts as ``package.x``)."""
    with open(path) as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1] if node.level else [])
            stem = ".".join(p for p in (base, node.module or "") if p)
            yield stem
            yield from (f"{stem}.{a.name}" for a in node.names)


def test_losses_never_imports_solvers():
    root = os.path.dirname(jaxdml.losses.__file__)
    seen, offenders = 0, []
    for base, _, files in os.walk(root):
        package = "jaxdml." + os.path.relpath(base, os.path.dirname(root)).replace(os.sep, ".")
        for name in (f for f in files if f.endswith(".py")):
            for target in _imported_modules(os.path.join(base, name), package):
                seen += target.startswith("jaxdml.")
                if target == "jaxdml.solvers" or target.startswith("jaxdml.solvers."):
                    offenders.append(f"{name}: {target}")
    assert seen > 20  # the walk resolved the package's own relative imports
    assert offenders == []
