"""The cost model: how long each modelled GPU step takes, in modelled seconds.

Figures are of the order of DeepSeek-V3.2 on one 8-GPU node (decode ~20-40 ms a step at
batch 80; prefill tens of thousands of tokens a second) and only need to be plausible:
the scheduler multiplies every duration by `--time-scale` before sleeping. The red-herring
switches (top-k v2, custom kernels, CUDA graphs, transfer backend) change timing only,
as they did in the story (DESIGN §1).

The terms that grow with the context are DSA's lightning indexer, which scores every new
token against every earlier token's index-K (64 heads x 128 dims x 61 layers: about 1e6
FLOPs per pair, 1e-10 s at ~10 PFLOPS of fp8 over 8 GPUs). bf16 index-K runs it on bf16
tensor cores at half fp8's rate and reads twice the bytes: those terms double.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.sim.config import LAYERS, MLA_KV_BYTES_PER_TOKEN_LAYER, EngineConfig


@dataclass(frozen=True, slots=True)
class CostModel:
    decode_base_s: float = 0.016
    decode_per_seq_s: float = 0.00012
    decode_per_context_token_s: float = 2.0e-9
    prefill_base_s: float = 0.010
    prefill_tokens_per_s: float = 40_000.0
    prefill_attention_s_per_token_context: float = 1.0e-10  # the indexer: new x context, fp8
    host_load_bytes_per_s: float = 450.0e9  # HiCache host->device link (config)
    transfer_bytes_per_s: float = 50.0e9  # PD KV hand-over: one 400 Gb/s NIC per GPU (RDMA)
    bytes_per_token: int = 78_324  # what a token costs in the pool and on the wire (config)
    decode_factor: float = 1.0
    prefill_factor: float = 1.0
    transfer_factor: float = 1.0
    indexer_factor: float = 1.0  # bf16 index-K: 2
    handover_link_sharing: bool = True  # a model assumption (config.handover_link_sharing)

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
            host_load_bytes_per_s=config.host_link_gbytes_per_s * 1e9,
            indexer_factor=2.0 if config.index_k_dtype == "bf16" else 1.0,
            handover_link_sharing=config.handover_link_sharing,
        )

    def decode_step_s(self, batch_size: int, context_tokens: int) -> float:
        """One decode step for the whole running batch (one token per sequence)."""
        step = self.decode_base_s + self.decode_per_seq_s * batch_size
        indexer = self.decode_per_context_token_s * context_tokens * self.indexer_factor
        return (step + indexer) * self.decode_factor

    def prefill_s(self, new_tokens: int, context_tokens: int) -> float:
        """One prefill forward over `new_tokens` uncached tokens attending to `context_tokens`."""
        linear = new_tokens / self.prefill_tokens_per_s
        attention = (
            self.prefill_attention_s_per_token_context
            * new_tokens
            * context_tokens
            * self.indexer_factor
        )
        return (self.prefill_base_s + linear + attention) * self.prefill_factor

    def host_load_s(self, nbytes: int, handovers: int = 0) -> float:
        """HiCache load-back of `nbytes` host -> device while `handovers` PD hand-overs cross
        the same link: each takes its NIC's rate, and the load-back gets what is left (never
        less than a fair share). Without the sharing (the hand-overs leave the GPU the other
        way on a full-duplex link) the load-back has the whole link."""
        link = self.host_load_bytes_per_s
        if not self.handover_link_sharing:
            return nbytes / link
        left = max(link - handovers * self.transfer_bytes_per_s, link / (1 + handovers))
        return nbytes / left

    def transfer_s(self, tokens: int) -> float:
        """PD hand-over of a prompt's KV and index-K from prefill to decode."""
        return tokens * self.bytes_per_token / self.transfer_bytes_per_s * self.transfer_factor

    def kv_part_s(self, tokens: int) -> float:
        """The hand-over's KV pages alone (the MLA latent), sent before its index-K pages."""
        kv_bytes = LAYERS * MLA_KV_BYTES_PER_TOKEN_LAYER
        return tokens * kv_bytes / self.transfer_bytes_per_s * self.transfer_factor
