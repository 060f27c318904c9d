"""``surveyalign rewards``: serve the SurveyAlign reward (OpenRLHF's ``/get_reward``) and report a reward log.

Imports nothing heavy at module level (``surveyalign rewards --help`` stays fast).
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "SurveyAlign as a training reward: serve /get_reward (OpenRLHF), report a reward log (hacking checks)"


def _cmd_report(args: argparse.Namespace) -> int:
    from surveyalign.rewards import (
        format_reward_report,
        read_reward_log,
        reward_report_html,
        summarize_reward_log,
    )

    records = read_reward_log(args.log)
    print(format_reward_report(summarize_reward_log(records)))
    if args.html:
        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(reward_report_html(records, title=f"Reward log {Path(args.log).name}"),
                                   encoding="utf-8")
        print(f"wrote {args.html}")
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from surveyalign.backends import ServerLimits
    from surveyalign.rewards import serve_rewards

    limits = ServerLimits.with_env_key(args.api_key, max_body_bytes=args.max_body_bytes)
    serve_rewards(args.config, host=args.host, port=args.port, limits=limits, log=args.log)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``rewards report`` and ``rewards serve``."""
    parser = subparsers.add_parser("rewards", help=HELP, description=HELP)
    sub = parser.add_subparsers(dest="rewards_command", metavar="ACTION")
    parser.set_defaults(handler=lambda args: parser.print_help() or 2)

    report = sub.add_parser("report", help="per step: mean reward by dimension, length correlation, flags, "
                                           "held-out divergence, failed judgments")
    report.add_argument("log", metavar="LOG", help="the reward log (JSONL; the reward config's `log`)")
    report.add_argument("--html", metavar="OUT.html", help="also write a self-contained HTML page with plots")
    report.set_defaults(handler=_cmd_report)

    serve = sub.add_parser("serve", help="answer OpenRLHF's POST /get_reward with the reward of a reward YAML")
    serve.add_argument("--config", required=True, metavar="YAML", help="reward YAML (configs/rewards/*.yaml)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=5000, help="TCP port (default 5000)")
    serve.add_argument("--api-key", default=None,
                       help="key clients send as 'Authorization: Bearer KEY' (default: $SURVEYALIGN_API_KEY)")
    serve.add_argument("--max-body-bytes", type=int, default=4 * 1024 * 1024,
                       help="largest request body; larger gets 413 before parsing (default 4 MiB)")
    serve.add_argument("--log", default=None, help="reward log (JSONL), overrides the config's `log`")
    serve.set_defaults(handler=_cmd_serve)
