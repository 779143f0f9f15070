"""The documentation site's checks: the API reference covers the public API (``docs/check_api.py``) and the
check fails on a gap; the benchmark pages hold the blocks the benchmark scripts rewrite."""

import importlib.util
import pathlib
import re
import shutil

import pytest

import jaxdml

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def check_api():
    spec = importlib.util.spec_from_file_location("check_api", ROOT / "docs" / "check_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_is_on_an_api_page_with_a_docstring(check_api):
    assert check_api.check() == []


def test_a_name_added_to_an_all_without_a_page_fails(check_api, monkeypatch):
    def undocumented_helper(x):
        """A helper that no API page lists."""
        return x

    monkeypatch.setattr(jaxdml.projections, "undocumented_helper", undocumented_helper, raising=False)
    monkeypatch.setattr(jaxdml.projections, "__all__", [*jaxdml.projections.__all__, "undocumented_helper"])
    problems = check_api.check()
    assert problems == ["jaxdml.projections.undocumented_helper is in __all__ but on no API page (docs/api/*.rst)"]


def test_a_public_function_without_a_docstring_fails(check_api, monkeypatch):
    def helper(x):
        return x

    monkeypatch.setattr(jaxdml.projections, "projection_psd", helper)
    problems = check_api.check()
    assert problems == ["jaxdml.projections.projection_psd has no docstring"]


def test_a_page_listing_a_missing_name_or_a_module_without_automodule_fails(check_api, tmp_path):
    api = tmp_path / "api"
    shutil.copytree(ROOT / "docs" / "api", api)
    page = api / "projections.rst"
    text = page.read_text()
    page.write_text(text.replace(".. automodule:: jaxdml.projections", "").replace(
        "   projection_psd\n", "   projection_psd\n   projection_nowhere\n"))
    problems = check_api.check(api)
    assert "docs/api lists jaxdml.projections.projection_nowhere, which does not exist" in problems
    assert any("module jaxdml.projections has no automodule" in p for p in problems)


# ------------------------------------------------------------------ the generated benchmark pages
@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("_harness", ROOT / "benchmarks" / "_harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: (page, block) of docs/benchmarks/ that the benchmark scripts' ``--update-docs`` rewrite
WRITTEN_BLOCKS = [("scale", "scale-matrix"), ("gpu", "gpu-check"), ("defaults", "defaults-confirmation"),
                  ("defaults", "defaults-full-confirmation"), ("latency", "small-latency"),
                  ("deep", "deep-train"), ("deep", "deep-speed")]


@pytest.mark.parametrize(("page", "block"), WRITTEN_BLOCKS)
def test_each_benchmark_page_has_its_block_with_command_machine_and_date(page, block):
    text = (ROOT / "docs" / "benchmarks" / f"{page}.md").read_text()
    inner = text.split(f"<!-- {block}:start -->", 1)[1].split(f"<!-- {block}:end -->", 1)[0].strip()
    head = inner.splitlines()[0]
    assert head.startswith("Device: ") and "python benchmarks/" in inner.split("\n\n")[0]
    assert re.search(r"20\d\d-\d\d-\d\d", inner.split("\n\n")[0])
    assert "\n| " in inner  # a table


def test_update_docs_page_rewrites_only_its_block(harness, tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# P\n\nprose\n\n<!-- t:start -->\nold\n<!-- t:end -->\n\n"
                    "after\n<!-- u:start -->\nkeep\n<!-- u:end -->\n")
    head = harness.page_head({"device": "cpu:0", "cpus": 2, "jax": "0.0"}, ["bench_x.py", "--a", "b c"], "2026-01-02")
    assert head == "Device: cpu:0 (2 CPUs), jax 0.0, 2026-01-02; `python benchmarks/bench_x.py --a 'b c'`."
    harness.update_docs_page("p", "t", f"{head}\n\n| a |\n|---|\n| 1 |", folder=str(tmp_path))
    assert page.read_text() == (f"# P\n\nprose\n\n<!-- t:start -->\n{head}\n\n| a |\n|---|\n| 1 |\n<!-- t:end -->\n\n"
                                "after\n<!-- u:start -->\nkeep\n<!-- u:end -->\n")
    with pytest.raises(SystemExit, match="no <!-- v:start -->"):
        harness.update_docs_page("p", "v", None, folder=str(tmp_path))
    with pytest.raises(SystemExit, match="does not exist"):
        harness.update_docs_page("q", "t", "x", folder=str(tmp_path))
