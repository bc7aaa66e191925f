"""The cost model: how long each modelled GPU step takes, in modelled seconds.

Figures are of the order of DeepSeek-V3.2 on one 8-GPU node (decode ~20-40 ms a step at
batch 80; prefill tens of thousands of tokens a second) and only need to be plausible:
the scheduler multiplies every duration by `--time-scale` before sleeping. The red-herring
switches (top-k v2, custom kernels, CUDA graphs, transfer backend) change timing only,
as they did in the story (DESIGN §1).
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.sim.config import EngineConfig

HOST_LOAD_BYTES_PER_S = 450.0e9  # calibration constant, see docs/sim.md


@dataclass(frozen=True, slots=True)
class CostModel:
    decode_base_s: float = 0.016
    decode_per_seq_s: float = 0.00012
    decode_per_context_token_s: float = 2.0e-9
    prefill_base_s: float = 0.010
    prefill_tokens_per_s: float = 40_000.0
    prefill_attention_s_per_token_context: float = 1.0e-10  # quadratic term: new x context
    host_load_bytes_per_s: float = HOST_LOAD_BYTES_PER_S  # HiCache host->device link
    transfer_bytes_per_s: float = 50.0e9  # PD KV hand-over: one 400 Gb/s NIC per GPU (RDMA)
    bytes_per_token: int = 78_324  # what a token costs in the pool and on the wire (config)
    decode_factor: float = 1.0
    prefill_factor: float = 1.0
    transfer_factor: float = 1.0

    @classmethod
    def for_config(cls, config: EngineConfig) -> CostModel:
        decode = 1.0
        prefill = 1.0
        if not config.cuda_graph:
            decode *= 1.35  # eager decode: launch overhead per step
        if config.custom_kernels:
            decode *= 0.93
            prefill *= 0.95
        if config.topk_v2:
            decode *= 0.97
        transfer = 1.15 if config.transfer_backend == "nixl" else 1.0
        return cls(
            decode_factor=decode,
            prefill_factor=prefill,
            transfer_factor=transfer,
            bytes_per_token=config.bytes_per_token,
        )

    def decode_step_s(self, batch_size: int, context_tokens: int) -> float:
        """One decode step for the whole running batch (one token per sequence)."""
        step = self.decode_base_s + self.decode_per_seq_s * batch_size
        return (step + self.decode_per_context_token_s * context_tokens) * self.decode_factor

    def prefill_s(self, new_tokens: int, context_tokens: int) -> float:
        """One prefill forward over `new_tokens` uncached tokens attending to `context_tokens`."""
        linear = new_tokens / self.prefill_tokens_per_s
        attention = self.prefill_attention_s_per_token_context * new_tokens * context_tokens
        return (self.prefill_base_s + linear + attention) * self.prefill_factor

    def host_load_s(self, nbytes: int, handovers: int = 0) -> float:
        """HiCache load-back of `nbytes` host -> device while `handovers` PD hand-overs cross
        the same link: each takes its NIC's rate, and the load-back gets what is left (never
        less than a fair share)."""
        link = self.host_load_bytes_per_s
        left = max(link - handovers * self.transfer_bytes_per_s, link / (1 + handovers))
        return nbytes / left

    def transfer_s(self, tokens: int) -> float:
        """PD hand-over of a prompt's KV and index-K from prefill to decode."""
        return tokens * self.bytes_per_token / self.transfer_bytes_per_s * self.transfer_factor
