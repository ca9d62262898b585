"""karmada-place asked beside karmada-scheduler during the burst (issue 26, part 4): the last
field of the `karmada: ...` line, `client agrees A/B`.

What "agree" means for a burst. Thirty jobs created at once are not thirty independent
questions: karmada-scheduler takes them one at a time, and every job it has placed stays *in
flight* on its member (an assumption both estimators deduct) until the workload is reported
Healthy there. Where job k goes depends on which jobs are in flight when Karmada takes it,
and on what the members and the Cluster objects show at that moment. So karmada-place is asked
about each decision with the in-flight workloads Karmada held for that decision, everything
else read live, the way a user asks:

- `Asker` reads karmada-scheduler's log (`--v=4`) as it is written (`LogReader`). For each
  decision about a burst job that differs from that job's decision before (a retry deciding
  the same again is not asked twice), it asks karmada-place at once, in process
  (`scheduler_client.cli.place_json`): `--job` (the manifest as submitted),
  `--karmada-kubeconfig` (the Clusters, the policy that selects the job, the estimator
  Services karmada-scheduler dials, with its TLS material), `--feature-gates`
  (karmada-scheduler's), `--karmada-compatible`, and `--in-flight` a file of the bindings
  Karmada held in flight when it started that decision (from the log: results patched, less
  those released as Healthy), cut to the members it held them on.
- A job is *asked* when karmada-place was asked about the decision that stands at the end
  (the binding's final spec.clusters; empty when Karmada placed it nowhere); it *agrees*
  when karmada-place's targets are exactly those members. A: jobs that agree; B: jobs asked.

What is not the same: karmada-place answers a moment after Karmada decided (the log is read
every 0.1 s, then the ask takes its time on a loaded machine), and in that moment pods of
earlier jobs may appear in the members or a Cluster status may be refreshed (every 2 s).
Each disagreement is explained by comparing the per-member sets Karmada ranked by (its log:
"Target cluster calculated by estimators") with those karmada-place computed: when they
differ, the inputs moved between the two; when they are equal with the same in-flight
workloads, the disagreement is unexplained, and that would be a bug in karmada-place.
"""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

BINDINGS = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"


# -- karmada-scheduler's log -------------------------------------------------------------------------

_TIME = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)")
_START = re.compile(r"Start to schedule ResourceBinding\(([^)]+)\)")
_SETS = re.compile(r"Target cluster calculated by estimators \(available cluster && maxAvailableReplicas\): \[(.*)\]")
_OK = re.compile(r"ResourceBinding\(([^)]+)\) scheduled to clusters \[(.*)\]")
_FAIL = re.compile(r"Failed scheduling ResourceBinding\(([^)]+)\): (.*)$")
_PATCHED = re.compile(r"Patch schedule to ResourceBinding\(([^)]+)\) succeed")
_RELEASED = re.compile(r"Released assumption for ResourceBinding\(([^)]+)\) on cluster\(([^)]+)\)")
_PAIR = re.compile(r"\{(\S+) (-?\d+)\}")


@dataclass
class Decision:
    binding: str  # namespace/name
    at: datetime  # when karmada-scheduler started it (its log's local time)
    in_flight: frozenset  # (binding, member) pairs it held as assumed then
    sets: dict = field(default_factory=dict)
    targets: tuple[str, ...] | None = None  # None: it failed
    error: str = ""


class LogReader:
    """karmada-scheduler's log (v1.18, `--v=4`) a line at a time: its decisions, each with the
    assumptions it held when it started it: results patched ("Patch schedule to ... succeed",
    on the members of the decision before), less those released ("Released assumption ...
    workload became Healthy"). A restart (`=== start`) forgets them all. Deletions are not
    logged: read from a moment when no binding that is still assumed has been deleted."""

    def __init__(self, year: int | None = None):
        self.year = year or datetime.now().year
        self.assumed: set[tuple[str, str]] = set()
        self.targets_of: dict[str, tuple[str, ...]] = {}
        self.current: Decision | None = None

    def feed(self, line: str) -> Decision | None:
        """The decision this line completes, if it completes one."""
        if line.startswith("=== start"):
            self.assumed.clear()
            self.current = None
            return None
        when = _when(line, self.year)
        if when is None:
            return None
        if m := _START.search(line):
            self.current = Decision(m.group(1), when, frozenset(p for p in self.assumed if p[0] != m.group(1)))
        elif (m := _SETS.search(line)) and self.current is not None:
            self.current.sets = {name: int(value) for name, value in _PAIR.findall(m.group(1))}
        elif m := _OK.search(line):
            targets = tuple(sorted(name for name, _ in _PAIR.findall(m.group(2))))
            self.targets_of[m.group(1)] = targets
            if self.current is not None and self.current.binding == m.group(1):
                self.current.targets = targets
                return self.current
        elif m := _FAIL.search(line):
            if self.current is not None and self.current.binding == m.group(1):
                self.current.error = m.group(2)
                return self.current
        elif m := _PATCHED.search(line):
            self.assumed -= {p for p in self.assumed if p[0] == m.group(1)}
            self.assumed |= {(m.group(1), member) for member in self.targets_of.get(m.group(1), ())}
        elif m := _RELEASED.search(line):
            self.assumed.discard((m.group(1), m.group(2)))
        return None


def _when(line: str, year: int) -> datetime | None:
    m = _TIME.match(line)
    if not m:
        return None
    month, day, hour, minute, second, fraction = m.groups()
    return datetime(year, int(month), int(day), int(hour), int(minute), int(second), int(fraction[:6].ljust(6, "0")))


_ANSWER = re.compile(r"name=([^'),\s]+).*?(?:\bsets=|max component sets: )(-?\d+)")


def estimator_answers(text: str, year: int | None = None) -> list[tuple[datetime, str, int]]:
    """(when, namespace/name, sets) of every MaxAvailableComponentSets answer in an estimator's
    log: ours ("MaxAvailableComponentSets object='kind=K, name=NS/N' sets=S") or Karmada's
    ("Finish calculating cluster available component sets of resource(kind=K, name=NS/N), max
    component sets: S")."""
    year = year or datetime.now().year
    out = []
    for line in text.splitlines():
        if "MaxAvailableComponentSets" not in line and "available component sets" not in line:
            continue
        when, m = _when(line, year), _ANSWER.search(line)
        if when is not None and m:
            out.append((when, m.group(1), int(m.group(2))))
    return out


def decisions(text: str, year: int | None = None) -> list[Decision]:
    """Every completed scheduling decision in a piece of karmada-scheduler's log."""
    reader = LogReader(year)
    return [d for d in map(reader.feed, text.splitlines()) if d is not None]


# -- asking karmada-place ----------------------------------------------------------------------------

@dataclass
class Ask:
    job: str
    decided: tuple[str, ...]  # the members Karmada chose in the decision asked about (empty: none)
    observed: float  # time.time() when the decision was read from the log
    asked: float = 0.0  # time.time() when karmada-place answered
    client: tuple[str, ...] | None = None  # karmada-place's targets; None when it failed
    in_flight: frozenset = frozenset()  # (binding, member) pairs karmada-place deducted
    sets: dict = field(default_factory=dict)  # member -> sets, as karmada-place computed Karmada's ranking
    error: str = ""
    karmada_sets: dict = field(default_factory=dict)  # what Karmada ranked by, from its log
    karmada_in_flight: frozenset = frozenset()  # what Karmada held in flight, from its log
    estimates: dict = field(default_factory=dict)  # member -> (general, accurate) karmada-place got
    karmada_at: datetime | None = None  # when Karmada started the decision (its log's clock)


def client_argv(job_file: Path, kubeconfig: Path, gates: dict, ca: Path, cert: Path, key: Path) -> list[str]:
    return ["--job", str(job_file), "--karmada-kubeconfig", str(kubeconfig), "--karmada-compatible",
            "--feature-gates", ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items())),
            "--estimator-ca-file", str(ca), "--estimator-cert-file", str(cert), "--estimator-key-file", str(key),
            "-o", "json"]


def read_answer(code: int, document: dict | None, error: str, ask: Ask) -> Ask:
    """Fill `ask` from place_json's answer."""
    ask.asked = time.time()
    if document is None:
        ask.error = f"exit {code}: {error}"
        return ask
    ask.client = tuple(sorted(t["name"] for t in document.get("targets") or []))
    ask.sets = dict((document.get("karmada") or {}).get("sets") or {})
    flights = ((document.get("controlPlane") or {}).get("inFlight") or {})
    ask.in_flight = frozenset((item["binding"], member) for member, items in flights.items() for item in items)
    ask.estimates = {m["name"]: (m["estimates"].get("general"), m["estimates"].get("accurate"))
                     for m in document.get("members") or []}
    return ask


def held_bindings(objects: dict, pairs: frozenset) -> dict:
    """A `--in-flight` file of exactly what Karmada held: the ResourceBindings of the
    (binding, member) pairs (`objects`: namespace/name -> the binding), spec.clusters cut to
    those members. One deleted since is absent: Karmada forgot it too."""
    items = []
    for key in sorted({b for b, _ in pairs}):
        if key in objects:
            binding = json.loads(json.dumps(objects[key]))
            binding["spec"]["clusters"] = [{"name": m} for b, m in sorted(pairs) if b == key]
            items.append({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", **binding})
    return {"apiVersion": "v1", "kind": "List", "items": items}


class Asker:
    """Reads karmada-scheduler's log as it is written; for every decision about one of `jobs`
    that differs from the one before it, asks karmada-place at once, with the in-flight
    workloads Karmada held for that decision (`--in-flight`, from the log)."""

    def __init__(self, api, ns: str, jobs: list[dict], log_path: Path, work: Path, argv_for,
                 every: float = 0.05, workers: int = 4):
        from scheduler_client import cli  # imported before the burst: the first ask should not pay for it

        self._place = cli.place_json
        self.api, self.ns, self.log_path, self.work, self.every = api, ns, Path(log_path), work, every
        work.mkdir(parents=True, exist_ok=True)
        self.files = {}
        for job in jobs:
            name = job["metadata"]["name"]
            path = work / f"{name}.json"
            path.write_text(json.dumps(job))
            self.files[f"{ns}/{name}-{job['kind'].lower()}"] = (name, path)
        self.argv_for = argv_for  # job file -> karmada-place arguments
        self.asks: dict[str, list[Ask]] = {}
        self.errors: list[str] = []
        self.offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._reader = LogReader()
        self._last: dict[str, tuple | None] = {}
        self._bindings: dict[str, dict] = {}  # namespace/name -> the binding (its components do not change)
        self._count = 0
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=f"karmada-place-{ns}")
        self._thread = threading.Thread(target=self._loop, name=f"asker-{ns}", daemon=True)

    def start(self) -> "Asker":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._pool.shutdown(wait=True)

    def log_text(self) -> str:
        """The log from where the Asker started reading."""
        with open(self.log_path, "rb") as log:
            log.seek(self.offset)
            return log.read().decode(errors="replace")

    def _loop(self) -> None:
        position, pending = self.offset, b""
        while not self._stop.is_set():
            try:
                with open(self.log_path, "rb") as log:
                    log.seek(position)
                    chunk = log.read()
                position += len(chunk)
                *lines, pending = (pending + chunk).split(b"\n")
                for raw in lines:
                    decision = self._reader.feed(raw.decode(errors="replace"))
                    if decision is not None and decision.binding in self.files:
                        self._decided(decision)
            except Exception as error:  # noqa: BLE001 - a report, never a reason to stop the burst
                if len(self.errors) < 5:
                    self.errors.append(f"{type(error).__name__}: {error}")
            self._stop.wait(self.every)

    def _decided(self, decision: Decision) -> None:
        if decision.binding in self._last and self._last[decision.binding] == decision.targets:
            return  # a retry that decided the same again
        self._last[decision.binding] = decision.targets
        job, path = self.files[decision.binding]
        ask = Ask(job, decision.targets or (), time.time(), karmada_sets=dict(decision.sets),
                  karmada_in_flight=decision.in_flight, karmada_at=decision.at)
        self.asks.setdefault(job, []).append(ask)
        self._count += 1
        self._pool.submit(self._ask, ask, path, self.work / f"in-flight-{self._count}.json")

    def _binding(self, key: str) -> None:
        if key not in self._bindings:
            namespace, name = key.split("/", 1)
            try:
                self._bindings[key] = self.api.call("GET", f"{BINDINGS.format(ns=namespace)}/{name}")
            except Exception:  # noqa: BLE001 - deleted: Karmada forgot it too
                pass

    def _ask(self, ask: Ask, path: Path, flights: Path) -> None:
        try:
            for key in {b for b, _ in ask.karmada_in_flight}:
                self._binding(key)
            flights.write_text(json.dumps(held_bindings(self._bindings, ask.karmada_in_flight)))
            argv = self.argv_for(path) + ["--in-flight", str(flights)]
            read_answer(*self._place(argv), ask)
        except Exception as error:  # noqa: BLE001
            ask.error, ask.asked = f"{type(error).__name__}: {error}", time.time()
        binding = f"{self.ns}/{ask.job}-pytorchjob"
        if ask.decided:  # soon in flight for the jobs after it: fetched now, not when they are asked
            self._binding(binding)


# -- agreement -----------------------------------------------------------------------------------

@dataclass
class Verdict:
    agree: int = 0
    asked: int = 0
    jobs: int = 0
    lines: list = field(default_factory=list)  # one per disagreement or job not asked, with its explanation
    explained: int = 0  # disagreements whose inputs differed from Karmada's

    def short(self) -> str:
        return f"{self.agree}/{self.asked}"


def _pairs_text(pairs) -> str:
    return ", ".join(f"{b.split('/')[-1].removesuffix('-pytorchjob')}@{m}" for b, m in sorted(pairs)) or "none"


def _accurate_pair(answers: dict, member: str, obj: str, ask: Ask) -> str:
    """"estimator answered Karmada X, karmada-place Y" from the member estimator's log: the last
    answer about the job before Karmada's decision, the first one after it."""
    if ask.karmada_at is None or member not in answers:
        return ""
    about = [(when, sets) for when, name, sets in answers[member] if name == obj]
    before = [sets for when, sets in about if when <= ask.karmada_at + _SLACK]
    after = [sets for when, sets in about if when > ask.karmada_at + _SLACK]
    if not before or not after:
        return ""
    return f"; its estimator answered Karmada {before[-1]}, karmada-place {after[0]}"


_SLACK = timedelta(milliseconds=50)  # Karmada's estimator calls end within its decision's log lines


def agreement(finals: dict[str, tuple[str, ...]], asks: dict[str, list[Ask]], ns: str = "",
              answers: dict | None = None) -> Verdict:
    """`finals`: job -> the members of its binding at the end (sorted; empty: placed nowhere).
    The ask that counts is the last one about a decision with those members. `answers`: per
    member, `estimator_answers` of its estimator's log, to say which estimator answered what."""
    answers = answers or {}
    verdict = Verdict(jobs=len(finals))
    for job, final in finals.items():
        matching = [a for a in asks.get(job, []) if a.decided == final]
        if not matching:
            verdict.lines.append(f"{job}: not asked about its final decision ({'+'.join(final) or 'nowhere'})")
            continue
        ask = matching[-1]
        verdict.asked += 1
        if ask.client == final:
            verdict.agree += 1
            continue
        said = ("+".join(ask.client) or "nowhere") if ask.client is not None else f"failed ({ask.error})"
        head = f"{job}: Karmada {'+'.join(final) or 'nowhere'}, karmada-place {said}"
        if ask.client is None:
            verdict.lines.append(head)
            continue
        reasons = []
        if ask.karmada_in_flight != ask.in_flight:
            reasons.append(f"in flight: Karmada held {_pairs_text(ask.karmada_in_flight)}, karmada-place deducted "
                           f"{_pairs_text(ask.in_flight)}")
        if ask.karmada_sets != ask.sets:
            moved = "; ".join(
                f"{m} {ask.karmada_sets.get(m)} -> {ask.sets.get(m)} (karmada-place: general "
                f"{ask.estimates.get(m, (None, None))[0]}, accurate {ask.estimates.get(m, (None, None))[1]}"
                f"{_accurate_pair(answers, m, f'{ns}/{job}', ask)})"
                for m in sorted(set(ask.karmada_sets) | set(ask.sets)) if ask.karmada_sets.get(m) != ask.sets.get(m))
            reasons.append(f"sets Karmada -> karmada-place: {moved}")
        if reasons:
            verdict.explained += 1
            verdict.lines.append(f"{head}; inputs differed ({'; '.join(reasons)}; karmada-place answered "
                                 f"{ask.asked - ask.observed:.2f} s after the decision was logged)")
        else:
            verdict.lines.append(f"{head}; same in-flight workloads and sets: UNEXPLAINED")
    return verdict
