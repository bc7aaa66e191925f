"""The engine's settings, as parsed from its command line (names mirror SGLang's flags)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["single", "prefill", "decode"]

# Defaults written once; the CLI reads them from here.
DEFAULT_TIME_SCALE = 0.25
DEFAULT_STREAM_INTERVAL_TOKENS = 8
DEFAULT_DEVICE_CACHE_TOKENS = 8_000_000


@dataclass(frozen=True, slots=True)
class EngineConfig:
    role: Role = "single"
    host: str = "127.0.0.1"
    port: int = 30000
    bootstrap_port: int = 8998
    transfer_backend: str = "mooncake"
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    hicache: bool = False
    index_k_dtype: Literal["fp8", "bf16"] = "fp8"
    index_k_gate: Literal["buggy", "fixed"] = "buggy"
    abort_fix: bool = False
    drift_fix: bool = False
    near_tie_flip: bool = False
    cuda_graph: bool = True
    custom_kernels: bool = False
    topk_v2: bool = True
    enable_metrics: bool = False
    served_model_name: str = "deepseek-ai/DeepSeek-V3.2"
    model_path: str = "deepseek-ai/DeepSeek-V3.2"
    context_length_tokens: int = 131072
    seed: int = 0
    time_scale: float = DEFAULT_TIME_SCALE
    stream_interval_tokens: int = DEFAULT_STREAM_INTERVAL_TOKENS
    bootstrap_timeout_s: float = 300.0
    device_cache_tokens: int = DEFAULT_DEVICE_CACHE_TOKENS
    log_level: str = "info"

    @property
    def index_k_bytes_per_token(self) -> int:
        """Index-K cache bytes per token: 128 dims at 2 bytes (bf16) or 1 byte (fp8)."""
        return 256 if self.index_k_dtype == "bf16" else 128


@dataclass(frozen=True, slots=True)
class RouterConfig:
    prefill_url: str
    bootstrap_port: int | None
    decode_url: str
    host: str = "127.0.0.1"
    port: int = 30000
    request_timeout_s: float = 600.0
    log_level: str = "info"
