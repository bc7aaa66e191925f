"""The injection log read back (other lines skipped) and joined to a run's corrupted turns."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest

from repro.errors import UsageError
from repro.proxy import match_run, read_injection_log
from repro.proxy.injection_log import InjectionLog
from repro.proxy.injector import Injection, InjectionRule, RuleKind


def request(n: int) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": f"turn {n}"}], "stream": True}


def sha(body: dict) -> str:
    return hashlib.sha256(orjson.dumps(body)).hexdigest()  # what the load generator sends


def injection(digest: str) -> Injection:
    return Injection(0, "splice", 0.0, 2, 1, "content", 0, "x", 1, digest, "chatcmpl-1")


def test_the_log_round_trips_among_other_lines(tmp_path: Path) -> None:
    path = tmp_path / "proxy.log"
    path.write_text("# argv: python -m repro proxy\nINFO: uvicorn says hello\n{not json\n")
    log = InjectionLog(str(path))
    log.start(InjectionRule(RuleKind.SPLICE), "http://127.0.0.1:1")
    log.injection(injection("a" * 64))
    log.close({"streams": 3, "victims": 1, "injected": 1, "streamed_bytes": 10})
    contents = read_injection_log(path)
    assert [i["request_sha256"] for i in contents.injections] == ["a" * 64]
    assert contents.summary is not None and contents.summary["streams"] == 3
    assert isinstance(contents.summary["cpu_s"], float)  # the proxy's own CPU, added on close


def test_match_run_names_the_missed_and_the_unexplained(tmp_path: Path) -> None:
    failures = [
        {"session_id": 0, "turn": 2, "request": request(1)},  # injected and caught
        {"session_id": 5, "turn": 0, "request": request(2)},  # corrupted on its own
    ]
    (tmp_path / "failures.jsonl").write_bytes(b"".join(orjson.dumps(f) + b"\n" for f in failures))
    log = InjectionLog(str(tmp_path / "log.jsonl"))
    for body in (request(1), request(3)):  # request 3's injection went unnoticed
        log.injection(injection(sha(body)))
    log.close({})
    match = match_run(tmp_path, tmp_path / "log.jsonl")
    assert (match.injected, match.detected, match.detection_rate) == (2, 1, 0.5)
    assert match.missed == (sha(request(3)),) and match.unexplained == ("5/0",)


def test_a_missing_log_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(
        UsageError, match=r"Cannot read the injection log .*nope\.jsonl: No such file"
    ):
        read_injection_log(tmp_path / "nope.jsonl")
