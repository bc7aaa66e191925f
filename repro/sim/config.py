"""The engine's settings, as parsed from its command line (names mirror SGLang's flags)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["single", "prefill", "decode"]

# Defaults written once; the CLI reads them from here.
DEFAULT_TIME_SCALE = 0.25
DEFAULT_STREAM_INTERVAL_TOKENS = 8
# GPU memory left for the KV pool of one 8-GPU DeepSeek-V3.2 instance after weights and
# activations, per GPU (with TP the MLA latent is replicated, so this is the instance's pool).
DEFAULT_KV_POOL_GB = 80.0
# HiCache's host -> device link per GPU: the order of NVLink-C2C (450 GB/s a direction); a
# PCIe Gen5 x16 host link is about 55. The index-K race's window scales with its inverse.
DEFAULT_HOST_LINK_GBYTES_PER_S = 450.0
# Mooncake's end-to-end transfer timeout (MC_TRANSFER_TIMEOUT, seconds); modelled time here.
DEFAULT_TRANSFER_TIMEOUT_S = 60.0
# SGLang's KV sender shards hand-overs by room over this many queues, one at a time each
# (SGLANG_DISAGGREGATION_QUEUE_SIZE).
DEFAULT_TRANSFER_QUEUES = 4

# What one token costs in the device pool (and on the host tier, and on the wire), per layer:
# the MLA latent in bf16 (512 + 64 dims x 2 bytes) and the indexer's key. fp8 index-K is 128
# bytes plus a 4-byte fp32 scale per 128-dim block (SGLang's NSA pool); bf16 is 128 x 2 bytes.
LAYERS = 61
MLA_KV_BYTES_PER_TOKEN_LAYER = 1152
INDEX_K_BYTES_PER_TOKEN_LAYER = {"fp8": 132, "bf16": 256}


@dataclass(frozen=True, slots=True)
class EngineConfig:
    role: Role = "single"
    host: str = "127.0.0.1"
    port: int = 30000
    bootstrap_port: int = 8998
    transfer_backend: str = "mooncake"
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    model_format: str = "dsml-v32"  # the tool-call format the scripted agent writes
    tool_parser_bug: str | None = None  # a test switch: a planted tool-call parser bug
    hicache: bool = False
    index_k_dtype: Literal["fp8", "bf16"] = "fp8"
    index_k_gate: Literal["buggy", "fixed"] = "buggy"
    abort_fix: bool = False
    drift_fix: bool = False
    near_tie_flip: bool = False
    overlap_prefill_loads: bool = False
    overlap_schedule: bool = True
    handover_link_sharing: bool = True
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
    transfer_timeout_s: float = DEFAULT_TRANSFER_TIMEOUT_S  # modelled seconds
    transfer_queues: int = DEFAULT_TRANSFER_QUEUES
    kv_pool_gb: float = DEFAULT_KV_POOL_GB
    host_link_gbytes_per_s: float = DEFAULT_HOST_LINK_GBYTES_PER_S
    log_level: str = "info"

    @property
    def index_k_bytes_per_token(self) -> int:
        """Index-K bytes per token over all layers (bf16 about twice fp8's)."""
        return LAYERS * INDEX_K_BYTES_PER_TOKEN_LAYER[self.index_k_dtype]

    @property
    def bytes_per_token(self) -> int:
        """Device pool bytes per token: MLA KV plus index-K, over all layers."""
        return LAYERS * MLA_KV_BYTES_PER_TOKEN_LAYER + self.index_k_bytes_per_token

    @property
    def device_pool_tokens(self) -> int:
        """Tokens the device pool holds: its memory over the per-token footprint (bf16: fewer)."""
        return int(self.kv_pool_gb * 1e9) // self.bytes_per_token


@dataclass(frozen=True, slots=True)
class RouterConfig:
    prefill_url: str
    bootstrap_port: int | None
    decode_url: str
    host: str = "127.0.0.1"
    port: int = 30000
    request_timeout_s: float = 600.0
    log_level: str = "info"
