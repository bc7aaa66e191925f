"""Dry run: a LaunchPlan as the shell commands it would run, in start order, ready to paste."""

from __future__ import annotations

import shlex

from repro.harness.launch.plan import LaunchPlan, RolePlan
from repro.knobs import describe


def render_plan(plan: LaunchPlan) -> str:
    """Each role's exact environment and argv, shell-quoted; nothing is started."""
    order = ", ".join(role.name for role in plan.roles)
    lines = [
        f"# repro dry run: {plan.engine_identity}",
        f"# configuration: {describe(plan.config)}",
        f"# start order: {order}; clients talk to {plan.entry} at {plan.entry_url}",
        f"# each role must answer its health URL within {plan.health_timeout_s:g} s",
        "# ports were free when this was printed; a real run picks free ones again",
    ]
    lines += [f"# note: {note}" for note in plan.notes]
    for role in plan.roles:
        lines += ["", *render_role(role)]
    return "\n".join(lines) + "\n"


def render_role(role: RolePlan) -> list[str]:
    """`env K=V ... argv` split one flag per line with backslashes, so it pastes as one command."""
    head = f"# {role.name}: health {role.health_url}"
    words = [f"{key}={shlex.quote(value)}" for key, value in role.env.items()]
    parts = (["env", *words] if words else []) + [shlex.quote(a) for a in _leading(role.argv)]
    pieces = [" ".join(parts)] + [" ".join(shlex.quote(t) for t in g) for g in _flag_groups(role)]
    # Backgrounded, so the whole output pastes as one launch (the router waits for its workers).
    return [head, " \\\n    ".join(pieces) + " &"]


def _leading(argv: tuple[str, ...]) -> list[str]:
    """Everything before the first flag: prefix, interpreter, `-m module`."""
    first = next((i for i, t in enumerate(argv) if t.startswith("--")), len(argv))
    return list(argv[:first])


def _flag_groups(role: RolePlan) -> list[list[str]]:
    """Each `--flag` with the values that follow it."""
    rest = role.argv[len(_leading(role.argv)) :]
    groups: list[list[str]] = []
    for token in rest:
        if token.startswith("--") or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups
