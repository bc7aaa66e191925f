"""The probe's parsing rules on a plain argparse parser: every bad option named, once."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from repro.errors import UsageError
from repro.harness.launch import _engine_probe as probe
from repro.harness.launch.plan import RolePlan
from repro.harness.launch.preflight import PROBE_SOURCE, _split_command


def parser() -> argparse.ArgumentParser:
    p = probe.CheckingParser(allow_abbrev=False, exit_on_error=False)
    p.add_argument("--tp-size", type=int)
    p.add_argument("--tool-call-parser", choices=["deepseekv32", "qwen"])
    p.add_argument("--chunked-prefill-size", type=int)
    p.add_argument("--prefill-only-disable-kv-cache", action="store_true")
    p.add_argument("--cuda-graph-max-bs-decode", type=int)
    p.add_argument("--cuda-graph-max-bs-prefill", type=int)
    p.add_argument("--model-path", required=True)
    return p


def test_every_bad_value_and_unknown_flag_is_named() -> None:
    argv = ["--model-path", "m", "--tp-size", "two", "--tool-call-parser", "llama",
            "--tp", "2", "--cuda-graph-max-bs", "8", "--tool-call-parsr", "qwen", "--chunked-prefill-size", "-1"]  # fmt: skip
    namespace, problems = probe.parse_collecting(parser(), argv)
    assert namespace is not None and namespace.chunked_prefill_size == -1
    assert problems == [
        "argument --tp-size: invalid int value: 'two'",
        "argument --tool-call-parser: invalid choice: 'llama' (choose from 'deepseekv32', 'qwen')",
        "--tp: not a flag; SGLang's own launcher (abbreviations on) would silently take it as "
        "--tp-size: write the full name",
        "--cuda-graph-max-bs: not a flag; it is only a prefix of --cuda-graph-max-bs-decode, "
        "--cuda-graph-max-bs-prefill",
        "--tool-call-parsr: not a flag; did you mean --tool-call-parser?",
    ]


def test_equals_form_and_stray_values() -> None:
    _, problems = probe.parse_collecting(parser(), ["--model-path", "m", "--tp=2", "stray"])
    assert problems == [
        "--tp: not a flag; SGLang's own launcher (abbreviations on) would silently take it as "
        "--tp-size: write the full name"
    ]
    _, problems = probe.parse_collecting(parser(), ["stray", "--model-path", "m"])
    assert problems == ["unexpected value 'stray'"]


def test_a_missing_required_flag_stops_the_parse_with_its_name() -> None:
    namespace, problems = probe.parse_collecting(parser(), ["--tp-size", "2"])
    assert namespace is None
    assert problems == ["the following arguments are required: --model-path"]


def test_without_option_drops_every_spelling_and_its_values() -> None:
    argv = ["--a", "1", "--tp-size", "x", "--tp-size=3", "--b", "-1", "--tp-size", "y", "z"]
    assert probe.without_option(argv, ("--tp-size",)) == ["--a", "1", "--b", "-1"]


def test_extra_flags_stand_in_only_where_the_parser_lacks_them() -> None:
    p = parser()
    probe.add_extra_flags(p, [{"flag": "--index-k-dtype", "choices": ["fp8", "bf16"]},
                              {"flag": "--tp-size", "choices": ["nope"]}])  # fmt: skip
    namespace, problems = probe.parse_collecting(
        p, ["--model-path", "m", "--index-k-dtype", "bf16", "--tp-size", "4"]
    )
    assert problems == [] and namespace.index_k_dtype == "bf16" and namespace.tp_size == 4


def test_the_probe_runs_standalone_without_repro(tmp_path) -> None:
    """The engine's interpreter has no repro: the probe must import nothing from it."""
    assert (
        "from repro" not in PROBE_SOURCE.read_text()
        and "import repro" not in PROBE_SOURCE.read_text()
    )
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps({"checks": [{"id": "0", "kind": "sglang-router", "argv": [], "env": {}}]})
    )
    done = subprocess.run(
        [sys.executable, "-I", str(PROBE_SOURCE), str(request)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    line = next(x for x in done.stdout.splitlines() if x.startswith(probe.MARKER))
    answer = json.loads(line[len(probe.MARKER) :])
    assert answer["results"][0]["problems"][0].startswith("cannot import sglang_router")


def role(argv: tuple[str, ...]) -> RolePlan:
    return RolePlan("prefill", argv, {}, 1, "http://127.0.0.1:1/health", False)


def test_the_interpreter_and_prefix_are_split_from_the_args() -> None:
    argv = (
        "ssh",
        "node2",
        "--",
        "/venv/bin/python",
        "-u",
        "-m",
        "sglang.launch_server",
        "--tp-size",
        "8",
    )
    assert _split_command(role(argv), prefix_len=3) == (
        ("ssh", "node2", "--", "/venv/bin/python", "-u"),
        ("--tp-size", "8"),
    )


def test_a_command_that_is_not_python_dash_m_cannot_be_preflighted() -> None:
    with pytest.raises(UsageError, match="must read 'PYTHON -m MODULE ARGS"):
        _split_command(role(("sglang", "serve", "--tp-size", "8")), prefix_len=0)
