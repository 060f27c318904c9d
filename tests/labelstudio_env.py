"""Label Studio for the round-trip test (tests/test_annotation_labelstudio_server.py): its own virtual environment
(label-studio pins Django and friends) and a migrated template database, both cached in
``$SURVEYALIGN_CACHE/label-studio`` (default ``~/.cache/surveyalign/label-studio``).

Standard library only: ``.ci/run`` runs ``python3 tests/labelstudio_env.py prepare`` in the background (CI=true)
before the project itself is installed, so the slow test finds Label Studio ready instead of spending the install
and the first start's migrations inside ``make test``. One lock (``prepare.lock``) serialises the background job
and the test: the test waits for a running preparation instead of starting a second one.

Figures measured on the 2-core development machine (nice -n 10, no pip cache): install 153 s at load 4, 248 s at
load 8-10; first start with migrations 58 s and 91 s; a start from the migrated template 12-15 s; the round trip
itself 11 s.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LS_PACKAGES = ("label-studio==1.23.2", "label-studio-sdk==2.1.2")
TOKEN = "surveyalign-test-token-0123456789"
USER, PASSWORD = "a@example.org", "secret-pass-1"


class NotReady(Exception):
    """Label Studio could not be installed or started within its budget (the message says why, with figures)."""


def cache() -> Path:
    """The cache folder: ``$SURVEYALIGN_CACHE/label-studio`` (default ``~/.cache/surveyalign/label-studio``)."""
    return Path(os.environ.get("SURVEYALIGN_CACHE", Path.home() / ".cache" / "surveyalign")) / "label-studio"


def budget(name: str, default: float) -> float:
    """Seconds from the environment variable ``name`` (default ``default``)."""
    return float(os.environ.get(name, default))


@contextmanager
def prepare_lock(wait_s: float) -> Iterator[None]:
    """Hold ``prepare.lock`` (exclusive), waiting at most ``wait_s`` seconds for another holder.

    Raises:
        NotReady: still held by another process (a background preparation) after ``wait_s``.
    """
    cache().mkdir(parents=True, exist_ok=True)
    with (cache() / "prepare.lock").open("a") as fh:
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - start > wait_s:
                    raise NotReady(f"a Label Studio preparation (see {cache() / 'prepare.log'}) was still running "
                                   f"after {wait_s:g} s") from None
                time.sleep(2)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: list[str], timeout: float) -> None:
    """Run ``cmd`` in its own process group; on a timeout or any interruption the whole group is killed (pip and
    ensurepip start children of their own).

    Raises:
        subprocess.TimeoutExpired, subprocess.CalledProcessError: as :func:`subprocess.run` (stderr kept).
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd, stderr=err)


def install(python_for_venv: str, budget_s: float) -> Path:
    """The venv's python, installing ``LS_PACKAGES`` first when ``venv/.installed`` is absent (caller holds the lock).

    Raises:
        NotReady: the install took longer than ``budget_s`` or failed (no package index): the reason names it.
    """
    venv = cache() / "venv"
    python = venv / "bin" / "python"
    ready = venv / ".installed"
    if ready.exists():
        return python
    start = time.monotonic()
    try:
        _run([python_for_venv, "-m", "venv", "--clear", str(venv)], budget_s)
        _run([str(python), "-m", "pip", "install", "-q", *LS_PACKAGES], max(1.0, budget_s - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        raise NotReady(f"installing {' '.join(LS_PACKAGES)} took more than {budget_s:g} s "
                       "(SURVEYALIGN_LS_INSTALL_S)") from None
    except subprocess.CalledProcessError as err:
        tail = (err.stderr or b"").decode(errors="replace").strip().splitlines()[-1:]
        raise NotReady(f"could not install {' '.join(LS_PACKAGES)} (no package index?): {tail}") from None
    ready.write_text(f"{time.monotonic() - start:.0f} s\n")
    return python


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(python: Path, data: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """Start ``label-studio`` on a free port with SQLite in ``data`` (from the template database when there is
    one), user ``USER`` with the legacy token ``TOKEN``; returns the process and its base URL."""
    data.mkdir(parents=True, exist_ok=True)
    template = cache() / "template.sqlite3"
    if template.exists() and not (data / "label_studio.sqlite3").exists():
        shutil.copy(template, data / "label_studio.sqlite3")
    port = free_port()
    env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(data), "DJANGO_DB": "sqlite",
           "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "false"}
    with log.open("w") as out:
        server = subprocess.Popen([str(python.parent / "label-studio"), "start", "--no-browser", "--port", str(port),
                                   "--data-dir", str(data), "--username", USER, "--password", PASSWORD,
                                   "--user-token", TOKEN, "--enable-legacy-api-token"],
                                  env=env, stdout=out, stderr=subprocess.STDOUT, cwd=data.parent)
    return server, f"http://127.0.0.1:{port}"


def wait_healthy(server: subprocess.Popen, url: str, budget_s: float, log: Path) -> float:
    """Seconds until ``url/health`` answers 200.

    Raises:
        RuntimeError: the server exited (with the log tail).
        NotReady: no answer within ``budget_s``.
    """
    began = time.monotonic()
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"Label Studio exited with {server.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return time.monotonic() - began
        except OSError:
            pass
        if time.monotonic() - began > budget_s:
            raise NotReady(f"Label Studio did not answer within {budget_s:g} s (SURVEYALIGN_LS_START_S; a loaded "
                           "machine, and the first start also migrates its database)")
        time.sleep(1)


def stop(server: subprocess.Popen) -> None:
    """Terminate the server (kill it after 30 s)."""
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def save_template(data: Path) -> None:
    """Keep the migrated database of a first start as the template of later starts."""
    template = cache() / "template.sqlite3"
    if not template.exists():
        shutil.copy(data / "label_studio.sqlite3", template)


def prepare(install_s: float, start_s: float) -> dict[str, float]:
    """Install the venv and make the template database (a first start), under the lock; what was done with its
    seconds (``{"install_s", "first_start_s"}``, a key only for a step that ran)."""
    figures: dict[str, float] = {}
    with prepare_lock(wait_s=install_s + start_s):
        began = time.monotonic()
        was_installed = (cache() / "venv" / ".installed").exists()
        python = install(sys.executable, install_s)
        if not was_installed:
            figures["install_s"] = round(time.monotonic() - began, 1)
        if not (cache() / "template.sqlite3").exists():
            work = cache() / "first-start"
            shutil.rmtree(work, ignore_errors=True)
            server, url = start(python, work / "data", cache() / "first-start.log")
            try:
                figures["first_start_s"] = round(wait_healthy(server, url, start_s, cache() / "first-start.log"), 1)
            finally:
                stop(server)
            save_template(work / "data")
            shutil.rmtree(work, ignore_errors=True)
    return figures


if __name__ == "__main__":
    if sys.argv[1:] != ["prepare"]:
        sys.exit("usage: python3 tests/labelstudio_env.py prepare")
    # .ci/run ends a preparation still running when the tests are done: stop pip / the server with it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("Label Studio preparation stopped (SIGTERM: the tests are done)"))
    began = time.monotonic()
    try:
        done = prepare(budget("SURVEYALIGN_LS_INSTALL_S", 900), budget("SURVEYALIGN_LS_START_S", 600))
    except (NotReady, RuntimeError) as exc:
        print(f"Label Studio not prepared after {time.monotonic() - began:.0f} s: {exc}", flush=True)
        sys.exit(1)
    print(f"Label Studio ready in {cache()} ({done or 'already prepared'})", flush=True)
