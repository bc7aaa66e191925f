"""`repro check` as a function: exit codes, usage errors, the human report and JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from dsml_samples import TOOLS, TWO_CALLS

from repro.checkers.command import check_command
from repro.errors import UsageError


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "tools": tmp_path / "tools.json",
        "good": tmp_path / "good.txt",
        "bad": tmp_path / "bad.txt",
        "message": tmp_path / "message.json",
    }
    paths["tools"].write_text(json.dumps(TOOLS), encoding="utf-8")
    paths["good"].write_text(TWO_CALLS, encoding="utf-8")
    bad = TWO_CALLS.replace("San Francisco", "北京 <|DSML|invoke").replace(
        '"get_date"', '"get_time"'
    )
    paths["bad"].write_text(bad, encoding="utf-8")
    message = {
        "role": "assistant",
        "content": "On it.",
        "reasoning_content": "thinking",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_date", "arguments": "{}"}}
        ],
    }
    paths["message"].write_text(json.dumps(message), encoding="utf-8")
    paths["fifo"] = tmp_path / "fifo"  # no writer: reading it would wait forever
    os.mkfifo(paths["fifo"])
    paths["failures"] = tmp_path / "failures.jsonl"
    line = {"session_id": 1, "turn": 3, "content": TWO_CALLS, "defects": []}
    paths["failures"].write_text(json.dumps(line) + "\n" + json.dumps(line), encoding="utf-8")
    paths["deep"] = tmp_path / "deep.json"
    paths["deep"].write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    return paths


def test_clean_files_exit_zero(files, capsys) -> None:
    assert check_command(files["tools"], [files["good"]]) == 0
    assert (
        capsys.readouterr().out == f"{files['good']}: clean, 2 tool calls (get_weather, get_date)\n"
    )


def test_a_defect_exits_one_and_points_at_the_spot(files, capsys) -> None:
    assert check_command(files["tools"], [files["good"], files["bad"]]) == 1
    out = capsys.readouterr().out.splitlines()
    bad = files["bad"].read_text(encoding="utf-8")
    at = bad.index("<|DSML|")
    line = bad.count("\n", 0, at) + 1
    column = at - bad.rfind("\n", 0, at)
    assert (
        out[1]
        == f"{files['bad']}:{line}:{column}: ascii_bars: DSML marker with ASCII bars: `<|DSML|invoke`"
    )
    text_line = bad.splitlines()[line - 1]
    assert out[2] == "  " + text_line
    # The caret sits under `<`; CJK characters and fullwidth bars before it take two cells.
    prefix = text_line[: column - 1]
    cells = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in prefix)
    assert out[3] == "  " + " " * cells + "^"
    assert out[4].startswith(f"{files['bad']}:") and ": unknown_tool: " in out[4]
    assert out[-1] == "2 files checked: 1 with defects (2 defects)."


def test_json_lines(files, capsys) -> None:
    assert check_command(files["tools"], [files["good"], files["bad"]], as_json=True) == 1
    good, bad = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert good == {
        "file": str(files["good"]),
        "clean": True,
        "defects": [],
        "calls": [
            {
                "name": "get_weather",
                "arguments": '{"location": "San Francisco", "date": "2024-01-16"}',
            },
            {"name": "get_date", "arguments": "{}"},
        ],
    }
    assert bad["clean"] is False
    assert [d["kind"] for d in bad["defects"]] == ["ascii_bars", "unknown_tool"]
    assert set(bad["defects"][0]) >= {"kind", "offset", "message"}
    text = files["bad"].read_text(encoding="utf-8")
    assert bad["defects"][0]["offset"] == text.index("<|DSML|")


def test_openai_parsed_format(files, capsys) -> None:
    assert check_command(files["tools"], [files["message"]], format="openai-parsed") == 0
    assert "clean, 1 tool call (get_date)" in capsys.readouterr().out


def test_undecodable_bytes_are_a_defect_not_a_crash(files, capsys, tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_bytes(b"Done, caf\xe9 ok")
    assert check_command(files["tools"], [raw], as_json=True) == 1
    record = json.loads(capsys.readouterr().out)
    assert [d["kind"] for d in record["defects"]] == ["invalid_char"]
    assert check_command(files["tools"], [raw]) == 1
    assert "invalid_char" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda f: (f["tools"], [f["good"]], "dsml-v4", False), "Unknown format 'dsml-v4'"),
        (
            lambda f: (f["tools"].with_name("none.json"), [f["good"]], "dsml-v32", False),
            "The tools file .*none.json does not exist",
        ),
        (lambda f: (f["good"], [f["good"]], "dsml-v32", False), "is not valid JSON"),
        (lambda f: (f["message"], [f["good"]], "dsml-v32", False), "is not an OpenAI tools list"),
        (
            lambda f: (f["tools"], [f["good"].with_name("missing.txt")], "dsml-v32", False),
            "missing.txt does not exist",
        ),
        (lambda f: (f["tools"], [f["fifo"]], "dsml-v32", False), "is not a regular file"),
        (lambda f: (f["fifo"], [f["good"]], "dsml-v32", False), "is not a regular file"),
        (lambda f: (f["deep"], [f["good"]], "dsml-v32", False), "nests too deeply"),
        (lambda f: (f["tools"], [], "dsml-v32", False), "at least one FILE"),
        (
            lambda f: (f["tools"], [f["good"]], "openai-parsed", False),
            "is not a valid openai-parsed file",
        ),
        (  # a chat message given as a raw completion: its markup would be read as prose
            lambda f: (f["tools"], [f["message"]], "dsml-v32", False),
            r"holds a JSON record .*not a raw completion.*--format openai-parsed",
        ),
        (  # a line of a run's failures.jsonl, its content JSON-escaped
            lambda f: (f["tools"], [f["failures"]], "dsml-v32", False),
            r"failures.jsonl holds a JSON record",
        ),
    ],
)
def test_usage_errors_say_what_is_wrong_before_any_output(
    files, capsys, make, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        check_command(*make(files))
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("message", "complaint"),
    [
        ({"role": "assistant", "content": 5}, "content and reasoning_content must be strings"),
        ({"role": "assistant", "reasoning_content": ["x"]}, "must be strings"),
        ({"role": "assistant", "tool_calls": 5}, "tool_calls must be a JSON list"),
        ({"role": "assistant", "tool_calls": [5]}, r"tool_calls\[0\] must be a JSON object"),
        ({"tool_calls": [{"function": 5}]}, r"tool_calls\[0\].function must be a JSON object"),
        ({"choices": 5}, "choices must be a JSON list"),
        ({"choices": [5]}, r"choices\[0\] must be a JSON object"),
        ({"choices": [{"message": 5}]}, r"choices\[0\].message must be a JSON object"),
    ],
)
def test_an_openai_message_of_the_wrong_shape_says_which_field(
    tmp_path: Path, files, message: object, complaint: str
) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(message), encoding="utf-8")
    with pytest.raises(UsageError, match=f"is not a valid openai-parsed file .*{complaint}"):
        check_command(files["tools"], [path], format="openai-parsed")


def test_the_console_command(files) -> None:
    """`repro check` as mounted in the CLI: the same exit codes, usage errors on stderr."""

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "repro", "check", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    dirty = run("--tools", str(files["tools"]), "--json", str(files["good"]), str(files["bad"]))
    assert dirty.returncode == 1
    assert [json.loads(line)["clean"] for line in dirty.stdout.splitlines()] == [True, False]
    bad_format = run("--tools", str(files["tools"]), "--format", "llama3_json", str(files["good"]))
    assert bad_format.returncode == 2 and "Unknown format 'llama3_json'" in bad_format.stderr


def test_a_tool_schema_that_cannot_be_applied_is_a_usage_error(files, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"location": {"$ref": "https://example.invalid/x"}}}
    tools = tmp_path / "remote.json"
    tools.write_text(json.dumps([{"name": "get_weather", "parameters": schema}]), encoding="utf-8")
    with pytest.raises(UsageError, match="cannot be used: tool 'get_weather'"):
        check_command(tools, [files["good"]])


def test_another_format_is_read_by_its_validator(tmp_path: Path, capsys) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS), encoding="utf-8")
    good = tmp_path / "good.txt"
    good.write_text("<tool_call>\n<function=get_date>\n</function>\n</tool_call>", encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_text("Done.\n<function=get_date>\n</function>", encoding="utf-8")
    assert check_command(tools, [good, bad], "qwen3_coder") == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{good}: clean, 1 tool call (get_date)"
    # The position is the file's own: line 2, column 1, where `<function=` opens unwrapped.
    assert out[1].startswith(f"{bad}:2:1: missing_open_tag: ")
