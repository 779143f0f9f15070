"""Sphinx configuration of jaxdml's documentation (``make -C docs html``; docs/README.md explains the switches)."""

import os
import pathlib
import shutil
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document this checkout, not another installed copy
# the notebooks' kernel inherits this environment and must draw with its inline backend (a MPLBACKEND such as
# Agg would leave their figures out); sphinx-gallery selects Agg for the examples itself
os.environ.pop("MPLBACKEND", None)

import jaxdml  # noqa: E402

project = "jaxdml"
author = "the jaxdml developers"
copyright = "the jaxdml developers"  # noqa: A001
release = version = jaxdml.__version__


def _flag(name, default):
    """An on/off environment switch: ``0``, ``false``, ``no`` or ``off`` turn it off."""
    return os.environ.get(name, default).strip().lower() not in ("0", "false", "no", "off", "")


extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "README.md", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.md5", "auto_examples/*.json",
                    "auto_examples/*.zip"]
suppress_warnings = ["myst.header"]  # benchmark pages start below a generated heading level

# -- API reference: autosummary writes a page per object into api/generated/ ---------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections state the types
numpydoc_show_class_members = True
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = False
add_module_names = False

# -- intersphinx: the inventories are downloaded from the projects' sites, which the CI machine cannot reach
# (it reaches package registries only). JAXDML_DOCS_INTERSPHINX=1 turns the links on where the network is there.
intersphinx_mapping = {}
if _flag("JAXDML_DOCS_INTERSPHINX", "0"):
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable/", None),
        "scipy": ("https://docs.scipy.org/doc/scipy/", None),
        "sklearn": ("https://scikit-learn.org/stable/", None),
        "jax": ("https://docs.jax.dev/en/latest/", None),
        "optax": ("https://optax.readthedocs.io/en/latest/", None),
    }
intersphinx_timeout = 10

# -- the gallery: examples/plot_*.py run at build time (JAXDML_DOCS_GALLERY=0: listed, not run) -------------
_RUN_GALLERY = _flag("JAXDML_DOCS_GALLERY", "1")
if not any((ROOT / "examples" / name).exists() for name in ("README.rst", "README.txt")):
    # a checkout without the gallery still builds: its page says so
    extensions.remove("sphinx_gallery.gen_gallery")
    (DOCS / "auto_examples").mkdir(exist_ok=True)
    (DOCS / "auto_examples" / "index.rst").write_text(
        "Gallery\n=======\n\nThis checkout has no ``examples/`` folder (with its ``README.rst``), so no gallery.\n")
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_" if _RUN_GALLERY else r"^$",
    "plot_gallery": "True" if _RUN_GALLERY else "False",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
}

# -- the notebooks: copied from notebooks/ and executed by myst-nb (JAXDML_DOCS_NOTEBOOKS=0: shown as stored) ---
_NOTEBOOKS = DOCS / "notebooks"
_NOTEBOOKS.mkdir(exist_ok=True)
for _nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
    _copy = _NOTEBOOKS / _nb.name
    if not _copy.exists() or _copy.read_bytes() != _nb.read_bytes():
        shutil.copyfile(_nb, _copy)
# executed once and cached in _build/.jupyter_cache (a rebuild reruns a notebook only when its code changed)
nb_execution_mode = "cache" if _flag("JAXDML_DOCS_NOTEBOOKS", "1") else "off"
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# -- HTML -----------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"jaxdml {release}"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
}
html_show_sourcelink = False
