"""Run folders: the store that writes them, the summary, reports, comparison and the gate.

Other parts import what is listed in `__all__`, from here (`from repro.results import
RunSummary`); the modules behind it are this part's own. Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from repro.results.compare import compare_rates, comparison_document, comparison_table
    from repro.results.gate import (
        Threshold,
        check_junit_path,
        decide,
        gate_records,
        junit_on_error,
        write_junit,
    )
    from repro.results.html_page import document, section, table
    from repro.results.html_report import write_html_report
    from repro.results.oracle_view import divergence_figures, judged_records, with_verdict
    from repro.results.reading import RunFolder, read_run, read_turn_table, read_turns
    from repro.results.report import render_summary
    from repro.results.run_plots import figure, no_data, svg
    from repro.results.stats import Rate, fisher_less, wilson
    from repro.results.store import FLUSH_EVERY_S, RunStore, create_run_folder
    from repro.results.summary import (
        SUMMARY_COLUMNS,
        RunSummary,
        corrupted_by_session,
        judged_turns,
        summarize,
        summarize_table,
    )

# Each public name and the module that defines it.
_HOMES = {
    "compare_rates": "compare",
    "comparison_document": "compare",
    "comparison_table": "compare",
    "Threshold": "gate",
    "check_junit_path": "gate",
    "decide": "gate",
    "gate_records": "gate",
    "junit_on_error": "gate",
    "write_junit": "gate",
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
    "fisher_less": "stats",
    "wilson": "stats",
    "FLUSH_EVERY_S": "store",
    "RunStore": "store",
    "create_run_folder": "store",
    "SUMMARY_COLUMNS": "summary",
    "corrupted_by_session": "summary",
    "judged_turns": "summary",
    "RunSummary": "summary",
    "summarize": "summary",
    "summarize_table": "summary",
}

__all__ = [
    "FLUSH_EVERY_S",
    "SUMMARY_COLUMNS",
    "Rate",
    "RunFolder",
    "RunStore",
    "RunSummary",
    "Threshold",
    "check_junit_path",
    "compare_rates",
    "comparison_document",
    "comparison_table",
    "corrupted_by_session",
    "create_run_folder",
    "decide",
    "divergence_figures",
    "document",
    "figure",
    "fisher_less",
    "gate_records",
    "judged_records",
    "judged_turns",
    "junit_on_error",
    "no_data",
    "read_run",
    "read_turn_table",
    "read_turns",
    "render_summary",
    "section",
    "summarize",
    "summarize_table",
    "svg",
    "table",
    "wilson",
    "with_verdict",
    "write_html_report",
    "write_junit",
]

__getattr__ = lazy_exports(__name__, _HOMES, globals())
