"""Profiles: strict loading, knob resolution and the one-sentence errors users see."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.harness.launch.placeholders import Missing, fill, required
from repro.harness.launch.profile import load_profile
from repro.knobs import STORY_DEFAULTS

MINIMAL = """
[engine]
name = "toy"
version = "1"
[topologies.single]
roles = ["single"]
entry = "single"
[roles.single]
command = ["{python}", "-m", "toy", "--port", "{port}"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profile.toml"
    path.write_text(text)
    return path


def test_sim_profile_defaults_are_the_story(repo_root: Path) -> None:
    profile = load_profile(repo_root / "repro" / "profiles" / "sim.toml")
    config = profile.resolve_knobs({})
    assert {k: config[k] for k in STORY_DEFAULTS} == STORY_DEFAULTS
    assert config["index_k_gate"] == "buggy"
    assert profile.identity().startswith("repro-sim ")


def test_requested_values_override_defaults(repo_root: Path) -> None:
    profile = load_profile(repo_root / "repro" / "profiles" / "sim.toml")
    config = profile.resolve_knobs({"index_k": "bf16", "topology": "single"})
    assert (config["index_k"], config["topology"], config["hicache"]) == ("bf16", "single", "on")


def test_unknown_knob_names_the_known_ones(repo_root: Path) -> None:
    profile = load_profile(repo_root / "repro" / "profiles" / "sim.toml")
    with pytest.raises(
        UsageError, match=r"has no knob 'indexk'; its knobs are: topology, hicache, index_k"
    ):
        profile.resolve_knobs({"indexk": "bf16"})


def test_unknown_value_lists_the_choices(repo_root: Path) -> None:
    profile = load_profile(repo_root / "repro" / "profiles" / "sim.toml")
    with pytest.raises(UsageError, match=r"no value 'bf17'.*choose one of: fp8, bf16"):
        profile.resolve_knobs({"index_k": "bf17"})


def test_unmapped_knob_allows_only_its_native_value(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
[knobs.index_k]
values = ["fp8", "bf16"]
unmapped = { native = "fp8", hint = "map it in a fork profile: map.bf16.engine = {args = [...]}" }
"""
    )
    profile = load_profile(write(tmp_path, text))
    assert profile.resolve_knobs({"index_k": "fp8"})["index_k"] == "fp8"
    with pytest.raises(UsageError, match="cannot set index_k=bf16: map it in a fork profile"):
        profile.resolve_knobs({"index_k": "bf16"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[engine\nname=1", "is not valid TOML"),
        (MINIMAL + "\n[roles.single.extra]\nx = 1\n", "invalid at 'roles.single.extra'"),
        (MINIMAL.replace('entry = "single"', 'entry = "router"'), "names role 'router'"),
        (
            MINIMAL + '[knobs.hicache]\nvalues = ["on"]\nmap.off.single = { args = ["-x"] }\n',
            "map names value 'off'",
        ),
        (
            MINIMAL + '[knobs.hicache]\nvalues = ["on"]\nmap.on.nobody = { args = ["-x"] }\n',
            "unknown role selector",
        ),
        # Deadlines must be finite and positive, or a wait never ends (or never begins).
        (
            MINIMAL.replace('version = "1"', 'version = "1"\nhealth_timeout_s = nan'),
            "finite number",
        ),
        (
            MINIMAL.replace('version = "1"', 'version = "1"\nhealth_timeout_s = inf'),
            "finite number",
        ),
        (MINIMAL.replace('version = "1"', 'version = "1"\nstop_timeout_s = -1'), "greater than 0"),
        (
            MINIMAL.replace('version = "1"', 'version = "1"\nstop_timeout_s = 1e9'),
            "less than or equal",
        ),
        ("x = " + "[" * 100_000 + "]" * 100_000, "nests too deeply to be read"),
        (
            MINIMAL + '[knobs.hicache]\nvalues = ["on", "a,b"]\n',
            r"'knobs.hicache.values': 'a,b' cannot be written as K=V on the command line",
        ),
        (MINIMAL + '[knobs.hicache]\nvalues = ["on", "on"]\n', r"names a value twice"),
        (MINIMAL.replace('roles = ["single"]', 'roles = ["single", "single"]'), "a role twice"),
        (MINIMAL.replace('version = "1"', 'version = ""'), "'engine.version': String should"),
        # A health path is joined to http://host:port: "health" made a URL no client parses.
        (
            MINIMAL + 'health = "health"\n',
            r"'roles.single.health': a health path starts with '/' and has no spaces",
        ),
        (
            MINIMAL + '[knobs.hicache]\nvalues = ["on"]\nmap.on.single = { health = "x y" }\n',
            r"'knobs.hicache.map.on.single.health': a health path starts with '/'",
        ),
    ],
)
def test_invalid_profiles_say_where(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_profile(write(tmp_path, text))


def test_a_profile_saved_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "profile.toml"
    path.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    assert load_profile(path).engine.name == "toy"


def test_missing_profile_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"Profile .*nope.toml does not exist\."):
        load_profile(tmp_path / "nope.toml")
    with pytest.raises(UsageError, match=r"Profile .* is a folder, not a file\."):
        load_profile(tmp_path)


def test_a_pipe_given_as_a_profile_is_refused_not_waited_on(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "fifo.toml")
    with pytest.raises(UsageError, match="is not a regular file"):
        load_profile(tmp_path / "fifo.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            MINIMAL.replace('version = "1"', 'version = "1"\nhealth_timeot_s = 9'),
            r"invalid at 'engine.health_timeot_s': no such key; did you mean 'health_timeout_s'\?",
        ),
        (  # a misspelled table is named, not the table it leaves "missing"
            MINIMAL.replace("[engine]", "[engin]"),
            r"invalid at 'engin': no such key; did you mean 'engine'\? \(known here: engine,",
        ),
        (  # deep inside a knob's map
            MINIMAL + '[knobs.hicache]\nvalues = ["on"]\nmap.on.single = { argz = ["-x"] }\n',
            r"'knobs.hicache.map.on.single.argz': no such key; did you mean 'args'\?",
        ),
        (
            MINIMAL + "[roles.single.extra]\nx = 1\n",
            r"'roles.single.extra': no such key \(known here: command, health, env, ports,",
        ),
    ],
)
def test_a_misspelled_key_says_what_to_write_instead(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        load_profile(write(tmp_path, text))


@pytest.mark.parametrize(
    ("template", "filled"),
    [
        ("--port={port}", "--port=8000"),
        ("{{port}}", "{port}"),  # str.format's escape: a literal placeholder for a wrapper
        ("{{{port}}}", "{8000}"),
        ('{{"tp": {port}}}', '{"tp": 8000}'),  # JSON with a placeholder inside
        ("no braces", "no braces"),
    ],
)
def test_placeholders_follow_str_format(template: str, filled: str) -> None:
    assert fill(template, {"port": "8000"}, "here") == filled == template.format(port="8000")


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ('{"tp": 2}', r"has \{\"tp\": 2\} .* not a placeholder; .*\{\{ and \}\} write literal"),
        ("a } b", r"has a lone brace in 'a \} b' .*write \{\{ or \}\} for a literal brace"),
        ("{port", r"has a lone brace"),
        ("{port!r}", r"has \{port!r\}"),
        ("{}", r"has \{\} in"),
    ],
)
def test_a_brace_that_is_no_placeholder_is_one_sentence(template: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        fill(template, {"port": "8000"}, "here")


def test_a_missing_value_is_an_error_only_where_it_is_used() -> None:
    values = {"port": "1", "model_path": required("model_path")}
    assert fill("--port {port}", values, "Role 'x'") == "--port 1"
    with pytest.raises(UsageError, match=r"Role 'x' needs a value for 'model_path'; give it with"):
        fill("{model_path}", values, "Role 'x'")
    with pytest.raises(UsageError, match=r"Role 'x' needs \{repo_root\}, because"):
        fill("{repo_root}/bin", {"repo_root": Missing("needs {repo_root}, because")}, "Role 'x'")


@pytest.mark.parametrize(
    ("addition", "message"),
    [
        (  # a typo in a knob value no default configuration uses still fails at load
            '[knobs.k]\nvalues = ["a", "b"]\nmap.b.single = { args = ["--x", "{prot}"] }\n',
            r"invalid: 'knobs.k.map.b.single.args\[1\]' uses \{prot\}, which no launch defines",
        ),
        (
            '[knobs.k]\nvalues = ["a", "b"]\nmap.b.single = { env = { J = \'{"a": 1}\' } }\n',
            r"'knobs.k.map.b.single.env.J' has \{\"a\": 1\} in .* not a placeholder",
        ),
        ('[settings]\nx = "{port}"\n', r"'settings.x' uses \{port\}; a setting may use only"),
        ('[settings]\npython = "{python}"\n', r"'settings.python' uses \{python\}"),
    ],
)
def test_templates_are_checked_when_the_profile_loads(
    tmp_path: Path, addition: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        load_profile(write(tmp_path, MINIMAL + addition))


def test_every_bundled_profile_passes_the_template_check(repo_root: Path) -> None:
    bundled = sorted((repo_root / "repro" / "profiles").rglob("*.toml"))
    assert len(bundled) >= 4
    for path in bundled:
        templates = dict(load_profile(path).templates())
        assert any("{port}" in t for t in templates.values()), path
