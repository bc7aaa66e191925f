"""The closed-form Wilson interval agrees with scipy's, and `repro run`'s path imports no scipy."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scipy.stats import binomtest

from repro.results.stats import wilson


@pytest.mark.parametrize("n", [1, 3, 80, 1000, 12_345])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy(n: int, confidence: float) -> None:
    for k in sorted({0, 1, n // 3, n - 1, n}):
        ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
        rate = wilson(k, n, confidence)
        assert rate.low == pytest.approx(ci.low, abs=1e-12)
        assert rate.high == pytest.approx(ci.high, abs=1e-12)


def test_a_run_and_its_summary_import_no_scipy() -> None:
    code = (
        "import sys; import repro.cli, repro.harness.lifecycle.whole_run, repro.results.report, repro.checkers;"
        "from repro.results.summary import summarize; summarize([], config={}, wall_s=1.0);"
        "print('scipy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
