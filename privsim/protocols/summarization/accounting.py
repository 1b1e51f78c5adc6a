"""Privacy accounting: the ledger's charges and the paper's composition figures.

Every mechanism runs at the trusted curator (it holds D_v and the points it collected),
so every event trusts the curator (``Trust.each("curator")``); colluding owners do not
break it. What they can do is pool what each was sent. The broadcasts are one release
every owner receives alike, so a coalition sees each once. The auction's coins are drawn
for each owner, which sees only its own: the ``auction`` entry names the owners as its
viewers (:func:`viewers`), and the ledger composes it once per colluding owner, and once
with no coalition or none among the owners (any one owner's view, Theorem 2's claim).

Ledger entries:

- ``validation-mwem``: T_init MWEM iterations on D_v, each an exponential-mechanism
  choice (``BoundedRangeDpEvent(ε_v)``) and a Laplace measurement (``LaplaceDpEvent``
  of the same ε).
- ``summary-mwem``: T_sub iterations at ε_{ℓ,T} in each epoch ℓ ≥ 2. Epoch 1 releases
  h2 of the seed set, which §4 leaves unprotected (it can be random), so it is not charged.
- ``auction``: one event per epoch and owner, each owner its own coin.
  ``summarization.auction = "private"`` (default): ``GenericPureDpEvent(ε_auc)`` —
  ε_auc-DP coins of no better-known shape.
  ``"paper"``: ``ApproximateDpEvent(ε_auc, 1 − e^{−ε_auc})`` — the δ the printed coins
  truly have (the top bidder is always asked;
  :func:`privsim.protocols.summarization.auction.shift_delta` computes it from the coins).
- ``standardisation``, only under ``summarization.standardise = "owners"``: the features
  were scaled by the owners' own mean and sd, a release outside any mechanism, so the
  ledger records it as non-private and the run reports ε = ∞. The default scales by the
  public seed set's statistics and is not charged.

What each owner sees, and what covers it:

- g̃ and each g_ℓ: the two MWEM entries (g_ℓ of epoch 1 is of the public seed set).
- n in each broadcast: public, |D_init| + ℓ − 1 whatever the coins did (the true |D_s|
  is not released), so it is a function of ℓ alone.
- Whether it is asked: its own coin, the ``auction`` entry. Its own τ-rule ask is a
  function of its own bids, i.e. of its data and the broadcasts (post-processing).
  One record of another owner moves one bid, so it moves each colluding owner's rank by
  at most one, and the coins are drawn independently: k colluding owners see k coins
  per epoch, each an ε_auc pair, up to k·ε_auc together (attained when the moved bid
  passes all of them and all are asked; issue #37). The ledger composes k generic
  ε_auc events per epoch: exact for one epoch at δ → 0; over many epochs above the
  truth, since only the top-ranked coin can be randomised response's pair
  (``docs/reproductions/summarization-details.md``, "Colluding owners").
- Verification of its point: the curator checks it against the bid and sends nothing
  back, so the owner's view does not change (nothing is released).
- Whether its point won: not told. It can guess only from later broadcasts (post-
  processing of the MWEM releases) — and, under naive winner notification, which
  privsim does not run, it would learn a comparison with every other bid (the threat
  view counts what that would reveal).
- ``Done``: the number of epochs, p unless every owner dropped out (faults, not data).

Not covered, recorded here: (a) the broadcasts' ε is per point of D_s (add/remove,
Δ = 1); a change to one record of another owner can change which points the greedy
picks after it, so D_s may differ in more than one point — the broadcasts' guarantee
towards owners rests on the paper's reduction (Theorem 2), not re-derived here; the
audit (:mod:`privsim.protocols.summarization.audit`) tests the auction alone. (b)
Timing: the curator moves on when the asked owners' points arrive, so when g_{ℓ+1}
arrives tells an owner whether anyone was asked; the simulation does not treat arrival
times as released, and a deployment should pace epochs to a fixed length.

The ledger reports the smaller of the basic theorem's sum (at δ = 0) and the PLD
composition at the budget's δ (:func:`privsim.sim.ledger.composition`); for the long
MWEM runs the PLD is far smaller. The paper's figures (§4: ε = 1.4 for D_v at
δ̃ = 0.01, 0.043 for the summary at δ̃ = 10⁻⁴) use advanced composition (Dwork,
Rothblum & Vadhan 2010: k steps of ε₀ are (√(2k ln(1/δ̃))·ε₀ + k·ε₀(e^{ε₀} − 1),
δ̃)-DP) with one ε₀ per iteration; :func:`paper_epsilon` gives them, and
:func:`composition_figures` sets them beside the basic sum and the PLD composition of
the ledger's events at the paper's δ̃.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting

from privsim.protocols.summarization.auction import ask_probabilities, shift_delta
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.sim.events import ApproximateDpEvent, BoundedRangeDpEvent, GenericPureDpEvent
from privsim.sim.ledger import BudgetExceededError, PrivacyLedger, Trust, epsilon_of, pure_epsilon

__all__ = [
    "AUCTION",
    "CURATOR",
    "OWNERS_STANDARDISED",
    "STANDARDISATION",
    "SUMMARY",
    "VALIDATION",
    "auction_epoch",
    "auction_event",
    "charge",
    "composition_figures",
    "iteration_event",
    "owner_names",
    "paper_epsilon",
    "settle",
    "viewers",
]

CURATOR = "curator"
VALIDATION, SUMMARY, AUCTION = "validation-mwem", "summary-mwem", "auction"
#: The ledger entry of ``summarization.standardise = "owners"``, and its reason.
STANDARDISATION = "standardisation"
OWNERS_STANDARDISED = "features standardised by the owners' own mean and sd, outside the ledger"
TRUST = Trust.each(CURATOR, description="the curator honest (it holds D_v and D_s)")
#: δ̃ of §4's two figures.
PAPER_DELTA_VALIDATION, PAPER_DELTA_SUMMARY = 0.01, 1e-4
#: Largest per-iteration ε for which the PLD comparison figure is computed.
PLD_MAX_EPSILON = 1.0


def owner_names(owners: int) -> tuple[str, ...]:
    """The party ids of K = ``owners`` owners, ``owner-0`` … ``owner-(K−1)``."""
    return tuple(f"owner-{k}" for k in range(owners))


def viewers(label: str, cfg: SummarizationConfig) -> tuple[str, ...]:
    """Who sees their own draw of the entry ``label``: every owner its own auction coins;
    nobody apart for the MWEM broadcasts (one release every owner receives alike)."""
    return owner_names(cfg.owners) if label == AUCTION else ()


def paper_epsilon(epsilon0: float, steps: int, delta: float) -> float:
    """Advanced composition of ``steps`` ε₀-DP steps at δ̃ (the paper's Theorem 7 reading)."""
    if steps == 0:
        return 0.0
    if epsilon0 > 700.0:  # e^{ε₀} overflows: the figure is meaningless anyway
        return math.inf
    return math.sqrt(2.0 * steps * math.log(1.0 / delta)) * epsilon0 + steps * epsilon0 * (
        math.exp(epsilon0) - 1.0
    )


def iteration_event(epsilon: float) -> dp_accounting.DpEvent:
    """One MWEM iteration (Algorithm 2, lines 5–6): the exponential mechanism's choice of
    a coordinate (ε, bounded range) then its Laplace measurement (ε)."""
    return dp_accounting.ComposedDpEvent(
        [BoundedRangeDpEvent(epsilon), dp_accounting.LaplaceDpEvent(1.0 / epsilon)]
    )


def auction_epoch(cfg: SummarizationConfig) -> tuple[float, float]:
    """(ε, δ) of one epoch's PrivAuction coins for the owner whose rank moves by one
    (Algorithm 3, line 13): (ε_auc, 0) for the private coins, (ε_auc, δ(ε_auc)) for the
    paper's, δ computed from the coins (1 − e^{−ε_auc} for K ≥ 2)."""
    eps = cfg.auction_epsilon
    if cfg.auction == "private":
        return eps, 0.0
    return eps, shift_delta(ask_probabilities(cfg.owners, eps, "paper"), eps)


def auction_event(cfg: SummarizationConfig) -> dp_accounting.DpEvent:
    """One epoch's auction as the ledger records it: ``GenericPureDpEvent(ε_auc)`` for
    the private coins, ``ApproximateDpEvent(ε_auc, δ)`` for the paper's (pure when the
    paper's coins happen to have δ = 0: a single owner)."""
    eps, delta = auction_epoch(cfg)
    return GenericPureDpEvent(eps) if delta == 0.0 else ApproximateDpEvent(eps, delta)


def _events(cfg: SummarizationConfig, epochs: int) -> dict[str, dp_accounting.DpEvent]:
    summary_iterations = max(epochs - 1, 0) * cfg.t_sub
    return {
        VALIDATION: dp_accounting.SelfComposedDpEvent(
            iteration_event(cfg.epsilon_validation), cfg.t_init
        ),
        SUMMARY: dp_accounting.SelfComposedDpEvent(
            iteration_event(cfg.summary_epsilon), summary_iterations
        ),
        AUCTION: dp_accounting.SelfComposedDpEvent(auction_event(cfg), epochs),
    }


def charge(ledger: PrivacyLedger, cfg: SummarizationConfig) -> None:
    """Charge the planned run (p epochs) before it starts; record features standardised
    by the owners' own statistics (``summarization.standardise = "owners"``) as a
    non-private release (last, so the mechanisms are still held to the budget)."""
    for label, event in _events(cfg, cfg.summary_size).items():
        try:
            ledger.charge(label, event, trust=TRUST, viewers=viewers(label, cfg))
        except BudgetExceededError as exc:
            if label == AUCTION and cfg.auction == "paper":
                raise BudgetExceededError(
                    f"{exc} The paper's auction coins always ask the top bidder, so each "
                    f"epoch is only (ε_auc, {-math.expm1(-cfg.auction_epsilon):.3g})-DP: "
                    'set summarization.auction = "private" (the default) for ε_auc-DP coins.'
                ) from None
            raise
    if cfg.standardise == "owners":
        ledger.non_private(STANDARDISATION, OWNERS_STANDARDISED)


def settle(ledger: PrivacyLedger, cfg: SummarizationConfig, validation: bool, epochs: int) -> None:
    """Settle with what was released: D_v's hash if broadcast, and ``epochs`` epochs."""
    events = _events(cfg, epochs)
    if validation:
        ledger.settle(VALIDATION)
    else:
        ledger.withhold(VALIDATION)
    for label in (SUMMARY, AUCTION):
        if epochs == 0 or (label == SUMMARY and epochs < 2):
            ledger.withhold(label)
        else:
            ledger.settle(label, events[label])


def composition_figures(cfg: SummarizationConfig, epochs: int) -> dict[str, Any]:
    """ε for D_v and for the summary: the paper's (advanced composition, ε₀ per
    iteration), the ledger's basic composition of the events it holds (2ε₀ per
    iteration), and the PLD composition of the same events, at the paper's δ̃."""
    events = _events(cfg, epochs)
    summary_steps = max(epochs - 1, 0) * cfg.t_sub
    out: dict[str, Any] = {}
    for name, label, eps0, steps, delta in (
        ("validation", VALIDATION, cfg.epsilon_validation, cfg.t_init, PAPER_DELTA_VALIDATION),
        ("summary", SUMMARY, cfg.summary_epsilon, summary_steps, PAPER_DELTA_SUMMARY),
    ):
        basic = pure_epsilon(events[label])
        # PLD discretises the privacy loss: for ε₀ > 1 its support is too wide to be
        # cheap, and the figure is only a comparison with the paper's: skip it there.
        pld = epsilon_of([events[label]], delta) if steps and eps0 <= PLD_MAX_EPSILON else None
        pld = 0.0 if not steps else pld
        out[name] = {
            "delta": delta,
            "epsilon_per_iteration": eps0,
            "iterations": steps,
            "paper_epsilon": paper_epsilon(eps0, steps, delta),
            "ledger_basic_epsilon": basic,
            "ledger_pld_epsilon": pld,
        }
    eps, delta = auction_epoch(cfg)
    out["auction"] = {
        "variant": cfg.auction,
        "epsilon_per_epoch": eps,
        "delta_per_epoch": delta,
        "epochs": epochs,
        # Basic composition of (ε, δ) events: (Σ ε, 1 − Π(1 − δ)) (Kairouz, Oh &
        # Viswanath 2015, Thm. 3.3 at its first term).
        "basic_epsilon": epochs * eps,
        "basic_delta": 1.0 - (1.0 - delta) ** epochs,
    }
    return out
