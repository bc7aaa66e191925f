"""Preflight probe: runs inside the engine's own interpreter and checks argvs with its own parsers
(SGLang's server and router, vLLM's `vllm serve`).

Standalone on purpose: that interpreter has the engine but not repro, so this file imports
only the standard library and what it checks. repro sends this source to
`PYTHON -` on stdin followed by one `main(REQUEST_JSON)` line (so it also works through a
remote prefix such as ssh); by hand: `PYTHON _engine_probe.py request.json`.

Request: {"checks": [{"id", "kind": "sglang-server"|"sglang-router"|"vllm-server", "argv", "env"}],
          "extra_flags": [{"flag", "takes_value", "choices"}]}
Answer, one stdout line: REPRO-PREFLIGHT {"python", "versions", "results": [{"id", "problems",
"warnings"}]}
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

MARKER = "REPRO-PREFLIGHT "
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Rejected(Exception):
    """argparse gave up on the command line; `flag` is the option it blamed, if it named one."""

    def __init__(self, message: str, option_strings: tuple[str, ...] = ()):
        super().__init__(message)
        self.option_strings = option_strings


class CheckingParser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so every problem is collected."""

    def error(self, message):
        raise Rejected(message)


def is_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def without_option(argv: list[str], option_strings: tuple[str, ...]) -> list[str]:
    """argv minus every occurrence of an option (any of its spellings) and the values after it."""
    kept, dropping = [], False
    for token in argv:
        if is_option(token):
            dropping = token.split("=", 1)[0] in option_strings
        if not dropping:
            kept.append(token)
    return kept


def describe_unknown(
    parser: argparse.ArgumentParser, extras: list[str], engine: str = "SGLang"
) -> list[str]:
    """Why each leftover token is wrong; an abbreviation names what the engine's launcher would take."""
    known = sorted(parser._option_string_actions)
    problems, after_unknown_option = [], False
    for token in extras:
        if not is_option(token):
            if not after_unknown_option:
                problems.append(f"unexpected value {token!r}")
            continue
        after_unknown_option = True
        name = token.split("=", 1)[0]
        prefixed = [k for k in known if k.startswith(name) and k.startswith("--")]
        if len(prefixed) == 1:
            why = (
                f"not a flag; {engine}'s own launcher (abbreviations on) would silently "
                f"take it as {prefixed[0]}: write the full name"
            )
        elif prefixed:
            why = "not a flag; it is only a prefix of " + ", ".join(prefixed)
        else:
            close = difflib.get_close_matches(name, known, n=2)
            why = "not a flag" + (f"; did you mean {' or '.join(close)}?" if close else "")
        problems.append(f"{name}: {why}")
    return problems


def parse_collecting(parser: argparse.ArgumentParser, argv: list[str], engine: str = "SGLang"):
    """Parse, dropping each option argparse rejects and retrying, so all bad options are named."""
    problems: list[str] = []
    remaining = list(argv)
    for _ in range(len(argv) + 1):
        try:
            namespace, extras = parser.parse_known_args(remaining)
        except argparse.ArgumentError as exc:
            action = parser._option_string_actions.get((exc.argument_name or "").split("/")[0])
            rejected = Rejected(str(exc), tuple(action.option_strings) if action else ())
        except Rejected as exc:
            rejected = exc
        else:
            return namespace, problems + describe_unknown(parser, extras, engine)
        problems.append(str(rejected))
        shorter = without_option(remaining, rejected.option_strings)
        if not rejected.option_strings or shorter == remaining:
            return None, problems
        remaining = shorter
    return None, problems


@contextlib.contextmanager
def captured_warnings(into: list[str], loggers: tuple[str, ...] = ("",)):
    """Engines report deprecated flags through logging and print; keep them as warnings.

    vLLM's logger does not propagate to the root, so it is named in `loggers` too.
    """
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: into.append(_ANSI.sub("", record.getMessage()))
    for name in loggers:
        logging.getLogger(name).addHandler(handler)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            yield
    finally:
        for name in loggers:
            logging.getLogger(name).removeHandler(handler)
        into.extend(line for line in _ANSI.sub("", printed.getvalue()).splitlines() if line)


@contextlib.contextmanager
def role_environment(env: dict[str, str]):
    """A role's environment during its check: some SGLANG_* variables change parser choices."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def add_extra_flags(parser: argparse.ArgumentParser, extra_flags: list[dict]) -> None:
    """A fork's declared flags stand in for its own, unless this interpreter already has them."""
    for spec in extra_flags:
        if spec["flag"] in parser._option_string_actions:
            continue  # the fork's real definition wins
        if spec.get("takes_value", True):
            parser.add_argument(spec["flag"], choices=spec.get("choices") or None)
        else:
            parser.add_argument(spec["flag"], action="store_true")


class ServerChecker:
    """SGLang's server parser, built once per distinct SGLANG_* environment."""

    def __init__(self, extra_flags: list[dict]):
        from sglang.srt.server_args import ServerArgs

        self.server_args = ServerArgs
        self.extra_flags = extra_flags
        self.parsers: dict[tuple, argparse.ArgumentParser] = {}
        self.env_fields = _declared_env_fields()

    def parser_for(self, env: dict[str, str]) -> argparse.ArgumentParser:
        key = tuple(sorted((k, v) for k, v in env.items() if k.startswith("SGLANG_")))
        if key not in self.parsers:
            parser = CheckingParser(prog="sglang serve", allow_abbrev=False, exit_on_error=False)
            self.server_args.add_cli_args(parser)
            add_extra_flags(parser, self.extra_flags)
            self.parsers[key] = parser
        return self.parsers[key]

    def check(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], list[str]]:
        problems: list[str] = []
        warnings: list[str] = []
        with role_environment(env), captured_warnings(warnings):
            parser = self.parser_for(env)
            argv = _merge_config_file(parser, argv, problems)
            namespace, parse_problems = parse_collecting(parser, argv)
            problems += parse_problems
            # 0.5.20+ builds ServerArgs without resolving it; older lines resolve in
            # __post_init__, which needs the model and a GPU, so they stop at the parse.
            if namespace is not None and hasattr(self.server_args, "resolve_once"):
                try:
                    self.server_args.from_cli_args(namespace)
                except Exception as exc:  # any refusal is a finding, reported by name
                    problems.append(f"ServerArgs rejected the values: {exc}")
        env_problems, env_warnings = _check_environment(self.env_fields, env)
        return problems + env_problems, warnings + env_warnings


def _merge_config_file(parser, argv: list[str], problems: list[str]) -> list[str]:
    """`--config FILE` is merged into argv as prepare_server_args does."""
    if "--config" not in argv:
        return argv
    try:
        from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger

        return ConfigArgumentMerger(parser).merge_config_with_args(argv)
    except Exception as exc:
        problems.append(f"--config: {exc}")
        return without_option(argv, ("--config",))


def _declared_env_fields() -> dict:
    """SGLANG_* variables this SGLang declares (sglang/srt/environ.py), by name and old name."""
    try:
        from sglang.srt import environ
    except Exception:
        return {}
    fields = {}
    for cls in type(environ.envs).__mro__:
        for name, value in vars(cls).items():
            if isinstance(value, environ.EnvField):
                fields.setdefault(name, value)
                old = getattr(value, "deprecated_name", None)
                if old:
                    fields.setdefault(old, value)
    return fields


def _check_environment(fields: dict, env: dict[str, str]) -> tuple[list[str], list[str]]:
    problems, warnings = [], []
    for key, value in env.items():
        if not key.startswith("SGLANG_") or not fields:
            continue
        field = fields.get(key)
        if field is None:
            warnings.append(f"{key} is not declared in sglang/srt/environ.py; SGLang may ignore it")
            continue
        try:
            field.parse(value)
        except Exception as exc:
            problems.append(f"{key}={value!r}: {exc}")
    return problems, warnings


class RouterChecker:
    """sglang_router's own parser, as launch_router builds it, with abbreviations off."""

    def __init__(self):
        from sglang_router.router_args import RouterArgs

        self.router_args = RouterArgs
        self.parser = CheckingParser(prog="launch_router", allow_abbrev=False, exit_on_error=False)
        RouterArgs.add_cli_args(self.parser, use_router_prefix=False)

    def check(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], list[str]]:
        warnings: list[str] = []
        with role_environment(env), captured_warnings(warnings):
            namespace, problems = parse_collecting(self.parser, argv)
            if namespace is not None:
                try:
                    # from_cli_args reads --prefill URL BOOTSTRAP_PORT pairs, and
                    # launch_router validates the mode before starting.
                    args = self.router_args.from_cli_args(namespace, use_router_prefix=False)
                    validate = getattr(args, "_validate_router_args", None)
                    if validate:
                        validate()
                except Exception as exc:
                    problems.append(f"RouterArgs rejected the values: {exc}")
        return problems, warnings


class VllmServerChecker:
    """`vllm serve`'s own parser (FlexibleArgumentParser + make_arg_parser), abbreviations off.

    vLLM rewrites argv before argparse sees it (underscores to dashes, `-O3`, dotted keys
    such as `--compilation-config.mode 0` merged into JSON), so that rewrite runs first; then
    the parse, the checks `vllm serve` makes before loading (validate_parsed_serve_args) and
    AsyncEngineArgs.from_cli_args. Not checked: create_engine_config, which needs the model
    and the device.
    """

    def __init__(self, extra_flags: list[dict]):
        from vllm import envs
        from vllm.engine.arg_utils import AsyncEngineArgs

        # The serve parser moved across releases: entrypoints/launchers from 0.25 or so,
        # entrypoints/openai before; FlexibleArgumentParser from vllm.utils to argparse_utils.
        cli_args = _first_module(VLLM_CLI_ARGS)
        make_arg_parser = cli_args.make_arg_parser
        validate_parsed_serve_args = cli_args.validate_parsed_serve_args
        FlexibleArgumentParser = _first_module(
            ("vllm.utils.argparse_utils", "vllm.utils")
        ).FlexibleArgumentParser

        class Rewritten(Exception):
            """Carries argv as FlexibleArgumentParser.parse_args hands it to argparse."""

        class StopAfterRewrite(argparse.ArgumentParser):
            def parse_args(self, args=None, namespace=None):
                raise Rewritten(list(args or []))

        # MRO: vLLM's parser, then the rewrite stop, then errors raised instead of exiting.
        class Parser(FlexibleArgumentParser, StopAfterRewrite, CheckingParser):
            pass

        self.rewritten = Rewritten
        self.parser = make_arg_parser(
            Parser(prog="vllm serve", allow_abbrev=False, exit_on_error=False)
        )
        add_extra_flags(self.parser, extra_flags)
        self.validate = validate_parsed_serve_args
        self.engine_args = AsyncEngineArgs
        self.env_readers = envs.environment_variables

    def check(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], list[str]]:
        problems: list[str] = []
        warnings: list[str] = []
        if argv[:1] != ["serve"]:
            return [
                f"the command must be `-m vllm.entrypoints.cli.main serve MODEL ...`, not {argv[:1]}"
            ], []
        with role_environment(env), captured_warnings(warnings, ("", "vllm")):
            try:
                self.parser.parse_args(argv[1:])
            except self.rewritten as rewritten:
                argv = rewritten.args[0]
            except Exception as exc:  # --config unreadable, or `--model` misuse
                return [f"vLLM rejected the command line: {exc}"], warnings
            namespace, problems = parse_collecting(self.parser, argv, engine="vLLM")
            if namespace is not None:
                try:
                    self.validate(namespace)
                    self.engine_args.from_cli_args(namespace)
                except Exception as exc:  # any refusal is a finding, reported by name
                    problems.append(f"vLLM rejected the values: {exc}")
            env_problems, env_warnings = self._check_environment(env)
        return problems + env_problems, warnings + env_warnings

    def _check_environment(self, env: dict[str, str]) -> tuple[list[str], list[str]]:
        """Each VLLM_* variable as vllm/envs.py reads it (inside role_environment)."""
        problems, warnings = [], []
        for key, value in env.items():
            if not key.startswith("VLLM_"):
                continue
            reader = self.env_readers.get(key)
            if reader is None:
                warnings.append(f"{key} is not declared in vllm/envs.py; vLLM ignores it")
                continue
            try:
                reader()
            except Exception as exc:
                problems.append(f"{key}={value!r}: {exc}")
        return problems, warnings


VLLM_CLI_ARGS = ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args")


def _first_module(names: tuple[str, ...]):
    """The first of these modules that imports; the last one's error if none does."""
    import importlib

    for name in names[:-1]:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if not name.startswith(exc.name or "\0"):  # a dependency is missing: say so
                raise
    return importlib.import_module(names[-1])


CHECKERS = {
    "sglang-server": ("sglang.srt.server_args", ServerChecker),
    "sglang-router": ("sglang_router", lambda extra_flags: RouterChecker()),
    "vllm-server": (" or ".join(VLLM_CLI_ARGS), VllmServerChecker),
}


def _versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for dist in ("sglang", "sglang-router", "vllm"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[dist] = metadata.version(dist)
    return found


def _checker(kind: str, extra_flags: list[dict], cache: dict):
    """One checker per kind; an import failure is remembered and reported for every role."""
    if kind not in cache:
        module, make = CHECKERS[kind]
        try:
            cache[kind] = make(extra_flags)
        except Exception as exc:
            cache[kind] = f"cannot import {module} in {sys.executable}: {type(exc).__name__}: {exc}"
    return cache[kind]


def main(request_text: str) -> None:
    request = json.loads(request_text)
    started = time.monotonic()
    cache: dict = {}
    results = []
    for check in request["checks"]:
        checker = _checker(check["kind"], request.get("extra_flags", []), cache)
        if isinstance(checker, str):
            problems, warnings = [checker], []
        else:
            problems, warnings = checker.check(list(check["argv"]), dict(check.get("env", {})))
        results.append({"id": check["id"], "problems": problems, "warnings": warnings})
    answer = {
        "python": sys.executable,
        "versions": _versions(),
        "elapsed_s": round(time.monotonic() - started, 3),
        "results": results,
    }
    sys.stdout.write(MARKER + json.dumps(answer) + "\n")
    sys.stdout.flush()


if __name__ == "__main__" and sys.argv[1:]:
    main(Path(sys.argv[1]).read_text(encoding="utf-8"))
