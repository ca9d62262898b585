"""Logging as Karmada's components log: klog verbosity (-v, --vmodule), text or JSON lines.

Verbosity maps our records onto klog's V-levels: INFO records are V(0), except one line per
estimate on the request logger, which is V(2); DEBUG records (the placement behind every
component-set answer) are V(4). Warnings and errors always print.

With --logging-format=json every line the process writes to stderr is one JSON object with
component-base's keys (ts in epoch milliseconds, caller, msg, v; err on error lines) plus
logger and level: Python warnings and uncaught exceptions go through logging too, and bytes
that native libraries write straight to file descriptor 2 are wrapped line by line.
"""

from __future__ import annotations

import atexit
import fnmatch
import io
import json
import logging
import logging.handlers
import os
import queue
import sys
import tempfile
import threading
import time
import traceback
from typing import TYPE_CHECKING, TextIO

from estimator.service.logoptions import LogOptions

if TYPE_CHECKING:
    from types import TracebackType

REQUEST_LOGGER = "estimator.requests"
PROGRAM = "karmada-scheduler-estimator"
_KLOG_SEVERITY = (logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)


def record_v(record: logging.LogRecord) -> int:
    if record.levelno <= logging.DEBUG:
        return 4
    if record.levelno == logging.INFO and record.name.startswith(REQUEST_LOGGER):
        return 2
    return 0


def _caller(record: logging.LogRecord, with_dir: bool = True) -> str:
    parts = record.pathname.replace(os.sep, "/").rsplit("/", 2)
    name = "/".join(parts[-2:]) if with_dir else parts[-1]
    return f"{name}:{record.lineno}"


def vmodule_level(patterns: list[tuple[str, int]], path: str) -> int | None:
    """klog's matching: a pattern without '/' matches the file's base name without extension;
    one with '/' matches the path without extension. First match wins."""
    stem = path.rsplit(".", 1)[0] if path.endswith(".py") else path
    base = stem.rsplit("/", 1)[-1]
    for pattern, level in patterns:
        subject = stem if "/" in pattern else base
        if fnmatch.fnmatchcase(subject, pattern) or ("/" in pattern and fnmatch.fnmatchcase(stem, "*/" + pattern)):
            return level
    return None


class VerbosityFilter(logging.Filter):
    """klog's -v and --vmodule: a record passes when its V-level is at most the verbosity of
    the file that logged it."""

    def __init__(self, verbosity: int, vmodule: list[tuple[str, int]]):
        super().__init__()
        self.verbosity, self.vmodule = verbosity, vmodule
        self._per_file: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        limit = self.verbosity
        if self.vmodule:
            known = self._per_file.get(record.pathname)
            if known is None:
                matched = vmodule_level(self.vmodule, record.pathname.replace(os.sep, "/"))
                known = self.verbosity if matched is None else matched
                self._per_file[record.pathname] = known
            limit = known
        return record_v(record) <= limit


class BacktraceFilter(logging.Filter):
    """klog's --log_backtrace_at: the record logged at file:N carries the stack that led there."""

    def __init__(self, location: tuple[str, int]):
        super().__init__()
        self.file, self.line = location

    def filter(self, record: logging.LogRecord) -> bool:
        if record.lineno == self.line and os.path.basename(record.pathname) == self.file and not record.stack_info:
            record.stack_info = "".join(traceback.format_stack()[:-1]).rstrip()
        return True


class LevelRange(logging.Filter):
    def __init__(self, low: int = 0, high: int = 1000):
        super().__init__()
        self.low, self.high = low, high

    def filter(self, record: logging.LogRecord) -> bool:
        return self.low <= record.levelno < self.high


class JsonFormatter(logging.Formatter):
    """component-base's JSON line: {"ts": <epoch ms>, "caller", "msg", "v"} ("err" and no "v"
    on errors), plus our "logger" and "level"."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict = {
            "ts": round(record.created * 1000, 3),
            "caller": _caller(record),
            "msg": record.getMessage().rstrip("\n"),
        }
        if record.levelno < logging.ERROR:
            entry["v"] = record_v(record)
        entry["logger"] = record.name
        entry["level"] = record.levelname.lower()
        if record.exc_info:
            entry["err"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stacktrace"] = record.stack_info
        return json.dumps(entry, ensure_ascii=False, default=str)


def _one_entry(text: str) -> str:
    """A message whose later lines are indented: whatever a line break in a client's value
    (one that slipped past quoting) is followed by, it cannot read as a klog header line."""
    return "\n\t".join(text.splitlines()) if text and not text.isprintable() else text


class KlogTextFormatter(logging.Formatter):
    """klog's header: `I1201 20:48:43.123456 12345 server.py:88] message`. A message's own
    line breaks are followed by a tab (`_one_entry`); tracebacks are appended as they are."""

    def __init__(self, skip_headers: bool = False, add_dir_header: bool = False):
        super().__init__()
        self.skip_headers, self.add_dir_header = skip_headers, add_dir_header
        self._second: tuple[int | None, str] = (None, "")  # (epoch second, its "MMDD hh:mm:ss"): lines share seconds

    def format(self, record: logging.LogRecord) -> str:
        text = _one_entry(record.getMessage())
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            text += "\n" + record.stack_info
        if self.skip_headers:
            return text
        second, stamp = self._second
        if second != int(record.created):
            second = int(record.created)
            stamp = time.strftime("%m%d %H:%M:%S", time.localtime(second))
            self._second = (second, stamp)
        micros = int((record.created % 1) * 1_000_000)
        letter = "I" if record.levelno < logging.WARNING else record.levelname[:1]  # klog: I W E F only
        return f"{letter}{stamp}.{micros:06d} {record.process:7d} {_caller(record, self.add_dir_header)}] {text}"


class _StderrWrapper:
    """Owns file descriptor 2 while JSON logging is on: whatever native code writes there
    arrives here through a pipe and is re-emitted as JSON lines on the real stderr."""

    def __init__(self) -> None:
        self.real = os.dup(2)
        read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self.stream = io.TextIOWrapper(
            os.fdopen(self.real, "wb", buffering=0), encoding="utf-8", line_buffering=True, write_through=True
        )
        self._reader = threading.Thread(target=self._pump, args=(read_end,), name="stderr-json", daemon=True)
        self._reader.start()
        atexit.register(self.close)

    def close(self) -> None:
        """At exit: end the pipe so the last native lines are wrapped before the process goes."""
        try:
            sys.stderr.flush()
            if sys.stderr.fileno() != self.real:
                sys.stderr.close()
            os.dup2(self.real, 2)  # closes the pipe's write end held at 2
        except (OSError, ValueError):
            return
        self._reader.join(1.0)

    def _pump(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if not line.strip():
                    continue
                try:
                    if isinstance(json.loads(line), dict):
                        os.write(self.real, (line + "\n").encode())
                        continue
                except ValueError:
                    pass
                entry = {
                    "ts": round(time.time() * 1000, 3),
                    "caller": "stderr",
                    "msg": line,
                    "v": 0,
                    "logger": "stderr",
                    "level": "info",
                }
                # One write per line: the logging handlers share this descriptor.
                os.write(self.real, (json.dumps(entry, ensure_ascii=False) + "\n").encode())


_BATCH_SECONDS = 0.05
# Request lines waiting for the log thread, at most: past this the log cannot keep up with
# the calls, and further lines are dropped (counted, and said once per burst) rather than
# kept in memory without bound.
MAX_PENDING_LINES = 10_000


class _DeferredRequestLog(logging.Handler):
    """The per-request lines (V(2) and V(4)) leave the request thread as they are: message
    formatting, the header and the write happen on one background thread, so a request
    pays only for creating its record. Warnings and errors (refused requests) are handled
    at once, in order with everything else. Both go to the root logger's handlers, so
    verbosity filters and formats apply as to any line."""

    def __init__(self) -> None:
        super().__init__()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self.dropped = 0
        self._dropping = False
        self._thread = threading.Thread(target=self._drain, name="request-log", daemon=True)
        self._thread.start()
        atexit.register(self.flush_pending)

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            _to_root_handlers(record)
        else:
            self._put(record)

    def defer(self, line: tuple) -> None:
        """Queue a request line whose record the log thread builds (see `request_line`)."""
        self._put(line)

    def _put(self, item: logging.LogRecord | tuple) -> None:
        if self._queue.qsize() < MAX_PENDING_LINES:
            self._queue.put(item)
            return
        self.dropped += 1
        if not self._dropping:  # said once per burst, by the log thread once it catches up
            self._dropping = True
            self._queue.put(_DROPPING)

    def _handle_deferred(self, line: tuple) -> None:
        logger, level, path, lineno, function, msg, args, created = line
        record = logger.makeRecord(logger.name, level, path, lineno, msg, args, None, function)
        # The time of the request, not of the write; no thread fields (no format shows them).
        record.created, record.msecs = created, (created - int(created)) * 1000
        # logging's start, which relativeCreated counts from (private, so not in typeshed).
        record.relativeCreated = (created - logging._startTime) * 1000  # type: ignore[attr-defined]
        record.thread = record.threadName = None
        if logger.filter(record) and self.filter(record):
            _to_root_handlers(record)

    def handle(self, record: logging.LogRecord) -> bool:
        # No handler lock: emit only enqueues (or hands warnings straight on).
        if self.filter(record):
            self.emit(record)
        return True

    def _drain(self) -> None:
        # Lines are written in batches a few milliseconds apart: formatting shares the GIL
        # with the server, so writing each line as it comes delayed the next answers just
        # as much as writing it on the request thread (measured through gRPC). A batch
        # overlaps few requests.
        get, pending = self._queue.get, self._queue.get_nowait
        while True:
            batch = [get()]
            time.sleep(_BATCH_SECONDS)
            try:
                while True:
                    batch.append(pending())
            except queue.Empty:
                pass
            for record in batch:
                if record is None:
                    return
                if record is _DROPPING:
                    self._dropping = False
                    logging.getLogger(REQUEST_LOGGER).warning(
                        "request log lines are coming faster than they can be written: %d dropped so far", self.dropped
                    )
                    continue
                try:
                    if type(record) is tuple:
                        self._handle_deferred(record)
                    else:
                        _to_root_handlers(record)
                except Exception:  # noqa: BLE001 - a bad record must not end the log thread
                    pass

    def flush_pending(self) -> None:
        """Write every queued line (at exit, so the last requests' lines are not lost)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(5.0)


_DROPPING = object()  # the log thread's cue to say that lines were dropped


def request_line(logger: logging.Logger, level: int, msg: str, *args: object) -> None:
    """`logger.log(level, msg, *args)` for a per-request line below WARNING, with the record
    built on the log thread: the request thread pays for a tuple and a queue put, not for
    LogRecord's caller lookup, thread and process fields (~40 us a line, measured). The
    arguments must not change after the call (they are formatted later). Without the
    deferred handler (configure() not called, e.g. in tests) this is an ordinary log call."""
    if not logger.isEnabledFor(level):
        return
    handler = _request_log
    if handler is None or logger.handlers != [handler] or level >= logging.WARNING:
        logger.log(level, msg, *args, stacklevel=2)
        return
    frame = sys._getframe(1)
    code = frame.f_code
    handler.defer((logger, level, code.co_filename, frame.f_lineno, code.co_name, msg, args, time.time()))


def _to_root_handlers(record: logging.LogRecord) -> None:
    for handler in logging.getLogger().handlers:
        if record.levelno >= handler.level:
            handler.handle(record)


_request_log: _DeferredRequestLog | None = None
_stderr_wrapper: _StderrWrapper | None = None


def _stderr_stream(options: LogOptions) -> TextIO:
    global _stderr_wrapper
    if options.format != "json":
        return sys.stderr
    if _stderr_wrapper is None:
        sys.stderr.flush()
        _stderr_wrapper = _StderrWrapper()
        # Python-level writes to sys.stderr (a stray print) also pass through the wrapper.
        sys.stderr = io.TextIOWrapper(
            os.fdopen(os.dup(2), "wb", buffering=0), encoding="utf-8", line_buffering=True, write_through=True
        )
    return _stderr_wrapper.stream


def _log_path(options: LogOptions) -> str:
    if options.log_file:
        return options.log_file
    return os.path.join(options.log_dir or tempfile.gettempdir(), f"{PROGRAM}.log")


def _handlers(options: LogOptions, formatter: logging.Formatter) -> list[logging.Handler]:
    err = _stderr_stream(options)
    if options.format == "text" and not options.logtostderr:
        # klog's file output: everything to the file; stderr gets records at or above
        # --stderrthreshold, or at or above --alsologtostderrthreshold with --alsologtostderr.
        size = options.log_file_max_size_mb * 1024 * 1024
        to_file = logging.handlers.RotatingFileHandler(_log_path(options), maxBytes=size, backupCount=1 if size else 0)
        handlers: list[logging.Handler] = [to_file]
        to_err = logging.StreamHandler(err)
        threshold = options.alsologtostderrthreshold if options.alsologtostderr else options.stderrthreshold
        to_err.addFilter(LevelRange(_KLOG_SEVERITY[threshold]))
        handlers.append(to_err)
    elif options.split_stream:
        # --log-*-split-stream: errors to stderr, everything else to stdout.
        to_out = logging.StreamHandler(sys.stdout)
        to_out.addFilter(LevelRange(high=logging.ERROR))
        to_err = logging.StreamHandler(err)
        to_err.addFilter(LevelRange(low=logging.ERROR))
        handlers = [to_out, to_err]
    else:
        handlers = [logging.StreamHandler(err)]
        if options.format == "text" and not options.legacy_stderr_threshold:
            # klog: --legacy_stderr_threshold_behavior=false applies --stderrthreshold to stderr-only output
            handlers[0].addFilter(LevelRange(_KLOG_SEVERITY[options.stderrthreshold]))
    for handler in handlers:
        handler.setFormatter(formatter)
    return handlers


def _log_uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    logging.getLogger("estimator").critical("uncaught exception", exc_info=(kind, value, tb))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    logging.getLogger("estimator").critical(
        "uncaught exception in thread %s",
        getattr(args.thread, "name", "?"),
        # The ignore: exc_value may be None (threading.excepthook's docs); logging's stubs want an exception.
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),  # type: ignore[arg-type]
    )


def configure(log_format: str = "text", verbosity: int = 0, options: LogOptions | None = None) -> None:
    """Install the handlers for `options` (or just a format and a verbosity)."""
    options = options or LogOptions(format=log_format, verbosity=verbosity)
    formatter = (
        JsonFormatter() if options.format == "json" else KlogTextFormatter(options.skip_headers, options.add_dir_header)
    )
    handlers = _handlers(options, formatter)
    verbosity_filter = VerbosityFilter(options.verbosity, options.vmodule)
    for handler in handlers:
        handler.addFilter(verbosity_filter)
        if options.backtrace_at:
            handler.addFilter(BacktraceFilter(options.backtrace_at))
    root = logging.getLogger()
    root.handlers[:] = handlers
    # Logger levels only skip work early; the filter decides per file.
    most = max([options.verbosity, *(level for _, level in options.vmodule)])
    root.setLevel(logging.DEBUG if most >= 4 else logging.INFO)
    requests = logging.getLogger(REQUEST_LOGGER)
    requests.setLevel(logging.DEBUG if most >= 4 else logging.INFO if most >= 2 else logging.WARNING)
    global _request_log
    if _request_log is None:
        _request_log = _DeferredRequestLog()
    requests.handlers[:] = [_request_log]
    requests.propagate = False
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_uncaught_in_thread
