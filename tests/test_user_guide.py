"""The user guide's code runs as written: docs/user_guide/check_snippets.py on every page, and on pages made
to fail, so that the check itself is seen to catch a wrong snippet."""

import importlib.util
import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "user_guide"

#: pages whose snippets take long (model fits on thousands of rows, the command line's experiments, many
#: compilations): run by `pytest -m slow`; the others run in the default suite
SLOW_PAGES = {"choosing_a_method.md", "weak_supervision.md", "kernels.md", "large_data.md", "extending.md",
              "deep_learning.md", "tuning.md", "experiments.md", "migrating.md", "concepts.md"}


def _checker():
    spec = importlib.util.spec_from_file_location("check_snippets", GUIDE / "check_snippets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages():
    return sorted(p.name for p in GUIDE.glob("*.md") if p.name != "index.md")


def test_the_index_lists_every_page_and_only_pages_that_exist():
    text = (GUIDE / "index.md").read_text()
    toctree = re.search(r"```\{toctree\}\n(.*?)```", text, re.DOTALL).group(1)
    entries = [line.strip() for line in toctree.splitlines() if line.strip() and not line.startswith(":")]
    assert sorted(e + ".md" for e in entries) == _pages()
    assert set(SLOW_PAGES) <= set(_pages())


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW_PAGES else p
                                  for p in _pages()])
def test_page_snippets_run(page):
    ok, report = _checker().check_page(GUIDE / page, timeout=900)
    assert ok, report
    blocks = _checker().extract_blocks((GUIDE / page).read_text())
    assert any(lang == "python" and skip is None for lang, _, _, skip in blocks), f"{page} runs no python block"


def test_the_checker_reports_a_failing_snippet_with_its_page_line(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text("# A page\n\n```python\nx = 1\n```\n\ntext\n\n```python\nassert x == 2, 'x is not 2'\n```\n")
    ok, report = _checker().check_page(page, timeout=120)
    assert not ok
    assert "FAIL broken.md" in report and "x is not 2" in report
    assert re.search(r'broken\.md", line 10', report), report   # the line of the page, not of a generated file


def test_the_checker_shares_one_namespace_skips_marked_blocks_and_runs_bash(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nvalue = 41\n```\n\n<!-- not run: needs a cluster -->\n```python\nraise SystemExit(3)\n"
                    "```\n\n```python\nassert value + 1 == 42\nopen('made.txt', 'w').write('ok')\n```\n\n"
                    "```bash\ntest -f made.txt\n```\n\n```text\nnot code\n```\n")
    ok, report = _checker().check_page(page, timeout=120)
    assert ok, report
    assert "2 python and 1 bash blocks" in report and "skipped page.md:7 (needs a cluster)" in report
    failing = tmp_path / "bash.md"
    failing.write_text("```bash\nfalse\necho never\n```\n")
    ok, report = _checker().check_page(failing, timeout=120)
    assert not ok and "bash block at line 2" in report


def test_an_unclosed_fence_is_an_error():
    with pytest.raises(ValueError, match="unclosed code fence opened at line 2"):
        _checker().extract_blocks("text\n```python\nx = 1\n")
