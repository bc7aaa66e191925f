"""The CI gate: a run's verdict against a corruption threshold, and JUnit XML for CI systems."""

from __future__ import annotations

import contextlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.errors import (
    EXIT_CORRUPTION,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    INTERNAL_ERROR,
    ReproError,
    UsageError,
    internal_error,
)
from repro.records import TurnOutcome, TurnRecord
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

    def exceeded(self, corrupted: int, attempted: int) -> bool:
        """Above the threshold even if every attempted turn that was not judged had been clean."""
        return corrupted > self.allowed(attempted)

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g} turns"


@dataclass(frozen=True, slots=True)
class GateVerdict:
    exit_code: int
    message: str
    troubles: tuple[str, ...] = ()  # why the run cannot vouch for the engine, one line each


def troubles(summary: RunSummary) -> list[str]:
    """Everything that keeps a run from vouching for the engine, in words."""
    found = []
    if summary.error:
        first = summary.error.splitlines()[0]
        found.append(first if first.startswith(INTERNAL_ERROR) else f"the engine failed: {first}")
    if summary.wedge:
        found.append(summary.wedge)  # it says itself what stopped: "the engine stopped making ..."
    if summary.errors:
        turns = "turn" if summary.errors == 1 else "turns"
        found.append(f"{summary.errors} {turns} failed ({summary.error_outcomes})")
    if summary.interrupted:
        found.append("the run was interrupted")
    if unanswered := summary.divergence.get("errors"):
        found.append(f"{unanswered} replayed turns got no reference")
    if summary.turns == 0:
        found.append("no turn was judged")
    return found


def decide(summary: RunSummary, threshold: Threshold) -> GateVerdict:
    """1 when corruption is proven above the threshold, even if turns failed or the engine
    died (a failed turn can only have been clean); 2 when the run cannot decide; 130 when it
    was interrupted; 0 otherwise. A percent is of the turns attempted, a failed turn counted
    as clean, and is proven only by a run that reached its end (more turns could dilute it)."""
    found = troubles(summary)
    sessions = "session" if summary.sessions_corrupted == 1 else "sessions"
    measured = (
        f"{summary.turns_corrupted} of {summary.turns} turns corrupted "
        f"({summary.turn_corruption_rate:.2%}) in {summary.sessions_corrupted} {sessions}"
    )
    if numerical := summary.divergence.get("kinds", {}).get("numerical"):
        measured += f", {numerical} numerical divergences (near-ties) not counted"
    if summary.interrupted:
        return GateVerdict(
            EXIT_INTERRUPTED, f"INTERRUPTED: {measured} before the interruption.", tuple(found)
        )
    ended_early = bool(summary.error or summary.wedge)
    attempted = summary.turns + summary.errors
    proven = threshold.exceeded(summary.turns_corrupted, attempted) and not (
        threshold.percent and ended_early
    )
    if proven:
        also = f" Also: {'; '.join(found)}." if found else ""
        return GateVerdict(
            EXIT_CORRUPTION, f"FAIL: {measured}; at most {threshold} allowed.{also}", tuple(found)
        )
    if found:
        word = "WEDGE" if summary.wedge and not summary.error else "ERROR"
        return GateVerdict(
            EXIT_ERROR,
            f"{word}: {'; '.join(found)}; the run cannot vouch ({measured}).",
            tuple(found),
        )
    return GateVerdict(EXIT_OK, f"PASS: {measured}; at most {threshold} allowed.")


def check_junit_path(path: Path, run_dir: Path | None = None) -> None:
    """Refuse, before any run, a --junit path that could not be written, or whose writing
    would wait forever (a pipe with no reader), or that is the run folder itself."""
    from repro.results.store import check_output_file

    if run_dir is not None and path.absolute() == run_dir.absolute():
        raise UsageError(f"--junit {path} is the run folder (--out); name a file, not it.")
    check_output_file("--junit", path, (".xml",))
    if path.exists() and not path.is_file():
        raise UsageError(f"--junit {path} is not a regular file; give the path of a file to write.")


def gate_records(run_dir: Path, oracle: str = "validity") -> list[TurnRecord]:
    """The run's turns as its oracle judged them, read back from turns.parquet (none when no
    load ran or it is damaged: the JUnit file is written all the same)."""
    from repro.results.reading import judged_view, read_turns

    path = run_dir / "turns.parquet"
    if not path.exists():
        return []
    try:
        return judged_view(run_dir, read_turns(path), oracle, None)[0]
    except UsageError:
        return []


def write_junit(
    path: Path, summary: RunSummary, records: Sequence[TurnRecord], verdict: GateVerdict
) -> None:
    """One testcase per session (a failure if a turn was corrupted, else an error if one
    failed), the gate's threshold, and the run's health (an error listing each thing it cannot
    vouch for). Each testcase holds one failure or one error at most, so the suite's counts are
    testcases, as JUnit readers take them: failures + errors never exceed tests."""
    sessions: dict[int, list[TurnRecord]] = {}
    for record in records:
        sessions.setdefault(record.session_id, []).append(record)
    suite = ET.Element(
        "testsuite", name="repro gate", tests=str(len(sessions) + 2), time=f"{summary.wall_s:.1f}"
    )
    for session_id, turns in sorted(sessions.items()):
        case = ET.SubElement(
            suite, "testcase", classname="repro.session", name=f"session {session_id}"
        )
        said = [f"turn {t.turn}: {t.first_defect}" for t in turns if t.corrupted]
        said += [
            f"turn {t.turn}: {t.outcome}: {t.error}"
            for t in turns
            if t.outcome not in (TurnOutcome.OK, TurnOutcome.ABORTED)
        ]
        if said:  # corruption first: it fails the session even when a turn also failed
            kind = "failure" if any(t.corrupted for t in turns) else "error"
            ET.SubElement(case, kind, message=said[0]).text = "\n".join(said)
    gate = ET.SubElement(suite, "testcase", classname="repro.gate", name="corruption threshold")
    if verdict.exit_code == EXIT_CORRUPTION:
        ET.SubElement(gate, "failure", message=verdict.message)
    elif verdict.exit_code != EXIT_OK:
        ET.SubElement(gate, "error", message=verdict.message)
    health = ET.SubElement(suite, "testcase", classname="repro.gate", name="run health")
    if verdict.troubles:
        message = "; ".join(verdict.troubles)
        ET.SubElement(health, "error", message=message).text = "\n".join(verdict.troubles)
    _write_suite(path, suite)


def write_junit_error(path: Path, message: str) -> None:
    """The JUnit file when the gate stopped before it had a run to judge."""
    suite = ET.Element("testsuite", name="repro gate", tests="1", time="0.0")
    gate = ET.SubElement(suite, "testcase", classname="repro.gate", name="corruption threshold")
    ET.SubElement(gate, "error", message=message)
    _write_suite(path, suite)


# What XML 1.0 cannot hold, even escaped: control characters but tab and line ends, lone
# surrogates, U+FFFE and U+FFFF. An engine's output or error may carry any of them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _write_suite(path: Path, suite: ET.Element) -> None:
    for element in suite.iter():  # a reader refuses the whole file over one such character
        element.attrib = {k: _xml_safe(v) for k, v in element.attrib.items()}
        if element.text:
            element.text = _xml_safe(element.text)
    suite.set("failures", str(sum(1 for _ in suite.iter("failure"))))
    suite.set("errors", str(sum(1 for _ in suite.iter("error"))))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


@contextlib.contextmanager
def junit_on_error(path: Path | None) -> Iterator[None]:
    """Whatever stops the gate before it has a run to judge, its JUnit file says why; a bug in
    repro becomes its one sentence (a ReproError: exit 2, never the 1 of corruption)."""
    try:
        yield
    except ReproError as exc:
        _junit_error_if_asked(path, str(exc))
        raise
    except KeyboardInterrupt:
        _junit_error_if_asked(path, "interrupted before the run started")
        raise
    except Exception as exc:
        sentence = internal_error(exc) or str(exc)
        _junit_error_if_asked(path, sentence)
        raise ReproError(sentence) from None


def _junit_error_if_asked(path: Path | None, message: str) -> None:
    if path is None:
        return
    # Checked writable before the run: only a disk that filled since can refuse it, and then
    # the exit code and the sentence on stderr still say why.
    with contextlib.suppress(OSError):
        write_junit_error(path, message)
