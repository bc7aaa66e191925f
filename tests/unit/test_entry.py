"""The console script: a Ctrl-C while the CLI is still importing is exit 130, no traceback;
SIGTERM and SIGHUP mean what Ctrl-C means; once a run is settled, a signal is only noted."""

from __future__ import annotations

import importlib.abc
import os
import signal
import sys
import time
from collections.abc import Iterator

import pytest

from repro import interrupts
from repro.entry import main


@pytest.fixture(autouse=True)
def own_signal_handlers() -> Iterator[None]:
    """main() installs process-wide handlers: put pytest's back afterwards."""
    saved = {sig: signal.getsignal(sig) for sig in interrupts.STOP_SIGNALS}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


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


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_are_a_ctrl_c(sig: signal.Signals) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as from a terminal, whoever started pytest
    interrupts.install()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), sig)
        time.sleep(1)  # the handler runs at the next bytecode; this is never reached in full
    seen = []
    signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    os.kill(os.getpid(), signal.SIGTERM)  # follows whatever Ctrl-C does at that moment
    assert seen == [signal.SIGINT]


def test_under_nohup_a_hang_up_stops_nothing() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # what nohup does before it starts repro
    interrupts.install()
    assert interrupts.stop_signals() == (signal.SIGINT, signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGHUP)  # still ignored: no KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):  # SIGTERM still stops it
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
    interrupts.settle()  # nor does a settled run start listening for it
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    interrupts.install()
    assert signal.SIGHUP in interrupts.stop_signals()


def test_once_settled_a_signal_is_noted_and_a_second_one_stops(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    interrupts.settle()
    os.kill(os.getpid(), signal.SIGTERM)  # noted: the command goes on to its own exit code
    os.kill(os.getpid(), signal.SIGINT)  # the same stop delivered twice: still noted
    clock = [time.monotonic() + interrupts.REPEAT_WINDOW_S + 0.1]
    monkeypatch.setattr(interrupts.time, "monotonic", lambda: clock[0])
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
