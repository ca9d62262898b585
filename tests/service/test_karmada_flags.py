"""Karmada's own deployment starts the estimator unchanged.

The command lines Karmada's manifest, Helm chart and karmadactl addon give its Go
scheduler-estimator (v1.16.0 to v1.19.0-rc.0, tests/support/data/karmada-args) start this server
as they are: live state from a fake API server through the kubeconfig they name, mutual TLS
from the certificate files they name. Every flag the Go binary registers parses with Go's
value syntax, and what Go refuses is refused with exit 2 naming the flag (and the gate).
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
import yaml

from estimator import goflags
from estimator.cli import options
from estimator.cli.main import main
from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2_grpc
from tests.support.fakekube import FakeKube
from scheduler_client.launch import free_port
from tests.service.test_mtls import CA, SERVER_NAME
from tests.support.servers import DEMO, REPO, quantity, start_server

DATA = REPO / "tests" / "support" / "data" / "karmada-args"
MEMBER = "member-b"
KLOG_TEXT_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+:\d+\] ")


def read_args(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line]


def unique_command_lines() -> dict[str, tuple[list[str], list[str]]]:
    """Identical lists (the same manifest in several releases) are started once."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for path in sorted(DATA.glob("*.args")):
        groups.setdefault(tuple(read_args(path)), []).append(path.stem)
    return {"+".join(names): (list(args), names) for args, names in groups.items()}


COMMAND_LINES = unique_command_lines()


def flag_value(args: list[str], name: str) -> str | None:
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return values[-1] if values else None


# ---------------------------------------------------------------------------------------
# The data itself: what the tests below start


def test_the_data_covers_every_release_and_source():
    stems = {p.stem for p in DATA.glob("*.args")}
    for tag in ("v1.16.0", "v1.17.1", "v1.18.2", "v1.19.0-rc.0"):
        for source in ("deploy-manifest", "helm-default", "helm-feature-gates", "karmadactl-addon"):
            assert f"{tag}-{source}" in stems
    manifest = read_args(DATA / "v1.18.2-deploy-manifest.args")
    assert "--feature-gates=AllAlpha=true,AllBeta=true" in manifest
    assert "--logging-format=json" in manifest and "--v=4" in manifest


def test_the_image_has_the_binary_path_karmadas_manifests_run():
    # Their `command:` replaces the image's ENTRYPOINT, so that path must start this estimator.
    paths = {read_args(path)[0] for path in DATA.glob("*.args")}
    dockerfile = (REPO / "Dockerfile").read_text()
    for path in paths:
        assert re.search(rf"ln -s /usr/local/bin/karmada-estimator-entrypoint {re.escape(path)}\b", dockerfile), path


# ---------------------------------------------------------------------------------------
# Every flag of the Go binary, with Go's syntax


def go_flags() -> list[dict]:
    with (DATA / "flags.tsv").open() as table:
        return list(csv.DictReader(table, delimiter="\t"))


def parse(argv: list[str]):
    parser = options.build_parser()
    args, extra = parser.parse_known_args(goflags.normalize_argv(["--cluster-name=m", *argv], options.BOOL_FLAGS))
    assert not extra, extra
    return args


@pytest.mark.parametrize("row", go_flags(), ids=lambda row: row["name"])
def test_every_flag_of_the_go_binary_is_accepted_with_its_default_value(row):
    name, value = row["name"], row["default"]
    argv = [f"--{name}={value}"]
    if name == "log_backtrace_at":
        argv = ["--log_backtrace_at="]  # ":0" is only the Go default's printed form
    parse(argv)
    if name == "alsologtostderrthreshold":
        argv = ["--alsologtostderrthreshold=INFO"]  # pflag prints this default as its number (0) ...
        parse(["--alsologtostderrthreshold=0"])  # ... and klog takes both
    if row["type"] == "bool":
        parse([f"--{name}"])  # bare means true
    if row["shorthand"]:
        parse([f"-{row['shorthand']}", value])


@pytest.mark.parametrize("argv, expected", [
    (["--v=4"], 4), (["--v", "4"], 4), (["-v", "4"], 4), (["-v=4"], 4), (["-v4"], 4), ([], 0),
])
def test_every_klog_verbosity_form_sets_the_same_level(argv, expected):
    assert parse(argv).v == expected


def test_go_value_syntax_is_read_as_go_reads_it():
    args = parse(["--kube-api-qps=1e2", "--kube-api-burst=0x20", "--parallelism=010", "--log_dir=/tmp/x",
                  "--enable-pprof=T", "--insecure-skip-grpc-client-verify=0", "--log-flush-frequency=1m30s",
                  "--vmodule=server=4,state*=2,", "--stderrthreshold=warning", "--log_file_max_size=0"])
    assert (args.kube_api_qps, args.kube_api_burst, args.parallelism) == (100.0, 32, 8)
    assert args.log_dir == "/tmp/x" and args.enable_pprof is True and args.insecure_skip_grpc_client_verify is False
    assert args.log_flush_frequency == 90.0 and args.vmodule == [("server", 4), ("state*", 2)]
    assert args.stderrthreshold == 1 and args.log_file_max_size == 0


@pytest.mark.parametrize("text, seconds", [
    ("5s", 5.0), ("1m30s", 90.0), ("1h2m3s4ms", 3723.004), ("-1.5h", -5400.0), ("+300ms", 0.3), ("1.s", 1.0),
    (".5s", 0.5), ("250us", 0.00025), ("250µs", 0.00025), ("0", 0.0), ("-0", 0.0), ("2562047h", 2562047 * 3600.0),
])
def test_durations_read_as_go_reads_them(text, seconds):
    assert goflags.parse_duration(text) == pytest.approx(seconds, abs=1e-9)


@pytest.mark.parametrize("text, reason", [
    ("", 'invalid duration ""'), ("5", 'missing unit in duration "5"'), ("5.", "missing unit"),
    ("5d", 'unknown unit "d"'), ("1w", 'unknown unit "w"'), ("1y", 'unknown unit "y"'), ("3 s", 'unknown unit " s"'),
    ("s", 'invalid duration "s"'), (".s", "invalid duration"), ("1..2s", "invalid duration"),
    ("2562048h", "invalid duration"),  # over int64 nanoseconds
])
def test_durations_go_refuses_are_refused_with_its_reason(text, reason):
    with pytest.raises(goflags.FlagValueError, match=re.escape(reason)):
        goflags.parse_duration(text)


def test_a_bare_boolean_does_not_swallow_the_next_word():
    # pflag: `--enable-pprof false` is the flag (true) and a stray argument, never a value.
    with pytest.raises(SystemExit) as exited:
        main(["--cluster-name=m", "--objects=x", "--enable-pprof", "false"])
    assert exited.value.code == 2


@pytest.mark.parametrize("tag", ["v1.16.0", "v1.17.1", "v1.18.2", "v1.19.0-rc.0"])
def test_every_karmada_feature_gate_of_each_release_is_accepted(tag):
    with (DATA / "feature-gates.tsv").open() as table:
        names = [row["gate"] for row in csv.DictReader(table, delimiter="\t") if row[tag] != "-"]
    for value in ("true", "false", "1", "F", "TRUE", "False"):
        gates = parse([f"--feature-gates={','.join(f'{n}={value}' for n in names)}"]).feature_gates
        assert list(gates[0]) == names and set(gates[0].values()) == {goflags.parse_bool(value)}


def test_feature_gates_resolve_as_karmadas_do():
    gates = options.feature_gates(parse(["--feature-gates=AllAlpha=true",
                                         "--feature-gates=ResourceQuotaEstimate=false"]))
    assert gates.enabled("SchedulingOvercommitProtection") and not gates.enabled("ResourceQuotaEstimate")
    assert gates.enabled("LoggingAlphaOptions") and gates.enabled("GracefulEviction")  # alpha by AllAlpha, beta default
    gates = options.feature_gates(parse(["--feature-gates=AllBeta=false"]))
    assert not gates.enabled("LoggingBetaOptions") and not gates.enabled("SchedulingOvercommitProtection")


# ---------------------------------------------------------------------------------------
# What Go refuses: exit 2, the flag (and the gate) named, Karmada's wording


def run_cli(*args: str) -> subprocess.CompletedProcess:
    snapshot = f"--objects={DEMO / 'member-b.yaml'}"
    return subprocess.run([sys.executable, "-m", "estimator", "--cluster-name=m", snapshot,
                           "--server-port=0", "--metrics-bind-address=0", "--health-probe-bind-address=0", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv, named", [
    (["--feature-gates=AllAlpha=true,Warp=true"], ["--feature-gates", "unrecognized feature gate: Warp"]),
    (["--feature-gates=Failover=maybe"], ["--feature-gates", 'invalid value of Failover=maybe',
                                          'strconv.ParseBool: parsing "maybe": invalid syntax']),
    (["--feature-gates=Failover"], ["--feature-gates", "missing bool value for Failover"]),
    (["--nope"], ["unknown flag: --nope"]),
    (["--v=abc"], ["--v", 'parsing "abc": invalid syntax']),
    (["-v", "-1"], ["-v"]),
    (["--logging-format=xml"], ["--logging-format", 'Invalid value: "xml": Unsupported log format']),
    (["--logging-format=json", "--feature-gates=LoggingBetaOptions=false"],
     ["--logging-format", "Log format json is disabled, see LoggingBetaOptions feature"]),
    (["--log-text-split-stream"], ["--log-text-split-stream", "Feature LoggingAlphaOptions is disabled"]),
    (["--log-json-info-buffer-size=1Ki"], ["--log-json-info-buffer-size", "Feature LoggingAlphaOptions is disabled"]),
    (["--kube-api-qps=fast"], ["--kube-api-qps", 'strconv.ParseFloat: parsing "fast": invalid syntax']),
    (["--kube-api-burst=1.5"], ["--kube-api-burst", 'strconv.ParseInt: parsing "1.5": invalid syntax']),
    (["--parallelism=x"], ["--parallelism"]),
    (["--server-port=70000"], ["--server-port", "must be a valid port between 0 and 65535 inclusive"]),
    (["--vmodule=server"], ["--vmodule", '"server" does not have the pattern=N format']),
    (["--log-flush-frequency=5"], ["--log-flush-frequency", 'time: missing unit in duration "5"']),
    (["--log-flush-frequency=5d"], ["--log-flush-frequency", 'time: unknown unit "d" in duration "5d"']),
    (["--enable-pprof=yes"], ["--enable-pprof", 'strconv.ParseBool: parsing "yes"']),
    (["--insecure-skip-grpc-client-verify=maybe"], ["--insecure-skip-grpc-client-verify"]),
    (["--stderrthreshold=LOUD"], ["--stderrthreshold"]),
    (["--log_backtrace_at=server"], ["--log-backtrace-at", "syntax error: expect file.go:234"]),
    (["--log_file_max_size=-1"], ["--log-file-max-size"]),
    (["--cluster"], ["unknown flag: --cluster"]),  # no abbreviations in pflag
])
def test_bad_flags_exit_2_naming_the_flag(argv, named, capsys):
    # In-process through the real entry point (every case fails before anything starts);
    # the process-level exit status is checked below.
    with pytest.raises(SystemExit) as exited:
        main(["--cluster-name=m", f"--objects={DEMO / 'member-b.yaml'}", "--server-port=0", *argv])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2, stderr
    for text in named:
        assert text in stderr, stderr


@pytest.mark.parametrize("argv, named", [
    (["--feature-gates=AllAlpha=true,AllBeta=true,Warp=true"], "unrecognized feature gate: Warp"),
    (["--v=4", "--nope"], "unknown flag: --nope"),
])
def test_the_process_exits_2(argv, named):
    result = run_cli(*argv)
    assert result.returncode == 2 and named in result.stderr, result.stderr


def test_with_json_logging_a_flag_error_is_a_json_line_too():
    result = run_cli("--logging-format=json", "--feature-gates=Warp=true")
    assert result.returncode == 2
    (entry,) = [json.loads(line) for line in result.stderr.splitlines()]
    assert entry["level"] == "error" and "--feature-gates" in entry["msg"]
    assert "unrecognized feature gate: Warp" in entry["msg"]


# ---------------------------------------------------------------------------------------
# Karmada's command lines, started as they are


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict:
    directory = tmp_path_factory.mktemp("pki")
    ca = CA("karmada-test-ca")
    server = ca.issue("karmada-scheduler-estimator", server=True)
    (directory / "tls.crt").write_bytes(server.cert)
    (directory / "tls.key").write_bytes(server.key)
    (directory / "ca.crt").write_bytes(ca.pem)
    return {"dir": directory, "ca": ca, "client": ca.issue("karmada-scheduler", server=False)}


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory):
    fake = FakeKube(bookmark_interval=0.5).start()
    fake.load(yaml.safe_load((DEMO / f"{MEMBER}.yaml").read_text())["items"])
    yield fake, fake.kubeconfig(tmp_path_factory.mktemp("kube"))
    fake.stop()


@pytest.fixture(scope="module")
def expected_replicas() -> int:
    """The answer the same request gets from the same cluster state read from the file."""
    server = start_server(MEMBER)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            return service_pb2_grpc.EstimatorStub(channel).MaxAvailableReplicas(request(), timeout=30).maxReplicas
    finally:
        server.stop(0)


def request() -> pb.MaxAvailableReplicasRequest:
    return pb.MaxAvailableReplicasRequest(
        cluster=MEMBER, replicaRequirements=pb.ReplicaRequirements(resourceRequestBytes={"cpu": quantity("500m")}))


def substitute(args: list[str], kubeconfig: Path, pki: dict, ports: dict) -> list[str]:
    """Only what a test cannot reproduce: /etc paths, the pod IP, fixed ports (README.md)."""
    out = []
    for arg in args[1:]:  # [0] is the Go binary
        name, _, value = arg.partition("=")
        if name == "--kubeconfig":
            value = str(kubeconfig)
        elif name == "--grpc-auth-cert-file":
            value = str(pki["dir"] / "tls.crt")
        elif name == "--grpc-auth-key-file":
            value = str(pki["dir"] / "tls.key")
        elif name == "--grpc-client-ca-file":
            value = str(pki["dir"] / "ca.crt")
        elif name in ("--metrics-bind-address", "--health-probe-bind-address"):
            host, _, port = value.rpartition(":")
            assert host == "$(POD_IP)", arg
            value = f"127.0.0.1:{ports[port]}"
        else:
            out.append(arg)  # everything else exactly as Karmada passes it
            continue
        out.append(f"{name}={value}")
    return out + [f"--server-port={ports['grpc']}"]


def readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return response.status
    except (urllib.error.URLError, OSError) as error:
        return getattr(error, "code", 0)


@pytest.mark.parametrize("key", list(COMMAND_LINES))
def test_karmadas_command_line_starts_and_serves(key, apiserver, pki, expected_replicas, tmp_path):
    karmada_args, _ = COMMAND_LINES[key]
    fake, kubeconfig = apiserver
    ports = {"8080": free_port(), "10351": free_port(), "grpc": free_port()}
    argv = substitute(karmada_args, kubeconfig, pki, ports)
    stderr_path = tmp_path / "stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "estimator", *argv], stdout=subprocess.DEVNULL,
                                   stderr=stderr, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 180
        while readyz(ports["10351"]) != 200:
            assert process.poll() is None, f"exited {process.returncode}: {stderr_path.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "never ready: " + stderr_path.read_text()[-3000:]
            time.sleep(0.1)
        credentials = grpc.ssl_channel_credentials(pki["ca"].pem, pki["client"].key, pki["client"].cert)
        with grpc.secure_channel(f"127.0.0.1:{ports['grpc']}", credentials,
                                 options=[("grpc.ssl_target_name_override", SERVER_NAME)]) as channel:
            answer = service_pb2_grpc.EstimatorStub(channel).MaxAvailableReplicas(request(), timeout=30).maxReplicas
        assert answer == expected_replicas > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{ports['8080']}/metrics", timeout=5) as response:
            assert b"karmada_scheduler_estimator" in response.read()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(60)
    assert code == 0, stderr_path.read_text()[-3000:]

    lines = stderr_path.read_text().splitlines()
    assert lines
    verbosity = int(flag_value(karmada_args, "v") or 0)
    if flag_value(karmada_args, "logging-format") == "json":
        entries = [json.loads(line) for line in lines]  # every line, or this raises
        assert all(isinstance(e, dict) and {"ts", "caller", "msg"} <= set(e) for e in entries)
        messages = [e["msg"] for e in entries]
        estimate_lines = [e for e in entries if e["msg"].startswith("MaxAvailableReplicas")]
        assert all(e["v"] == 2 for e in estimate_lines)
    else:
        assert all(KLOG_TEXT_LINE.match(line) for line in lines if not line.startswith((" ", "Traceback")))
        messages = lines
        estimate_lines = [line for line in lines if "] MaxAvailableReplicas" in line]
    # --v from the manifest means what it means in Karmada: >= 2 logs every estimate
    assert bool(estimate_lines) == (verbosity >= 2), messages
    assert any("received SIGTERM" in m for m in messages)
    # A behaviour gate turned off is said to be ignored, once.
    gates = flag_value(karmada_args, "feature-gates") or ""
    for gate in options.BEHAVIOUR_GATES:
        said = [m for m in messages if f"{gate} is off, not honoured" in m]
        assert len(said) == (1 if f"{gate}=false" in gates else 0), messages


# ---------------------------------------------------------------------------------------
# --logging-format=json: every stderr line is a JSON object


def test_json_logging_wraps_every_stderr_line_including_warnings_and_native_writes():
    program = (
        "import logging, os, sys, warnings\n"
        "from estimator.service import logsetup\n"
        "from estimator.service.logoptions import LogOptions\n"
        "logsetup.configure(options=LogOptions(format='json', verbosity=4))\n"
        "logging.getLogger('estimator.requests').info('an estimate')\n"
        "logging.getLogger('estimator.x').debug('a detail')\n"
        "warnings.warn('a library warning')\n"
        "os.write(2, b'native line\\nnot {json\\n')\n"
        "print('a stray print', file=sys.stderr)\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    logging.getLogger('estimator.x').exception('caught')\n"
        "os.write(2, b'last native words')\n"
        "raise RuntimeError('uncaught')\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                            cwd=REPO)
    assert result.returncode == 1
    entries = [json.loads(line) for line in result.stderr.splitlines()]
    by_msg = {e["msg"]: e for e in entries}
    assert by_msg["an estimate"]["v"] == 2 and by_msg["a detail"]["v"] == 4
    assert "v" not in by_msg["caught"] and "ZeroDivisionError" in by_msg["caught"]["err"]
    assert any("a library warning" in m for m in by_msg)
    for text in ("native line", "not {json", "a stray print", "last native words"):
        assert text in by_msg
    assert "RuntimeError: uncaught" in by_msg["uncaught exception"]["err"]


def test_vmodule_raises_the_verbosity_of_one_file_only(tmp_path):
    program = (
        "import logging\n"
        "from estimator.service import logsetup\n"
        "from estimator.goflags import parse_vmodule\n"
        "from estimator.service.logoptions import LogOptions\n"
        "logsetup.configure(options=LogOptions(verbosity=0, vmodule=parse_vmodule('chatty=4')))\n"
        "import chatty, quiet\n"
    )
    (tmp_path / "chatty.py").write_text("import logging\nlogging.getLogger('estimator.c').debug('from chatty')\n")
    (tmp_path / "quiet.py").write_text("import logging\nlogging.getLogger('estimator.q').debug('from quiet')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert "from chatty" in result.stderr and "from quiet" not in result.stderr
    assert KLOG_TEXT_LINE.match(result.stderr.splitlines()[0])


def test_split_stream_and_klog_file_output(tmp_path):
    program = (
        "import logging\n"
        "from estimator.service import logsetup\n"
        "from estimator.service.logoptions import LogOptions\n"
        "import sys\n"
        "opts = LogOptions(**eval(sys.argv[1]))\n"
        "logsetup.configure(options=opts)\n"
        "logging.getLogger('estimator').info('an info line')\n"
        "logging.getLogger('estimator').warning('a warning line')\n"
        "logging.getLogger('estimator').error('an error line')\n"
    )

    def run(options: dict) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", program, repr(options)], capture_output=True, text=True,
                              timeout=60, cwd=REPO)

    split = run({"split_stream": True})
    assert "an info line" in split.stdout and "a warning line" in split.stdout and "an error line" not in split.stdout
    assert "an error line" in split.stderr and "an info line" not in split.stderr
    log_file = tmp_path / "estimator.log"
    to_file = run({"logtostderr": False, "log_file": str(log_file)})
    written = log_file.read_text()
    assert "an info line" in written and "an error line" in written
    assert "an error line" in to_file.stderr and "a warning line" not in to_file.stderr  # stderrthreshold ERROR
    also = run({"logtostderr": False, "log_dir": str(tmp_path), "alsologtostderr": True})
    assert "an info line" in also.stderr
    assert "an info line" in (tmp_path / "karmada-scheduler-estimator.log").read_text()
    also_warnings = run({"logtostderr": False, "log_file": str(log_file), "alsologtostderr": True,
                         "alsologtostderrthreshold": 1})
    assert "a warning line" in also_warnings.stderr and "an info line" not in also_warnings.stderr
    # klog v2.140 (Karmada v1.19): stderr-only output filtered by --stderrthreshold on request
    legacy = run({})
    assert "an info line" in legacy.stderr
    honoured = run({"legacy_stderr_threshold": False, "stderrthreshold": 1})
    assert "a warning line" in honoured.stderr and "an info line" not in honoured.stderr
