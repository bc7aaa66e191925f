"""The bundled sim profile plus a topology with `repro record` in front of the PD router, as
docs/traces.md ("Recording a run of repro") writes it: for the e2e test and the trace bench."""

from __future__ import annotations

from pathlib import Path

from repro.spec import PROFILES_DIR

RECORDER_ROLE = """

# repro record in front of the PD router: every chat turn of a run is appended to a trace
# beside this profile.
[topologies.pd_recorded]
roles = ["prefill", "decode", "router", "recorder"]
entry = "recorder"

[roles.recorder]
router = true
command = ["{repro_python}", "-m", "repro", "record", "--upstream", "{router_url}",
           "--host", "{host}", "--port", "{port}", "--out", "{profile_dir}/recorded.jsonl"]
"""


def recorded_profile(folder: Path) -> Path:
    """Write the profile into `folder`; a run with `--topology pd_recorded` then leaves its
    trace at `folder / "recorded.jsonl"`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sim-recorded.toml"
    path.write_text((PROFILES_DIR / "sim.toml").read_text() + RECORDER_ROLE)
    return path
