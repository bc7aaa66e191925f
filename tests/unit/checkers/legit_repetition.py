"""Real text that repeats on purpose: none of it is a model stuck in a loop.

The repetition checker must flag none of these: markdown tables, rulers and banners,
indentation, base64 (random and of zero-filled or space-filled data), hex dumps and hex
strings, CSV with repeated rows, JSON and SQL with repeated values, CJK punctuation and
short laughs, TOC leaders; plus Python's own standard library and repro's docs.
"""

from __future__ import annotations

import base64
import json
import random
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def _markdown_tables(rng: random.Random) -> list[str]:
    wide = "| " + " | ".join(f"c{i}" for i in range(30)) + " |\n" + "|---" * 30 + "|\n"
    wide += "".join(f"| r{r} | " + " | ".join("-" for _ in range(29)) + " |\n" for r in range(20))
    template = "| name | owner | due |\n|---|---|---|\n" + "|      |       |     |\n" * 12
    zeros = "| run | " + " | ".join(f"k{i}" for i in range(12)) + " |\n|" + ":---:|" * 13 + "\n"
    zeros += "".join(f"| {r} | " + " | ".join("0" for _ in range(12)) + " |\n" for r in range(40))
    na = "| name | a | b | c | d |\n|------|---|---|---|---|\n"
    na += "".join(f"| row{i} | N/A | N/A | N/A | N/A |\n" for i in range(60))
    ticks = "| feature | v1 | v2 | v3 |\n|---|---|---|---|\n"
    ticks += "".join(f"| f{i} | ✓ | ✓ | ✗ |\n" for i in range(50))
    return [wide, zeros, na, ticks, template]


def _rulers() -> list[str]:
    return [
        "Title\n" + "=" * 300 + "\nSection\n" + "-" * 300 + "\n",
        "#" * 100 + "\n# BANNER\n" + "#" * 100 + "\n",
        "/*" + "*" * 150 + "*/\n",
        "─" * 200 + "\n" + "━" * 200 + "\n" + "═" * 200,
        "-=" * 120 + "\n" + "~" * 250 + "\n" + "_" * 250,
        "".join(f"Chapter {i} {'.' * 60} {i * 7}\n" for i in range(1, 12)),  # TOC leaders
        "ー" * 150 + "\n" + "—" * 150 + "\n" + "·" * 200,  # a prolonged sound mark, dashes
        "⭐" * 120 + "\n" + "🔥" * 100 + "\n" + "!" * 200 + "\n" + "?!" * 100,
        "。" * 150 + "……" * 60 + "\n" + "哈哈哈哈哈哈，太好了" * 3,
    ]


def _indentation() -> list[str]:
    nested = "".join("    " * depth + f"if x{depth}:\n" for depth in range(60))
    nested += "    " * 60 + "return 0\n"
    tabs = "".join("\t" * d + f"<div id='{d}'>\n" for d in range(80))
    payload: dict = {}
    node = payload
    for depth in range(40):
        node["child"] = {"level": depth}
        node = node["child"]
    return [nested, tabs, json.dumps(payload, indent=4), "x = 1" + " " * 400 + "# aligned"]


def _base64(rng: random.Random) -> list[str]:
    random_bytes = bytes(rng.getrandbits(8) for _ in range(3000))
    zero_padded = b"\x89PNG\r\n\x1a\n" + bytes(360) + random_bytes[:200] + bytes(300)
    spaced = b"def f():\n" + b" " * 300 + b"return 1\n"  # ICAgICAg... 400 characters
    text = "Lorem ipsum dolor sit amet. " * 20
    return [
        base64.b64encode(b).decode()
        for b in (random_bytes, zero_padded, spaced, bytes(range(256)) * 4, text.encode())
    ] + [base64.encodebytes(random_bytes).decode()]  # wrapped at 76


def _hex() -> list[str]:
    dump = "".join(
        f"{offset:08x}: " + " ".join(["0000"] * 8) + "  ................\n"
        for offset in range(0, 16 * 40, 16)
    )
    return [
        dump,
        "0x" + "00" * 200,
        "0x" + "ff" * 200,
        "{" + ", ".join(["0x00"] * 90) + "}",
        " ".join(["00"] * 160),
        "deadbeef" * 60,
        "sha256: " + "0" * 64 + "\nuint256 max: 0x" + "f" * 64,
    ]


def _csv(rng: random.Random) -> list[str]:
    dated = "date,a,b,c,note\n" + "".join(f"2024-01-{d:02d},0,0,0,NA\n" for d in range(1, 29))
    same = "x,y\n" + "0,0\n" * 120 + "a,b\n" * 40 + "NA,NA,NA\n" * 30
    wide = ",".join(["NA"] * 150) + "\n" + ",".join(["0"] * 200)
    return [dated, same, wide]


def _data_and_prose() -> list[str]:
    return [
        json.dumps([0] * 150) + json.dumps([None] * 80) + json.dumps([True] * 80),
        "INSERT INTO t VALUES (" + ", ".join(["NULL"] * 80) + ");",
        "It was very " + "very " * 12 + "good. " + "ha" * 40 + "! " + "no " * 20,
        "SELECT ?" + ", ?" * 150,
        "Knock knock. " * 10 + "Who's there?",
        "ATATATAT" * 30 + "CAGCAGCAG" * 20,  # DNA repeats: letters of the base64 alphabet
        "abababab" * 60,
    ]


def legit_texts(seed: int = 0) -> dict[str, str]:
    """Name -> text, each with repetition a healthy writer puts there on purpose."""
    rng = random.Random(seed)
    groups = {
        "markdown table": _markdown_tables(rng),
        "ruler": _rulers(),
        "indentation": _indentation(),
        "base64": _base64(rng),
        "hex": _hex(),
        "csv": _csv(rng),
        "data and prose": _data_and_prose(),
    }
    return {f"{name} #{i}": text for name, texts in groups.items() for i, text in enumerate(texts)}


def real_documents() -> dict[str, str]:
    """Python's standard library (code, docstrings, comment banners) and repro's docs."""
    library = Path(sysconfig.get_paths()["stdlib"])
    paths = [
        *sorted(library.glob("*.py")),
        *sorted((REPO / "docs").glob("*.md")),
        REPO / "README.md",
    ]
    return {str(p): p.read_text(encoding="utf-8", errors="replace") for p in paths}
