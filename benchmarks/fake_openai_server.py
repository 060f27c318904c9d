"""Run a fake OpenAI-compatible chat server on 127.0.0.1 (a fixed delay per answer), for throughput benchmarks.

    python benchmarks/fake_openai_server.py --delay 0.2 --port 0
    # prints base_url=http://127.0.0.1:PORT/v1, serves until Ctrl-C

In-process use (tests): ``from surveyalign.backends.testing import FakeChatServer``. Run it as a separate
process when measuring client throughput, so server and client do not share one GIL.
"""

from surveyalign.backends.testing import main

if __name__ == "__main__":
    raise SystemExit(main())
