"""Text tables and human-readable times, for the suite's reports."""

from __future__ import annotations

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


def format_time(seconds: float) -> str:
    """Three significant digits in the largest unit that keeps the number >= 1, e.g. '1.23 ms'."""
    scale, unit = next(((s, u) for s, u in _UNITS if seconds >= s), _UNITS[-1])
    value = seconds / scale
    return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: the first left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: " | ".join(
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
    )
    return "\n".join([line(header), "-+-".join("-" * w for w in widths), *map(line, rows)])
