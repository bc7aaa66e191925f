"""The trial cache: evidence per (configuration, engine identity, scenario, client settings).

One JSON file per key under <out>/bisect/cache/, rewritten atomically after every wave,
so a campaign killed at any point resumes with everything that had finished. Statistical
settings are deliberately not part of the key: an entry holds outcomes, not a verdict (see
evidence.py), so a rerun with other p0/p1/alpha/beta reuses the sessions already paid for.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from repro.bisect.evidence import Evidence, Wave
from repro.errors import ReproError, UsageError
from repro.scenarios import scenario_identity
from repro.spec import RunSpec

CACHE_VERSION = 1

# RunSpec fields that cannot change what a session observes: where the engine listens, how
# long start-up may take, the profile's path (its content is in the engine identity), and
# where and on how many engines the divergence oracle's replay runs, and how many client
# processes share the sessions (the requests are the same), and the format turns are judged
# in (the profile's, from its settings: both keyed already). The launcher's fields are keyed
# below, only when they place the engine elsewhere.
_NOT_IN_KEY = frozenset(
    {
        "tool_format",
        "url",
        "port",
        "health_timeout_s",
        "profile",
        "knobs",
        "reference_urls",
        "reference_engines",
        "workers",
    }
)
_LAUNCH_FIELDS = frozenset({"launcher", "nodes", "partition", "account", "time_limit"})
# Fields added after trials were first cached (the oracles' settings, request shapes) are
# keyed only when one differs from its default, so trials measured before they existed
# (all at their defaults) keep their keys.
_KEYED_WHEN_SET = frozenset(
    {
        "oracle",
        "history",
        "replay_sample",
        "replay_concurrency",
        "reference_knobs",
        "top_logprobs",
        "numerical_margin_nats",
        "stream_oracle",
        "stream_sample",
        "mix",
    }
)


def trial_key(spec: RunSpec, config: Mapping[str, str], engine_identity: str) -> dict[str, object]:
    """What a trial's outcome depends on; any RunSpec field not listed above is included."""
    defaults = {
        name
        for name in _KEYED_WHEN_SET
        if getattr(spec, name) == RunSpec.model_fields[name].get_default(call_default_factory=True)
    }
    client = spec.model_dump(mode="json", exclude=set(_NOT_IN_KEY | _LAUNCH_FIELDS) | defaults)
    key: dict[str, object] = {
        "version": CACHE_VERSION,
        "engine": engine_identity,
        "config": dict(sorted(config.items())),
        "spec": client,
    }
    if (identity := scenario_identity(spec.scenario)) is not None:
        key["scenario"] = identity  # a trace's content: an edited trace is another workload
    if spec.launcher != "local":
        # Roles on other machines (PD across nodes, other GPUs) may behave otherwise: such
        # trials are their own. The placement table is in the profile, hence the identity;
        # account, time limit and spare nodes change nothing a session sees.
        key["placement"] = {"launcher": spec.launcher, "partition": spec.partition}
    return key


def key_digest(key: Mapping[str, object]) -> str:
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


class TrialCache:
    """Evidence files under one folder; reads tolerate a missing entry, never a corrupt one."""

    def __init__(self, folder: Path) -> None:
        try:  # made now, so a bad --out fails before the first trial, not after it
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"Cannot create the trial cache {folder}: {exc.strerror}.") from None
        self.folder = folder

    def path(self, key: Mapping[str, object]) -> Path:
        return self.folder / f"{key_digest(key)}.json"

    def load(self, key: Mapping[str, object]) -> Evidence | None:
        path = self.path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ReproError(
                f"Trial cache entry {path} cannot be read ({exc}); delete it to measure that "
                "trial again."
            ) from None
        # A digest collision or a hand-edited file must not pass as this trial's evidence.
        if not isinstance(data, dict) or data.get("key") != json.loads(json.dumps(key)):
            return None
        try:
            waves = tuple(Wave(**w) for w in data["waves"])
        except (KeyError, TypeError) as exc:
            raise ReproError(
                f"Trial cache entry {path} is not one repro wrote ({exc!r}); delete it to "
                "measure that trial again."
            ) from None
        return Evidence(data["key"]["config"], waves)

    def save(self, key: Mapping[str, object], evidence: Evidence) -> None:
        """Write the whole entry to a temporary file, then rename it over the old one."""
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {
            "key": key,
            "waves": [
                {
                    "first_session_id": w.first_session_id,
                    "outcomes": w.outcomes,
                    "wall_s": w.wall_s,
                    "run_dir": w.run_dir,
                }
                for w in evidence.waves
            ],
        }
        path = self.path(key)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
