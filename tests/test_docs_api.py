"""The API reference covers the public API (``docs/check_api.py``), and the check fails on a gap."""

import importlib.util
import pathlib
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
