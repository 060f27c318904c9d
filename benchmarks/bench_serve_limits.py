"""Memory and latency of normal `surveyalign serve` requests while oversized and hostile ones are refused (issue 26).

Serves the tiny test model (or ``--model DIR``) in this process with the default limits and an API key, then:

1. baseline: the process's resident memory after loading, and the median latency of ``--requests`` normal chat
   requests (``max_tokens`` 8) sent one after another;
2. under attack: the same normal requests while other threads keep sending 10 MB bodies (413 before parsing),
   100 MB declared bodies (413 on the header), 3 MB prompts (400 before tokenising: 3,000,000 characters above
   the 1,000,000 limit), 100,000-deep JSON (400) and requests without the key (401); prints the medians of the
   normal requests and of each refusal, and the peak resident memory against the baseline;
3. with ``--unguarded``, the ceiling the limits guard against: one 10 MB prompt sent to a server with the limits
   lifted (seconds and gigabytes before it is rejected as too long for the model).

    .venv/bin/python benchmarks/bench_serve_limits.py [--requests 20] [--model DIR] [--unguarded]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

KEY = "bench-key"
MESSAGES = [{"role": "user", "content": "Score the readability of this survey: it is clearly written."}]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class _Peak(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.stop = _rss_mb(), threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, _rss_mb())
            time.sleep(0.02)


def _normal(client, url: str, n: int) -> list[float]:
    times = []
    for k in range(n):
        started = time.perf_counter()
        r = client.post(url, json={"messages": MESSAGES, "max_tokens": 8, "temperature": 0, "seed": k},
                        headers={"Authorization": f"Bearer {KEY}"})
        assert r.status_code == 200, r.text
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    import httpx

    from surveyalign.backends import ServerLimits, serve_in_thread

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--model", default=None, help="model folder (default: build the tiny test model)")
    parser.add_argument("--unguarded", action="store_true", help="also time one 10 MB prompt with the limits lifted")
    args = parser.parse_args()
    model = args.model
    if model is None:
        from surveyalign.testing import build_tiny_model

        model = str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny"))
    with serve_in_thread(model, device="cpu", limits=ServerLimits(api_key=KEY)) as server:
        url = f"{server.base_url}/chat/completions"
        client = httpx.Client(timeout=600)
        _normal(client, url, 2)  # warm up
        baseline_rss = _rss_mb()
        peak = _Peak()
        peak.start()
        quiet = _normal(client, url, args.requests)
        quiet_peak = peak.peak
        refusals: dict[str, list[tuple[int, float]]] = {}
        stop = threading.Event()
        big = b'{"messages": [{"role": "user", "content": "' + b"x" * 10_000_000 + b'"}]}'
        prompt = b'{"messages": [{"role": "user", "content": "' + b"y" * 3_000_000 + b'"}]}'
        deep = b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

        attacks = {
            "10 MB body": {"content": big},
            "100 MB declared": {},
            "3M-char prompt": {"content": prompt},
            "100k-deep JSON": {"content": deep},
            "no API key": {"json": {"messages": MESSAGES}, "key": False},
        }

        def declared(name: str) -> None:  # headers announce 100 MB; refused before a byte of body is read
            head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n").encode()
            while not stop.is_set():
                started = time.perf_counter()
                with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
                    sock.sendall(head + b"{")
                    reply = sock.recv(4096)
                status = int(reply.split()[1]) if reply.startswith(b"HTTP/") else -1
                refusals.setdefault(name, []).append((status, time.perf_counter() - started))

        def attacker(name: str, spec: dict) -> None:
            if name == "100 MB declared":
                return declared(name)
            with httpx.Client(timeout=60) as c:
                while not stop.is_set():
                    headers = {"content-type": "application/json"}
                    if spec.get("key", True):
                        headers["Authorization"] = f"Bearer {KEY}"
                    kwargs = {k: v for k, v in spec.items() if k in ("content", "json")}
                    started = time.perf_counter()
                    try:
                        status = c.post(url, headers=headers, **kwargs).status_code
                    except httpx.HTTPError:
                        status = -1  # the server closed the connection after refusing
                    refusals.setdefault(name, []).append((status, time.perf_counter() - started))

        threads = [threading.Thread(target=attacker, args=item, daemon=True) for item in attacks.items()]
        for t in threads:
            t.start()
        loud = _normal(client, url, args.requests)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        peak.stop.set()
        print(f"resident memory after loading: {baseline_rss:.0f} MB; peak with normal requests only: "
              f"{quiet_peak:.0f} MB; peak under attack: {peak.peak:.0f} MB")
        print(f"normal request latency, median of {args.requests}: {statistics.median(quiet) * 1000:.0f} ms quiet, "
              f"{statistics.median(loud) * 1000:.0f} ms under attack")
        for name, results in refusals.items():
            statuses = sorted({s for s, _ in results})
            print(f"  {name:16s}: {len(results):4d} refused, status {statuses}, median "
                  f"{statistics.median(t for _, t in results) * 1000:.0f} ms")
        client.close()
    if args.unguarded:
        lifted = ServerLimits(max_body_bytes=10**9, max_prompt_chars=10**9)
        with serve_in_thread(model, device="cpu", limits=lifted) as server:
            before = _rss_mb()
            peak = _Peak()
            peak.start()
            started = time.perf_counter()
            r = httpx.post(f"{server.base_url}/chat/completions", timeout=600,
                           content=b'{"messages": [{"role": "user", "content": "' + b"z " * 5_000_000 + b'"}]}')
            peak.stop.set()
            print(f"ceiling, limits lifted: one 10 MB prompt -> HTTP {r.status_code} after "
                  f"{time.perf_counter() - started:.1f} s, resident memory {before:.0f} -> {peak.peak:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
