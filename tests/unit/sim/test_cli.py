"""The engine's command line: SGLang's names, strict parsing, environment switch."""

from __future__ import annotations

import pytest

from repro.sim.cli import build_parser, engine_config, router_config


def test_flags_map_to_the_engine_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGLANG_OPT_USE_TOPK_V2", "0")
    args = build_parser().parse_args(
        ["serve", "--disaggregation-mode", "prefill", "--port", "1234", "--disaggregation-bootstrap-port", "999",
         "--disaggregation-transfer-backend", "nixl", "--enable-hierarchical-cache", "--index-k-dtype", "bf16",
         "--index-k-gate", "fixed", "--abort-fix", "--drift-fix", "--disable-cuda-graph", "--enable-custom-kernels",
         "--tool-call-parser", "deepseekv32", "--reasoning-parser", "deepseek-v3", "--served-model-name", "m",
         "--overlap-prefill-loads", "--disable-overlap-schedule", "--no-handover-link-sharing"]
    )  # fmt: skip
    config = engine_config(args)
    assert (config.role, config.port, config.bootstrap_port, config.transfer_backend) == (
        "prefill",
        1234,
        999,
        "nixl",
    )
    assert config.hicache and config.index_k_dtype == "bf16" and config.index_k_gate == "fixed"
    assert config.abort_fix and config.drift_fix and not config.cuda_graph and config.custom_kernels
    assert not config.topk_v2 and config.served_model_name == "m"
    assert config.overlap_prefill_loads and not config.overlap_schedule
    assert not config.handover_link_sharing
    defaults = engine_config(build_parser().parse_args(["serve"]))
    assert not defaults.overlap_prefill_loads and defaults.overlap_schedule
    assert defaults.handover_link_sharing


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--bogus"],
        ["serve", "--enable-hier"],
        ["serve", "--index-k-dtype", "fp4"],
        ["serve", "--port", "99999"],  # was an OverflowError traceback from bind()
        ["serve", "--disaggregation-bootstrap-port", "-1"],
        [
            "router",
            "--pd-disaggregation",
            "--prefill",
            "http://p",
            "--decode",
            "http://d",
            "--port",
            "70000",
        ],
    ],
)
def test_unknown_abbreviated_or_bad_flags_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2


def test_router_takes_sglang_routers_arguments() -> None:
    parser = build_parser()
    args = parser.parse_args(
        [
            "router",
            "--pd-disaggregation",
            "--prefill",
            "http://127.0.0.1:1/",
            "8998",
            "--decode",
            "http://127.0.0.1:2",
            "--port",
            "3",
        ]
    )
    config = router_config(parser, args)
    assert (config.prefill_url, config.bootstrap_port, config.decode_url) == (
        "http://127.0.0.1:1",
        8998,
        "http://127.0.0.1:2",
    )


def test_the_model_format_its_parser_and_the_planted_bug() -> None:
    args = build_parser().parse_args(
        ["serve", "--model-format", "kimi_k2", "--tool-call-parser", "auto",
         "--reasoning-parser", "kimi", "--tool-parser-bug", "drop-later-calls"]
    )  # fmt: skip
    config = engine_config(args)
    assert (config.model_format, config.tool_call_parser, config.reasoning_parser) == (
        "kimi_k2", "auto", "kimi",
    )  # fmt: skip
    assert config.tool_parser_bug == "drop-later-calls"
    defaults = engine_config(build_parser().parse_args(["serve"]))
    assert defaults.model_format == "dsml-v32" and defaults.tool_parser_bug is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--model-format", "qwen9"])
