"""The design page (docs/design.md) is a map of the package: it names every package, and calls
nothing that exists a plan.

Read from the files, nothing is imported. The tree is scanned, so a new package fails the
test until the page describes it.

The page's convention for naming a package: its path under `autodiff/` with a trailing
slash, alone (`core/`, `staging/numba/`, `nn/utils/`) or with the prefix (`autodiff/core/`),
also as the start of a file's path (`staging/numba/lower.py` names `staging/numba/`). A
path counts only from its start: `nn/utils/` names `nn/utils/`, not the top-level `utils/`.

A plan is a sentence with one of `PLAN_WORDS`. Such a sentence must not name a package that
exists: not by its path (as above), its module name (`autodiff.nn`), its name in backticks
(`` `nn` ``), or a subject listed for it in `SUBJECTS` (a sentence planning "Dask" plans
`distributed/`). A sentence is one of the prose's (up to `.`, `!` or `?` and a space) or a
line of a code block, table or heading.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autodiff"
PAGE = ROOT / "docs" / "design.md"

PLAN_WORDS = re.compile(r"\b(planned|not yet|later|future)\b", re.IGNORECASE)
# What a sentence may call a package by, besides its path and module name.
SUBJECTS = {"distributed": ("Dask",)}


def packages() -> list[str]:
    """Every package under autodiff/ (a directory with an __init__.py), as `a/b/`."""
    return sorted(
        f"{init.parent.relative_to(PACKAGE).as_posix()}/"
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE
    )


def names(text: str, package: str) -> bool:
    """Does `text` name `package` (`a/b/`) by its path, as the page's convention says?"""
    return re.search(rf"(?<![\w/])(autodiff/)?{re.escape(package)}", text) is not None


def mentions(text: str, package: str) -> bool:
    """Does `text` refer to `package` in any way a plan might: its path, its module name,
    its name in backticks, or one of its `SUBJECTS`?"""
    dotted = package.rstrip("/").replace("/", ".")
    last = dotted.rsplit(".", 1)[-1]
    words = [rf"\bautodiff\.{re.escape(dotted)}\b", rf"`{re.escape(last)}`"]
    words += [rf"\b{re.escape(subject)}\b" for subject in SUBJECTS.get(dotted, ())]
    return names(text, package) or any(re.search(w, text) for w in words)


def sentences(page: str) -> list[str]:
    """The page's sentences: prose split at its full stops, each line of a code block, table
    or heading on its own."""
    found = []
    in_code = False
    paragraph: list[str] = []

    def flush() -> None:
        text = " ".join(paragraph)
        found.extend(s for s in re.split(r"(?:(?<=[.!?])|(?<=[.!?]\*\*))\s+", text) if s.strip())
        paragraph.clear()

    for line in page.splitlines():
        if line.startswith("```"):
            flush()
            in_code = not in_code
        elif in_code or line.startswith(("#", "|")):
            flush()
            found.append(line)
        elif not line.strip():
            flush()
        else:
            paragraph.append(line.strip())
    flush()
    return found


def test_the_page_names_every_package():
    page = PAGE.read_text()
    missing = [p for p in packages() if not names(page, p)]
    assert not missing, (
        "docs/design.md does not name these packages (write `autodiff/<pkg>/` or `<pkg>/`, "
        f"and say what lives there): {missing}"
    )


def test_the_page_calls_nothing_existing_a_plan():
    offending = [
        f"{package}: {sentence.strip()}"
        for sentence in sentences(PAGE.read_text())
        if PLAN_WORDS.search(sentence)
        for package in packages()
        if mentions(sentence, package)
    ]
    assert not offending, "docs/design.md calls what exists a plan:\n" + "\n".join(offending)


@pytest.mark.parametrize(
    ("text", "package", "named"),
    [
        ("core/trace.py holds the levels", "core/", True),
        ("the `autodiff/core/` package", "core/", True),
        ("nn/utils/ holds clipping", "utils/", False),
        ("nn/utils/ holds clipping", "nn/utils/", True),
        ("see autodiff/staging/numba/lower.py", "staging/numba/", True),
        ("numba/ (indented in a tree)", "staging/numba/", False),
    ],
)
def test_the_naming_convention(text, package, named):
    assert names(text, package) is named


def test_plans_are_found():
    """The checks themselves: an old page's plans of packages that now exist are found."""
    page = (
        "## Planned: scale-out (Dask)\n\n"
        "**Planned.** Chunks would become tasks. They stay lazy.\n\n"
        "```text\n  distributed/, nn/, optim/     planned\n```\n"
        "Python 3.10 or later works.\n"
    )
    plans = [s for s in sentences(page) if PLAN_WORDS.search(s)]
    assert plans == [
        "## Planned: scale-out (Dask)",
        "**Planned.**",
        "  distributed/, nn/, optim/     planned",
        "Python 3.10 or later works.",
    ]
    assert mentions(plans[0], "distributed/") and not mentions(plans[1], "distributed/")
    assert [p for p in ("distributed/", "nn/", "optim/", "ops/") if mentions(plans[2], p)] == [
        "distributed/",
        "nn/",
        "optim/",
    ]
    assert not any(mentions(plans[3], p) for p in packages())
