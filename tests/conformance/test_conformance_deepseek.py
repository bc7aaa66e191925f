"""Corrupted turns, judged by DeepSeek's own parser (encoding_dsv32) and by ours.

Where DeepSeek's parser refuses a text, we must report a defect. Where it accepts, we must
read the same calls, or report only defects from rules DeepSeek's parser does not apply,
each named below.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from repro.checkers.dsml.stream import parse_dsml
from repro.checkers.toolset import ToolSet
from repro.dsml.markers import EOS
from tests.dsml_corpus import TOOLS, samples

sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "checkers"))
from dsml_corruptions import corrupt

TOOLSET = ToolSet.from_openai(TOOLS)

# Rules we apply and DeepSeek's parser does not (research/dsml.md §1.6).
RULES_BEYOND_DEEPSEEK = {
    "text may not hold markup: DeepSeek reads any value up to `/｜DSML｜parameter` and checks "
    "content only for BOS, EOS, <think>, </think> and ｜DSML｜": {
        "markup_in_value",
        "special_token",
        "ascii_bars",
        "doubled_bars",
        "garbled_marker",
        "missing_dsml_prefix",
        "unknown_tag",
        "wrong_block_name",
    },
    "a block cut off before its closing tag is truncated; DeepSeek's loop ends quietly at the "
    "end of the text": {"truncated_block", "truncated_call"},
    'string="false" values must be JSON; DeepSeek pastes them into the arguments unchecked': {
        "invalid_json_value"
    },
    "calls must name declared tools and fit their schemas": {"unknown_tool", "schema_violation"},
    "a block holds an invoke and a turn says something": {"empty_block", "empty_turn"},
    "characters and repetition": {
        "mojibake",
        "replacement_char",
        "invalid_char",
        "runaway_repetition",
    },
}
# Tool and parameter names are identifiers. DeepSeek reads them lazily (`name="(.*?)"`), so a
# quote, `<`, `>`, newline or DSML bar inside lets a name swallow markup: where DeepSeek's
# reading has such a name, our reading of the tags after it may differ in any structural way.
NAME_RULE_CHARS = set('"<>\n｜')

_CORPUS = samples(400, seed=13)


def _corruptions(count: int) -> list:
    rng = random.Random(8)
    found = []
    for k in range(count):
        sample = _CORPUS[k % len(_CORPUS)]
        found.append((sample, corrupt(sample.text, _CORPUS[(k * 7 + 3) % len(_CORPUS)].text, rng)))
    return found


def test_deepseeks_parser_and_ours_agree_on_corrupted_turns(sglang) -> None:
    cases = _corruptions(3000)
    results = sglang.ask(
        "deepseek_parse",
        [
            {
                "text": bad.text if bad.text.endswith(EOS) else bad.text + EOS,
                "thinking_mode": "chat",
            }
            for _, bad in cases
        ],
    )
    allowed = set().union(*RULES_BEYOND_DEEPSEEK.values())
    refused = accepted = by_name_rule = 0
    for (_, bad), result in zip(cases, results, strict=True):
        verdict = parse_dsml(bad.text, TOOLSET, bad.finish_reason)
        kinds = {str(d.kind) for d in verdict.defects}
        if not result["ok"]:
            refused += 1
            assert kinds, f"DeepSeek refuses ({result['error']}) but we see no defect: {bad}"
            continue
        accepted += 1
        theirs = result["message"]["tool_calls"]
        if any(NAME_RULE_CHARS & set(n) for names in result["names"] for n in names):
            by_name_rule += 1
            assert kinds, bad  # the odd name itself is a defect to us
            continue
        assert kinds <= allowed, (kinds - allowed, bad)
        if not kinds:
            ours = [(c.name, json.loads(c.arguments)) for c in verdict.calls]
            assert ours == [
                (t["function"]["name"], json.loads(t["function"]["arguments"])) for t in theirs
            ]
    # The mix exercises both sides; the name rule is a small corner.
    assert refused > 1000 and accepted > 1000 and by_name_rule < 100
