from repro.cli import app

app()
