"""Seeded generator of valid DeepSeek-V3.2 turns: the checkers' zero-false-positive corpus.

Test and bench data, not shipped in the package. Used by the tests (no healthy turn may get
a defect), the conformance suite (SGLang and DeepSeek's parser must read the same calls) and
the throughput bench (bench/checker_throughput.py). Turns mix prose
and tool calls; values hold unicode, multi-line text with `<`, `>`, `&` and quotes,
nested JSON, empty strings and padded whitespace; blocks hold one to four calls,
zero-argument ones included; prose before the block and the final EOS come and go.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from repro.dsml.encode import encode_completion

_STRING = {"type": "string"}
_INT = {"type": "integer"}

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": parameters,
        },
    }
    for name, description, parameters in (
        (
            "read_file",
            "Read a file, optionally a range of lines.",
            {
                "type": "object",
                "properties": {"path": _STRING, "start_line": _INT, "end_line": _INT},
                "required": ["path"],
                "additionalProperties": False,
            },
        ),
        (
            "write_file",
            "Write text to a file.",
            {
                "type": "object",
                "properties": {"path": _STRING, "content": _STRING, "append": {"type": "boolean"}},
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        ),
        (
            "search",
            "Search the web or the news.",
            {
                "type": "object",
                "properties": {
                    "query": _STRING,
                    "topn": {"type": "integer", "minimum": 1, "maximum": 50},
                    "source": {"type": "string", "enum": ["web", "news"]},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        ),
        (
            "run_sql",
            "Run a SQL query with parameters.",
            {
                "type": "object",
                "properties": {
                    "sql": _STRING,
                    "params": {"type": "array", "items": {"type": ["string", "number", "null"]}},
                    "timeout_s": {"type": "number"},
                },
                "required": ["sql"],
            },
        ),
        (
            "create_ticket",
            "Open a ticket with labels and a structured reporter.",
            {
                "type": "object",
                "properties": {
                    "title": _STRING,
                    "body": _STRING,
                    "labels": {"type": "array", "items": _STRING},
                    "reporter": {
                        "type": "object",
                        "properties": {
                            "name": _STRING,
                            "email": _STRING,
                            "teams": {"type": "array", "items": _STRING},
                        },
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                    "priority": {"type": ["integer", "null"]},
                    "extra": {"type": "object"},
                },
                "required": ["title", "reporter"],
                "additionalProperties": False,
            },
        ),
        ("get_date", "Today's date.", {"type": "object", "properties": {}}),
        ("list_tools", "List the available tools.", {"type": "object", "properties": {}}),
    )
]

PROSE = (
    "Let me check that first.",
    "I'll read the file and then fix the failing test.",
    "好的，我先查一下天气，然后再回答你。",
    "Давайте посмотрим, что лежит в этом каталоге.",
    "Voilà — c'est fait ! « Bonjour », dit-il ; 20 °C, © 2024, ½ tasse.",
    "¿Qué tal? Mañana revisaré el código — ñandú, pingüino, façade, naïve.",
    "Sure! 🚀 Running the tests now 👩‍💻.",
    "The check 3 < 5 held, and 7 > 2 too; so x->y && a<b>c is fine.",
    "Use `a | b` to pipe; see https://example.com/?a=1&b=2#frag.",
    'He said "hi" and left; it\'s <b>bold</b> & <i>italic</i>.',
    "The DSML format wraps calls in tags; the <parameter> element holds one value.",
    "مرحبا بالعالم — שלום עולם.",
    "表格：名称｜数量｜价格",
    "Tokenizers mark the end with <|endoftext|> in some models.",
    "e\u0301 (combining accent), zero\u200bwidth, and tabs\there.",
    "## Plan\n\n1. Read `src/app.py`\n2. Patch the bug\n3. Run `pytest -q`",
    "Here is the diff:\n```diff\n- if a<b:\n+ if a <= b:\n```",
)

_LINES = (
    "def handler(event, context):",
    '    return {"status": 200, "body": json.dumps(event)}',
    "    if x < 3 and y > 4:",
    "        print(f'<{x}> & \"{y}\"')",
    '<div class="card">Tom &amp; Jerry</div>',
    "SELECT * FROM users WHERE age >= 18 AND name <> '';",
    "| col A | col B |\n|---|---|\n| 1 | 2 |",
    "C:\\Users\\dev\\project\\main.py",
    "    // TODO: handle the <EOF> case",
    "# 注释：处理中文路径 /数据/文件.txt",
    "echo \"$HOME\" | grep -v '^#' > out.txt 2>&1",
    "  - name: «build» → ok ✓",
    '{"nested": [1, 2, {"a": "b"}], "ok": true}',
    "\tindented with a tab",
    "",
    "Ünïcödé sträng with emoji 🎉 and math ∑ x² ≤ ∞",
    '<!-- comment --> <?xml version="1.0"?>',
    'regex: ^(?P<name>[a-z]+)\\s*=\\s*"(.*?)"$',
)

_PATHS = ("src/app.py", "docs/README.md", "/etc/nginx/nginx.conf", "数据/报告.txt", "a b/c.txt")
_WORDS = (
    "weather",
    "北京 天气",
    "search agent benchmark 2024",
    "Sõnad ja 단어",
    "x < y",
    '"quoted"',
)


@dataclass(frozen=True, slots=True)
class Sample:
    """One valid turn: the completion text and the calls it encodes."""

    text: str
    calls: tuple[tuple[str, dict[str, Any]], ...]
    content: str
    eos: bool
    padded: bool  # some string value starts or ends with whitespace


def _text(rng: random.Random, lines: int) -> str:
    return "\n".join(rng.choice(_LINES) for _ in range(lines))


def _string(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.35:
        return rng.choice(_WORDS)
    if pick < 0.65:
        return _text(rng, rng.randint(1, 6))
    if pick < 0.75:
        return ""
    if pick < 0.85:
        return rng.choice((" ", "\n", "  ")) + rng.choice(_WORDS) + rng.choice(("", "\n", " "))
    if pick < 0.95:
        return rng.choice(PROSE)
    return _text(rng, rng.randint(40, 120))  # a whole file's worth


def _arguments(rng: random.Random, name: str) -> dict[str, Any]:
    if name == "read_file":
        args: dict[str, Any] = {"path": rng.choice(_PATHS)}
        if rng.random() < 0.5:
            args["start_line"] = rng.randint(1, 400)
            args["end_line"] = args["start_line"] + rng.randint(0, 80)
        return args
    if name == "write_file":
        args = {"path": rng.choice(_PATHS), "content": _string(rng)}
        if rng.random() < 0.3:
            args["append"] = rng.random() < 0.5
        return args
    if name == "search":
        args = {"query": _string(rng)}
        if rng.random() < 0.6:
            args["topn"] = rng.randint(1, 50)
        if rng.random() < 0.5:
            args["source"] = rng.choice(["web", "news"])
        return args
    if name == "run_sql":
        args = {"sql": rng.choice(_LINES[5:6]) if rng.random() < 0.5 else _string(rng)}
        if rng.random() < 0.6:
            pool = [rng.randint(-(10**12), 10**12), round(rng.uniform(-1e3, 1e3), 3), None, "x<y"]
            args["params"] = rng.sample(pool, rng.randint(0, 4))
        if rng.random() < 0.4:
            args["timeout_s"] = rng.choice([0.5, 30, 1e-05, 2.5e10, -0.0])
        return args
    if name == "create_ticket":
        reporter: dict[str, Any] = {"name": rng.choice(("Ana", "李雷", "O'Brien", "Zoë <ops>"))}
        if rng.random() < 0.5:
            reporter["teams"] = rng.sample(["infra", "ml", "ЕМЕА", "on-call"], rng.randint(0, 3))
        args = {"title": rng.choice(PROSE), "reporter": reporter}
        if rng.random() < 0.6:
            args["body"] = _string(rng)
        if rng.random() < 0.5:
            args["labels"] = rng.sample(["bug", "p0", "needs <triage>", "中文"], rng.randint(0, 3))
        if rng.random() < 0.4:
            args["priority"] = rng.choice([None, 0, 1, 2])
        if rng.random() < 0.4:
            args["extra"] = {"depth": {"a": [1, {"b": [True, False, None]}]}, "s": "<&>\"'"}
        return args
    return {}


def _padded(value: Any) -> bool:
    if isinstance(value, str):
        return value != value.strip()
    return False


def generate(rng: random.Random) -> Sample:
    """One valid turn; about one in five is prose only."""
    names = [t["function"]["name"] for t in TOOLS]
    n_calls = 0 if rng.random() < 0.2 else rng.randint(1, 4)
    calls = tuple((name, _arguments(rng, name)) for name in rng.choices(names, k=n_calls))
    if not calls or rng.random() < 0.5:
        content = "\n\n".join(rng.choice(PROSE) for _ in range(rng.randint(1, 3)))
    else:
        content = ""
    eos = rng.random() < 0.5
    text = encode_completion(calls, content=content, eos=eos)
    padded = any(_padded(v) for _, args in calls for v in args.values())
    return Sample(text, calls, content, eos, padded)


def samples(count: int, seed: int = 0) -> list[Sample]:
    rng = random.Random(seed)
    return [generate(rng) for _ in range(count)]
