"""On-disk cache of per-fold results: one small JSON file per (experiment, dataset, algorithm, fold).

Layout: ``<cache_dir>/<experiment stem>/<dataset>/<algorithm[@d=n]>/fold-<k>.json``. Files are
written atomically (temporary file + rename), so an interrupted run leaves either a complete
record or none, and the next run resumes where it stopped. A record is reused only if its
``fingerprint`` (algorithm configuration, classifier, dimension, a hash of the fold's data, a hash
of jaxdml's algorithm code (:func:`code_hash`) and :data:`CACHE_VERSION`) matches the current one:
changing a method's implementation or defaults recomputes its cells.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import shutil
import os
import re
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np

__all__ = ["CACHE_VERSION", "ResultCache", "fingerprint", "data_hash", "code_hash"]

#: bump when the evaluation protocol changes, to invalidate old records
CACHE_VERSION = 1


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+=@-]+", "_", str(text)).strip("_") or "_"


def data_hash(*arrays) -> str:
    """A short hash of the fold's arrays (values, shapes and dtypes)."""
    h = hashlib.sha1()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.shape, a.dtype.str)).encode())
        if a.dtype.kind in "US":
            h.update("\x00".join(map(str, a.ravel())).encode())
        else:
            h.update(a.tobytes())
    return h.hexdigest()[:16]


_NOT_ALGORITHMS = ("experiments", "plotting", "datasets", "cli.py", "__pycache__")


@functools.lru_cache(maxsize=None)
def code_hash() -> str:
    """A hash of jaxdml's algorithm code (every module except the experiment harness, plotting,
    data readers and CLI): cached results are stale once a method's implementation changes."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha1()
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if rel.split("/")[0] in _NOT_ALGORITHMS:
            continue
        h.update(rel.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


#: the record statuses the runner writes
STATUSES = ("ok", "failed", "unavailable", "n/a")
_REQUIRED = {"experiment": str, "dataset": str, "algorithm": str, "cache_key": str, "fold": int,
             "n_folds": int, "fingerprint": str, "status": str}


def valid_record(rec) -> bool:
    """Whether a cached per-fold record has the runner's schema (and sane accuracies when ok)."""
    if not isinstance(rec, dict):
        return False
    for key, typ in _REQUIRED.items():
        if not isinstance(rec.get(key), typ) or isinstance(rec.get(key), bool):
            return False
    if rec["status"] not in STATUSES or not 1 <= rec["fold"] <= rec["n_folds"]:
        return False
    if rec["status"] == "ok":
        for key in ("train_accuracy", "test_accuracy"):
            v = rec.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1:
                return False
    return True


def fingerprint(config: dict) -> str:
    payload = json.dumps({**config, "cache_version": CACHE_VERSION}, sort_keys=True, default=str)
    return hashlib.sha1(payload.encode()).hexdigest()[:20]


class ResultCache:
    """Per-fold JSON records under ``root`` (``root=None``: a cache that stores nothing)."""

    def __init__(self, root: Optional[os.PathLike]):
        self.root = None if root is None else Path(root)

    def path(self, experiment: str, dataset: str, algorithm: str, fold: int) -> Optional[Path]:
        """The file of one fold's record (``None`` when the cache is off)."""
        if self.root is None:
            return None
        return self.root / _slug(experiment) / _slug(dataset) / _slug(algorithm) / f"fold-{fold:02d}.json"

    def load(self, experiment, dataset, algorithm, fold, fp: str, validate=None) -> Optional[dict]:
        """The stored record if it exists, is readable, passes ``validate`` (default: the
        experiment runner's schema, :func:`valid_record`) and has fingerprint ``fp``; else None."""
        p = self.path(experiment, dataset, algorithm, fold)
        if p is None or not p.is_file():
            return None
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            return None  # a damaged file is recomputed
        if not (validate or valid_record)(rec) or rec.get("fingerprint") != fp:
            return None  # hand-edited, truncated or stale: recomputed
        return rec

    def store(self, record: dict) -> None:
        """Write a fold's record to its file (nothing when the cache is off)."""
        p = self.path(record["experiment"], record["dataset"], record["cache_key"], record["fold"])
        if p is None:
            return
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_dir():  # something else took the record's place: it is ours to replace
            shutil.rmtree(p)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(record, fh, indent=1, sort_keys=True, default=_json_default)
            os.replace(tmp, p)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def _json_default(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
