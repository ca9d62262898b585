"""Per-request log lines are formatted and written off the request thread, and none is lost."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KLOG_TEXT_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+:\d+\] ")

PROGRAM = """
import logging, threading
from estimator.service.logoptions import LogOptions
from estimator.service import logsetup
logsetup.configure(options=LogOptions(verbosity={v}))
log = logging.getLogger(logsetup.REQUEST_LOGGER)

class Where:
    def __str__(self):
        return threading.current_thread().name

for i in range(300):
    log.info("estimate %d formatted on %s", i, Where())
log.warning("refused at once on %s", Where())
logging.getLogger("estimator").info("ordinary line on %s", Where())
"""


def _run(verbosity: int) -> list[str]:
    result = subprocess.run([sys.executable, "-c", PROGRAM.format(v=verbosity)], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    return result.stderr.splitlines()


def test_request_lines_are_formatted_off_the_calling_thread_and_all_written_by_exit():
    lines = _run(2)
    estimates = [line for line in lines if "estimate " in line]
    assert len(estimates) == 300
    assert all(line.endswith("formatted on request-log") for line in estimates)
    assert [int(line.split("estimate ")[1].split()[0]) for line in estimates] == list(range(300))  # in order
    assert all(KLOG_TEXT_LINE.match(line) for line in lines)
    assert any(line.endswith("refused at once on MainThread") for line in lines)
    assert any(line.endswith("ordinary line on MainThread") for line in lines)


def test_request_lines_stay_off_below_verbosity_two():
    lines = _run(0)
    assert not [line for line in lines if "estimate " in line]
    assert any("refused at once" in line for line in lines)
