"""Steps 2 and 3 of the flag search: revert each differing knob from bad and class it, then
confirm that good plus the needed knobs (and amplifiers) reproduces bad's failure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from repro.bisect.classify import KnobClass, below_half_p
from repro.bisect.ddmin_search import by_ddmin
from repro.bisect.flag_search import FlagReport, FlagSearch
from repro.bisect.removals import judge_removals
from repro.bisect.sprt import Decision
from repro.bisect.together import measure_together
from repro.bisect.trial import Trial


async def by_knockout(search: FlagSearch) -> FlagReport:
    """Class each knob by reverting it from bad, then confirm the needed ones on good; ddmin
    when they do not reproduce bad's failure."""
    reverts = knockouts_of(search.bad, search.good, search.differing)
    judged = await judge_removals(search, search.bad_trial, reverts)
    search.bad_trial = judged.reference
    search.reference = judged.pooled
    classes, knockouts = judged.classes, judged.trials
    search.knockouts = knockouts
    needed = [k for k in search.differing if classes[k] is KnobClass.NEEDED]
    amplifiers = [k for k in search.differing if classes[k] is KnobClass.AMPLIFIER]
    found = await _sufficient(search, needed, amplifiers, classes)
    if found is not None:
        subset, trial, notes = found
        return search.report(subset, trial, classes, knockouts, "knock-out", notes)
    note = (
        "Applying the needed and amplifying knobs to good did not reproduce the failure "
        "(an OR-type or non-monotone interaction); fell back to ddmin."
    )
    return await by_ddmin(search, (note,), knockouts=knockouts)


def knockouts_of(
    bad: Mapping[str, str], good: Mapping[str, str], differing: Sequence[str]
) -> dict[str, tuple[str, dict[str, str]]]:
    """knob -> (label, bad with that knob reverted to good's value): the first pass."""
    return {k: (f"revert {k}", {**bad, k: good[k]}) for k in differing}


async def _sufficient(
    search: FlagSearch, needed: list[str], amplifiers: list[str], classes: dict[str, KnobClass]
) -> tuple[list[str], Trial, tuple[str, ...]] | None:
    """good + needed, then good + needed + amplifiers: the first that reproduces bad.

    "good + needed reproduces" must be shown (strict), not just not refuted: it is the
    claim that nothing else matters. With two or more amplifiers, each is then dropped in
    turn; one without which the rest still reproduces is re-classed irrelevant (its
    knock-out's drop was a false alarm). With none, an amplifier the knock-outs missed is
    looked for among the knobs classed irrelevant, lowest knock-out rate first.
    """
    first: Trial | None = None
    if needed and amplifiers:
        # Both are measured whatever the first shows (it seldom suffices once a knock-out has
        # shown an amplifier), so they run side by side under --parallel, and alike with K=1.
        asked = [
            search.confirming(needed, strict=True),
            search.confirming(needed + amplifiers, strict=False),
        ]
        first, _ = await measure_together(search.runner, asked)
    elif needed:
        first = await search.confirm(needed, strict=True)
    if first is not None and search.reproduces(first.evidence, strict=True) is True:
        return needed, first, ()
    if amplifiers:
        return await _with_amplifiers(search, needed, amplifiers, classes)
    if first is None:
        return None  # no knob is needed on its own: OR-type, for ddmin
    if search.reproduces(first.evidence) is not False:
        # Corrupting at a rate not shown lower, just not shown the same within the cap.
        return needed, first, ()
    suspects = [k for k in search.differing if classes[k] is KnobClass.IRRELEVANT]
    suspects += [k for k in search.differing if classes[k] is KnobClass.UNKNOWN]
    for knob in sorted(suspects, key=lambda k: search.knockouts[k].rate.value):
        trial = await search.confirm([*needed, knob], strict=False)
        lifted = below_half_p(first.evidence, trial.evidence) < search.alpha
        if search.reproduces(trial.evidence) is True and lifted:
            classes[knob] = KnobClass.AMPLIFIER
            note = (
                f"{knob}'s knock-out did not look lower ({search.knockouts[knob].rate}), but "
                f"good + the needed knobs reproduces only with it: {trial.rate} with, "
                f"{first.rate} without; classed amplifier."
            )
            return [*needed, knob], trial, (note,)
    if first.result.decision is Decision.CORRUPTING:
        return needed, first, (search.lower_note(first),)
    return None


async def _with_amplifiers(
    search: FlagSearch, needed: list[str], amplifiers: list[str], classes: dict[str, KnobClass]
) -> tuple[list[str], Trial, tuple[str, ...]] | None:
    subset = needed + amplifiers
    trial = await search.from_good(subset)
    if trial.result.decision is not Decision.CORRUPTING:
        return None
    notes: list[str] = []
    for knob in amplifiers if len(amplifiers) > 1 else []:
        rest = [k for k in subset if k != knob]
        without = await search.confirm(rest, strict=True)
        if search.reproduces(without.evidence, strict=True) is True:
            subset, trial = rest, without
            classes[knob] = KnobClass.IRRELEVANT
            notes.append(
                f"{knob}'s knock-out looked lower, but {without.label} reproduces without "
                f"it ({without.rate}): classed irrelevant."
            )
    if search.reproduces(trial.evidence) is False:
        notes.append(search.lower_note(trial))
    return subset, trial, tuple(notes)
