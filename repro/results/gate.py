"""The CI gate: a run's verdict against a corruption threshold, and JUnit XML for CI systems."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.errors import EXIT_CORRUPTION, EXIT_ERROR, EXIT_OK, UsageError
from repro.harness.turn import TurnOutcome, TurnRecord
from repro.results.summary import RunSummary

_THRESHOLD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


@dataclass(frozen=True, slots=True)
class Threshold:
    """Corrupted turns allowed: a count, or a percent of judged turns."""

    value: float
    percent: bool

    @classmethod
    def parse(cls, text: str) -> Threshold:
        match = _THRESHOLD.match(text)
        if not match or (not match.group(2) and "." in match.group(1)):
            raise UsageError(
                f"--max-corruption '{text}' is neither a count (e.g. 0, 3) nor a percent (e.g. 0.5%)."
            )
        value = float(match.group(1))
        if match.group(2) and value > 100:
            raise UsageError(f"--max-corruption '{text}' is above 100%.")
        return cls(value, bool(match.group(2)))

    def allowed(self, turns: int) -> float:
        return self.value / 100 * turns if self.percent else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g} turns"


@dataclass(frozen=True, slots=True)
class GateVerdict:
    exit_code: int
    message: str


def decide(summary: RunSummary, threshold: Threshold) -> GateVerdict:
    """1 above the threshold; 2 when the run cannot vouch (error, wedge, failed turns, no turns)."""
    if summary.error:
        return GateVerdict(EXIT_ERROR, f"ERROR: the engine failed: {summary.error.splitlines()[0]}")
    if summary.stalls:
        return GateVerdict(EXIT_ERROR, f"WEDGE: {summary.wedge}")
    if summary.errors:
        turns = "turn" if summary.errors == 1 else "turns"
        return GateVerdict(
            EXIT_ERROR,
            f"ERROR: {summary.errors} {turns} failed ({summary.error_outcomes}); "
            "the run cannot vouch.",
        )
    if unanswered := summary.divergence.get("errors"):
        return GateVerdict(
            EXIT_ERROR,
            f"ERROR: {unanswered} replayed turns got no reference; the run cannot vouch.",
        )
    if summary.turns == 0:
        return GateVerdict(EXIT_ERROR, "ERROR: no turn was judged.")
    allowed = threshold.allowed(summary.turns)
    measured = f"{summary.turns_corrupted} of {summary.turns} turns corrupted ({summary.turn_corruption_rate:.2%})"
    if numerical := summary.divergence.get("kinds", {}).get("numerical"):
        measured += f", {numerical} numerical divergences (near-ties) not counted"
    if summary.turns_corrupted > allowed:
        return GateVerdict(EXIT_CORRUPTION, f"FAIL: {measured}; at most {threshold} allowed.")
    return GateVerdict(EXIT_OK, f"PASS: {measured}; at most {threshold} allowed.")


def gate_records(run_dir: Path, oracle: str = "validity") -> list[TurnRecord]:
    """The run's turns as its oracle judged them (none when no load ran)."""
    from repro.results.reading import judged_view, read_turns

    path = run_dir / "turns.parquet"
    return judged_view(run_dir, read_turns(path), oracle, None)[0] if path.exists() else []


def write_junit(
    path: Path, summary: RunSummary, records: Sequence[TurnRecord], verdict: GateVerdict
) -> None:
    """One testcase per session (failed if any turn was corrupted or failed), plus the gate."""
    sessions: dict[int, list[TurnRecord]] = {}
    for record in records:
        sessions.setdefault(record.session_id, []).append(record)
    suite = ET.Element(
        "testsuite", name="repro gate", tests=str(len(sessions) + 1), time=f"{summary.wall_s:.1f}"
    )
    failures = errors = 0
    for session_id, turns in sorted(sessions.items()):
        case = ET.SubElement(
            suite, "testcase", classname="repro.session", name=f"session {session_id}"
        )
        bad = [t for t in turns if t.corrupted]
        broken = [t for t in turns if t.outcome not in (TurnOutcome.OK, TurnOutcome.ABORTED)]
        if bad:
            failures += 1
            ET.SubElement(case, "failure", message=f"turn {bad[0].turn}: {bad[0].first_defect}")
        elif broken:
            t = broken[0]
            errors += 1
            ET.SubElement(case, "error", message=f"turn {t.turn}: {t.outcome}: {t.error}")
    gate = ET.SubElement(suite, "testcase", classname="repro.gate", name="corruption threshold")
    if verdict.exit_code == EXIT_CORRUPTION:
        failures += 1
        ET.SubElement(gate, "failure", message=verdict.message)
    elif verdict.exit_code != EXIT_OK:
        errors += 1
        ET.SubElement(gate, "error", message=verdict.message)
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
