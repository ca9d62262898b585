"""The one benchmark results module: how every benchmark computes its percentiles and splices
its "## " section into benchmarks/RESULTS.md, leaving the other sections verbatim."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

# Stated once in RESULTS.md's method text (benchmarks/report.py), true of every section.
PERCENTILE_METHOD = (
    "every p50/p90/p99 in this file is `numpy.percentile` with its default (linear) method: "
    "interpolated between the two nearest ranks, so with few samples p99 lies just under the maximum"
)


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0..100) of `values` by PERCENTILE_METHOD; NaN when there are none."""
    data = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    return float(np.percentile(data, q)) if data.size else float("nan")


def _heading_lines(lines: list[str]) -> list[int]:
    """Indexes of the "## " heading lines, skipping lines inside ``` code blocks."""
    found, in_code = [], False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("## "):
            found.append(i)
    return found


def splice_section(content: str, heading: str, text: str, *, first_if_missing: bool = False) -> str:
    """`content` with the section whose heading line is `heading` (up to the next "## " heading
    outside code blocks) replaced by `text`, or `text` appended (put first if `first_if_missing`);
    one blank line separates the section from what comes before and after it."""
    lines = content.splitlines(keepends=True)
    heads = _heading_lines(lines)
    mine = next((i for i in heads if lines[i].rstrip("\n").rstrip() == heading), None)
    section = text.rstrip("\n") + "\n"
    if mine is None and first_if_missing:
        return section + ("\n" + content.lstrip("\n") if content.strip() else "")
    if mine is None:
        return content.rstrip("\n") + "\n\n" + section
    after = next((i for i in heads if i > mine), len(lines))
    before, rest = "".join(lines[:mine]).rstrip("\n"), "".join(lines[after:])
    return (before + "\n\n" if before else "") + section + ("\n" + rest if rest else "")


def split_top(content: str) -> tuple[str, str]:
    """(the text before the first "## " heading, the rest from that heading on)."""
    lines = content.splitlines(keepends=True)
    heads = _heading_lines(lines)
    first = heads[0] if heads else len(lines)
    return "".join(lines[:first]), "".join(lines[first:])


def replace_section(path: Path, heading: str, text: str) -> None:
    """Splice `text` in as the `heading` section of the file at `path` (created when missing)."""
    content = path.read_text() if path.exists() else "# Benchmark results\n"
    path.write_text(splice_section(content, heading, text))
