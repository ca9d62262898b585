"""Splicing one benchmark's "## " section into benchmarks/RESULTS.md, leaving the others verbatim."""
from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, heading: str, text: str) -> None:
    """Replace the section that starts with `heading` (up to the next "## " heading) by `text`,
    or append `text`; one blank line always separates it from what comes before."""
    content = path.read_text() if path.exists() else "# Benchmark results\n"
    start = content.find("\n" + heading + "\n")
    if start < 0:
        content = content.rstrip("\n") + "\n\n" + text
    else:
        end = content.find("\n## ", start + 1)
        content = content[:start].rstrip("\n") + "\n\n" + text + (content[end:] if end >= 0 else "")
    path.write_text(content)
