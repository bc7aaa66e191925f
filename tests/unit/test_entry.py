"""The console script: a Ctrl-C while the CLI is still importing is exit 130, no traceback."""

from __future__ import annotations

import importlib.abc
import sys

import pytest

from repro.entry import main


class _CtrlCOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name == "repro.cli":
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_the_cli_imports_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "repro.cli", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_CtrlCOnImport(), *sys.meta_path])
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 130


def test_the_script_runs_the_cli(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "argv", ["repro", "--help"])
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 0
    assert "bisect" in capsys.readouterr().out
