"""The tool-call formats the embedded engine's model writes, and its parsers for them.

catalog.py    ModelFormat: a family's encoding, tokens, reasoning end and call opener
parsers.py    ToolParser by SGLang's --tool-call-parser names (`auto`: the model's own)
lenient.py    engine-style streaming parsers for the families (DSML's is repro.sim.detector)
scanners.py   how each family's lenient parser finds a call
typed.py      XML-carried values typed by the request's schema, as engines do it

The engine never imports repro.checkers (a contract): these parsers are written here,
lenient as the engines' are; repro's strict readers are elsewhere.
"""

from repro.sim.formats.catalog import DSML_FORMAT, DSML_FORMAT_NAME, MODEL_FORMATS, ModelFormat
from repro.sim.formats.parsers import AUTO, PARSER_BUGS, PARSER_NAMES, ToolParser, tool_parser

__all__ = [
    "AUTO",
    "DSML_FORMAT",
    "DSML_FORMAT_NAME",
    "MODEL_FORMATS",
    "PARSER_BUGS",
    "PARSER_NAMES",
    "ModelFormat",
    "ToolParser",
    "tool_parser",
]
