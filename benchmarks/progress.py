"""Progress bars on stderr (tqdm, installed with the test and bench extras)."""

from __future__ import annotations

import sys

from tqdm import tqdm


def bar(total: int, desc: str, enabled: bool = True) -> tqdm:
    """A bar with update(n), set_postfix_str(text) and close(); silent when not `enabled`."""
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=True, dynamic_ncols=True, mininterval=0.5,
                disable=not enabled)
