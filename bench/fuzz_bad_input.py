"""Bad input at scale: thousands of generated inputs across every family of tests/bad_inputs.py,
each answered by repro, with the exit code each must give. Prints per family the inputs tried,
their exit codes, and the tracebacks, wrong answers and hangs found (all three must be 0).

    PYTHONPATH=. python bench/fuzz_bad_input.py --examples 650 --seed 0

Families: hostile values of every shared option; mutated profiles; tools files and
completions; damaged run folders; hostile servers (any status, headers, framing, SSE lines,
endings, model listings) answering `repro gate --url`, whose exit code must follow the rule
(1 exactly when the run folder holds a corrupted turn, its JUnit file saying the same);
output paths the system rejects; standard streams closed, broken or full (a real process,
whose exit code must be the one it gives with its streams fine); tool schemas whose regular
expressions take exponential time. A traceback or a bug's one sentence ("repro stopped on an
internal error") counts as a traceback. The CI test (tests/unit/test_bad_input_fuzz.py) runs
the same strategies with 40 examples per family; this runs as many as asked, with
hypothesis' example database off so each run is fresh, and keeps going after a failure to
count them all.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.bad_inputs import (
    FAMILIES,
    EscapedTraceback,
    Hang,
    WrongAnswer,
    check_answer,
    make_run_folder,
    scratch,
)


def fuzz(family: str, examples: int, base: Path, at_seed: int) -> dict[str, object]:
    codes: collections.Counter[int] = collections.Counter()
    failures: list[str] = []

    @seed(at_seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        with scratch() as folder:
            invocation = data.draw(FAMILIES[family](folder, base))
            try:
                codes[check_answer(invocation).exit_code] += 1
            except (EscapedTraceback, WrongAnswer, Hang) as exc:
                failures.append(f"{type(exc).__name__}: {exc}"[:300])
                codes[type(exc).__name__] += 1  # type: ignore[index]

    started = time.monotonic()
    one()
    return {
        "inputs": sum(codes.values()),
        "exit codes": dict(sorted(codes.items(), key=str)),
        "tracebacks": sum(f.startswith("EscapedTraceback") for f in failures),
        "wrong answers": sum(f.startswith("WrongAnswer") for f in failures),
        "hangs": sum(f.startswith("Hang") for f in failures),
        "seconds": round(time.monotonic() - started, 1),
        "first failures": failures[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1250, help="inputs per family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--families", default=",".join(FAMILIES), help="which families, comma-separated"
    )
    args = parser.parse_args()
    with scratch() as folder:
        base = make_run_folder(folder / "base")
        total: collections.Counter[str] = collections.Counter()
        keys = ("inputs", "tracebacks", "wrong answers", "hangs")
        print(
            f"{'family':<12} {'inputs':>7} {'tracebacks':>10} {'wrong':>6} {'hangs':>6} {'s':>7}  exit codes"
        )
        for family in args.families.split(","):
            result = fuzz(family, args.examples, base, args.seed)
            total.update({k: result[k] for k in keys})  # type: ignore[misc]
            print(
                f"{family:<12} {result['inputs']:>7} {result['tracebacks']:>10} "
                f"{result['wrong answers']:>6} {result['hangs']:>6} {result['seconds']:>7}  "
                f"{result['exit codes']}"
            )
            for failure in result["first failures"]:  # type: ignore[union-attr]
                print(f"    {failure}")
        print(
            f"{'total':<12} {total['inputs']:>7} {total['tracebacks']:>10} "
            f"{total['wrong answers']:>6} {total['hangs']:>6}"
        )


if __name__ == "__main__":
    main()
