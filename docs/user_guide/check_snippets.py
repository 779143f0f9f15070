"""Run the code snippets of the user guide's pages, in order, and report the first failure of each page.

Usage: ``python docs/user_guide/check_snippets.py [PAGE.md ...]`` (default: every page of this folder).

Each page's fenced blocks tagged ``python`` run in one fresh Python process, one after the other in one
namespace (as a reader who pastes them in order would run them); blocks tagged ``bash`` then run one
by one with ``bash -e``. Both run in a temporary folder, with this checkout first on ``sys.path``, the
``jaxdml`` command of this Python on ``PATH``, matplotlib's non-interactive backend and
``JAXDML_KEEL_DIR`` set to an empty folder (so that the experiments use scikit-learn's bundled data,
as on a machine without KEEL's files, rather than a ``../shared/keel`` found nearby). A block right
after a line ``<!-- not run: REASON -->`` is skipped and listed with its reason (e.g. one that needs a
cluster). The exit status is the number of pages that failed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FENCE = re.compile(r"^```(\w+)?[^\n]*$")
SKIP = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->$")


def extract_blocks(text: str):
    """``(language, first line number, source, skip reason or None)`` of each fenced block."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        lang, start = (m.group(1) or "").lower(), i + 1
        j = start
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if j == len(lines):
            raise ValueError(f"unclosed code fence opened at line {i + 1}")
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        skip = SKIP.match(lines[k].strip()) if k >= 0 else None
        blocks.append((lang, start + 1, "\n".join(lines[start:j]) + "\n", skip.group(1) if skip else None))
        i = j + 1
    return blocks


def _python_program(page: Path, blocks) -> str:
    """One script that runs each block compiled under its page and line, so tracebacks point there."""
    parts = ["import sys", f"sys.path.insert(0, {str(ROOT)!r})", "_ns = {'__name__': '__main__'}"]
    for _, line, source, _ in blocks:
        padded = "\n" * (line - 1) + source  # line numbers of the page
        parts.append(f"print('--- {page.name}:{line}', flush=True)")
        parts.append(f"exec(compile({padded!r}, {str(page)!r}, 'exec'), _ns)")
    return "\n".join(parts) + "\n"


def check_page(page: Path, *, timeout: float = 600.0, verbose: bool = False) -> tuple[bool, str]:
    """Run one page's snippets; ``(ok, report)``."""
    blocks = extract_blocks(page.read_text(encoding="utf-8"))
    run = [b for b in blocks if b[0] in ("python", "bash") and b[3] is None]
    skipped = [f"  skipped {page.name}:{b[1]} ({b[3]})" for b in blocks if b[3] is not None]
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jaxdml-guide-") as tmp:
        keel = Path(tmp) / "no-keel"
        keel.mkdir()
        env["JAXDML_KEEL_DIR"] = str(keel)
        steps = []
        py = [b for b in run if b[0] == "python"]
        if py:
            steps.append(("python", [sys.executable, "-c", _python_program(page, py)]))
        steps += [(f"bash block at line {b[1]}", ["bash", "-e", "-c", b[2]]) for b in run if b[0] == "bash"]
        for what, cmd in steps:
            try:
                proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout,
                                      check=False)
            except subprocess.TimeoutExpired:
                return False, f"FAIL {page.name}: {what} ran over {timeout:.0f} s"
            if verbose:
                print(proc.stdout)
            if proc.returncode != 0:
                tail = (proc.stdout + proc.stderr)[-4000:]
                return False, f"FAIL {page.name}: {what} exited with {proc.returncode}\n{tail}"
    seconds = time.perf_counter() - start
    report = [f"ok   {page.name}: {len(py)} python and {len(run) - len(py)} bash blocks in {seconds:.1f} s"]
    return True, "\n".join(report + skipped)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages to check (default: every *.md here)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed per process")
    parser.add_argument("--verbose", action="store_true", help="print the snippets' output")
    args = parser.parse_args(argv)
    pages = args.pages or sorted(HERE.glob("*.md"))
    failed = 0
    for page in pages:
        ok, report = check_page(page.resolve(), timeout=args.timeout, verbose=args.verbose)
        print(report, flush=True)
        failed += not ok
    return failed


if __name__ == "__main__":
    sys.exit(main())
