"""`python -m repro.bisect flags|matrix`: the bisect commands on their own (same as `repro bisect`)."""

from repro.bisect.commands import app

app(prog_name="repro bisect")
