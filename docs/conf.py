"""Sphinx configuration: MyST markdown pages, executed by myst-nb, API pages from docstrings."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # document (and execute against) this checkout
sys.path.insert(0, os.path.join(HERE, "_ext"))
# The notebook kernels are subprocesses: give them the same view of the checkout.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))

project = "autodiff"
author = "the autodiff developers"
copyright = "the autodiff developers"
release = version = "0.1.0"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "autodiff_docs",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]
source_suffix = {".md": "myst-nb", ".rst": "restructuredtext"}

# Docstrings are markdown-flavoured (`name` means code); render backticks as code links.
default_role = "py:obj"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_typehints = "none"
autodoc_member_order = "bysource"
add_module_names = False

myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

# Every code cell runs at build time; an unexpected exception fails the build.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 300
nb_merge_streams = True

html_theme = "alabaster"
html_title = "autodiff"
html_theme_options = {
    "description": "Exact derivatives of NumPy code",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
