"""What this build is, as Karmada's components say it (`version` subcommand, karmada_build_info).

Karmada's pkg/version reports a Go build's git version, commit, tree state, build date, Go
version, compiler and platform; a Python package has its version and interpreter, and says
"unknown" for the rest rather than guess.
"""

from __future__ import annotations

import platform
from importlib import metadata

DISTRIBUTION = "karmada-accurate-estimator"


def version() -> str:
    """The installed package's version ("unknown" when run from a tree never installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def build_info() -> dict[str, str]:
    """karmada_build_info's labels and values, by Karmada's names."""
    return {
        "git_version": f"v{version()}",
        "git_commit": "unknown",
        "git_short_commit": "unknown",
        "git_tree_state": "unknown",
        "build_date": "unknown",
        "go_version": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{platform.system().lower()}/{platform.machine().lower()}",
    }


def version_line(program: str = "karmada-estimator") -> str:
    """As Karmada's `version` subcommand prints it: `<program> version: version.Info{...}`."""
    info = build_info()
    fields = ", ".join(
        f'{k}:"{info[v]}"'
        for k, v in (
            ("GitVersion", "git_version"),
            ("GitCommit", "git_commit"),
            ("GitTreeState", "git_tree_state"),
            ("BuildDate", "build_date"),
            ("GoVersion", "go_version"),
            ("Compiler", "compiler"),
            ("Platform", "platform"),
        )
    )
    return f"{program} version: version.Info{{{fields}}}"
