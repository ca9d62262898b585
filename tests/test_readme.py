"""The README's commands, followed as a new user would, so the README cannot drift.

Every fenced block of the README is parsed into commands (continuation lines and quoted
multi-line arguments joined, comments dropped, pipelines split). What that means per command:

- **Run as written, output checked against the README's own words**: the quick start's
  estimator (on free ports instead of 10352/10351/8080, which a shared machine may have taken;
  the following grpcurl calls get the same ports), its grpcurl calls (the service listed,
  member-b's `{}` for 3 GPUs and `"maxSets": 3` for the `CgEx` variant the prose states) and
  karmada-place on the demo's members; every `karmada-estimator manifests` command up to its
  pipe (it must render the kinds the install needs).
- **Checked, not run**: `make` targets exist and parse (`make -n`): `make demo`, `make test`
  and `make e2e` take minutes (and `make test` would run this test again); `docker build`
  needs a daemon (tests/deploy/test_image.py builds when one exists); helm, karmadactl and
  kubectl need a cluster: the chart values and `--set` keys are checked against Karmada's
  chart and karmadactl's flags against its `--help` when `make e2e` has fetched and built
  them, else those two checks are skipped.
- Anything else in a block fails the test: a new command must be given a meaning here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from scheduler_client.launch import free_port

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
BIN = Path(sys.executable).parent
KARMADA_VERSION = re.search(r"^KARMADA_VERSION := (\S+)", (REPO / "e2e" / "versions.mk").read_text(), re.M).group(1)


def blocks() -> list[tuple[str, str]]:
    """(section heading, block text) of every fenced block, in order."""
    found, heading = [], ""
    for part in re.split(r"^(```[^\n]*\n.*?^```)\s*$", README, flags=re.M | re.S):
        if part.startswith("```"):
            found.append((heading, part.split("\n", 1)[1].rsplit("```", 1)[0]))
        else:
            headings = re.findall(r"^#{2,3} (.+)$", part, re.M)
            heading = headings[-1] if headings else heading
    return found


def commands(text: str) -> list[list[str]]:
    """Shell commands of a block as token lists (pipelines and `&&` kept as tokens)."""
    out, pending = [], ""
    for line in text.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        if pending.rstrip().endswith("\\"):
            pending = pending.rstrip()[:-1]
            continue
        try:
            tokens = shlex.split(pending, comments=True)
        except ValueError:  # an open quote: the argument goes on on the next line
            continue
        if tokens:
            out.append(tokens)
        pending = ""
    assert not pending, f"unfinished command: {pending!r}"
    return out


def stages(tokens: list[str]) -> list[list[str]]:
    parts, current = [], []
    for token in tokens:
        if token in ("|", "&&"):
            parts.append(current)
            current = []
        elif token != "&":
            current.append(token)
    return parts + [current]


def is_yaml_block(text: str) -> bool:
    return bool(re.match(r"[a-zA-Z]+:\s*$", text.splitlines()[0]))


ALL = [(heading, tokens) for heading, text in blocks() if not is_yaml_block(text) for tokens in commands(text)]
PROGRAMS = {stage[0] for _, tokens in ALL for stage in stages(tokens) if stage}


def test_the_readme_is_a_five_minute_read():
    assert len(README.splitlines()) <= 200
    for required in ("## Try it", "## Install next to Karmada", "Karmada's Helm chart", "karmadactl",
                     "Kubernetes 1.30", "Karmada v1.16 to v1.19", "LICENSE", "CHANGELOG.md"):
        assert required in README, required
    for link in re.findall(r"\]\(((?:docs/)?[A-Za-z.-]+\.md)(?:#[^)]*)?\)", README):
        assert (REPO / link).exists(), link


def test_every_command_in_the_readme_is_one_this_test_gives_a_meaning():
    known = {"make", ".venv/bin/karmada-estimator", ".venv/bin/grpcurl", ".venv/bin/karmada-place", "kill",
             "docker", "helm", "karmadactl", "karmada-estimator", "kubectl"}
    assert PROGRAMS <= known, f"commands this test does not check: {PROGRAMS - known}"


@pytest.mark.parametrize("target", sorted({s[1] for _, t in ALL for s in stages(t) if s[0] == "make"}))
def test_every_make_target_in_the_readme_exists(target):
    done = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _quick_start() -> list[list[str]]:
    return [tokens for heading, tokens in ALL if heading == "Run one estimator and ask it"]


def test_the_quick_start_runs_as_written_and_answers_what_the_readme_says(tmp_path):
    steps = _quick_start()
    assert [s[0] for s in steps] == [".venv/bin/karmada-estimator", ".venv/bin/grpcurl", ".venv/bin/grpcurl",
                                     ".venv/bin/karmada-place"]
    ports = {"10352": str(free_port()), "10351": str(free_port()), "8080": str(free_port())}

    def local(tokens: list[str]) -> list[str]:
        out = [str(BIN / Path(tokens[0]).name)] + tokens[1:]
        return [re.sub(r"(?<=127\.0\.0\.1:)(10352|10351|8080)\b", lambda m: ports[m.group(1)], t)
                if "127.0.0.1:" in t else ports.get(t, t) for t in out]

    estimator = local(stages(steps[0])[0])
    assert "--server-bind-address" in estimator and estimator[estimator.index("--server-bind-address") + 1] == "127.0.0.1"
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".numba_cache")))
    process = subprocess.Popen(estimator, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # a hang guard: kernels compile here if the cache is cold
        while True:
            assert process.poll() is None, process.communicate()[1][-2000:]
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{ports['10351']}/readyz", timeout=2).status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the README's estimator never became ready"
            time.sleep(0.2)

        def grpcurl(tokens: list[str]) -> str:
            done = subprocess.run(local(tokens), cwd=REPO, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout

        assert "github.com.karmada_io.karmada.pkg.estimator.service.Estimator" in grpcurl(steps[1])
        assert "member-b answers `{}`" in README and json.loads(grpcurl(steps[2])) == {}
        assert "With `CgEx`\n(one GPU per worker) it answers `\"maxSets\": 3`" in README
        assert json.loads(grpcurl([t.replace('"CgEz"', '"CgEx"') for t in steps[2]])) == {"maxSets": 3}
    finally:
        process.terminate()
        process.wait(30)

    placed = subprocess.run(local(steps[3]), cwd=REPO, capture_output=True, text=True, timeout=120)
    # Any verdict docs/placement-client.md lists (chosen, none fits, undecided, ...), not bad input or a crash.
    assert placed.returncode not in (1, 2) and "Traceback" not in placed.stderr, placed.stderr
    assert "member-b" in placed.stdout and "member-c" in placed.stdout


@pytest.mark.parametrize("tokens", [s for _, t in ALL for s in stages(t) if s[0] == "karmada-estimator"],
                         ids=lambda s: " ".join(s[2:6]))
def test_every_manifests_command_renders_what_its_pipe_applies(tokens):
    done = subprocess.run([sys.executable, "-m", "estimator", *tokens[1:]], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    kinds = {d["kind"] for d in yaml.safe_load_all(done.stdout) if d}
    part = tokens[tokens.index("--part") + 1] if "--part" in tokens else "all"
    assert kinds >= {"host": {"Deployment", "Service"}, "member": {"ClusterRole", "ServiceAccount"},
                     "all": {"Deployment", "ClusterRole"}}[part]


def test_the_image_command_builds_this_repository():
    (build,) = [s for _, t in ALL for s in stages(t) if s[:2] == ["docker", "build"]]
    assert build[-1] == "." and (REPO / "Dockerfile").exists()


def _karmada_chart() -> Path | None:
    cache = Path(os.environ.get("GOMODCACHE") or Path.home() / "go" / "pkg" / "mod")
    chart = cache / "github.com" / "karmada-io" / f"karmada@{KARMADA_VERSION}" / "charts" / "karmada"
    return chart if chart.is_dir() else None


@pytest.mark.skipif(_karmada_chart() is None, reason="Karmada's module is not in the Go module cache (make e2e fetches it)")
def test_the_chart_values_and_settings_are_karmadas():
    values = yaml.safe_load((_karmada_chart() / "values.yaml").read_text())
    (given,) = [yaml.safe_load(text) for _, text in blocks() if is_yaml_block(text)]
    for key, value in given["schedulerEstimator"].items():
        assert key in values["schedulerEstimator"], key
    (member,) = given["schedulerEstimator"]["memberClusters"]
    assert set(member) <= set(values["schedulerEstimator"]["memberClusters"][0])
    assert set(member["kubeconfig"]) == set(values["schedulerEstimator"]["memberClusters"][0]["kubeconfig"])
    (upgrade,) = [s for _, t in ALL for s in stages(t) if s[:2] == ["helm", "upgrade"]]
    assert upgrade[upgrade.index("--version") + 1] == KARMADA_VERSION
    for setting in [upgrade[i + 1] for i, t in enumerate(upgrade) if t == "--set"]:
        node = values
        for key in setting.split("=", 1)[0].split("."):
            assert key in node, setting
            node = node[key]


@pytest.mark.skipif(not (REPO / ".e2e" / "bin" / f"karmadactl-{KARMADA_VERSION}").exists(),
                    reason="karmadactl is not built (make e2e-install-tools builds it)")
def test_the_karmadactl_command_uses_flags_karmadactl_has():
    (enable,) = [s for _, t in ALL for s in stages(t) if s[0] == "karmadactl"]
    shown = subprocess.run([str(REPO / ".e2e" / "bin" / f"karmadactl-{KARMADA_VERSION}"), *enable[1:3], "--help"],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    for flag in [t.split("=")[0] for t in enable if t.startswith("-")]:
        assert re.search(rf"(^|[ ,]){re.escape(flag)}[ =,]", shown.stdout, re.M), flag
