"""One engine driver process (family_sglang_driver.py, family_vllm_driver.py) in the engine's
own interpreter, asked batches of cases over a pipe, as SglangOracle does for DSML."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


class EngineDriver:
    def __init__(
        self, python: Path, script: str, name: str = "the engine driver", stop_s: float = 60
    ) -> None:
        self.name, self._stop_s = name, stop_s
        # stderr goes to a file: a pipe nobody reads could fill and stall the driver.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115  (closed in close())
        self._process = subprocess.Popen(
            [str(python), str(HERE / script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            encoding="utf-8",
        )

    def ask(self, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self.request({"cases": cases})

    def request(self, message: dict[str, Any], about: str = "") -> Any:
        """One line out, one line back: the reply's results, or why there are none."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(message) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            self._stderr.seek(0)
            stderr = self._stderr.read().decode("utf-8", "replace")
            raise RuntimeError(f"{self.name} died: {stderr[-2000:]}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.name} failed{about}: {reply['error']}")
        return reply["results"]

    def close(self) -> None:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.close()  # end of input: the driver's loop ends and it exits
        try:
            self._process.wait(timeout=self._stop_s)
        finally:
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait()
            self._process.stdout.close()
            self._stderr.close()
