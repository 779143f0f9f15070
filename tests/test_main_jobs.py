"""The main jobs, end to end, as a user runs them: every experiment with every default column, ``jaxdml
fit`` for every registered method, ``jaxdml methods``, and every code block of the README.

The data is a tiny KEEL-format data set written by a session fixture (48 rows, 3 classes, 4 features,
2 DOB-SCV-style folds), so that a column that breaks anywhere in the experiment layer (a parameter
passed to a method that does not take it, a kernel that a method cannot use, ...) fails here instead
of leaving an empty cell in a user's table.
"""

import io
import re
import shlex
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import jaxdml
from jaxdml.cli import main
from jaxdml.cli import build_parser
from jaxdml.experiments import EXPERIMENTS, Table

ROOT = Path(__file__).resolve().parents[1]
N_FOLDS = 2
TOY = "toy"


def write_toy_keel(root: Path, name: str = TOY, n: int = 48, n_folds: int = N_FOLDS) -> Path:
    """A 3-class KEEL data set with DOB-SCV-style file names (stratified folds, string labels)."""
    rng = np.random.default_rng(0)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 4)) * [1.0, 4.0, 0.3, 1.0] + np.c_[y * 2.0, np.zeros(n), y * 0.3, -y] + [0, 0, 10, 0]
    labels = np.array(["a", "b", "c10"])[y]
    folder = root / f"{n_folds}-fold" / name
    folder.mkdir(parents=True)
    head = (f"@relation  {name}\n@attribute f1 real[-9.0,9.0]\n@attribute f2 real[-30.0,30.0]\n"
            "@attribute f3 real[0.0,20.0]\n@attribute f4 real[-9.0,9.0]\n@attribute Class{a,b,c10}\n"
            "@inputs f1,f2,f3,f4\n@outputs Class\n@data\n")
    part = np.empty(n, int)
    for c in range(3):  # stratified: each class spread evenly over the folds
        idx = np.flatnonzero(y == c)
        part[idx] = rng.permutation(len(idx)) % n_folds
    for k in range(n_folds):
        for kind, rows in (("tra", part != k), ("tst", part == k)):
            body = "".join(", ".join(f"{v:.5f}" for v in x) + f", {lab}\n" for x, lab in zip(X[rows], labels[rows]))
            (folder / f"{name}-{n_folds}dobscv-{k + 1}{kind}.dat").write_text(head + body)
    return root


@pytest.fixture(scope="session")
def toy_keel(tmp_path_factory):
    return write_toy_keel(tmp_path_factory.mktemp("keel"))


@pytest.fixture(scope="session")
def toy_csv(tmp_path_factory):
    rng = np.random.default_rng(1)
    y = np.arange(48) % 3
    X = rng.normal(size=(48, 4)) + np.c_[y, -y, np.zeros(48), y * 0.5]
    path = tmp_path_factory.mktemp("csv") / "toy.csv"
    np.savetxt(path, np.c_[X, y], delimiter=",", fmt="%.6f")
    return path


def _run_cli(argv):
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(argv)
    return status, out.getvalue()


# ------------------------------------------------------------------------------------ experiments
@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_default_column_of_every_experiment_is_filled(name, toy_keel, tmp_path):
    """``jaxdml experiment NAME`` as the README runs it (on the tiny data set): every default column
    of the experiment has a finite accuracy in [0, 1] in every cell, on test and training folds
    (in the dimension experiment, every cell a method can reach)."""
    exp = EXPERIMENTS[name]
    # dim: every column at two of its rows (1 and the full dimension, where LDA has no cell)
    rows = ["--dims", "1,max"] if exp.rows == "dimensions" else []
    status, out = _run_cli(["experiment", name, "--data", str(toy_keel), "--datasets", TOY, "--folds",
                            str(N_FOLDS), "--out", str(tmp_path), "--quiet", *rows])
    assert status == 0, out
    stem = exp.stem(exp.default_k)
    m = re.search(rf"{stem}: (\d+)/(\d+) folds ok(?: \((\d+) not applicable\))?", out)
    ok, total, not_applicable = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    assert ok + not_applicable == total, out  # no failed fold
    algorithms = exp.algorithms(exp.default_k)
    for part in ("test", "train"):
        name_of = f"{stem}-{TOY}-{part}.csv" if exp.rows == "dimensions" else f"{stem}-{part}.csv"
        table = Table.from_csv(tmp_path / name_of)
        assert table.columns == [a.label for a in algorithms]  # every default column, in the experiment's order
        values = np.asarray(table.values, float)
        filled = np.isfinite(values)
        assert np.all((values[filled] >= 0) & (values[filled] <= 1))
        if exp.rows == "datasets":
            assert table.rows == [TOY] and filled.all(), table.to_markdown()
        else:  # dimensions: a cell is empty only where the method cannot reach that dimension (LDA above classes - 1)
            assert (~filled).sum() * N_FOLDS == not_applicable, table.to_markdown()
            assert all(algorithms[j].max_components for j in np.flatnonzero((~filled).any(0)))


# ------------------------------------------------------------------------------------ jaxdml fit
@pytest.mark.parametrize("method", sorted(jaxdml.methods()))
def test_fit_command_runs_every_registered_method(method, toy_csv):
    status, out = _run_cli(["fit", "--loss", method, "--dataset", str(toy_csv), "--folds", "2", "--quiet"])
    assert status == 0, out
    acc = {m.group(1).strip(): float(m.group(2)) for m in re.finditer(r"3-NN accuracy, (.+?): ([0-9.]+) \+-", out)}
    assert set(acc) == {"Euclidean", method}, out
    assert all(0.0 <= a <= 1.0 for a in acc.values())


def test_methods_command_lists_every_method():
    status, out = _run_cli(["methods"])
    assert status == 0 and out.split() == list(jaxdml.methods())


# ------------------------------------------------------------------------------------ the README
#: a fenced block preceded by this comment is not run (it needs what a test machine does not have)
NOT_RUN = "<!-- not run by the tests:"


def readme_blocks(text):
    """``(language, code, reason_not_run)`` for every fenced code block of the README, in order
    (indented blocks in lists included)."""
    blocks = []
    for m in re.finditer(r"(?ms)^(?P<indent>[ ]*)```(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", text):
        before = text[: m.start()].rstrip().splitlines()[-1:] or [""]
        reason = before[0].strip()[len(NOT_RUN):].rstrip("-> ").strip() if before[0].strip().startswith(NOT_RUN) else None
        body = "\n".join(line[len(m.group("indent")):] for line in m.group("body").splitlines())
        blocks.append((m.group("lang"), body, reason))
    return blocks


def shell_commands(code):
    """The ``jaxdml`` commands of a shell block (each line's ``&&`` parts; comments dropped)."""
    for line in code.splitlines():
        line = line.split("#", 1)[0].strip()
        for part in (p.strip() for p in line.split("&&")):
            if part.startswith("jaxdml "):
                yield shlex.split(part)[1:]


def test_readme_code_blocks_run(tmp_path, monkeypatch):
    """Every Python block of the README runs, in order, in one namespace; every ``jaxdml`` command of
    its shell blocks runs, except ``jaxdml experiment``, whose lines are parsed here and run on the
    tiny data set by ``test_every_default_column_of_every_experiment_is_filled`` (the same command,
    the data swapped). Blocks marked as not run say why, and there is exactly one: the multi-host
    example, which needs a cluster (tests/test_distributed.py runs it with two local processes)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    blocks = readme_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 6
    skipped = [reason for _, _, reason in blocks if reason is not None]
    assert len(skipped) == 1 and "cluster" in skipped[0]
    namespace, ran, experiments = {}, [], set()
    for lang, code, reason in blocks:
        if reason is not None:
            continue
        if lang == "python":
            exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
            continue
        for argv in shell_commands(code):
            if argv[0] == "experiment":
                args = build_parser().parse_args(argv)  # a well-formed command of an existing experiment
                experiments.add(args.name)
                Path(args.out).mkdir(exist_ok=True)
                # the results table that the README's `jaxdml compare` line reads
                Table(["d1", "d2", "d3"], ["NCA", "Euclidean"], [[0.9, 0.8], [0.85, 0.84], [0.7, 0.72]]).to_csv(
                    Path(args.out) / "basic-3nn-test.csv")
                continue
            status, out = _run_cli(argv)
            assert status == 0, (argv, out)
            ran.append(argv[0])
    assert experiments == set(EXPERIMENTS)  # each is run by the test above
    assert {"fit", "compare"} <= set(ran) and "metric" in namespace
