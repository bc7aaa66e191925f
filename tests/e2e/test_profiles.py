"""A team's own profile: a wrapper whose command line carries a literal `{port}` for its
upstream, and a script found beside the profile through `{profile_dir}`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import processes_with_ports, repro, summary

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WRAPPED = """
[engine]
name = "wrapped-sim"
version = "1"
health_timeout_s = 60

[settings]
python = "{repro_python}"

[topologies.single]
roles = ["single"]
entry = "single"

# The wrapper listens on repro's port; its upstream gets the port the wrapper picks, which
# the wrapper's own command line asks for as a literal {port}: written {{port}} here.
[roles.single]
command = ["{python}", "{profile_dir}/port_wrapper.py", "--port", "{port}", "--",
           "{python}", "-m", "repro.sim", "serve", "--host", "{host}", "--port", "{{port}}",
           "--served-model-name", "wrapped", "--seed", "{seed}", "--time-scale", "0.2",
           "--log-level", "warning", "--reasoning-parser", "deepseek-v3"]
"""


def test_a_literal_port_reaches_the_wrapper_and_each_listens_on_its_own(tmp_path: Path) -> None:
    folder = tmp_path / "team-profile"
    folder.mkdir()
    shutil.copy(Path(__file__).with_name("port_wrapper.py"), folder)
    (folder / "wrapped.toml").write_text(WRAPPED)
    out = tmp_path / "run"
    done = repro(
        "run", "--profile", str(folder / "wrapped.toml"), "--sessions", "4",
        "--context-max", "8000", "--ramp-up", "0.5", "--out", str(out), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    [role] = json.loads((out / "spec.json").read_text())["roles"]
    argv = role["argv"]
    assert argv[1] == str(folder.resolve() / "port_wrapper.py")  # {profile_dir}
    assert argv[argv.index("--port") + 1] == str(role["port"])  # the wrapper's: repro's port
    assert argv[len(argv) - argv[::-1].index("--port")] == "{port}"  # the upstream's: literal

    log = (out / "logs" / "single.log").read_text()
    listening = next(line for line in log.splitlines() if "listening on" in line).split()
    wrapper_port, upstream_port = int(listening[3].rstrip(",")), int(listening[-1])
    assert wrapper_port == role["port"] and upstream_port != wrapper_port
    # Every request went through the wrapper to the upstream on its own port.
    assert f"forwarded to {upstream_port}" in log
    figures = summary(out)
    assert figures["sessions"] == 4 and figures["turns"] >= 8 and figures["errors"] == 0
    assert figures["engine"].startswith("wrapped-sim 1")
    assert processes_with_ports([str(upstream_port)]) == []  # torn down with the wrapper
