"""surveyalign.rewards: SurveyAlign as a training reward (TRL GRPO, OpenRLHF, verl), with reward-hacking checks.

Public surface::

    from surveyalign.rewards import (
        RewardConfig, RewardJudge, HackingChecks, LengthPenalty, HeldOut,   # the reward YAML
        SurveyAlignReward, SyncSurveyAlignReward, RewardOutcome,            # the reward (async; .sync)
        completion_text, dimension_value,                                   # what is judged, how it is scored
        check_completion, spearman, INJECTION_PATTERNS,                     # the hacking checks
        build_reward_app, reward_server_in_thread, serve_rewards,           # OpenRLHF's /get_reward
        compute_score, CONFIG_ENV,                                          # verl's custom reward hook
        read_reward_log, summarize_reward_log, format_reward_report, reward_report_html,
    )

TRL::

    reward = SurveyAlignReward.from_yaml("configs/rewards/surveyalign-vllm.yaml")
    trainer = GRPOTrainer(model=..., reward_funcs=[reward], args=GRPOConfig(...), train_dataset=prompts)

A completion (text or chat messages) is judged as a survey on each configured dimension by the K-sample judge
(:mod:`surveyalign.judge`) through the cached call layer; the reward is the weighted sum of the voted (or
expected) scores, ``None`` when a judgment failed. The checks flag injected judge instructions / score
markers, repetition and degenerate text; every record goes to the reward log, read by ``surveyalign rewards
report LOG``. Modules: ``_config`` (YAML), ``_checks``, ``_reward``, ``_remote`` (HTTP, verl), ``_report``,
``cli``.
"""

import lazy_loader

# Loaded on first use (lazy_loader, as the other faces), so `surveyalign --help` and `surveyalign rewards --help`
# import no judge, document reader or HTTP stack.
__getattr__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "_checks": ["INJECTION_PATTERNS", "check_completion", "repeated_share", "spearman"],
        "_config": ["FLAG_KINDS", "SIGNALS", "HackingChecks", "HeldOut", "LengthPenalty", "RewardConfig", "RewardJudge"],
        "_remote": ["CONFIG_ENV", "RewardServer", "build_reward_app", "compute_score", "reward_server_in_thread",
                    "serve_rewards"],
        "_report": ["format_reward_report", "read_reward_log", "reward_report_html", "summarize_reward_log"],
        "_reward": ["RewardOutcome", "SurveyAlignReward", "SyncSurveyAlignReward", "completion_text",
                    "dimension_value"],
    })[0]

__all__ = [
    "CONFIG_ENV",
    "FLAG_KINDS",
    "INJECTION_PATTERNS",
    "SIGNALS",
    "HackingChecks",
    "HeldOut",
    "LengthPenalty",
    "RewardConfig",
    "RewardJudge",
    "RewardOutcome",
    "RewardServer",
    "SurveyAlignReward",
    "SyncSurveyAlignReward",
    "build_reward_app",
    "check_completion",
    "completion_text",
    "compute_score",
    "dimension_value",
    "format_reward_report",
    "read_reward_log",
    "repeated_share",
    "reward_report_html",
    "reward_server_in_thread",
    "serve_rewards",
    "spearman",
    "summarize_reward_log",
]
