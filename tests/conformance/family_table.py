"""Run the format corpus through SGLang's detectors and vLLM's parsers, whole and streamed, and
print every disagreement with repro as a table (docs/checkers.md, "Conformance against the
engines"); `--write` also records each case's outcome for the CI sample
(tests/conformance/test_family_engines.py).

    python -m tests.conformance.family_table [--family NAME] [--write]
        [--sglang-python PATH] [--vllm-python PATH]

About ten minutes on two cores. The engines' interpreters default to the environments the
tests build (tests/conftest.py).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from tests.conformance.engine_driver import EngineDriver
from tests.conformance.family_outcomes import (
    ACCEPTED_WRONG,
    AGREE,
    CLEAN_DROPPED,
    CLEAN_ERROR,
    CLEAN_WRONG,
    RECOVERED,
    STREAM_SPLIT,
    Outcome,
    char_splits,
    outcomes,
)
from tests.conftest import SGLANG_ENV, VLLM_ENV
from tests.formats_corpus import FAMILIES, TOKENS, TOOLS, Case, cases

RECORD = Path(__file__).parent / "fixtures" / "family_engines.json"
BATCH = 50
STREAM_SEEDS = (1, 2)


def sglang_request(case: Case) -> dict:
    seed = sum(map(ord, case.id))
    atoms = TOKENS[case.family][0]
    splits = char_splits(case.engine_text, seed, atoms, len(STREAM_SEEDS))
    return {"family": case.family, "text": case.engine_text, "tools": TOOLS, "splits": splits}


def vllm_request(case: Case) -> dict:
    seeds = [sum(map(ord, case.id)) + s for s in STREAM_SEEDS]
    vocab, special = TOKENS[case.family]
    return {
        "family": case.family,
        "text": case.engine_text,
        "tools": TOOLS,
        "seeds": seeds,
        "tokens": {"vocab": list(vocab), "special": list(special)},
    }


ENGINES = {
    "sglang": (SGLANG_ENV / "bin" / "python", "family_sglang_driver.py", sglang_request),
    "vllm": (VLLM_ENV / "bin" / "python", "family_vllm_driver.py", vllm_request),
}


def run_engine(engine: str, corpus: list[Case], python: Path | None = None) -> list[Outcome]:
    default_python, script, request = ENGINES[engine]
    driver = EngineDriver(python or default_python, script)
    found: list[Outcome] = []
    try:
        for i in range(0, len(corpus), BATCH):
            batch = corpus[i : i + BATCH]
            for case, result in zip(batch, driver.ask([request(c) for c in batch]), strict=True):
                found += outcomes(case, engine, result)
    finally:
        driver.close()
    return found


# Why each disagreement: engine defects found on healthy turns, by format and engine (the
# smallest inputs are in test_engine_defects.py), then what each kind means for the others.
HEALTHY = {
    ("deepseek_v31", "vllm"): "vLLM's deepseek_v31 streaming loses the end of the arguments "
    "when one delta holds their last bytes and the call's end marker",
    ("glm45", "sglang"): "SGLang's GLM detector JSON-decodes a string-typed value whole: "
    '`"quoted"` becomes `quoted` (streamed it stays)',
    ("glm47", "sglang"): 'as glm45: a string value `"quoted"` loses its quotes',
    ("harmony", "sglang"): "SGLang's gpt-oss `detect_and_parse` reads a call only after "
    "`<|start|>assistant<|channel|>commentary`; the completion's first message has no "
    "`<|start|>` (the prompt holds it), so a call there is lost; neither path reads the "
    "recipient in the role header",
    ("hermes", "sglang"): "`</tool_call>` inside a JSON string ends the call for its regex; "
    "the JSON then fails and the call is dropped",
    ("hermes", "vllm"): "as SGLang: dropped whole, cut at the marker streamed (vLLM #45310's "
    "class)",
    ("minimax_m2", "sglang"): 'SGLang\'s MiniMax reads `2` for a `["integer", "null"]` '
    'parameter as null; streamed, a parameterless invoke gets arguments `""`',
}
MEANING = {
    RECOVERED: "repro stricter by design: the engine parses a deviation the model's grammar "
    "never writes and returns the meant calls",
    ACCEPTED_WRONG: "the engine accepts corrupted text and returns calls other than the meant "
    "ones (a lost or extra call, other arguments): a client runs them",
    STREAM_SPLIT: "the engine's streaming parser disagrees with its own whole parse of the "
    "same text: a per-delta state machine under multi-token deltas (§4.1)",
}
# Corruptions an engine can pass over: it does not read the bytes they hit.
SKIPPED = {"dup_bytes", "drop_bytes", "splice", "partial_marker", "truncated", "mojibake"}


def explain(family: str, engine: str, category: str, bug: str) -> str:
    if bug == "clean":
        return HEALTHY.get((family, engine), "")
    if category == ACCEPTED_WRONG and bug in ("unknown_tool", "wrong_type", "mojibake"):
        return "the engine checks no tool name, type or text: the call passes as written"
    if category == RECOVERED and bug in SKIPPED:
        return (
            "the corruption hit bytes the engine does not read (whitespace, a closer its regex "
            "can do without, the text around the calls): it returns the meant calls; repro "
            "flags markup the model never writes"
        )
    if category == STREAM_SPLIT and bug == "unknown_tool":
        return (
            "whole and streamed parses treat a call to an undeclared tool differently (one drops "
            "it, the other passes it on: SGLang #23453's class)"
        )
    return MEANING.get(category, "")


def table(rows: list[tuple[str, str, str, str, str]], by_id: dict[str, Case]) -> str:
    """Disagreements (engine, mode, category, case id, detail) grouped by format, engine,
    mode, category and bug class, each with why and an example case."""
    groups: dict[tuple, list[tuple]] = collections.defaultdict(list)
    for engine, mode, category, case_id, detail in rows:
        case = by_id[case_id]
        groups[(case.family, engine, mode, category, case.bug or "clean")].append((case_id, detail))
    lines = [
        "| format | engine | mode | what the engine does | bug class | cases | why | example |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (family, engine, mode, category, bug), items in sorted(groups.items()):
        case_id, detail = items[0]
        shown = f" ({detail})".replace("|", "\\|") if detail else ""
        why = explain(family, engine, category, bug).replace("|", "\\|")
        lines.append(
            f"| {family} | {engine} | {mode} | {category} | {bug} | {len(items)} | {why} | "
            f"`{case_id}`{shown} |"
        )
    return "\n".join(lines)


def summary(rows: list[tuple[str, str, str, str, str]], by_id: dict[str, Case]) -> str:
    """Disagreements per format, engine and mode, split by kind, as a markdown table."""
    kinds = (CLEAN_DROPPED, CLEAN_WRONG, RECOVERED, ACCEPTED_WRONG, STREAM_SPLIT)
    short = ("healthy: fewer calls", "healthy: other calls", "recovered", "wrong calls")
    counts = collections.Counter((by_id[c].family, e, m, k) for e, m, k, c, _ in rows)
    per_family = collections.Counter(c.family for c in by_id.values())
    lines = [
        "| format | engine | mode | " + " | ".join(short) + " | stream ≠ whole | total | cases |",
        "|---|---|---|" + "---|" * (len(kinds) + 2),
    ]
    for family in sorted({c.family for c in by_id.values()}, key=FAMILIES.index):
        for engine in ENGINES:
            for mode in ("whole", "streamed"):
                cells = [counts[(family, engine, mode, k)] for k in kinds]
                total = f" | {sum(cells)} | {per_family[family]} |"
                lines.append(
                    f"| {family} | {engine} | {mode} | " + " | ".join(map(str, cells)) + total
                )
    return "\n".join(lines)


def kinds_table(rows: list[tuple[str, str, str, str, str]], by_id: dict[str, Case]) -> str:
    """Disagreements on corrupted turns by kind and bug class, engines and modes as columns."""
    columns = [(e, m) for e in ENGINES for m in ("whole", "streamed")]
    groups: dict[tuple[str, str], collections.Counter] = collections.defaultdict(
        collections.Counter
    )
    formats: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    examples: dict[tuple[str, str], str] = {}
    for engine, mode, category, case_id, _ in rows:
        case = by_id[case_id]
        if case.clean:
            continue
        key = (category, case.bug)
        groups[key][(engine, mode)] += 1
        formats[key].add(case.family)
        examples.setdefault(key, case_id)
    head = " | ".join(f"{e} {m}" for e, m in columns)
    lines = [
        f"| what the engine does | bug class | {head} | formats | why | example |",
        "|---|---|" + "---|" * len(columns) + "---|---|---|",
    ]
    for (category, bug), counts in sorted(groups.items()):
        cells = " | ".join(str(counts[c]) for c in columns)
        names = ", ".join(f for f in FAMILIES if f in formats[(category, bug)])
        why = explain("", "", category, bug).replace("|", "\\|")
        lines.append(
            f"| {category} | {bug} | {cells} | {names} | {why} | `{examples[(category, bug)]}` |"
        )
    return "\n".join(lines)


# The record: per case, one letter per (engine, mode) in this order, "." for agreement.
SLOTS = tuple((e, m) for e in ENGINES for m in ("whole", "streamed"))
CODES = {
    CLEAN_DROPPED: "D",
    CLEAN_WRONG: "O",
    CLEAN_ERROR: "E",
    RECOVERED: "R",
    ACCEPTED_WRONG: "W",
    STREAM_SPLIT: "S",
}


def write_record(found: list[Outcome]) -> None:
    letters: dict[str, list[str]] = collections.defaultdict(lambda: ["."] * len(SLOTS))
    for o in found:
        if o.category != AGREE:
            letters[o.case][SLOTS.index((o.engine, o.mode))] = CODES[o.category]
    record = {case: "".join(codes) for case, codes in sorted(letters.items())}
    RECORD.write_text(json.dumps(record, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")


def load_record() -> dict[str, str]:
    """`"engine mode case_id"` -> the category the full run recorded (agreements left out)."""
    categories = {code: category for category, code in CODES.items()}
    found = {}
    for case, codes in json.loads(RECORD.read_text(encoding="utf-8")).items():
        for (engine, mode), code in zip(SLOTS, codes, strict=True):
            if code != ".":
                found[f"{engine} {mode} {case}"] = categories[code]
    return found


def recorded_rows() -> list[tuple[str, str, str, str, str]]:
    rows = []
    for key, category in sorted(load_record().items()):
        engine, mode, case_id = key.split(" ", 2)
        rows.append((engine, mode, category, case_id, ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=FAMILIES)
    parser.add_argument("--write", action="store_true", help=f"record outcomes in {RECORD}")
    parser.add_argument(
        "--from-record", action="store_true", help=f"print the tables from {RECORD}, no engine"
    )
    for engine in ENGINES:
        parser.add_argument(f"--{engine}-python", type=Path, default=ENGINES[engine][0])
    args = parser.parse_args()
    families = [args.family] if args.family else list(FAMILIES)
    corpus = [c for f in families for c in cases(f)]
    by_id = {c.id: c for c in corpus}
    if args.from_record:
        rows = [r for r in recorded_rows() if r[3] in by_id]
        tables = (summary(rows, by_id), kinds_table(rows, by_id), table(rows, by_id))
        print("\n\n".join(tables))
        return
    found: list[Outcome] = []
    for engine in ENGINES:
        found += run_engine(engine, corpus, getattr(args, f"{engine}_python"))
        print(f"{engine}: done", file=sys.stderr)
    rows = [(o.engine, o.mode, o.category, o.case, o.detail) for o in found if o.category != AGREE]
    print("\n\n".join((summary(rows, by_id), kinds_table(rows, by_id), table(rows, by_id))))
    if args.write:
        write_record(found)


if __name__ == "__main__":
    main()
