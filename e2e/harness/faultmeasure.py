"""Timing one fault on a live estimator process, and the Markdown rows of the fault table.

No processes and no apiserver here: the probes are passed in, so tests drive this with a
fake clock. "Detected" is the first failure the estimator itself counted (its /metrics);
"converged" the first moment its live answers equalled the snapshot-mode answers of the
objects dumped from the apiserver after the fault (never "until two estimators agree").
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable

PREFIX = "karmada_scheduler_estimator_watch_"
# A failed list or watch (any reason), an object skipped as malformed or counted as
# saturated, a relist forced by 410: each means the estimator saw something go wrong.
FAILURE_COUNTERS = tuple(PREFIX + name for name in (
    "errors_total", "malformed_objects_total", "saturated_objects_total", "relists_gone_total"))

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")


def counters(exposition: str) -> dict[str, float]:
    """Sum of every sample per metric name in a Prometheus text exposition (labels summed away)."""
    sums: dict[str, float] = {}
    for line in exposition.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise ValueError(f"not a Prometheus sample line: {line!r}")
        sums[match.group(1)] = sums.get(match.group(1), 0.0) + float(match.group(3))
    return sums


def labelled(exposition: str, name: str, label: str) -> dict[str, float]:
    """One metric's samples summed by the value of one label (e.g. watch errors by reason)."""
    sums: dict[str, float] = {}
    pattern = re.compile(rf'(?:^|,){label}="([^"]*)"')
    for line in exposition.splitlines():
        match = _SAMPLE.match(line) if line and not line.startswith("#") else None
        if match is None or match.group(1) != name:
            continue
        found = pattern.search(match.group(2) or "")
        key = found.group(1) if found else ""
        sums[key] = sums.get(key, 0.0) + float(match.group(3))
    return sums


def failures(exposition: str) -> float:
    found = counters(exposition)
    return sum(found.get(name, 0.0) for name in FAILURE_COUNTERS)


@dataclass
class Timing:
    detected: float | None = None  # seconds from the injection; None: no failure counted
    converged: float | None = None  # seconds from the injection; None: not within the limit
    back: float | None = None  # a restart: seconds from the injection until the apiserver was back
    differences: list[str] = field(default_factory=list)  # what still differed when it gave up


def time_fault(inject: Callable[[Callable[[], float]], None], failures: Callable[[], float],
               differences: Callable[[], list[str] | None], limit: float, *,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
               every: float = 0.2) -> Timing:
    """Inject a fault, then poll until the live answers equal the reference or `limit` passes.

    `inject(since)` may leave work running in a thread (an apiserver restart); `since()` gives
    seconds from the injection. `differences()` returns None while there is no reference yet
    (the changes after a restart are still being made), else what differs (empty: converged).
    """
    before = failures()
    t0 = clock()

    def since() -> float:
        return clock() - t0

    timing = Timing()
    inject(since)
    while True:
        # Each figure is read when its probe has returned: a bound, never an understatement.
        if timing.detected is None and failures() > before:
            timing.detected = since()
        diffs = differences()
        if diffs is not None:
            timing.differences = diffs
            if not diffs:
                timing.converged = since()
                break
        if since() >= limit:
            break
        sleep(every)
    if timing.detected is None and failures() > before:
        timing.detected = since()  # counted between the last two polls
    return timing


@dataclass
class Row:
    fault: str
    timing: Timing
    expects_failure: bool  # churn and node deletion are ordinary events, not failures
    karmada_equal: bool | None  # None: not compared (the fault never converged)


HEADER = ("| fault | API | detected after | converged after | answers equal a fresh list "
          "| answers equal Karmada's estimator |\n|---|---|---|---|---|---|")


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def row_markdown(row: Row) -> str:
    t = row.timing
    if t.detected is None and not row.expects_failure:
        detected = "n/a (ordinary events, nothing fails)"
    else:
        detected = _seconds(t.detected)
    converged = _seconds(t.converged)
    if t.converged is not None and t.back is not None:
        converged += f" ({t.converged - t.back:.1f} s after it came back)"
    fresh = "yes" if t.converged is not None else "no"
    karmada = {True: "yes", False: "no", None: "not compared (did not converge)"}[row.karmada_equal]
    return f"| {row.fault} | real | {detected} | {converged} | {fresh} | {karmada} |"


def table(rows: list[Row]) -> str:
    return "\n".join([HEADER, *(row_markdown(r) for r in rows)])
