"""The embedded engine's HTTP front: SGLang's endpoints for each role (server.py), repro's own
PD router (router.py), and uvicorn on sockets bound before serving (serve.py). Below it, in
the package above, the engine: its model, scheduler, caches and the story's faults."""
