"""The documentation's code cells run, page by page, without Sphinx.

The Sphinx build (`.ci/run`, the `docs` extra) executes every page too; this test keeps
the examples honest in the main suite, where Sphinx is absent. A page that needs
matplotlib, SciPy or Dask is skipped when they are not installed. Cells tagged
`raises-exception` must raise.
"""

import contextlib
import io
import os
import re
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)
OPTIONAL = ("matplotlib", "scipy", "dask")


def code_cells(page: Path) -> list[tuple[str, bool]]:
    """(source, must_raise) for each code cell of a MyST notebook page."""
    cells = []
    for match in CELL.finditer(page.read_text()):
        body = match.group(1)
        lines = body.splitlines(keepends=True)
        options = []
        while lines and lines[0].startswith(":"):
            options.append(lines.pop(0))
        if lines and lines[0].strip() == "---":  # YAML option block
            end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
            options, lines = lines[1:end], lines[end + 1 :]
        must_raise = any("raises-exception" in line for line in options)
        cells.append(("".join(lines), must_raise))
    return cells


PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts and code_cells(p))


def run_page(page: Path) -> None:
    namespace = {"__name__": "__main__"}
    cwd = os.getcwd()
    os.chdir(page.parent)
    try:
        for index, (source, must_raise) in enumerate(code_cells(page)):
            source = "\n".join(
                "pass" if line.lstrip().startswith("%") else line for line in source.splitlines()
            )
            code = compile(source, f"{page.name}[cell {index}]", "exec")
            with contextlib.redirect_stdout(io.StringIO()):
                if must_raise:
                    with pytest.raises(Exception):  # noqa: B017 (any error: the page shows it)
                        exec(code, namespace)
                else:
                    exec(code, namespace)
    finally:
        os.chdir(cwd)
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_page_runs(page, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    text = page.read_text()
    for module in OPTIONAL:
        if re.search(rf"^\s*(import|from) {module}\b", text, re.M):
            pytest.importorskip(module)
    run_page(page)


def test_reference_covers_public_names():
    """Every public name of `autodiff` appears in the API reference (namespaces are listed
    by the `autodiff-namespace` directive from their `__all__`)."""
    import autodiff

    reference = "\n".join(p.read_text() for p in (DOCS / "api").glob("*.md"))
    missing = [name for name in autodiff.__all__ if not re.search(rf"\b{name}\b", reference)]
    assert not missing, f"not in docs/api: {missing}"


def test_readme_python_blocks_run():
    """The README's code blocks are what a newcomer copies first: they must run."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
