"""One lifecycle for the stand-in servers of :mod:`surveyalign.testing` (chat completions, provider batches).

:class:`ThreadedApp` runs an ASGI app (built by the subclass's ``_build_app``) on 127.0.0.1 in a background
uvicorn thread, and gives ``port``, ``start`` / ``stop`` and the ``with`` form. ``port=0`` picks a free port.
"""

from __future__ import annotations

from typing import Any, Self

from surveyalign.backends._http import _UvicornThread


class ThreadedApp:
    """Base of the stand-in servers: subclasses call :meth:`_serve` with their app in ``__init__``."""

    def _serve(self, app: Any, port: int) -> None:
        self._runner = _UvicornThread(app, host="127.0.0.1", port=port)

    @property
    def port(self) -> int:
        """The bound port (valid after :meth:`start`)."""
        return self._runner.port

    def start(self) -> Self:
        """Start serving in a background thread; returns ``self``."""
        self._runner.start()
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        self._runner.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
