"""Result tables (rows x algorithms of mean accuracies), rankings, and CSV / Markdown / LaTeX.

CSV layout (what ``jaxdml experiment`` writes and ``jaxdml compare`` reads): the header row is an
empty cell followed by the algorithm labels; each row is a dataset (or, for the ``dim``
experiment, a dimension) followed by the mean accuracy over the folds with 8 decimals; an empty
cell means the algorithm failed on at least one fold of that dataset (as in the paper, where
such cells are left blank). Dataset tables end with two summary rows:

* ``AVG SCORE``: the mean of each column over the datasets where it has a value;
* ``AVG RANKING``: the mean rank over all datasets. On each dataset the algorithms are ranked
  1 (best accuracy) to m; tied accuracies share the mean of their ranks; a missing cell ranks
  after every algorithm with a value (missing cells of a dataset tie among themselves), so
  that every algorithm is ranked on the same datasets and a failure counts as a loss.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

__all__ = ["Table", "rank_scores", "AVG_SCORE", "AVG_RANKING"]

AVG_SCORE = "AVG SCORE"
AVG_RANKING = "AVG RANKING"
_DECIMALS = 8


def rank_scores(values) -> np.ndarray:
    """Ranks per row of a (rows, algorithms) score matrix: 1 = best (highest), ties share the mean
    rank, NaN (missing) cells rank after all the others (tied among themselves).

    Examples
    --------
    >>> rank_scores([[0.9, 0.8, 0.9, float("nan")]]).tolist()
    [[1.5, 3.0, 1.5, 4.0]]
    """
    from scipy.stats import rankdata

    V = np.atleast_2d(np.asarray(values, dtype=np.float64))
    R = np.empty_like(V)
    m = V.shape[1]
    for i, row in enumerate(V):
        ok = ~np.isnan(row)
        n_ok = int(ok.sum())
        # round so that equal accuracies computed through different float paths tie
        R[i, ok] = rankdata(-np.round(row[ok], 10), method="average")
        R[i, ~ok] = (n_ok + 1 + m) / 2.0
    return R


@dataclass
class Table:
    """Mean accuracies: ``values[i, j]`` for row ``rows[i]`` and algorithm ``columns[j]`` (NaN = empty).

    ``summary=True`` (dataset tables) adds the ``AVG SCORE`` and ``AVG RANKING`` rows.
    """

    rows: list
    columns: list
    values: np.ndarray
    title: str = ""
    summary: bool = True
    counts: Optional[np.ndarray] = field(default=None, repr=False)  # folds that succeeded per cell

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=np.float64).reshape(len(self.rows), len(self.columns))

    # ----------------------------------------------------------------- summaries
    def avg_score(self) -> np.ndarray:
        """Each column's mean over the data sets (missing cells left out)."""
        with np.errstate(invalid="ignore"):
            ok = ~np.isnan(self.values)
            s = np.where(ok, self.values, 0.0).sum(0)
            n = ok.sum(0)
            return np.where(n > 0, s / np.maximum(n, 1), np.nan)

    def ranks(self) -> np.ndarray:
        """Each row's ranks of the columns (1 is the best score; ties share the mean rank)."""
        return rank_scores(self.values) if len(self.rows) else np.zeros((0, len(self.columns)))

    def avg_ranking(self) -> np.ndarray:
        """Each column's mean rank over the data sets."""
        return self.ranks().mean(0) if len(self.rows) else np.full(len(self.columns), np.nan)

    def column(self, name: str) -> np.ndarray:
        """The values of one column (matched case-insensitively)."""
        return self.values[:, self._col(name)]

    def _col(self, name: str) -> int:
        for j, c in enumerate(self.columns):
            if c == name:
                return j
        low = [c.lower() for c in self.columns]
        if name.lower() in low:
            return low.index(name.lower())
        raise ValueError(f"No column {name!r}; the table has: {', '.join(self.columns)}.")

    def _body(self):
        """Rows as ``(label, values, kind)`` with kind 'data' | 'score' | 'rank'."""
        out = [(r, self.values[i], "data") for i, r in enumerate(self.rows)]
        if self.summary:
            out.append((AVG_SCORE, self.avg_score(), "score"))
            out.append((AVG_RANKING, self.avg_ranking(), "rank"))
        return out

    # ----------------------------------------------------------------- writers
    def to_csv(self, path=None) -> str:
        """The table as CSV text (with the ``AVG SCORE`` and ``AVG RANKING`` rows when ``summary``); also
        written to ``path`` when given."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["", *self.columns])
        for label, vals, _ in self._body():
            w.writerow([label, *["" if np.isnan(v) else f"{v:.{_DECIMALS}f}" for v in vals]])
        text = buf.getvalue()
        if path is not None:
            Path(path).write_text(text)
        return text

    @staticmethod
    def _best(vals, kind):
        if np.all(np.isnan(vals)):
            return np.zeros(len(vals), bool)
        target = np.nanmin(vals) if kind == "rank" else np.nanmax(vals)
        return np.isclose(vals, target, rtol=0, atol=1e-12)

    @staticmethod
    def _fmt(v, kind):
        if np.isnan(v):
            return ""
        return f"{v:.2f}" if kind == "rank" else f"{v:.6f}"

    def to_markdown(self, path=None) -> str:
        """A GitHub Markdown table; the best value of each row is bold."""
        lines = []
        if self.title:
            lines += [f"**{self.title}**", ""]
        lines.append("| " + " | ".join(["", *[c.replace("|", "\\|") for c in self.columns]]) + " |")
        lines.append("|" + "---|" + "---:|" * len(self.columns))
        for label, vals, kind in self._body():
            best = self._best(vals, kind)
            cells = [f"**{self._fmt(v, kind)}**" if b and not np.isnan(v) else self._fmt(v, kind)
                     for v, b in zip(vals, best)]
            lab = f"**{label}**" if kind != "data" else label
            lines.append("| " + " | ".join([lab, *cells]) + " |")
        text = "\n".join(lines) + "\n"
        if path is not None:
            Path(path).write_text(text)
        return text

    def to_latex(self, path=None) -> str:
        """A ``tabular`` (no packages needed); the best value of each row is bold."""
        esc = _latex_escape
        lines = []
        if self.title:
            lines.append(f"% {self.title}")
        lines.append("\\begin{tabular}{l" + "r" * len(self.columns) + "}")
        lines.append("\\hline")
        lines.append(" & ".join(["", *[esc(c) for c in self.columns]]) + " \\\\")
        lines.append("\\hline")
        body = self._body()
        for i, (label, vals, kind) in enumerate(body):
            if kind == "score":
                lines.append("\\hline")
            best = self._best(vals, kind)
            cells = [f"\\textbf{{{self._fmt(v, kind)}}}" if b and not np.isnan(v) else self._fmt(v, kind)
                     for v, b in zip(vals, best)]
            lines.append(" & ".join([esc(label), *cells]) + " \\\\")
        lines.append("\\hline")
        lines.append("\\end{tabular}")
        text = "\n".join(lines) + "\n"
        if path is not None:
            Path(path).write_text(text)
        return text

    # ----------------------------------------------------------------- reader
    @classmethod
    def from_csv(cls, path) -> "Table":
        """Read a table written by :meth:`to_csv` (the AVG rows are recomputed, not read)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"results file not found: {path}")
        with open(path, newline="") as fh:
            rows = [r for r in csv.reader(fh) if r]
        if not rows or len(rows[0]) < 2:
            raise ValueError(f"{path}, line 1: expected a header ',Algorithm1,Algorithm2,...'.")
        columns = rows[0][1:]
        labels, values, summary = [], [], False
        for lineno, r in enumerate(rows[1:], start=2):
            if r[0] in (AVG_SCORE, AVG_RANKING):
                summary = True
                continue
            if len(r) != len(columns) + 1:
                raise ValueError(f"{path}, line {lineno}: expected {len(columns) + 1} cells, found {len(r)}.")
            vals = []
            for j, c in enumerate(r[1:]):
                try:
                    vals.append(float(c) if c.strip() else np.nan)
                except ValueError:
                    raise ValueError(f"{path}, line {lineno}, column {j + 2}: {c!r} is not a number.") from None
            labels.append(r[0])
            values.append(vals)
        return cls(labels, columns, np.asarray(values, dtype=np.float64).reshape(len(labels), len(columns)),
                   title=path.stem, summary=summary)


def _latex_escape(text: str) -> str:
    rep = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
           "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}"}
    return "".join(rep.get(ch, ch) for ch in str(text))
