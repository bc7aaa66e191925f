"""The SGLang-like DSML detector: one-shot and streaming agree, leniency as SGLang's."""

from __future__ import annotations

import json

import pytest

from repro.dsml.encode import encode_completion
from repro.dsml.markers import DSML
from repro.sim.detector import DsmlDetector, parse_completion

TOOLS = {"read_file", "search_code"}
CALLS = [
    ("read_file", {"path": "src/a.py", "start_line": 3, "end_line": 40}),
    ("search_code", {"query": "flush", "max_results": 200}),
]


def _stream(text: str, size: int) -> tuple[str, list[tuple[str, str]]]:
    detector = DsmlDetector()
    content, calls = [], []
    for i in range(0, len(text), size):
        parsed = detector.feed(text[i : i + size])
        content.append(parsed.content)
        calls += [(c.name, c.arguments) for c in parsed.calls]
    tail = detector.finish()
    content.append(tail.content)
    return "".join(content), calls


def test_encoded_calls_parse_back() -> None:
    text = encode_completion(CALLS, content="Let me look.", eos=False)
    parsed = parse_completion(text, TOOLS)
    assert parsed.content == "Let me look."
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == CALLS
    assert parsed.calls[0].arguments == '{"path": "src/a.py", "start_line": 3, "end_line": 40}'


@pytest.mark.parametrize("size", [1, 3, 7, 64, 10_000])
def test_streaming_equals_one_shot(size: int) -> None:
    text = encode_completion(CALLS, content="Since 3 < 5, I call.", eos=False)
    one_shot = parse_completion(text, TOOLS)
    content, calls = _stream(text, size)
    assert content == one_shot.content == "Since 3 < 5, I call."
    assert calls == [(c.name, c.arguments) for c in one_shot.calls]


def test_leniency_like_sglang() -> None:
    # whitespace between tags, JSON body, odd string attribute, unknown tool, bare invoke
    text = (
        f'<{DSML}function_calls>\n  <{DSML}invoke  name="read_file" >\n{{"path": "b.py"}}\n'
        f"</{DSML}invoke>\n"
        f'<{DSML}invoke name="search_code"><{DSML}parameter name="max_results" string="maybe">7'
        f"</{DSML}parameter></{DSML}invoke>\n"
        f'<{DSML}invoke name="rm_rf"><{DSML}parameter name="x" string="true">1</{DSML}parameter>'
        f"</{DSML}invoke></{DSML}function_calls>"
    )
    parsed = parse_completion(text, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [
        ("read_file", {"path": "b.py"}),
        ("search_code", {"max_results": 7}),
    ]
    bare = f'ok <{DSML}invoke name="read_file"><{DSML}parameter name="path" string="true"> c.py '
    bare += f"</{DSML}parameter></{DSML}invoke>"
    parsed = parse_completion(bare, TOOLS)
    assert parsed.content == "ok " and json.loads(parsed.calls[0].arguments) == {"path": "c.py"}


def test_spliced_markup_gives_what_sglang_would_return() -> None:
    # bytes spliced into a value: the lenient regex still matches, arguments are garbled
    spliced = (
        f'\n\n<{DSML}function_calls>\n<{DSML}invoke name="read_file">\n<{DSML}parameter name="path" '
        f'string="true">src/a<{DSML}invoke name="x">\n</{DSML}parameter>\n</{DSML}invoke>\n'
        f"</{DSML}function_calls>"
    )
    (call,) = parse_completion(spliced, TOOLS).calls
    assert DSML in json.loads(call.arguments)["path"]
    # a parameter tag without its string attribute leaves DSML unmatched: the call is dropped
    no_attr = f'<{DSML}invoke name="read_file"><{DSML}parameter name="path">a</{DSML}parameter></{DSML}invoke>'
    assert parse_completion(no_attr, TOOLS).calls == ()
    unclosed = f'\n\n<{DSML}function_calls>\n<{DSML}invoke name="read_file">\n'
    parsed = parse_completion(unclosed, TOOLS)
    assert parsed.calls == () and parsed.content == ""


def test_string_values_are_stripped_unless_asked() -> None:
    text = encode_completion([("read_file", {"path": "  a.py\n"})], eos=False)
    assert json.loads(parse_completion(text, TOOLS).calls[0].arguments) == {"path": "a.py"}
    kept = parse_completion(text, TOOLS, strip_strings=False).calls[0].arguments
    assert json.loads(kept) == {"path": "  a.py\n"}
