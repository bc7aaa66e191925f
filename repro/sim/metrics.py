"""Counters and gauges the engine exposes at /metrics, with SGLang's metric names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class EngineMetrics:
    """Plain counters, updated by the scheduler and the server; rendered on demand."""

    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    cached_tokens_total: int = 0
    load_back_tokens_total: int = 0
    requests_total: int = 0
    aborted_requests_total: int = 0
    transfer_failed_total: int = 0
    bootstrap_failed_total: int = 0
    index_k_stale_reads_total: int = 0
    index_k_derailed_total: int = 0  # stale reads whose layers read stale derailed the output
    stuck_handovers_total: int = 0
    num_running_reqs: int = 0
    num_queue_reqs: int = 0
    kv_used_tokens: int = 0
    hicache_host_used_tokens: int = 0
    # The modelled clock's pace (clock.py): how much of its busy wall time the host kept up with.
    busy_wall_seconds_total: float = 0.0
    busy_modelled_seconds_total: float = 0.0
    time_scale: float = 1.0

    def render(self, model_name: str, role: str) -> str:
        """Prometheus text format (version 0.0.4)."""
        labels = f'{{model_name="{model_name}",engine_type="{role}",tp_rank="0",pp_rank="0"}}'
        counters = {
            "sglang:prompt_tokens_total": self.prompt_tokens_total,
            "sglang:generation_tokens_total": self.generation_tokens_total,
            "sglang:cached_tokens_total": self.cached_tokens_total,
            "sglang:load_back_tokens_total": self.load_back_tokens_total,
            "sglang:num_requests_total": self.requests_total,
            "sglang:num_aborted_requests_total": self.aborted_requests_total,
            "sglang:num_transfer_failed_reqs_total": self.transfer_failed_total,
            "sglang:num_bootstrap_failed_reqs_total": self.bootstrap_failed_total,
            "sglang:sim_index_k_stale_reads_total": self.index_k_stale_reads_total,
            "sglang:sim_index_k_derailed_total": self.index_k_derailed_total,
            "sglang:sim_stuck_handovers_total": self.stuck_handovers_total,
            "sglang:sim_busy_wall_seconds_total": round(self.busy_wall_seconds_total, 6),
            "sglang:sim_busy_modelled_seconds_total": round(self.busy_modelled_seconds_total, 6),
        }
        gauges = {
            "sglang:num_running_reqs": self.num_running_reqs,
            "sglang:num_queue_reqs": self.num_queue_reqs,
            "sglang:kv_used_tokens": self.kv_used_tokens,
            "sglang:hicache_host_used_tokens": self.hicache_host_used_tokens,
            "sglang:sim_time_scale": self.time_scale,
        }
        lines: list[str] = []
        for name, value in counters.items():
            lines += [f"# TYPE {name} counter", f"{name}{labels} {value}"]
        for name, value in gauges.items():
            lines += [f"# TYPE {name} gauge", f"{name}{labels} {value}"]
        return "\n".join(lines) + "\n"
