"""Run folders: the store that writes them, the summary, reports, comparison and the gate.

Other parts import what is listed in `__all__`, from here (`from repro.results import
RunSummary`); the modules behind it are this part's own. Names load on first use.
"""

from __future__ import annotations

from repro.lazy_exports import lazy_exports

# Each public name and the module that defines it.
_HOMES = {
    "compare_rates": "compare",
    "comparison_document": "compare",
    "comparison_table": "compare",
    "load_differences": "compare",
    "Threshold": "gate",
    "check_junit_path": "gate",
    "decide": "gate",
    "GateVerdict": "gate",
    "gate_records": "gate",
    "junit_on_error": "gate",
    "write_junit": "gate",
    "write_junit_error": "gate",
    "SLOW_PACE": "pace",
    "engine_pace": "pace",
    "slow_roles": "pace",
    "document": "html_page",
    "section": "html_page",
    "table": "html_page",
    "write_html_report": "html_report",
    "divergence_figures": "oracle_view",
    "judged_records": "oracle_view",
    "with_verdict": "oracle_view",
    "RunFolder": "reading",
    "read_run": "reading",
    "read_turn_table": "reading",
    "read_turns": "reading",
    "render_summary": "report",
    "figure": "run_plots",
    "no_data": "run_plots",
    "svg": "run_plots",
    "Rate": "stats",
    "ratio_below_p": "stats",
    "wilson": "stats",
    "FLUSH_EVERY_S": "store",
    "RunStore": "store",
    "create_run_folder": "store",
    "describe_in_flight": "shape_view",
    "in_flight_by_axis": "shape_view",
    "SUMMARY_COLUMNS": "summary",
    "corrupted_by_session": "summary",
    "judged_turns": "summary",
    "RunSummary": "summary",
    "summarize": "summary",
    "summarize_table": "summary",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
