"""Outcome rules of the order-swapped side-by-side protocol (PaperOrchestra §5.2, §5.4, App. F.3).

Each pair (A, B) is judged twice: call AB shows A as paper_1 and B as paper_2, call BA the reverse. Each call is
turned into a vote for A: +1 when A wins, -1 when B wins, 0 for a tie or an unreadable winner. Then:

* ``"seed"`` (the paper's rule, default): A wins only when it wins both calls, B only when B wins both; every
  other combination is a tie.
* ``"official3"`` (released code, 3 points): the sign of s = vote_AB + vote_BA, so one win plus one tie is a win.
* ``"official5"`` (released code, 5 points): s = 2, 1, 0, -1, -2 -> win, leaning_win, tie, leaning_loss, loss.

A pair whose two answers are both unreadable is a failed comparison (outcome ``"failed"``, under every rule), not
a tie: nothing was compared. One unreadable answer votes 0 as above.

A position flip is a pair whose two calls both name a paper and name the same position (paper_1 twice or
paper_2 twice): the verdict followed the order, not the paper. Its rate over 0 usable pairs is undefined
(``rate`` ``None``, shown as n/a), not 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from surveyalign.autoraters.rubric import WINNERS

#: Outcome rules; the first is the default.
SXS_RULES: tuple[str, ...] = ("seed", "official3", "official5")

#: Outcome of a pair whose two answers were both unreadable (every rule).
FAILED = "failed"

#: Outcome labels per rule, from A's point of view (plus :data:`FAILED`).
OUTCOMES: dict[str, tuple[str, ...]] = {
    "seed": ("win", "tie", "loss"),
    "official3": ("win", "tie", "loss"),
    "official5": ("win", "leaning_win", "tie", "leaning_loss", "loss"),
}

__all__ = ["FAILED", "OUTCOMES", "SXS_RULES", "FlipRate", "SxSOutcome", "position_flip_rate", "sxs_outcome", "vote_for_a"]


def vote_for_a(winner: str | None, a_is_paper_1: bool) -> int:
    """The vote for paper A of one call: +1 (A won), -1 (B won) or 0 (tie / unreadable winner).

    Args:
        winner: the call's winner (``"paper_1"``, ``"paper_2"``, ``"tie"``), or ``None`` / anything else when it
            could not be read.
        a_is_paper_1: True for the call that showed A first.

    Returns:
        +1, -1 or 0.
    """
    if winner == "paper_1":
        return 1 if a_is_paper_1 else -1
    if winner == "paper_2":
        return -1 if a_is_paper_1 else 1
    return 0


@dataclass(frozen=True)
class SxSOutcome:
    """The verdict on one pair.

    Attributes:
        rule: the rule that ran (one of :data:`SXS_RULES`).
        outcome: for A, one of :data:`OUTCOMES` ``[rule]``, or :data:`FAILED` when both answers were unreadable.
        score: s = vote_ab + vote_ba in [-2, 2].
        vote_ab: vote for A of the call showing A first.
        vote_ba: vote for A of the call showing B first.
        position_flip: both calls named a paper and named the same position.
        unreadable: how many of the two winners could not be read (0-2; such a call votes 0).
    """

    rule: str
    outcome: str
    score: int
    vote_ab: int
    vote_ba: int
    position_flip: bool
    unreadable: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view of the fields."""
        return asdict(self)


def sxs_outcome(call_ab: str | None, call_ba: str | None, rule: str = "seed") -> SxSOutcome:
    """Combine the two order-swapped calls on a pair (A, B) into one outcome for A.

    Args:
        call_ab: winner of the call with A as paper_1 (``"paper_1"``, ``"paper_2"``, ``"tie"``; ``None`` or any
            other value = unreadable, a 0 vote).
        call_ba: winner of the call with B as paper_1.
        rule: ``"seed"`` (default), ``"official3"`` or ``"official5"``; see the module docstring.

    Returns:
        An :class:`SxSOutcome` naming the rule; outcome :data:`FAILED` when neither winner could be read.

    Raises:
        ValueError: unknown ``rule``.
    """
    if rule not in SXS_RULES:
        raise ValueError(f"unknown side-by-side rule {rule!r}; expected one of {SXS_RULES}")
    ab, ba = vote_for_a(call_ab, True), vote_for_a(call_ba, False)
    s = ab + ba
    if rule == "seed":
        outcome = "win" if (ab, ba) == (1, 1) else "loss" if (ab, ba) == (-1, -1) else "tie"
    elif rule == "official3":
        outcome = "win" if s > 0 else "loss" if s < 0 else "tie"
    else:
        outcome = {2: "win", 1: "leaning_win", 0: "tie", -1: "leaning_loss", -2: "loss"}[s]
    flip = call_ab in ("paper_1", "paper_2") and call_ab == call_ba
    unreadable = sum(w not in WINNERS for w in (call_ab, call_ba))
    if unreadable == 2:
        outcome = FAILED
    return SxSOutcome(rule, outcome, s, ab, ba, flip, unreadable)


@dataclass(frozen=True)
class FlipRate:
    """Position-flip rate over a batch of pairs.

    Attributes:
        rate: n_flips / n_counted in [0, 1]; ``None`` (undefined, shown as n/a) when no pair was counted.
        n_flips: pairs whose two calls named the same position.
        n_counted: pairs whose two winners were both readable (the denominator).
        n_pairs: pairs given.
        flag: why the rate is not meaningful (no counted pair), else ``None``.
    """

    rate: float | None
    n_flips: int
    n_counted: int
    n_pairs: int
    flag: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view of the fields."""
        return asdict(self)


def position_flip_rate(pairs: Iterable[tuple[str | None, str | None]]) -> FlipRate:
    """Share of pairs whose verdict followed the position (PaperOrchestra §5.4 positional bias).

    Args:
        pairs: ``(call_ab, call_ba)`` winners per pair, as for :func:`sxs_outcome`.

    Returns:
        A :class:`FlipRate`; pairs with an unreadable winner are left out of the denominator and counted.
    """
    pairs = list(pairs)
    counted = [(ab, ba) for ab, ba in pairs if ab in WINNERS and ba in WINNERS]
    flips = sum(ab in ("paper_1", "paper_2") and ab == ba for ab, ba in counted)
    if not counted:
        return FlipRate(None, 0, 0, len(pairs), "no pair with two readable winners (denominator 0)")
    return FlipRate(flips / len(counted), flips, len(counted), len(pairs))
