"""DeepSeek-V3.2 DSML: literals, the reference-exact encoder, and the strict parser."""

from repro.checkers.dsml.stream import DsmlStream, parse_dsml

__all__ = ["DsmlStream", "parse_dsml"]
