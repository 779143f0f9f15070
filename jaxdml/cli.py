"""Command line: ``jaxdml fit --loss lmnn --dataset wine``."""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

__all__ = ["main"]


def _parse_hyper(items):
    out = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"--param expects NAME=VALUE, got {item!r}")
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

    if args.cache:
        from jaxdml.compilation import enable_compilation_cache

        enable_compilation_cache()
    X, y = load_dataset(args.dataset)
    hyper = _parse_hyper(args.param)
    loss = args.loss
    if "+" in loss or ":" in loss:  # "lmnn:1,nca:0.5"
        loss = {p.split(":")[0]: float(p.split(":")[1]) if ":" in p else 1.0 for p in loss.replace("+", ",").split(",")}
    kw = dict(loss=loss, n_components=args.n_components, max_iter=args.max_iter,
              random_state=args.seed, verbose=args.verbose, **hyper)
    if args.n_neighbors is not None:
        kw["n_neighbors"] = args.n_neighbors
    elif isinstance(loss, str) and loss.startswith("lmnn"):
        kw["n_neighbors"] = args.k
    print(f"dataset {args.dataset}: {X.shape[0]} samples, {X.shape[1]} features, "
          f"{len(np.unique(y))} classes; loss={args.loss}; {args.folds}-fold CV, {args.k}-NN", flush=True)
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
        np.savez(args.out, L=metric.L, M=metric.M, scale_min=sc.min_, scale=sc.scale_,
                 classes=metric.classes, loss_history=metric.loss_history, method=str(args.loss))
        print(f"saved L {metric.L.shape} and M {metric.M.shape} (fitted on all data) to {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jaxdml", description="JAX-accelerated distance metric learning.")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="cross-validate a metric learner with k-NN on a dataset")
    f.add_argument("--loss", default="nca", help="method name (see `jaxdml methods`) or 'lmnn:1,nca:0.5'")
    f.add_argument("--dataset", default="wine", help="iris, wine, breast_cancer, digits or a CSV path")
    f.add_argument("--folds", type=int, default=10)
    f.add_argument("--k", type=int, default=3, help="neighbours of the k-NN classifier")
    f.add_argument("--n-neighbors", type=int, default=None, help="target neighbours (default: --k)")
    f.add_argument("--n-components", type=int, default=None)
    f.add_argument("--max-iter", type=int, default=None)
    f.add_argument("--param", action="append", metavar="NAME=VALUE", help="extra hyper-parameter")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--out", default=None, help="save L and M (fitted on all data) to this .npz")
    f.add_argument("--verbose", type=int, default=0, help="print the loss every N iterations")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.add_argument("--no-cache", dest="cache", action="store_false",
                   help="disable the persistent compilation cache")
    f.set_defaults(func=_cmd_fit)
    m = sub.add_parser("methods", help="list the available methods")
    m.set_defaults(func=lambda a: print("\n".join(__import__("jaxdml").available_methods())) or 0)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as exc:
        print(f"jaxdml: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
