"""Step 4 of the flag search: ddmin over the differing knobs, each answer re-tested member by
member (bisect.md §5.4), for many knobs or a failure that knock-out cannot explain."""

from __future__ import annotations

from repro.bisect.classify import KnobClass
from repro.bisect.ddmin import ddmin
from repro.bisect.evidence import Evidence
from repro.bisect.flag_search import FlagReport, FlagSearch
from repro.bisect.removals import judge_removals
from repro.bisect.trial import Trial


async def by_ddmin(
    search: FlagSearch, notes: tuple[str, ...], knockouts: dict[str, Trial] | None = None
) -> FlagReport:
    """The smallest subset of bad's knobs that still makes good fail, re-tested member by
    member; `knockouts`, if the knock-out step ran first, go into the report as measured."""
    # ddmin asks many questions; Bonferroni over the knobs keeps false "lower" rare.
    alpha_ddmin = search.alpha / len(search.differing)

    def settles(ev: Evidence) -> bool:
        return search.reproduces(ev, alpha=alpha_ddmin) is not None

    async def fails(subset: tuple[str, ...]) -> bool | None:
        trial = await search.from_good(subset, settles)
        return search.reproduces(trial.evidence, alpha=alpha_ddmin)

    culprit = list(await ddmin(search.differing, fails))
    while True:
        culprit_trial, members = await _member_classes(search, culprit)
        # Re-test the answer (bisect.md §5.4): a member whose removal changed nothing on a
        # closer look (more sessions) is dropped, and ddmin goes on from what is left.
        spare = [k for k in culprit if members[k] is KnobClass.IRRELEVANT]
        if not spare or len(culprit) == 1:
            break
        culprit = list(await ddmin([k for k in culprit if k != spare[0]], fails))
    classes = {k: KnobClass.IRRELEVANT for k in search.differing} | members
    if knockouts:
        notes = (*notes, "Classes below come from ddmin's final round, not the knock-outs.")
    return search.report(culprit, culprit_trial, classes, knockouts or {}, "ddmin", notes)


async def _member_classes(
    search: FlagSearch, culprit: list[str]
) -> tuple[Trial, dict[str, KnobClass]]:
    """Drop each member from good + culprit in turn and judge it against good + culprit."""
    culprit_trial = await search.from_good(culprit)
    removals = {}
    for knob in culprit:
        rest = [k for k in culprit if k != knob]
        removals[knob] = (search.good_label(rest), search.good_plus(rest))
    judged = await judge_removals(search, culprit_trial, removals)
    return judged.reference, judged.classes
