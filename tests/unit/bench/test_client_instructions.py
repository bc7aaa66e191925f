"""bench/client_instructions.py --by-function: callgrind_annotate's lines read into counts per
function, whatever library or recursion level callgrind put them down to."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))
from client_instructions import parse_annotated, print_functions  # noqa: E402

ANNOTATED = """\
--------------------------------------------------------------------------------
280,944,502 (100.0%)  PROGRAM TOTALS
--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
210,376,155 (13.51%)  /tmp/Python-3.11.7/Python/ceval.c:_PyEval_EvalFrameDefault'2 [/lib/libpython3.11.so.1.0]
 46,386,864 ( 2.98%)  /tmp/Python-3.11.7/Python/ceval.c:_PyEval_EvalFrameDefault [/lib/libpython3.11.so.1.0]
 10,311,292 ( 0.79%)  ./nptl/./nptl/pthread_rwlock_common.c:pthread_rwlock_unlock@@GLIBC_2.34
 13,364,140 ( 0.86%)  ???:0x0000000000230920 [/usr/lib/x86_64-linux-gnu/libcrypto.so.3]
        669 ( 0.00%)  ???:OPENSSL_strcasecmp [/lib/libarrow.so.2600]
        331 ( 0.00%)  ???:OPENSSL_strcasecmp [/usr/lib/x86_64-linux-gnu/libcrypto.so.3]
    505,044 ( 0.01%)  ???:arrow::util::base64_decode[abi:cxx11](std::basic_string_view<char>) [/site-packages/pyarrow/libarrow.so.2600]
"""


def test_counts_are_per_function_with_recursion_and_libraries_summed() -> None:
    counts = parse_annotated(ANNOTATED)
    assert counts == {
        "_PyEval_EvalFrameDefault": 210_376_155 + 46_386_864,
        "pthread_rwlock_unlock@@GLIBC_2.34": 10_311_292,
        "0x0000000000230920": 13_364_140,
        "OPENSSL_strcasecmp": 1_000,
        "arrow::util::base64_decode[abi:cxx11](std::basic_string_view<char>)": 505_044,
        # The program's total less every line above: never silently dropped.
        "(not attributed)": 7,
    }


def test_the_table_ranks_functions_by_the_last_two_clients_difference(capsys) -> None:
    per_token = {
        "chatclient": {"eval": 5_000.0, "join": 0.0, "free": 500.0},
        "repro": {"eval": 5_400.0, "join": 190.0, "free": 480.0, "log": 50.0},
    }
    print_functions(per_token, rows=3)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "| eval | 5,000 | 5,400 | +400 |",
        "| join | 0 | 190 | +190 |",
        "| log | 0 | 50 | +50 |",
        "| all functions | 5,500 | 6,120 | +620 |",
    ]
