"""Flag search: the whole conjunction of knobs that turns a clean configuration corrupting.

1. Endpoints: bad must decide CORRUPTING and good CLEAN, or the search refuses.
2. Knock-out (≤ 16 differing knobs): revert each knob from bad; class it (classify.py),
   adding sessions where the evidence is unsettled, up to the cap.
3. Sufficiency: good + needed knobs must reproduce bad's failure; if not, add the amplifiers.
4. ddmin over the differing knobs when more than 16 differ, or when step 3 fails (an OR-type
   or non-monotone failure, which knock-out cannot see).
Background and costs: shared/research/bisect.md §0, §1, §5.4, §7.

    flags.py          the entry: endpoints, then knock-out or ddmin; the FlagReport
    flag_search.py    what the steps share: the two endpoints, the reference, the report
    removals.py       removals judged against a reference, sessions added where unsettled
    knockout.py       steps 2 and 3
    ddmin_search.py   step 4
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from repro.bisect.ddmin_search import by_ddmin
from repro.bisect.flag_search import FlagReport, FlagSearch
from repro.bisect.knockout import by_knockout, knockouts_of
from repro.bisect.sprt import Decision, expected_sessions
from repro.bisect.together import Request, measure_together
from repro.bisect.trial import Trial, TrialRunner
from repro.errors import UsageError
from repro.knobs import describe

KNOCKOUT_MAX_KNOBS = 16

__all__ = ["FlagReport", "differing_knobs", "search_flags"]


async def search_flags(
    runner: TrialRunner, bad: Mapping[str, str], good: Mapping[str, str]
) -> FlagReport:
    """Run the whole search; raises UsageError when the endpoints do not bracket a failure."""
    bad_config, good_config = runner.oracle.resolve(bad), runner.oracle.resolve(good)
    differing = differing_knobs(bad_config, good_config)

    def brackets(side: str, wanted: Decision) -> Callable[[Trial], None]:
        return lambda trial: _require(trial, wanted, side, runner)

    endpoints = [
        Request("bad", bad_config, check=brackets("bad", Decision.CORRUPTING)),
        Request("good", good_config, check=brackets("good", Decision.CLEAN)),
    ]
    if len(differing) <= KNOCKOUT_MAX_KNOBS:  # what comes next unless the endpoints refuse
        runner.expect(list(knockouts_of(bad_config, good_config, differing).values()))
    bad_trial, good_trial = await measure_together(runner, endpoints)
    search = FlagSearch(runner, bad_config, good_config, bad_trial, good_trial, differing)
    if len(differing) > KNOCKOUT_MAX_KNOBS:
        note = f"{len(differing)} knobs differ (more than {KNOCKOUT_MAX_KNOBS}): ddmin."
        return await by_ddmin(search, (note,))
    return await by_knockout(search)


def differing_knobs(bad: Mapping[str, str], good: Mapping[str, str]) -> tuple[str, ...]:
    """The knobs whose values differ; none is a UsageError (there is nothing to search)."""
    differing = tuple(k for k in bad if bad[k] != good[k])
    if not differing:
        raise UsageError(
            f"--bad and --good resolve to the same configuration ({describe(bad)}); "
            "give them at least one knob with different values."
        )
    return differing


def _require(trial: Trial, wanted: Decision, side: str, runner: TrialRunner) -> None:
    """Refuse, with the arithmetic, when an endpoint does not decide the way it must."""
    got = trial.result.decision
    if got is wanted:
        return
    where = f"The {side} configuration ({describe(trial.config)})"
    measured = f"{trial.rate} of sessions corrupted"
    if got is Decision.UNKNOWN:
        settings = runner.settings
        need = f"the SPRT needs about {expected_sessions(trial.rate.value, settings):.0f} sessions"
        if settings.p0 < trial.rate.value < settings.p1:
            why = (
                f"that rate lies between p0={settings.p0} and p1={settings.p1}, where {need} on "
                "average; raise the load (--context-max, --sessions) or --sessions-cap."
            )
        else:  # a clear rate, but the cap came before the evidence could settle it
            why = f"at that rate {need} on average to decide; raise --sessions-cap."
        raise UsageError(
            f"{where} stayed UNKNOWN at the cap of {settings.max_sessions} sessions "
            f"({measured}): {why}"
        )
    if side == "bad":
        raise UsageError(
            f"{where} did not reproduce: {measured}, decided CLEAN. Nothing to bisect; "
            "raise the load (--context-max, --sessions per wave) until `repro run` shows "
            "corruption, then bisect."
        )
    raise UsageError(
        f"{where} is not clean: {measured}, decided CORRUPTING. A flag search needs a clean "
        "endpoint; pick a good configuration that `repro run` shows clean, or raise --p0 "
        "to its background rate."
    )
