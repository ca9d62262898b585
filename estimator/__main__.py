"""karmada-estimator: the accurate scheduler-estimator for one member cluster.

Exit status: 0 after a clean drain, 2 on bad flags or a bad object file, 1 on any other
start-up failure.

The program's entry only (`python -m estimator`, and the `karmada-estimator` script of
pyproject.toml): the command line is estimator/cli/ (its flags in `options`, its `main`),
serving and forking estimator/service/launch.py.
"""

from __future__ import annotations

import sys

from estimator.cli.main import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
