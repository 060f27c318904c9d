"""Run an ASGI app with uvicorn in a background thread (used by ``serve_in_thread`` and ``FakeChatServer``)."""

from __future__ import annotations

import threading
import time
from typing import Any


class _UvicornThread:
    """A uvicorn server in a daemon thread; ``port=0`` picks a free port (read it from ``.port`` after start)."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning",
                 **config_options: Any) -> None:
        import uvicorn

        options = {"timeout_keep_alive": 30, **config_options}
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                                lifespan="off", **options)
        self.server = uvicorn.Server(config)
        self.host = host
        self.port = port
        self._thread = threading.Thread(target=self.server.run, name="surveyalign-uvicorn", daemon=True)

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the HTTP server on {self.host}:{self.port} failed to start (port in use?)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the HTTP server on {self.host}:{self.port} did not start within {timeout} s")
            time.sleep(0.01)
        sockets = [sock for server in self.server.servers for sock in server.sockets]
        if sockets:
            self.port = int(sockets[0].getsockname()[1])

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=timeout)
