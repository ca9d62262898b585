"""Progress bars on stderr: tqdm when it is installed (the `bench` extra), else a plain bar."""

from __future__ import annotations

import sys
import time

try:
    from tqdm import tqdm as _tqdm
except ImportError:  # pragma: no cover - depends on the environment
    _tqdm = None


class _Plain:
    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.n = max(total, 1), desc, 0
        self._last = 0.0
        self._started = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= 0.5 or self.n >= self.total:
            self._last = now
            done = int(30 * self.n / self.total)
            sys.stderr.write(f"\r{self.desc:28s} [{'#' * done}{'.' * (30 - done)}] {self.n}/{self.total} "
                             f"{now - self._started:6.1f}s")
            sys.stderr.flush()

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


def bar(total: int, desc: str, enabled: bool = True):
    """A bar with update(n), set_postfix_str(text) and close()."""
    if not enabled:
        return _Null()
    if _tqdm is not None:
        return _tqdm(total=total, desc=desc, file=sys.stderr, leave=True, dynamic_ncols=True, mininterval=0.5)
    return _Plain(total, desc)


class _Null:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass
