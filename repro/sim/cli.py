"""Command line of the embedded engine: `serve` (SGLang-like flags) and `router`.

    python -m repro.sim serve [--disaggregation-mode null|prefill|decode] --host H --port P ...
    python -m repro.sim router --pd-disaggregation --prefill URL BOOTSTRAP_PORT --decode URL ...

Flag names mirror SGLang's (`sglang.launch_server`) and sglang-router's so launch profiles
look alike; abbreviations are refused and unknown flags exit 2, as the real parsers
with abbreviations off do.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from collections.abc import Sequence

from repro.sim.config import (
    DEFAULT_HOST_LINK_GBYTES_PER_S,
    DEFAULT_KV_POOL_GB,
    DEFAULT_STREAM_INTERVAL_TOKENS,
    DEFAULT_TIME_SCALE,
    DEFAULT_TRANSFER_QUEUES,
    DEFAULT_TRANSFER_TIMEOUT_S,
    EngineConfig,
    RouterConfig,
)
from repro.sim.formats import AUTO, MODEL_FORMATS, PARSER_BUGS, PARSER_NAMES

DESCRIPTION = (
    "repro.sim: an embedded SIMULATOR of an SGLang server running DeepSeek-V3.2 (DSML tool "
    "calls, or another family's with --model-format). No model runs: a scripted agent "
    "answers, timing is modelled and time-compressed, and the known PD/HiCache/index-K faults "
    "are modelled mechanisms with fix switches."
)
# SGLang's reasoning parser names; whichever is given, the split is the served model's own.
REASONING_PARSERS = (
    "deepseek-v3", "deepseek-r1", "qwen3", "kimi", "kimi_k2", "glm45", "gpt-oss", "minimax",
    "mistral",
)  # fmt: skip
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def _env_flag(name: str, default: bool) -> bool:
    """SGLang's boolean environment parsing: true/1/yes/y and false/0/no/n."""
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "y"):
        return True
    if lowered in ("false", "0", "no", "n"):
        return False
    return default


def _env_seconds(name: str, default: float) -> float:
    """A positive number (seconds, or a count) from the environment; else the default."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def _port(text: str) -> int:
    """A TCP port, checked here so a wrong one is a usage line, not a bind() traceback."""
    port = int(text)
    if not 0 <= port <= 65535:
        raise ValueError(text)
    return port


_port.__name__ = "port"  # argparse names the type in its message: "invalid port value"


def _positive(text: str) -> float:
    """A finite number above 0 (nan or 0 as a clock's scale would stop the engine's time)."""
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(text)
    return value


def _positive_gb(text: str) -> float:
    """A positive amount of gigabytes (or gigabytes a second)."""
    return _positive(text)


_positive.__name__ = "positive number"
_positive_gb.__name__ = "positive number of GB"


def _command(sub: argparse._SubParsersAction, name: str, what: str) -> argparse.ArgumentParser:
    """A sub-command's parser; abbreviations off, as SGLang's own parser has them."""
    return sub.add_parser(name, help=what, description=DESCRIPTION, allow_abbrev=False)


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    p = _command(sub, "serve", "run one engine role (single, prefill or decode)")
    p.add_argument("--disaggregation-mode", choices=("null", "prefill", "decode"), default="null")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=30000)
    p.add_argument(
        "--disaggregation-bootstrap-port",
        type=_port,
        default=8998,
        help="prefill: port of the KV hand-over server; decode: default when a request names none",
    )
    p.add_argument(
        "--disaggregation-transfer-backend", choices=("mooncake", "nixl"), default="mooncake"
    )
    p.add_argument(
        "--disaggregation-bootstrap-timeout",
        type=_positive,
        default=300.0,
        help="seconds (wall) a KV hand-over may take before the request fails (SGLang: 300)",
    )
    p.add_argument(
        "--model-format",
        choices=tuple(MODEL_FORMATS),
        default="dsml-v32",
        help="the tool-call format the scripted agent writes (a simulator switch: the family "
        "of the model served; docs/sim.md, 'Other tool-call formats')",
    )
    p.add_argument(
        "--tool-call-parser",
        choices=(AUTO, *PARSER_NAMES),
        default=None,
        help="return parsed tool_calls (SGLang's parser names; auto: the model's own format)",
    )
    p.add_argument(
        "--reasoning-parser",
        choices=REASONING_PARSERS,
        default=None,
        help="split the reasoning off (any name: at the served model's own reasoning end)",
    )
    p.add_argument(
        "--tool-parser-bug",
        choices=PARSER_BUGS,
        default=None,
        help="test switch: a planted parser bug (drop-later-calls: calls after a response's "
        "first are dropped), for the parser differential (docs/sim.md)",
    )
    p.add_argument("--enable-hierarchical-cache", "--enable-hicache", action="store_true")
    p.add_argument(
        "--index-k-dtype",
        choices=("fp8", "bf16"),
        default="fp8",
        help="index-K cache dtype (a fork patch in the story; bf16 is twice the bytes)",
    )
    p.add_argument(
        "--index-k-gate",
        choices=("buggy", "fixed"),
        default="buggy",
        help="fixed: the index-K read waits for the layer transfer",
    )
    p.add_argument(
        "--abort-fix", action="store_true", help="handle decode-side aborts (no bootstrap wedge)"
    )
    p.add_argument(
        "--drift-fix", action="store_true", help="remove the long-context attention drift"
    )
    p.add_argument(
        "--near-tie-flip",
        action="store_true",
        help="test switch: batched decode flips near-tied tokens (not batch-invariant)",
    )
    p.add_argument(
        "--overlap-prefill-loads",
        action="store_true",
        help="model switch: a prefill batch queued behind another starts its HiCache "
        "load-backs under that forward, as SGLang 0.5.10's overlap loop does (docs/sim.md)",
    )
    p.add_argument(
        "--no-handover-link-sharing",
        action="store_true",
        help="model switch: PD hand-overs no longer take host-link bandwidth from the "
        "prefill's HiCache load-backs (a full-duplex link: they go the other way; docs/sim.md)",
    )
    p.add_argument(
        "--disable-overlap-schedule",
        action="store_true",
        help="no batch is formed under a running forward, so no load-back starts before its "
        "own forward (SGLang's flag; 0.5.10 also turns the overlap loop off with EAGLE/MTP)",
    )
    p.add_argument("--disable-cuda-graph", action="store_true")
    p.add_argument("--enable-custom-kernels", action="store_true")
    p.add_argument("--enable-metrics", action="store_true")
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--model-path", default="deepseek-ai/DeepSeek-V3.2")
    p.add_argument("--context-length", type=int, default=131072)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--time-scale",
        type=_positive,
        default=DEFAULT_TIME_SCALE,
        help="wall seconds per modelled second (0.25: four times faster than the modelled GPU)",
    )
    p.add_argument(
        "--stream-interval",
        type=int,
        default=DEFAULT_STREAM_INTERVAL_TOKENS,
        help="tokens per decode slice and SSE chunk",
    )
    p.add_argument(
        "--kv-pool-gb",
        type=_positive_gb,
        default=DEFAULT_KV_POOL_GB,
        help="GPU memory of the device KV pool; its size in tokens is this over the per-token "
        "footprint (MLA KV + index-K over 61 layers: 78,324 B with fp8 index-K, 85,888 B with bf16)",
    )
    p.add_argument(
        "--host-link-gbytes-per-s",
        type=_positive_gb,
        default=DEFAULT_HOST_LINK_GBYTES_PER_S,
        help="HiCache host -> device bandwidth per GPU, GB/s (450: NVLink-C2C; PCIe Gen5 ~55)",
    )
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info")


def _router_parser(sub: argparse._SubParsersAction) -> None:
    p = _command(sub, "router", "repro's PD router (sglang_router.launch_router's arguments)")
    p.add_argument("--pd-disaggregation", action="store_true", required=True)
    p.add_argument(
        "--prefill",
        nargs="+",
        required=True,
        metavar=("URL", "BOOTSTRAP_PORT"),
        help="prefill URL and its bootstrap port (or 'none')",
    )
    p.add_argument("--decode", required=True, metavar="URL")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=30000)
    p.add_argument("--request-timeout-secs", type=_positive, default=600.0)
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m repro.sim", description=DESCRIPTION, allow_abbrev=False
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    _router_parser(sub)
    return parser


def engine_config(args: argparse.Namespace) -> EngineConfig:
    role = "single" if args.disaggregation_mode == "null" else args.disaggregation_mode
    return EngineConfig(
        role=role,
        host=args.host,
        port=args.port,
        bootstrap_port=args.disaggregation_bootstrap_port,
        transfer_backend=args.disaggregation_transfer_backend,
        tool_call_parser=args.tool_call_parser,
        reasoning_parser=args.reasoning_parser,
        model_format=args.model_format,
        tool_parser_bug=args.tool_parser_bug,
        hicache=args.enable_hierarchical_cache,
        index_k_dtype=args.index_k_dtype,
        index_k_gate=args.index_k_gate,
        abort_fix=args.abort_fix,
        drift_fix=args.drift_fix,
        near_tie_flip=args.near_tie_flip,
        overlap_prefill_loads=args.overlap_prefill_loads,
        overlap_schedule=not args.disable_overlap_schedule,
        handover_link_sharing=not args.no_handover_link_sharing,
        cuda_graph=not args.disable_cuda_graph,
        custom_kernels=args.enable_custom_kernels,
        topk_v2=_env_flag("SGLANG_OPT_USE_TOPK_V2", True),
        enable_metrics=args.enable_metrics,
        served_model_name=args.served_model_name or args.model_path,
        model_path=args.model_path,
        context_length_tokens=args.context_length,
        seed=args.seed,
        time_scale=args.time_scale,
        stream_interval_tokens=max(1, args.stream_interval),
        bootstrap_timeout_s=args.disaggregation_bootstrap_timeout,
        transfer_timeout_s=_env_seconds("MC_TRANSFER_TIMEOUT", DEFAULT_TRANSFER_TIMEOUT_S),
        transfer_queues=int(
            _env_seconds("SGLANG_DISAGGREGATION_QUEUE_SIZE", DEFAULT_TRANSFER_QUEUES)
        ),
        kv_pool_gb=args.kv_pool_gb,
        host_link_gbytes_per_s=args.host_link_gbytes_per_s,
        log_level=args.log_level,
    )


def router_config(parser: argparse.ArgumentParser, args: argparse.Namespace) -> RouterConfig:
    if len(args.prefill) > 2:
        parser.error("--prefill takes a URL and an optional bootstrap port")
    port_text = args.prefill[1] if len(args.prefill) == 2 else "none"
    if port_text != "none" and not port_text.isdigit():
        parser.error(f"--prefill bootstrap port must be a number or 'none', not {port_text!r}")
    return RouterConfig(
        prefill_url=args.prefill[0].rstrip("/"),
        bootstrap_port=None if port_text == "none" else int(port_text),
        decode_url=args.decode.rstrip("/"),
        host=args.host,
        port=args.port,
        request_timeout_s=args.request_timeout_secs,
        log_level=args.log_level,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per forwarded request is noise
    from repro.sim.serving import serve  # after parsing, so --help stays fast

    try:
        if args.command == "router":
            from repro.sim.serving.router import build_router_app

            rconfig = router_config(parser, args)
            sockets = [serve.bind(rconfig.host, rconfig.port)]
            return serve.run(build_router_app(rconfig), sockets, rconfig.log_level)
        config = engine_config(args)
        from repro.sim.engine import Engine
        from repro.sim.serving.server import PortDispatch, build_app, build_bootstrap_app

        engine = Engine(config)
        sockets = [serve.bind(config.host, config.port)]
        app = build_app(engine)
        if config.role == "prefill":
            sockets.append(serve.bind(config.host, config.bootstrap_port))
            app = PortDispatch(app, {config.bootstrap_port: build_bootstrap_app(engine)})
        logging.getLogger("repro.sim").info(
            "%s role=%s port=%d", "repro.sim simulator", config.role, config.port
        )
        return serve.run(app, sockets, config.log_level)
    except serve.PortInUse as exc:
        print(f"repro.sim: error: {exc}", file=sys.stderr)
        return 1
