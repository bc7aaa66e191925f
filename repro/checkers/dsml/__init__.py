"""DeepSeek-V3.2 DSML: literals, the reference-exact encoder, and (checkers) the strict parser."""
