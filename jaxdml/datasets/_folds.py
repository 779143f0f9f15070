"""Discovery and loading of KEEL cross-validation folds (and stratified folds of other data sets).

The KEEL layout is ``DIR/10-fold/<name>/<name>-10dobscv-<k>tra.dat`` and ``...tst.dat``
(``k = 1..10``; likewise ``5-fold``); plain KEEL cross-validation files (``<name>-10-<k>tra.dat``)
and a folder that holds the fold files directly are found too. Nothing is downloaded.
"""

from __future__ import annotations

import glob
import os
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from ._keel import DATA_DIR_ENV, DataFormatError, load_keel, read_table, sort_labels

__all__ = ["Folds", "keel_fold_files", "list_keel_datasets", "load_keel_folds", "load_folds", "default_data_dir"]


_FOLD_FILE = re.compile(r"^(?P<name>.+)-(?P<n>\d+)(?:dobscv)?-(?P<k>\d+)(?P<part>tra|tst)\.dat$")


def default_data_dir() -> Optional[Path]:
    """The KEEL folder to use when none is given, or None.

    In order: ``$JAXDML_KEEL_DIR``; ``../shared/keel`` relative to the current directory; then
    relative to the repository that holds this package. Never downloads anything.
    """
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2]
    for cand in (Path.cwd() / ".." / "shared" / "keel", here / ".." / "shared" / "keel"):
        if cand.is_dir():
            return cand.resolve()
    return None


def _candidate_dirs(root: Path, name: str, n_folds: int):
    return [root / f"{n_folds}-fold" / name, root / f"{n_folds}fold" / name, root / name, root]


def keel_fold_files(root, name: str, n_folds: int = 10) -> list:
    """Paths ``[(train_1, test_1), ..., (train_k, test_k)]`` of a dataset's KEEL folds.

    Looks in ``root/<n>-fold/<name>/``, ``root/<name>/`` and ``root/`` for
    ``<name>-<n>dobscv-<k>{tra,tst}.dat`` (DOB-SCV) or ``<name>-<n>-<k>{tra,tst}.dat``.

    Raises
    ------
    FileNotFoundError
        If no fold files exist, or naming the missing files when a partition is incomplete.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"data folder not found: {root}")
    for d in _candidate_dirs(root, name, n_folds):
        if not d.is_dir():
            continue
        found = {}
        for p in d.iterdir():
            m = _FOLD_FILE.match(p.name)
            if m and m.group("name") == name and int(m.group("n")) == n_folds:
                found[(int(m.group("k")), m.group("part"))] = p
        if not found:
            continue
        # prefer DOB-SCV when both naming schemes are present
        missing = [f"{name}-{n_folds}dobscv-{k}{part}.dat" for k in range(1, n_folds + 1)
                   for part in ("tra", "tst") if (k, part) not in found]
        if missing:
            raise FileNotFoundError(f"{d}: incomplete {n_folds}-fold partition of {name!r}; missing "
                                    f"{', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''}.")
        return [(found[(k, "tra")], found[(k, "tst")]) for k in range(1, n_folds + 1)]
    raise FileNotFoundError(
        f"no {n_folds}-fold files for dataset {name!r} under {root} (looked for "
        f"{root / f'{n_folds}-fold' / name / f'{name}-{n_folds}dobscv-1tra.dat'} and similar)."
    )


def list_keel_datasets(root) -> dict:
    """``{name: [fold counts available]}`` for every dataset with fold files under ``root``."""
    root = Path(root)
    out: dict = {}
    if not root.is_dir():
        return out
    for p in root.rglob("*.dat"):
        m = _FOLD_FILE.match(p.name)
        if m and m.group("k") == "1" and m.group("part") == "tra":
            out.setdefault(m.group("name"), set()).add(int(m.group("n")))
    return {k: sorted(v) for k, v in sorted(out.items())}


class Folds(NamedTuple):
    """A dataset split into cross-validation folds.

    ``folds[i] = (X_train, y_train, X_test, y_test)``; ``classes`` are the labels that occur, in
    natural order (:func:`sort_labels`; the encoding every classifier of the experiments uses);
    ``source`` says where the split came from (the KEEL folder, or a stratified split).
    """

    name: str
    folds: list
    feature_names: list
    classes: np.ndarray
    source: str

    @property
    def n_features(self) -> int:
        """Number of features (the length of ``feature_names``)."""
        return len(self.feature_names)

    @property
    def n_classes(self) -> int:
        """Number of classes (the length of ``classes``)."""
        return len(self.classes)

    @property
    def n_samples(self) -> int:
        """Number of rows over all test folds (each row once for a partition)."""
        return sum(len(f[3]) for f in self.folds)

    @property
    def max_train_size(self) -> int:
        """Number of rows of the largest training fold."""
        return max(len(f[1]) for f in self.folds)


def load_keel_folds(root, name: str, n_folds: int = 10) -> Folds:
    """Read every fold of a KEEL dataset (see :func:`keel_fold_files`).

    Checks that all files share the header's feature names.
    """
    files = keel_fold_files(root, name, n_folds)
    folds, names = [], None
    for tra, tst in files:
        Xtr, ytr, ftr = load_keel(tra)
        Xte, yte, fte = load_keel(tst)
        for f, p in ((ftr, tra), (fte, tst)):
            if names is None:
                names = f
            elif f != names:
                raise DataFormatError(p, None, f"its inputs {f} differ from those of the other folds {names}.")
        folds.append((Xtr, ytr, Xte, yte))
    check_partition(name, folds, files)
    classes = sort_labels(np.concatenate([np.concatenate([f[1], f[3]]) for f in folds]))
    return Folds(name, folds, list(names), classes, str(files[0][0].parent))


def _row_counts(X, y) -> Counter:
    return Counter(zip(map(bytes, np.ascontiguousarray(X, dtype=np.float64)), map(str, y)))


def check_partition(name: str, folds: list, files: list) -> None:
    """Check that the folds are a cross-validation partition of one data set.

    For every fold, training + test rows are the whole data set (as multisets of rows with their
    labels), and the test parts of all folds together hold every row exactly once. A fold file cut
    short, with rows deleted or duplicated, raises :class:`DataFormatError` naming the file.
    """
    whole = _row_counts(np.concatenate([folds[0][0], folds[0][2]]), np.concatenate([folds[0][1], folds[0][3]]))
    n = sum(whole.values())
    tests = Counter()
    for (Xtr, ytr, Xte, yte), (tra, tst) in zip(folds, files):
        this = _row_counts(Xtr, ytr) + _row_counts(Xte, yte)
        if this != whole:
            extra, missing = sum((this - whole).values()), sum((whole - this).values())
            raise DataFormatError(
                tra, None, f"fold {tra.name} + {tst.name} of {name!r} is not the whole data set: "
                f"{len(ytr)} + {len(yte)} rows, {extra} row(s) not in the first fold's data, {missing} "
                f"of its {n} row(s) missing (rows cut, deleted or duplicated?).")
        tests.update(_row_counts(Xte, yte))
    if tests != whole:
        extra, missing = sum((tests - whole).values()), sum((whole - tests).values())
        raise DataFormatError(
            files[0][1].parent, None, f"the test parts of {name!r}'s {len(folds)} folds do not cover the "
            f"data set exactly once ({extra} row(s) too many, {missing} missing).")


def _stratified_folds(name, X, y, feature_names, n_folds, seed, source):
    from sklearn.model_selection import StratifiedKFold

    splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    folds = [(X[tr], y[tr], X[te], y[te]) for tr, te in splitter.split(X, y)]
    return Folds(name, folds, list(feature_names), sort_labels(y), f"{source}; stratified {n_folds}-fold, "
                 f"shuffled with seed {seed}")


def _has_keel_dataset(root: Path, name: str) -> bool:
    return (root / name).is_dir() or any(d.is_dir() for d in root.glob(f"*-fold/{glob.escape(name)}"))


def load_folds(name: str, data_dir=None, *, n_folds: int = 10, seed: int = 28,
               bundled_fallback: Optional[bool] = None) -> Folds:
    """Folds of a dataset by name, wherever they come from.

    1. KEEL fold files under ``data_dir`` (see :func:`keel_fold_files`);
    2. an unsplit ``data_dir/<name>.arff`` or ``.dat`` (e.g. ``spambase-460``), split by
       stratified ``n_folds``-fold cross-validation shuffled with ``seed`` (28 as in the paper);
    3. a path to an ``.arff`` / ``.dat`` file, split the same way;
    4. a data set bundled with scikit-learn (``iris``, ``wine``, ``breast_cancer``, ``digits``),
       split the same way -- only when no data folder is given (a data folder that lacks the
       dataset, or a KEEL dataset whose requested fold count is missing, is an error).
       ``bundled_fallback=True`` allows it with a data folder too (used when the folder was not
       chosen by the user but found by :func:`default_data_dir`).
    """
    errors = []
    if data_dir is not None:
        root = Path(data_dir)
        try:
            return load_keel_folds(root, name, n_folds)
        except FileNotFoundError as exc:
            if _has_keel_dataset(root, name):
                raise  # the dataset is there, but not with these folds: never substitute another
            errors.append(str(exc))
        for ext in (".arff", ".dat"):
            p = root / f"{name}{ext}"
            if p.is_file():
                X, y, names = read_table(p)
                return _stratified_folds(name, X, y, names, n_folds, seed, str(p))
    p = Path(name)
    if p.suffix.lower() in (".arff", ".dat") and p.is_file():
        X, y, names = read_table(p)
        return _stratified_folds(p.stem, X, y, names, n_folds, seed, str(p))
    from ._bundled import BUNDLED, load_dataset

    if bundled_fallback is None:
        bundled_fallback = data_dir is None
    if name in BUNDLED and bundled_fallback:
        X, y = load_dataset(name)
        names = [f"x{i}" for i in range(X.shape[1])]
        return _stratified_folds(name, np.asarray(X, dtype=np.float64), np.asarray(y).astype(str), names,
                                 n_folds, seed, "scikit-learn")
    msg = f"dataset {name!r} not found"
    if data_dir is not None and name in BUNDLED and not bundled_fallback:
        msg += (f" in the data folder {data_dir} (scikit-learn's {name!r} is used only when no data "
                "folder is given)")
    if data_dir is None:
        msg += (f" (no data folder given: pass --data DIR or set ${DATA_DIR_ENV}; bundled data sets: "
                f"{', '.join(BUNDLED)})")
    raise FileNotFoundError(msg + (": " + " ".join(errors) if errors else "."))
