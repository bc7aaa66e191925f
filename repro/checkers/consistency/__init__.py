"""Consistency: what holds for any model on any engine (docs/consistency.md).

answer.py      ServedAnswer, ServedChoice, Asked: an answer as received, what was asked
invariants.py  check_answer: the invariants every answer meets, whatever the model wrote
twin.py        compare_twins: the stream oracle, streamed against unstreamed
rules.py       the defect kinds, the bug class each catches
"""

from __future__ import annotations

from repro.checkers.consistency.answer import Asked, ServedAnswer, ServedCall, ServedChoice
from repro.checkers.consistency.invariants import check_answer
from repro.checkers.consistency.rules import KINDS, RULES, Broken, rules_markdown
from repro.checkers.consistency.twin import TwinKind, TwinVerdict, compare_twins

__all__ = [
    "KINDS",
    "RULES",
    "Asked",
    "Broken",
    "ServedAnswer",
    "ServedCall",
    "ServedChoice",
    "TwinKind",
    "TwinVerdict",
    "check_answer",
    "compare_twins",
    "rules_markdown",
]
