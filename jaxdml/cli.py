"""Command line.

* ``jaxdml fit --loss lmnn --dataset wine``: cross-validate one method with k-NN;
* ``jaxdml experiment basic --data DIR --datasets appendicitis,iris,wine --k 3 --out OUTDIR``:
  one of the tutorial's experiments (``basic``, ``ncm``, ``kernel``, ``dim``) on KEEL folds,
  writing CSV / Markdown / LaTeX tables and the per-fold results (JSON); resumable;
* ``jaxdml compare OUTDIR/basic-3nn-test.csv NCA Euclidean``: Bayesian sign test + simplex plot;
* ``jaxdml methods``: the available method names.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import warnings

import numpy as np

__all__ = ["main"]



def _compilation_cache(on: bool) -> None:
    """The persistent compilation cache: jaxdml's default (on unless ``JAXDML_COMPILATION_CACHE=0``),
    or off with ``--no-cache``."""
    from jaxdml.compilation import disable_compilation_cache, ensure_default_cache

    if on:
        ensure_default_cache()
    else:
        disable_compilation_cache()


def _int_in(low, high=None):
    """An argparse type: an int in ``[low, high]`` (argparse then names the option in its error)."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"expected an integer {bound}; got {value}")
        return value

    parse.__name__ = "int"
    return parse


def _parse_loss(text):
    """``--loss``: a method name, or weights such as ``lmnn:1,nca:0.5`` (a dict)."""
    if "+" not in text and ":" not in text:
        return text
    out = {}
    for part in text.replace("+", ",").split(","):
        name, _, weight = part.partition(":")
        try:
            out[name.strip()] = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"--loss {text!r}: the weight of {name!r} is not a number ({weight!r}); write e.g. "
                             "lmnn:1,nca:0.5.") from None
    return out


def _parse_hyper(items):
    out = {}
    for item in items or []:
        if "=" not in item or not item.split("=", 1)[0]:
            raise ValueError(f"--param expects NAME=VALUE; got {item!r}.")
        k, v = item.split("=", 1)
        for conv in (int, float):
            try:
                out[k] = conv(v)
                break
            except ValueError:
                continue
        else:
            out[k] = v
    return out


def _cmd_fit(args) -> int:
    from sklearn.model_selection import StratifiedKFold
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import MinMaxScaler
    from tqdm.auto import tqdm

    import jaxdml
    from jaxdml.datasets import load_dataset

    if args.out:  # fail now, not after the whole cross-validation
        target = os.path.abspath(args.out if args.out.endswith(".npz") else args.out + ".npz")
        folder = os.path.dirname(target)
        if os.path.isdir(target) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise ValueError(f"cannot write --out {args.out!r} (folder {folder!r} is missing or not writable, "
                             "or the path is a folder).")

    hyper = _parse_hyper(args.param)
    _compilation_cache(args.cache)
    try:
        X, y = load_dataset(args.dataset)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--dataset {args.dataset!r}: {exc}") from exc
    loss = _parse_loss(args.loss)  # a name, or weights "lmnn:1,nca:0.5"
    kw = dict(loss=loss, n_components=args.n_components, max_iter=args.max_iter,
              random_state=args.seed, verbose=args.verbose, **hyper)
    if args.n_neighbors is not None:
        kw["n_neighbors"] = args.n_neighbors
    elif isinstance(loss, str) and loss.startswith("lmnn"):
        kw["n_neighbors"] = args.k
    print(f"dataset {args.dataset}: {X.shape[0]} samples, {X.shape[1]} features, "
          f"{len(np.unique(y))} classes; loss={args.loss}; {args.folds}-fold CV, {args.k}-NN", flush=True)
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < args.folds:
        raise ValueError(f"--dataset {args.dataset!r}: class {classes[np.argmin(counts)]!r} has {counts.min()} row(s); "
                         f"{args.folds}-fold cross-validation needs at least {args.folds} rows of every class "
                         "(lower --folds, or merge or drop the rare classes).")
    folds = list(StratifiedKFold(args.folds, shuffle=True, random_state=args.seed).split(X, y))
    kw["pad_to"] = max(len(tr) for tr, _ in folds)  # one compiled executable for every fold
    acc_e, acc_l, times = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if not args.verbose else "default")
        for tr, te in tqdm(list(folds), desc="folds", unit="fold", file=sys.stderr, disable=args.quiet):
            sc = MinMaxScaler().fit(X[tr])
            Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
            knn = KNeighborsClassifier(args.k)
            acc_e.append(knn.fit(Xtr, y[tr]).score(Xte, y[te]))
            t0 = time.perf_counter()
            metric = jaxdml.fit(Xtr, y[tr], **kw)
            times.append(time.perf_counter() - t0)
            acc_l.append(knn.fit(metric.transform(Xtr), y[tr]).score(metric.transform(Xte), y[te]))
    print(f"{args.k}-NN accuracy, Euclidean : {np.mean(acc_e):.4f} +- {np.std(acc_e):.4f}")
    print(f"{args.k}-NN accuracy, {args.loss:10s}: {np.mean(acc_l):.4f} +- {np.std(acc_l):.4f}")
    print(f"fit time: first fold {times[0]:.2f} s (includes compilation), "
          f"other folds {np.mean(times[1:]) if len(times) > 1 else float('nan'):.3f} s each, "
          f"total {np.sum(times):.2f} s")
    if args.out:
        sc = MinMaxScaler().fit(X)
        kw.pop("pad_to")
        metric = jaxdml.fit(sc.transform(X), y, **kw)
        metric.input_scaling = (sc.min_, sc.scale_)  # so the file transforms raw data
        written = metric.save(args.out)
        print(f"saved the metric (L {metric.L.shape}, fitted on all data, with its min-max scaling) "
              f"to {written}; read it with jaxdml.load")
    return 0


def _check_folder(option, path) -> None:
    """A folder the command writes into: an existing folder, or a path that can become one."""
    if path is None:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"{option} {path!r} exists and is not a folder; name a folder.")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise ValueError(f"{option} {path!r} cannot be created ({parent!r} is not a writable folder).")


def _split_list(text):
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def _cmd_experiment(args) -> int:
    from pathlib import Path

    from jaxdml.datasets import DATA_DIR_ENV, default_data_dir
    from jaxdml.experiments import get_experiment, run_experiment

    _check_folder("--out", args.out)
    _check_folder("--cache-dir", args.cache_dir)
    if args.data is not None and not os.path.isdir(args.data):
        raise ValueError(f"--data {args.data!r} is not a folder (it should hold the KEEL 10-fold/ or 5-fold/ "
                         "folders).")
    for module in _split_list(args.plugins) or []:  # a user's module that calls jaxdml.register_method
        try:
            importlib.import_module(module)
        except Exception as exc:  # the user's code: whatever it raises, say which module
            raise ImportError(f"--plugins: cannot import {module!r}: {type(exc).__name__}: {exc}") from exc
    exp = get_experiment(args.name)
    if args.data is None:  # the runner finds the default folder (and may fall back to bundled data)
        if default_data_dir() is None:
            print(f"jaxdml: note: no --data folder given and ../shared/keel not found (set ${DATA_DIR_ENV}); "
                  "only scikit-learn data sets (iris, wine, breast_cancer, digits) can be used.", file=sys.stderr)
    _compilation_cache(args.cache)
    try:
        ks = [int(v) for v in _split_list(args.k)] if args.k else [exp.default_k]
    except ValueError:
        raise ValueError(f"--k expects integers such as 3 or 3,5,7; got {args.k!r}") from None
    if not exp.uses_k:
        ks = ks[:1]
    dims = None
    if args.dims:
        try:
            dims = [d if d in ("max", "classes-1") else int(d) for d in _split_list(args.dims)]
        except ValueError:
            raise ValueError(f"--dims expects integers, 'max' and 'classes-1' such as 1,2,5,max; got {args.dims!r}") \
                from None
    out = Path(args.out)
    for k in ks:
        res = run_experiment(
            args.name, data_dir=args.data, datasets=_split_list(args.datasets), k=k,
            algorithms=_split_list(args.algorithms), out_dir=out,
            cache_dir=args.cache_dir if args.cache_dir else "auto", n_folds=args.folds, dims=dims,
            rerun=args.rerun, retry_failed=args.retry_failed, progress=not args.quiet, seed=args.seed,
        )
        for name, table in res.tables.items():
            if name.endswith("-test"):
                print(table.to_markdown())
        if exp.rows == "dimensions":
            try:
                import matplotlib

                matplotlib.use("Agg")
                from jaxdml.plotting import plot_dim_curves
            except ImportError:  # pragma: no cover
                print("matplotlib is not installed: no dimension curves.", file=sys.stderr)
            else:
                for name, table in res.tables.items():
                    if name.endswith("-test"):
                        png = out / (name[: -len("-test")] + ".png")
                        plot_dim_curves(table, res.tables[name[: -len("-test")] + "-train"], path=png)
                        res.files.append(png)
        bad = {}
        for r in res.failures():
            bad.setdefault((r["algorithm"], r["status"]), []).append(r)
        for (alg, status), recs in sorted(bad.items()):
            sets = sorted({r["dataset"] for r in recs})
            more = " ..." if len(sets) > 5 else ""
            print(f"{status}: {alg} on {len(sets)} dataset(s) ({', '.join(sets[:5])}{more}): {recs[0]['error'][:160]}")
        n_ok = sum(r["status"] == "ok" for r in res.records)
        n_na = sum(r["status"] == "n/a" for r in res.records)
        print(f"{res.stem}: {n_ok}/{len(res.records)} folds ok{f' ({n_na} not applicable)' if n_na else ''}, "
              f"wall time {res.wall_time:.1f} s; wrote "
              f"{len(res.files)} files to {out}/ ({', '.join(p.name for p in res.files if p.suffix == '.csv')[:300]})")
    return 0


def _cmd_compare(args) -> int:
    from pathlib import Path

    from jaxdml.experiments import Table, compare_columns

    if not os.path.isfile(args.results):
        raise ValueError(f"results {args.results!r} is not a file (a CSV table written by `jaxdml experiment`).")
    table = Table.from_csv(args.results)
    res = compare_columns(table, args.first, args.second, rope=args.rope, prior_strength=args.prior_strength,
                          prior_place=args.prior_place, n_samples=args.samples, random_state=args.seed)
    print(res)
    src = Path(args.results)
    slug = "-vs-".join("".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in n) for n in res.names)
    if args.out is None:
        png = src.with_name(f"{src.stem}-{slug}.png")
    else:
        png = Path(args.out)
        if png.is_dir() or args.out.endswith(("/", "\\")):
            png.mkdir(parents=True, exist_ok=True)
            png = png / f"{src.stem}-{slug}.png"
    try:
        import matplotlib

        matplotlib.use("Agg")
        from jaxdml.plotting import plot_sign_test
    except ImportError:  # pragma: no cover
        print("matplotlib is not installed: no simplex plot.", file=sys.stderr)
        return 0
    plot_sign_test(res, path=png)
    print(f"simplex plot: {png}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jaxdml", description="JAX-accelerated distance metric learning.")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="cross-validate a metric learner with k-NN on a dataset")
    f.add_argument("--loss", default="nca", help="method name (see `jaxdml methods`) or 'lmnn:1,nca:0.5'")
    f.add_argument("--dataset", default="wine", help="iris, wine, breast_cancer, digits or a CSV path")
    f.add_argument("--folds", type=_int_in(2), default=10)
    f.add_argument("--k", type=_int_in(1), default=3, help="neighbours of the k-NN classifier")
    f.add_argument("--n-neighbors", type=_int_in(1), default=None, help="target neighbours (default: --k)")
    f.add_argument("--n-components", type=_int_in(1), default=None)
    f.add_argument("--max-iter", type=_int_in(1), default=None)
    f.add_argument("--param", action="append", metavar="NAME=VALUE", help="extra hyper-parameter")
    f.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0)
    f.add_argument("--out", default=None, help="save L and M (fitted on all data) to this .npz")
    f.add_argument("--verbose", type=_int_in(0), default=0, help="print the loss every N iterations")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.add_argument("--no-cache", dest="cache", action="store_false",
                   help="disable the persistent compilation cache")
    f.set_defaults(func=_cmd_fit)
    e = sub.add_parser("experiment", help="run one of the tutorial's experiments on KEEL folds",
                       description="Run an experiment of the tutorial's Section 5 and write its tables "
                                   "(OUT/<stem>-test.csv, -train.csv, .md, .tex) and per-fold results "
                                   "(OUT/<stem>-folds.json). Finished folds are cached under OUT/cache, so an "
                                   "interrupted run resumes.")
    e.add_argument("name", choices=["basic", "ncm", "kernel", "dim"])
    e.add_argument("--data", default=None, help="KEEL folder holding 10-fold/ (default: ../shared/keel if it "
                                                "exists, or $JAXDML_KEEL_DIR)")
    e.add_argument("--datasets", default=None, help="comma-separated names (default: the experiment's)")
    e.add_argument("--k", default=None, help="k of the k-NN classifier, or a list such as 3,5,7 (default 3)")
    e.add_argument("--out", default="results", help="output folder (default: results)")
    e.add_argument("--algorithms", default=None, help="comma-separated column labels (default: all); the name of a "
                                                      "registered method adds a k-NN column of it")
    e.add_argument("--plugins", default=None, help="comma-separated modules to import first (they may register "
                                                   "their own methods with jaxdml.register_method)")
    e.add_argument("--folds", type=_int_in(2), default=10, help="number of folds (10 or 5 for KEEL)")
    e.add_argument("--dims", default=None, help="dim experiment: e.g. 1,2,5,max,classes-1")
    e.add_argument("--cache-dir", default=None, help="per-fold result cache (default: OUT/cache)")
    e.add_argument("--rerun", action="store_true", help="ignore cached results")
    e.add_argument("--retry-failed", action="store_true", help="recompute cached failures")
    e.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0, help="random_state of stochastic methods")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.add_argument("--no-compile-cache", "--no-cache", dest="cache", action="store_false",
                   help="disable the persistent compilation cache")
    e.set_defaults(func=_cmd_experiment)
    c = sub.add_parser("compare", help="Bayesian sign test between two columns of a results CSV")
    c.add_argument("results", help="a table written by `jaxdml experiment` (e.g. OUT/basic-3nn-test.csv)")
    c.add_argument("first")
    c.add_argument("second")
    c.add_argument("--rope", type=float, default=0.01, help="half-width of the rope (default 0.01)")
    c.add_argument("--prior-strength", type=float, default=1.0)
    c.add_argument("--prior-place", type=float, default=0.0, help="prior pseudo-observation z0 (default 0)")
    c.add_argument("--samples", type=_int_in(1), default=50000, help="posterior samples")
    c.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0)
    c.add_argument("--out", default=None, help="PNG path or folder (default: next to the CSV)")
    c.set_defaults(func=_cmd_compare)
    m = sub.add_parser("methods", help="list the available methods")
    m.set_defaults(func=lambda a: print("\n".join(__import__("jaxdml").available_methods())) or 0)
    return p


#: the failures a command can meet on the user's input: bad values (ValueError, TypeError, and
#: jaxdml's own errors, which derive from them), files and folders (OSError), modules (ImportError)
#: and numerical failures reported by a solver (ArithmeticError, e.g. a loss not finite at the start)
EXPECTED_ERRORS = (ValueError, TypeError, OSError, ImportError, ArithmeticError)


def main(argv=None) -> int:
    """Run the ``jaxdml`` command; an expected failure is one line on stderr and exit status 2."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except EXPECTED_ERRORS as exc:
        what = "" if isinstance(exc, (ValueError, TypeError, ImportError)) else f"{type(exc).__name__}: "
        print(f"jaxdml: error: {what}{' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
