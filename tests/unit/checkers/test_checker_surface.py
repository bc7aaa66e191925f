"""The checkers' public surface, and the one table of defect kinds kept in step everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import repro.checkers
from repro.checkers import kinds

REPO = Path(__file__).resolve().parents[3]


def test_public_names() -> None:
    assert sorted(repro.checkers.__all__) == sorted(
        [
            "FORMATS",
            "AssistantOutput",
            "Defect",
            "DsmlStream",
            "Format",
            "Kind",
            "ToolCall",
            "ToolSet",
            "Verdict",
            "check_turn",
            "parse_dsml",
            "toolset_for",
        ]
    )
    assert list(repro.checkers.FORMATS) == [
        "dsml-v32",
        "openai-parsed",
        "qwen3_coder",
        "hermes",
        "deepseek_v31",
        "kimi_k2",
        "glm45",
        "glm47",
        "harmony",
        "minimax_m2",
        "mistral",
    ]


def test_the_families_surface() -> None:
    import repro.checkers.families as families

    assert sorted(families.__all__) == ["FAMILIES", "Family", "FamilyStream"]
    assert len(list((REPO / "repro" / "checkers" / "families").glob("*.py"))) <= 25


def test_every_kind_has_one_meaning_and_the_docs_carry_the_same_table() -> None:
    assert [k.value for k in kinds.Kind] == list(kinds.MEANINGS)
    assert all(k == k.lower() and " " not in k for k in kinds.MEANINGS)
    assert {group for group, _ in kinds.MEANINGS.values()} == {
        "markup",
        "leak",
        "call",
        "text",
        "turn",
    }
    assert kinds.table_markdown() in (REPO / "docs" / "checkers.md").read_text(encoding="utf-8")


def test_every_kind_the_code_reports_is_in_the_table() -> None:
    used = set()
    for path in (REPO / "repro" / "checkers").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            is_kind = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            if is_kind and node.value.id == "Kind":
                used.add(node.attr.lower())
    assert used <= set(kinds.MEANINGS)
    assert set(kinds.MEANINGS) - used == set()  # and no kind is documented but never reported
