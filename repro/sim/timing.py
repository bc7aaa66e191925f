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


@dataclass(frozen=True, slots=True)
class CostModel:
    decode_base_s: float = 0.016
    decode_per_seq_s: float = 0.00012
    decode_per_context_token_s: float = 2.0e-9
    prefill_base_s: float = 0.010
    prefill_tokens_per_s: float = 40_000.0
    prefill_attention_s_per_token_context: float = 1.0e-10  # quadratic term: new x context
    host_load_bytes_per_s: float = 4.0e9  # HiCache host->device (index-K + KV pages)
    kv_bytes_per_token: int = 70_272  # MLA latent (576 x 2 bytes) x 61 layers
    transfer_bytes_per_s: float = 40.0e9  # PD KV transfer (RDMA)
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
        return cls(decode_factor=decode, prefill_factor=prefill, transfer_factor=transfer)

    def decode_step_s(self, batch_size: int, context_tokens: int) -> float:
        """One decode step for the whole running batch (one token per sequence)."""
        step = self.decode_base_s + self.decode_per_seq_s * batch_size
        return (step + self.decode_per_context_token_s * context_tokens) * self.decode_factor

    def prefill_s(self, new_tokens: int, context_tokens: int) -> float:
        """One prefill forward over `new_tokens` uncached tokens attending to `context_tokens`."""
        linear = new_tokens / self.prefill_tokens_per_s
        attention = self.prefill_attention_s_per_token_context * new_tokens * context_tokens
        return (self.prefill_base_s + linear + attention) * self.prefill_factor

    def host_load_s(self, tokens: int, index_k_bytes_per_token: int) -> float:
        """HiCache load-back of `tokens` from host memory (KV and index-K pages)."""
        return (
            tokens
            * (self.kv_bytes_per_token + index_k_bytes_per_token)
            / self.host_load_bytes_per_s
        )

    def transfer_s(self, tokens: int) -> float:
        """PD hand-over of a prompt's KV from prefill to decode."""
        return tokens * self.kv_bytes_per_token / self.transfer_bytes_per_s * self.transfer_factor
