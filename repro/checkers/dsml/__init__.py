"""DeepSeek-V3.2 DSML read strictly: the streaming parser and its shortcuts (the format: repro.dsml)."""

from repro.checkers.dsml.stream import DsmlStream, parse_dsml

__all__ = ["DsmlStream", "parse_dsml"]
