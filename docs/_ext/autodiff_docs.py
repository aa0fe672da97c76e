"""Sphinx directive `autodiff-namespace`: autodoc every function a namespace module exports.

`autodiff.numpy` and friends export hundreds of functions; listing them by hand would go
stale. The directive reads the module's `__all__` and emits one `autofunction` (or
`autoclass`) per callable, so a new function appears in the reference when it is added.
"""

import importlib
import inspect
import re

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


class NamespaceDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"exclude": directives.unchanged}

    def run(self):
        modname = self.arguments[0]
        module = importlib.import_module(modname)
        exclude = set(self.options.get("exclude", "").split())
        lines, foreign = [], []
        for name in sorted(getattr(module, "__all__", ())):
            obj = getattr(module, name, None)
            if name in exclude or name.startswith("_") or inspect.ismodule(obj):
                continue
            if not getattr(obj, "__module__", "").startswith("autodiff"):
                foreign.append(name)  # NumPy's own object, re-exported unchanged
                continue
            if inspect.isclass(obj):
                lines.append(f".. autoclass:: {modname}.{name}")
            elif callable(obj) and getattr(obj, "__doc__", None):
                lines.append(f".. autofunction:: {modname}.{name}")
            else:
                continue
            lines.append("")
        if foreign:
            names = ", ".join(f"``{n}``" for n in foreign)
            lines += [
                ".. rubric:: Re-exported from NumPy unchanged",
                "",
                f"Creation functions, dtypes and constants (not differentiated): {names}.",
                "",
            ]
        # Used from MyST pages: the generated reST goes through MyST's eval-rst.
        lines = ["```{eval-rst}", *lines, "```"]
        content = StringList(lines, source=f"<autodiff-namespace {modname}>")
        container = nodes.container()
        self.state.nested_parse(content, self.content_offset, container)
        return container.children


_CODE = re.compile(r"`[^`]+`")


def _escape_code_suffix(line: str) -> str:
    """`` `dot`s `` -> `` `dot`\\ s ``: reST needs a non-word character after inline markup."""
    return _CODE.sub(
        lambda m: m.group(0) + ("\\ " if line[m.end() : m.end() + 1].isalnum() else ""), line
    )


def markdown_docstring_to_rst(app, what, name, obj, options, lines):
    """Smooth the markdown habits of the docstrings that reST rejects.

    A list may follow its paragraph without a blank line (reST needs one), and code may
    be followed directly by a letter (`` `dot`s ``; reST needs an escaped space).
    """
    fixed, list_indent = [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        item = line.lstrip().startswith(("- ", "* "))
        previous = fixed[-1] if fixed else ""
        if item and list_indent is None and previous.strip():
            fixed.append("")  # a list starts right after its paragraph
        elif list_indent is not None and line.strip() and not item and indent <= list_indent:
            if previous.strip():
                fixed.append("")  # a paragraph follows the list directly
            list_indent = None
        if item:
            list_indent = indent
        elif not line.strip() and list_indent is not None:
            list_indent = None
        fixed.append(_escape_code_suffix(line))
    lines[:] = fixed


def setup(app):
    app.add_directive("autodiff-namespace", NamespaceDirective)
    app.connect("autodoc-process-docstring", markdown_docstring_to_rst)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
