"""The proxy's injection log (JSON lines) and its comparison with a run folder.

Lines: one `start` (the rule), one `injection` per corruption made, written and flushed as it
happens, and one `summary` (streams seen, victims drawn, injections made) at shutdown. Other
lines (a server's own log in the same file, as in a run's logs/proxy.log) are skipped.

An injection is matched to a turn by the SHA-256 of the request body, which repro's
failures.jsonl lets us rebuild exactly (the load generator sends `orjson.dumps(request)`).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from repro.errors import UsageError
from repro.proxy.injector import Injection, InjectionRule


class InjectionLog:
    """Appends JSON lines to a file ('-' = standard output), flushed after each line."""

    def __init__(self, path: str) -> None:
        """Raises UsageError if the file cannot be opened."""
        if path == "-":
            self._out: IO[str] = sys.stdout
            return
        try:
            # Held open for the proxy's lifetime and closed by close(): no `with` block fits.
            self._out = Path(path).open("a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise UsageError(f"Cannot write the injection log {path}: {exc.strerror}.") from None

    def write(self, line: dict) -> None:
        self._out.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._out.flush()

    def start(self, rule: InjectionRule, upstream: str) -> None:
        self.write({"event": "start", "upstream": upstream, **_rule_json(rule)})

    def injection(self, injection: Injection) -> None:
        self.write(injection.to_json())

    def close(self, counts: dict[str, int]) -> None:
        # The proxy's own CPU time says what it cost the machine it shares with the engine.
        self.write({"event": "summary", **counts, "cpu_s": round(time.process_time(), 3)})
        if self._out is not sys.stdout:
            self._out.close()


def _rule_json(rule: InjectionRule) -> dict:
    return {
        "rule": rule.kind.value,
        "min_streams": rule.min_streams,
        "rate": rule.rate,
        "seed": rule.seed,
        "span_bytes": rule.span_bytes,
        "target": rule.target.value,
    }


@dataclass(frozen=True, slots=True)
class LogContents:
    injections: tuple[dict, ...]
    summary: dict | None  # None while the proxy still runs, or if it was killed


def read_injection_log(path: Path) -> LogContents:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UsageError(f"Cannot read the injection log {path}: {exc.strerror}.") from None
    injections, summary = [], None
    for line in lines:
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("event") == "injection":
            injections.append(record)
        elif record.get("event") == "summary":
            summary = record
    return LogContents(tuple(injections), summary)


@dataclass(frozen=True, slots=True)
class InjectionMatch:
    """Injections against the corrupted turns a run found."""

    injected: int
    detected: int  # injections whose turn the run marked corrupted
    missed: tuple[str, ...]  # request hashes of injected turns the run did not mark
    unexplained: tuple[str, ...]  # corrupted turns ("session/turn") with no injection

    @property
    def detection_rate(self) -> float:
        return self.detected / self.injected if self.injected else float("nan")


def match_run(run_dir: Path, log_path: Path) -> InjectionMatch:
    """Which injections the run caught, and which corrupted turns no injection explains."""
    injected = {i["request_sha256"] for i in read_injection_log(log_path).injections}
    failures: dict[str, str] = {}
    path = run_dir / "failures.jsonl"
    if path.exists():
        for line in path.read_bytes().splitlines():
            failure = orjson.loads(line)
            digest = hashlib.sha256(orjson.dumps(failure["request"])).hexdigest()
            failures[digest] = f"{failure['session_id']}/{failure['turn']}"
    detected = injected & failures.keys()
    return InjectionMatch(
        injected=len(injected),
        detected=len(detected),
        missed=tuple(sorted(injected - detected)),
        unexplained=tuple(sorted(v for k, v in failures.items() if k not in injected)),
    )
