"""Generated bad input for every command, and the check that repro answers it properly:
no traceback, no hang, and exit 2 with one sentence (or the command's own verdict).

Four families, each a hypothesis strategy of one CLI invocation:
    options      `repro run --dry-run` with the shared options given hostile values
    profiles     `repro run --dry-run --profile F`, F a mutated copy of the bundled profile
    tools        `repro check --tools T F...`, T and F generated JSON and text
    run folders  `repro report` / `repro compare` on a copy of a real run folder, damaged

Used by tests/unit/test_bad_input_fuzz.py (a modest number of examples in CI) and by
bench/fuzz_bad_input.py (thousands, with counts). Commands run in this process through
typer's CliRunner: an exception escaping a command is exactly a traceback on a terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from repro.dsml.encode import encode_completion
from repro.errors import INTERNAL_ERROR
from repro.interrupts import STOP_SIGNALS
from repro.spec import PROFILES_DIR
from tests.hostile_answers import ServerScript, server_scripts, serving
from tests.hostile_cli import STREAMS, path_invocations, run_with_streams, stream_commands

HANG_S = 30.0  # far above any answer to bad input; only a wait without a deadline reaches it

# Text a user can type: no NUL (argv cannot hold one) and no line breaks, so that "one
# sentence" can be checked as one line.
typed = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\n\r"), max_size=24
)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["inf", "-inf", "nan", "1e308", "-0", "0", "0x10", "1_000", "", " ", "9" * 40]),
    typed,
)
hosts = st.sampled_from(["127.0.0.1", "[::1]", "[::1", "::1]", "", "a b", "%41", "h", "ex.com"])
ports = st.one_of(st.integers(-5, 70_000).map(str), st.sampled_from(["", "x", "8a", ":"]))
urls = st.one_of(
    st.builds(
        lambda s, h, p, t: f"{s}{h}:{p}{t}",
        st.sampled_from(["http://", "https://", "ftp://", ""]),
        hosts,
        ports,
        st.sampled_from(["", "/", "/v1", "?q=1", "#f", "/a b"]),
    ),
    st.sampled_from(["http://", "https://", "http:///v1", "http:", "//h:1"]),  # no authority
    typed,
)
assignments = st.one_of(
    st.builds(
        lambda k, v: f"{k}={v}",
        st.sampled_from(["topology", "hicache", "index_k", "nope", ""]),
        st.sampled_from(["pd", "single", "on", "bf16", "", "x"]),
    ),
    typed,
)

# Every shared option of `repro run`, and what a hostile user could put in it.
OPTION_VALUES: dict[str, st.SearchStrategy[str]] = {
    "--sessions": numbers,
    "--concurrency": numbers,
    "--seed": numbers,
    "--context-max": numbers,
    "--max-turns": numbers,
    "--ramp-up": numbers,
    "--turn-timeout": numbers,
    "--stall-after": numbers,
    "--abort-rate": numbers,
    "--health-timeout": numbers,
    "--port": numbers,
    "--scenario": st.one_of(st.just("agentic-coding"), typed),
    "--url": urls,
    "--backend": st.sampled_from(["sim", "sglang", "vllm", ""]),
    "--model": typed,
    "--model-path": typed,
    "--server-python": typed,
    "--server-args": typed,
    "--set": assignments,
    "--knob": assignments,
    "--topology": st.sampled_from(["pd", "single", "external", ""]),
    "--hicache": st.sampled_from(["on", "off", "maybe"]),
    "--index-k": st.sampled_from(["fp8", "bf16", "bf17"]),
    "--topk-v2": st.sampled_from(["on", "off", "2"]),
    "--router": st.sampled_from(["repro", "sglang", "nginx"]),
}


@dataclass(frozen=True)
class Invocation:
    """One command line and the exit codes that are an answer to it; for a gate against a
    generated server, the server (its URL replaces URL_SLOT in argv), the run folder and the
    JUnit file its answer is checked against (the gate's exit code rule)."""

    argv: list[str]
    allowed: frozenset[int]
    server: ServerScript | None = None
    run_dir: Path | None = None
    junit: Path | None = None
    streams: str | None = None  # shell redirections: run as a real process (hostile_cli)
    folder: Path | None = None


URL_SLOT = "{url}"


@dataclass(frozen=True)
class Answer:
    exit_code: int
    stdout: str
    stderr: str


class Hang(Exception):
    """A command did not answer within HANG_S."""


class EscapedTraceback(AssertionError):
    """An exception escaped a command: a user would see a traceback."""


class WrongAnswer(AssertionError):
    """An exit code the command does not document, or exit 2 without its one sentence."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def invoke(argv: list[str]) -> Answer:
    """Run one command in this process; raise if it escaped with an exception or hung."""
    from typer.testing import CliRunner

    from repro.cli import app

    handlers = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    try:
        with deadline(HANG_S):
            result = CliRunner().invoke(app, argv)
    finally:
        for sig, handler in handlers.items():  # a run settles the signals: put ours back
            signal.signal(sig, handler)
    if isinstance(result.exception, Hang):
        raise result.exception
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise EscapedTraceback(f"repro {argv!r}: {result.exception!r}") from result.exception
    if INTERNAL_ERROR in result.stderr:  # a bug, said in one sentence (repro/errors.py)
        said = result.stderr.strip()
        raise EscapedTraceback(f"repro {argv!r}: {said[:300]} ... {said[-1500:]}")
    return Answer(result.exit_code, result.stdout, result.stderr)


def is_one_sentence(stderr: str, starts: tuple[str, ...] = ("error: ",)) -> bool:
    """`error: <one line>`, click's refusals while parsing included."""
    # Split at line feeds only: a user's text may hold U+0085 or U+2028, which a terminal
    # does not break at but str.splitlines() does.
    lines = [line for line in stderr.split("\n") if line.strip()]
    if "Traceback" in stderr or not lines:
        return False
    return lines[0].startswith(starts) and len(lines) == 1


# A gate's exit 2 is one line: repro's own refusal, or the verdict of a run that cannot vouch
# (its progress lines may share stderr, with --json).
GATE_ERROR_LINES = ("error: ", "ERROR: ", "WEDGE: ")


def _gate_error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.split("\n") if line.startswith(GATE_ERROR_LINES)]


def check_answer(invocation: Invocation) -> Answer:
    """The command answered: an allowed exit code, and exit 2 is one sentence."""
    if invocation.streams is not None:
        return check_streams(invocation)
    if invocation.server is None:
        answer = invoke(invocation.argv)
    else:
        with serving(invocation.server) as url:
            answer = invoke([a.replace(URL_SLOT, url) for a in invocation.argv])
    if answer.exit_code not in invocation.allowed:
        raise WrongAnswer(f"repro {invocation.argv!r}: exit {answer.exit_code}: {answer.stderr}")
    if invocation.argv[0] == "gate":
        said = _gate_error_lines(answer.stderr)
        if answer.exit_code == 2 and (len(said) != 1 or "Traceback" in answer.stderr):
            raise WrongAnswer(f"repro {invocation.argv!r}: not one sentence: {answer.stderr!r}")
    elif answer.exit_code == 2 and not is_one_sentence(answer.stderr):
        raise WrongAnswer(f"repro {invocation.argv!r}: not one sentence: {answer.stderr!r}")
    if invocation.run_dir is not None or invocation.junit is not None:
        check_gate_rule(invocation, answer)
    return answer


_BASELINES: dict[tuple[str, ...], int] = {}


def check_streams(invocation: Invocation) -> Answer:
    """The command with its streams closed, broken or full exits as it does with them fine
    (against a generated server: each of the two runs gets a fresh one and its own folder)."""
    assert invocation.streams is not None and invocation.folder is not None
    if invocation.server is not None:
        baseline = _gate_with_streams(invocation, "", "fine")
        code = _gate_with_streams(invocation, invocation.streams, "hostile")
    else:
        key = tuple(invocation.argv)
        if key not in _BASELINES:
            _BASELINES[key] = run_with_streams(invocation.argv, "", invocation.folder)
        baseline = _BASELINES[key]
        code = run_with_streams(invocation.argv, invocation.streams, invocation.folder)
    if code != baseline:
        raise WrongAnswer(
            f"repro {invocation.argv!r} {invocation.streams}: exit {code}, "
            f"but {baseline} with its streams fine"
        )
    return Answer(code, "", "")


def _gate_with_streams(invocation: Invocation, redirections: str, name: str) -> int:
    assert invocation.server is not None and invocation.folder is not None
    out = invocation.folder / name
    with serving(invocation.server) as url:
        argv = [a.replace(URL_SLOT, url) for a in invocation.argv] + ["--out", str(out)]
        return run_with_streams(argv, redirections, invocation.folder)


def check_gate_rule(invocation: Invocation, answer: Answer) -> None:
    """1 exactly when the run folder holds a corrupted turn above the threshold (0 here), and
    the JUnit file, written on every way out, says the same as the exit code."""
    corrupted = _corrupted_turns(invocation.run_dir) if invocation.run_dir else 0
    if (answer.exit_code == 1) != (corrupted > 0) and answer.exit_code != 2:
        raise WrongAnswer(
            f"gate exit {answer.exit_code} with {corrupted} corrupted turns: {answer.stderr!r}"
        )
    if answer.exit_code == 1 and corrupted == 0:
        raise WrongAnswer(f"gate exit 1 without a corrupted turn: {answer.stderr!r}")
    if invocation.junit is None:
        return
    try:
        cases = {c.get("name"): c for c in ET.parse(invocation.junit).getroot().iter("testcase")}
    except (OSError, ET.ParseError) as exc:
        raise WrongAnswer(f"gate exit {answer.exit_code} left no readable JUnit: {exc}") from None
    verdict = cases.get("corruption threshold")
    said = None if verdict is None else next((c.tag for c in verdict), "pass")
    expected = {0: "pass", 1: "failure", 2: "error"}[answer.exit_code]
    if said != expected:
        raise WrongAnswer(f"gate exit {answer.exit_code} but its JUnit says {said}")


def _corrupted_turns(run_dir: Path) -> int:
    turns = run_dir / "turns.parquet"
    if not turns.exists():
        return 0
    table = pq.read_table(turns, columns=["corrupted"])
    return sum(bool(v) for v in table.column("corrupted").to_pylist())


# -- options -----------------------------------------------------------------------------


@st.composite
def option_invocations(draw: st.DrawFn) -> Invocation:
    chosen = draw(st.lists(st.sampled_from(sorted(OPTION_VALUES)), min_size=1, max_size=6))
    argv = ["run", "--dry-run"]
    for option in chosen:
        argv += [option, draw(OPTION_VALUES[option])]
    return Invocation(argv, frozenset({0, 2}))


# -- profiles ----------------------------------------------------------------------------

SIM_PROFILE = (PROFILES_DIR / "sim.toml").read_text()
toml_values = st.one_of(
    st.sampled_from(
        ["nan", "inf", "-inf", "-1", "0", "1e400", "true", '""', "[]", "{}", "1979-05-27"]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.floats().map(repr),
    typed.map(json.dumps),
    st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),
    typed,
)


@st.composite
def profile_invocations(draw: st.DrawFn, folder: Path) -> Invocation:
    lines = SIM_PROFILE.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["value", "delete", "insert", "duplicate", "truncate"]))
        if action == "value" and "=" in lines[i]:
            lines[i] = lines[i].split("=", 1)[0] + "= " + draw(toml_values)
        elif action == "delete":
            del lines[i]
        elif action == "insert":
            lines.insert(
                i, draw(st.one_of(typed, st.builds(lambda k, v: f"{k} = {v}", typed, toml_values)))
            )
        elif action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "truncate":
            lines = lines[:i]
        if not lines:
            lines = [""]
    path = folder / "profile.toml"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogateescape")
    extra = draw(st.sampled_from([[], ["--topology", "single"], ["--index-k", "bf16"]]))
    return Invocation(["run", "--dry-run", "--profile", str(path), *extra], frozenset({0, 2}))


# -- tools files and completions (repro check) -------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | typed,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(typed, inner, max_size=4),
    max_leaves=12,
)
GOOD_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
}
GOOD_TURN = encode_completion([("get_weather", {"location": "Paris"})], content="Checking.")


def _mutated_tool(value: Any, where: str) -> list[dict[str, Any]]:
    tool = json.loads(json.dumps(GOOD_TOOL))
    if where == "parameters":
        tool["function"]["parameters"] = value
    elif where == "properties":
        tool["function"]["parameters"]["properties"]["location"] = value
    elif where == "name":
        tool["function"]["name"] = value
    else:
        tool[where] = value
    return [tool]


@st.composite
def check_invocations(draw: st.DrawFn, folder: Path) -> Invocation:
    tools = folder / "tools.json"
    kinds = ["good", "good", "good", "json", "mutated", "mutated", "text", "deep", "pipe", "folder"]
    kind = draw(st.sampled_from([*kinds, "missing"]))
    if kind == "good":
        tools.write_text(json.dumps([GOOD_TOOL]))
    elif kind == "json":
        tools.write_text(json.dumps(draw(json_values)))
    elif kind == "mutated":
        where = draw(st.sampled_from(["parameters", "properties", "name", "type", "function"]))
        tools.write_text(json.dumps(_mutated_tool(draw(json_values), where)))
    elif kind == "text":
        tools.write_bytes(draw(st.binary(max_size=64)))
    elif kind == "deep":
        depth = draw(st.integers(100, 200_000))
        tools.write_text("[" * depth + "]" * depth)
    elif kind == "pipe":
        os.mkfifo(tools)
    elif kind == "folder":
        tools.mkdir()
    turns = []
    for n in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
        turn = folder / f"turn-{n}.txt"
        body = draw(
            st.one_of(
                st.just(GOOD_TURN.encode()),
                st.binary(max_size=200),
                st.builds(lambda t: GOOD_TURN[: len(t) * 3].encode() + t.encode(), typed),
                json_values.map(lambda v: json.dumps(v).encode()),
            )
        )
        if draw(st.integers(0, 9)) == 0:
            os.mkfifo(turn)
        else:
            turn.write_bytes(body)
        turns.append(str(turn))
    fmt = draw(st.sampled_from(["dsml-v32", "dsml-v32", "openai-parsed", "yaml"]))
    json_out = draw(st.sampled_from([[], ["--json"]]))
    return Invocation(["check", "--tools", str(tools), "--format", fmt, *json_out, *turns],
                      frozenset({0, 1, 2}))  # fmt: skip


# -- tool schemas with hostile regular expressions (repro check) ----------------------------

PATTERNS = [
    "^(a+)+$", "^(a|a)*$", "^(a|aa)*$", "(x+x+)+y", "^(\\w+\\s?)*$", "^([a-z]+)*[0-9]$",
    "(a*)*b", "^(.*?,){30}P", "x{4294967294}", "[[:alpha:]]", "(?<=a+)b", "(", "a{2,1}",
    "^[a-z]+$", "^\\d{3}$", "", "\\", "(?P<n>a)(?P=n)", "^(?!x).*$",
]  # fmt: skip
VALUES = ["a" * 40 + "!", "aaaa", "x" * 30, "a" * 5000 + "!", "", "123", "ab, " * 40, "\u00e9" * 20]


@st.composite
def pattern_invocations(draw: st.DrawFn, folder: Path) -> Invocation:
    """`repro check` on a call whose tool schema holds a regular expression that may take
    exponential time, be malformed, or be fine: an answer within seconds, never a hang."""
    pattern = draw(st.one_of(st.sampled_from(PATTERNS), typed))
    where = draw(st.sampled_from(["pattern", "patternProperties", "not", "propertyNames"]))
    location: dict[str, Any] = {"type": "string", "pattern": pattern}
    parameters: dict[str, Any] = {"type": "object", "properties": {"location": location}}
    if where == "patternProperties":
        parameters = {"type": "object", "patternProperties": {pattern: {"type": "string"}},
                      "additionalProperties": False}  # fmt: skip
    elif where == "not":
        parameters["properties"]["location"] = {"not": {"pattern": pattern}}
    elif where == "propertyNames":
        parameters = {"type": "object", "propertyNames": {"pattern": pattern}}
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": parameters}}
    tools = folder / "tools.json"
    tools.write_text(json.dumps([tool]))
    value = draw(st.one_of(st.sampled_from(VALUES), typed))
    turn = folder / "turn.txt"
    turn.write_text(encode_completion([("get_weather", {"location": value})], content="Checking."))
    return Invocation(["check", "--tools", str(tools), str(turn)], frozenset({0, 1, 2}))


# -- damaged run folders (repro report, repro compare) ------------------------------------


def make_run_folder(path: Path) -> Path:
    """A small but real run folder, as repro run writes it (three sessions, one corrupted)."""
    from repro.results.store import RunStore
    from repro.results.summary import summarize
    from tests.unit.results.test_store import record

    records = [
        record(session_id=s, turn=t, corrupted=(s, t) == (1, 2)) for s in range(3) for t in range(4)
    ]
    records.append(record(session_id=3, turn=0, outcome="timeout", error="turn deadline"))
    store = RunStore(path)
    store.write_spec({"config": {"topology": "pd"}, "engine": "repro-sim 0.1", "url": "http://x"})
    for r in records:
        store.append(r)
    store.close()
    store.write_summary(summarize(records, config={"topology": "pd"}, wall_s=3.0).to_dict())
    return path


def _damage_table(table: pa.Table, draw: st.DrawFn) -> pa.Table:
    name = draw(st.sampled_from(table.column_names))
    i = table.column_names.index(name)
    how = draw(st.sampled_from(["nulls", "drop", "retype", "strings"]))
    if how == "nulls":
        return table.set_column(i, name, pa.nulls(table.num_rows, table.schema.field(i).type))
    if how == "drop":
        return table.drop_columns([name])
    if how == "retype":
        return table.set_column(
            i, name, pa.array([draw(st.integers(-(2**40), 2**40)) for _ in range(table.num_rows)])
        )
    return table.set_column(i, name, pa.array([draw(typed) for _ in range(table.num_rows)]))


def _damage(run: Path, draw: st.DrawFn) -> None:
    target = draw(st.sampled_from(["turns.parquet", "spec.json", "summary.json"]))
    path = run / target
    if not path.is_file():  # an earlier damage removed it or made it a pipe: never read one
        return
    how = draw(st.sampled_from(["flip", "truncate", "table", "json", "key", "delete", "pipe", "folder", "parts"]))  # fmt: skip
    if how == "flip":
        data = bytearray(path.read_bytes())
        for _ in range(draw(st.integers(1, 8)) if data else 0):
            data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
        path.write_bytes(bytes(data))
    elif how == "truncate":
        path.write_bytes(path.read_bytes()[: draw(st.integers(0, path.stat().st_size))])
    elif how == "table" or (how == "parts" and target != "turns.parquet"):
        turns = run / "turns.parquet"
        if turns.is_file():
            pq.write_table(_damage_table(pq.read_table(turns), draw), turns)
    elif how in ("json", "key"):
        if target == "turns.parquet":
            path = run / "summary.json"
            if not path.is_file():
                return
        if how == "json":
            path.write_text(json.dumps(draw(json_values)))
        else:
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or not data:  # an earlier damage replaced it
                return
            key = draw(st.sampled_from(sorted(data)))
            if draw(st.booleans()):
                del data[key]
            else:
                data[key] = draw(json_values)
            path.write_text(json.dumps(data))
    elif how == "delete":
        path.unlink()
    elif how == "pipe":
        path.unlink()
        os.mkfifo(path)
    elif how == "folder":
        path.unlink()
        path.mkdir()
    elif how == "parts":  # the append-only layout: a folder of part files, one damaged
        table = pq.read_table(path)
        path.unlink()
        path.mkdir()
        cut = draw(st.integers(0, table.num_rows))
        pq.write_table(table.slice(0, cut), path / "part-0.parquet")
        pq.write_table(table.slice(cut), path / "part-1.parquet")
        part = path / "part-1.parquet"
        data = bytearray(part.read_bytes())
        if data and draw(st.booleans()):
            data[draw(st.integers(0, len(data) - 1))] ^= 0xFF
            part.write_bytes(bytes(data))


@st.composite
def report_invocations(draw: st.DrawFn, folder: Path, base: Path) -> Invocation:
    run = folder / "run"
    shutil.copytree(base, run)
    for _ in range(draw(st.integers(1, 3))):
        if (run / "turns.parquet").is_file() or draw(st.booleans()):
            # An earlier damage may make this one impossible: the folder is damaged anyway.
            with contextlib.suppress(OSError, ValueError, KeyError, pa.ArrowException):
                _damage(run, draw)
    command = draw(st.sampled_from(["report", "report-json", "compare", "compare-reversed"]))
    argv = {
        "report": ["report", str(run)],
        "report-json": ["report", str(run), "--json"],
        "compare": ["compare", str(run), str(base)],
        "compare-reversed": ["compare", str(base), str(run)],
    }[command]
    return Invocation(argv, frozenset({0, 2}))


# -- hostile servers (repro gate --url) ----------------------------------------------------


@st.composite
def answer_invocations(draw: st.DrawFn, folder: Path) -> Invocation:
    """A gate against a server that answers anything (tests/hostile_answers.py), with limits
    short enough that a stalled answer ends in a second or two."""
    run_dir, junit = folder / "run", folder / "junit.xml"
    argv = ["gate", "--url", URL_SLOT, "--sessions", str(draw(st.integers(1, 3))),
            "--max-turns", "2", "--ramp-up", "0", "--turn-timeout", "3", "--stall-after", "0.5",
            "--out", str(run_dir), "--junit", str(junit)]  # fmt: skip
    if draw(st.booleans()):
        argv.append("--json")
    return Invocation(argv, frozenset({0, 1, 2}), draw(server_scripts()), run_dir, junit)


@st.composite
def hostile_path_invocations(draw: st.DrawFn, folder: Path, base: Path) -> Invocation:
    argv, allowed = draw(path_invocations(folder, base))
    return Invocation(argv, allowed)


@st.composite
def stream_invocations(draw: st.DrawFn, folder: Path, base: Path) -> Invocation:
    """A fixed command, or a one-session gate against a generated server, with its streams
    closed, broken or full."""
    redirections = STREAMS[draw(st.sampled_from(sorted(STREAMS)))]
    if draw(st.booleans()):
        argv = ["gate", "--url", URL_SLOT, "--sessions", "1", "--max-turns", "2",
                "--ramp-up", "0", "--turn-timeout", "3", "--stall-after", "0.5"]  # fmt: skip
        script = draw(server_scripts())
        return Invocation(argv, frozenset({0, 1, 2}), script, streams=redirections, folder=folder)
    commands = stream_commands(base, base.parent)  # files that outlive the example: baselines
    argv = commands[draw(st.sampled_from(sorted(commands)))]
    return Invocation(argv, frozenset({0, 1, 2}), streams=redirections, folder=folder)


@contextmanager
def scratch() -> Iterator[Path]:
    """A fresh folder per example (hypothesis examples must not share files)."""
    folder = Path(tempfile.mkdtemp(prefix="repro-fuzz-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


FAMILIES: dict[str, Callable[..., st.SearchStrategy[Invocation]]] = {
    "options": lambda folder, base: option_invocations(),
    "profiles": lambda folder, base: profile_invocations(folder),
    "tools": lambda folder, base: check_invocations(folder),
    "run folders": lambda folder, base: report_invocations(folder, base),
    "answers": lambda folder, base: answer_invocations(folder),
    "patterns": lambda folder, base: pattern_invocations(folder),
    "paths": hostile_path_invocations,
    "streams": stream_invocations,
}
