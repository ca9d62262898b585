"""logsetup.request_line: the per-request line's record is built on the log thread, yet the
line reads as if logged where request_line was called (caller file:line, verbosity, vmodule),
in call order, with the arguments' text made on the log thread, and none lost at exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
import logging, sys, threading
from estimator.service.logoptions import LogOptions
from estimator.service import logsetup
logsetup.configure(options=LogOptions(format=sys.argv[1], verbosity=int(sys.argv[2]),
                                      vmodule=[(p, int(v)) for p, v in (a.split("=") for a in sys.argv[3:])]))
log = logging.getLogger(logsetup.REQUEST_LOGGER)

class Where:
    def __str__(self):
        return threading.current_thread().name

for i in range(200):
    logsetup.request_line(log, logging.INFO, "estimate %d formatted on %s", i, Where())  # line 13
logsetup.request_line(log, logging.DEBUG, "placement %d", 7)  # line 14
logsetup.request_line(log, logging.WARNING, "refused on %s", Where())  # line 15
"""


def _run(tmp_path: Path, fmt: str, verbosity: int, *vmodule: str) -> list[str]:
    program = tmp_path / "requests_prog.py"
    program.write_text(PROGRAM.lstrip("\n"))
    result = subprocess.run([sys.executable, str(program), fmt, str(verbosity), *vmodule], capture_output=True,
                            text=True, timeout=60, cwd=REPO, env={"PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    return result.stderr.splitlines()


def test_deferred_lines_keep_their_caller_order_and_are_formatted_off_the_calling_thread(tmp_path):
    lines = _run(tmp_path, "json", 2)
    entries = [json.loads(line) for line in lines]
    estimates = [e for e in entries if e["msg"].startswith("estimate ")]
    assert [e["msg"] for e in estimates] == [f"estimate {i} formatted on request-log" for i in range(200)]
    assert {(e["caller"].rsplit("/", 1)[-1], e["v"], e["logger"]) for e in estimates} == {
        ("requests_prog.py:13", 2, "estimator.requests")}
    assert [e["ts"] for e in estimates] == sorted(e["ts"] for e in estimates)
    # Below V(4): no placement line. A warning is written at once, on the calling thread.
    assert not [e for e in entries if e["msg"].startswith("placement")]
    refused = [e for e in entries if e["msg"].startswith("refused")]
    assert [(e["msg"], e["caller"].rsplit("/", 1)[-1], e["level"]) for e in refused] == [
        ("refused on MainThread", "requests_prog.py:15", "warning")]


def test_verbosity_and_vmodule_apply_to_deferred_lines(tmp_path):
    assert not [line for line in _run(tmp_path, "text", 0) if "estimate " in line]
    debug = [line for line in _run(tmp_path, "text", 4) if "placement 7" in line]
    assert len(debug) == 1 and " requests_prog.py:14] placement 7" in debug[0]
    # --vmodule by the caller's file: on for it at verbosity 0, off for it at verbosity 4.
    assert len([line for line in _run(tmp_path, "text", 0, "requests_prog=2") if "estimate " in line]) == 200
    assert not [line for line in _run(tmp_path, "text", 4, "requests_prog=1") if "estimate " in line]


def test_without_configure_it_is_an_ordinary_log_call(caplog):
    import logging

    from estimator.service import logsetup

    log = logging.getLogger("estimator.requests.test")
    with caplog.at_level(logging.INFO, logger="estimator.requests.test"):
        logsetup.request_line(log, logging.INFO, "answer %d", 3)
    assert [(r.getMessage(), Path(r.pathname).name) for r in caplog.records] == [("answer 3", "test_request_line.py")]
