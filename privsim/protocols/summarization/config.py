"""The ``[summarization]`` table."""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Literal

from privsim.protocols.summarization.auction import AUCTIONS, AuctionVariant
from privsim.scenarios.errors import FieldError, require_at_least, require_positive

__all__ = ["DIMENSION_RANGE", "Standardise", "SummarizationConfig"]

#: RFF dimensions d accepted: below 8 the kernel estimate is useless, above 4096 the
#: curator's marginals and the broadcasts grow without a gain the paper uses.
DIMENSION_RANGE = (8, 4096)
#: MWEM iterations accepted for T_init (the paper: d^1.5 = 1656 at d = 140).
T_INIT_RANGE = (1, 1_000_000)
#: How features are scaled (``SummarizationConfig.standardise``).
Standardise = Literal["seed", "none", "owners"]


def _require_within(name: str, symbol: str, value: int, bounds: tuple[int, int], fix: str) -> None:
    lo, hi = bounds
    if not lo <= value <= hi:
        raise FieldError(
            f"summarization.{name}", f"{symbol} = {value} is outside [{lo}, {hi}]", fix
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SummarizationConfig:
    """DP distributed data summarisation under covariate shift (protocol
    ``"summarization"``, Sarpatwar et al. NeurIPS 2019, Algorithm 3).

    ``owners`` (K) data owners bid each epoch for the best marginal gain of J (eq. 3);
    a trusted curator broadcasts the private hashes h2(h1(D_v)) once and h2(h1(D_s)) each
    epoch and runs PrivAuction until the summary has ``summary_size`` (p) points. h1:
    ``dimension`` (d) random Fourier features of the RBF kernel exp(−``gamma``‖x − y‖²);
    h2: randomised rounding on the grid of step ``eta`` then MWEM with ``t_init``
    iterations at ε = ``epsilon_validation`` for D_v and ``epsilon_first`` for the seed
    set (epoch 1), ``t_sub`` iterations at ε = ``summary_scale``/√(p·T_sub) after (§4).
    ``auction_epsilon`` is ε_auc; ``tau`` the τ rule. ``dataset``: ``"synthetic"``,
    ``"digits"`` (scikit-learn's bundled 8×8 digits), ``"occupancy"`` or ``"wine"``
    (registry); ``seed_size`` points of another domain seed the summary. ``"csv"``: the
    user's own file ``csv_path`` (relative to the working directory, as BLR's), with
    numeric ``features``, whole-number class labels in ``target`` and the column
    ``role_column`` giving each row's role: ``owner-0`` … ``owner-(K−1)``,
    ``validation`` (D_v), ``test`` or ``seed`` (D_init; ``seed_size`` and
    ``synthetic_records`` are then unused). ``standardise``: how the features of
    ``"occupancy"``, ``"wine"`` and ``"csv"`` are scaled — ``"seed"`` (default) centred
    and scaled by the seed set's mean and standard deviation (public: §4 lets D_init be
    random), ``"none"`` as given, or ``"owners"`` (``"occupancy"`` and ``"wine"`` only)
    by the owners' own source-domain mean and standard deviation, the earlier
    preprocessing, kept so the study tables of docs/reproductions/summarization.md can be reproduced: it releases the
    owners' statistics outside the ledger, which records it as a non-private release
    (the run reports ε = ∞). ``true`` and ``false`` are read as ``"seed"`` and
    ``"none"``. ``"synthetic"`` and ``"digits"`` are generated on a public scale (pixels
    / 16) and never standardised, whatever ``standardise`` says. ``timeout``:
    how long (simulated seconds) the curator waits for bids, points or D_v. ``release``:
    h2 releases the expected vector of MWEM's ``"average"`` distribution (Algorithm 2,
    line 8) or of its ``"last"`` (a variant: the average is shrunk towards 0 by the
    early iterates). ``baselines``: also run non-private greedy and uniform sampling.
    ``auction``: PrivAuction's coins, ``"private"`` (default: e^ε/(1 + e^ε)·e^{−ε(i−1)},
    ε_auc-DP per epoch) or ``"paper"`` (line 13 as printed: e^{−ε(i−1)}, the top bidder
    always asked, only (ε_auc, 1 − e^{−ε_auc})-DP per epoch; see
    :mod:`privsim.protocols.summarization.auction`)."""

    dataset: Literal["synthetic", "digits", "occupancy", "wine", "csv"] = "synthetic"
    """``synthetic``, ``digits`` (scikit-learn's bundled 8×8 digits), ``occupancy`` or ``wine``
    (registry), or ``csv`` (your file)."""
    csv_path: str = ""
    """``dataset = "csv"``: the file, relative to the working directory."""
    features: tuple[str, ...] = ()
    """``dataset = "csv"``: the numeric feature columns."""
    target: str = ""
    """``dataset = "csv"``: the column of whole-number class labels."""
    role_column: str = "role"
    """``dataset = "csv"``: the column giving each row's role (``owner-0`` … ``owner-(K−1)``,
    ``validation``, ``test`` or ``seed``)."""
    standardise: str | bool = "seed"  # a Standardise after construction
    """How the features of ``occupancy``, ``wine`` and ``csv`` are scaled: ``seed`` (by the public
    seed set), ``none`` (as given) or ``owners`` (by the owners' own statistics; recorded as
    non-private)."""
    summary_size: int = 100
    """p, the points in the summary (one per epoch)."""
    owners: int = 4
    """K, the data owners (equal to ``population.clients``)."""
    dimension: int = 140
    """d, the random Fourier features of h1."""
    gamma: float = 0.1
    """γ of the RBF kernel exp(−γ‖x − y‖²)."""
    eta: float = 0.05
    """η, the step of h2's rounding grid (it must divide 2)."""
    t_init: int = 1656
    """MWEM iterations for D_v and for the seed set."""
    t_sub: int = 5
    """MWEM iterations per later epoch (warm-started)."""
    epsilon_validation: float = 0.01
    """ε of MWEM's release of D_v."""
    epsilon_first: float = 0.05
    """ε of MWEM's release of the seed set (epoch 1)."""
    summary_scale: float = 0.01
    """ε of later epochs' MWEM releases is ``summary_scale``/√(p·T_sub)."""
    auction_epsilon: float = 0.5
    """ε_auc, PrivAuction's budget per epoch."""
    tau: int = 3
    """τ: an owner whose unasked bid stayed the same for τ epochs in a row is
    asked for its point."""
    seed_size: int = 150
    """Points of another domain that seed the summary (D_init)."""
    synthetic_records: int = 4000
    """``dataset = "synthetic"``: the points drawn."""
    timeout: float = 1.0
    """Simulated seconds the curator waits for bids, points or D_v."""
    baselines: bool = True
    """Also run non-private greedy and uniform sampling on the same split."""
    release: Literal["average", "last"] = "average"
    """What h2 releases: the expected vector of MWEM's ``average`` distribution (Algorithm 2) or
    of its ``last`` (a variant)."""
    auction: AuctionVariant = "private"
    """PrivAuction's coins: ``private`` (ε_auc-DP per epoch) or ``paper`` (as printed; only
    (ε_auc, 1 − e^(−ε_auc))-DP per epoch)."""

    def __post_init__(self) -> None:
        for name in ("summary_size", "owners", "t_sub", "tau", "seed_size", "synthetic_records"):
            require_at_least(f"summarization.{name}", getattr(self, name))
        _require_within(
            "dimension",
            "d",
            self.dimension,
            DIMENSION_RANGE,
            "give an RFF dimension such as the paper's 140",
        )
        _require_within(
            "t_init",
            "T_init",
            self.t_init,
            T_INIT_RANGE,
            f"give about d^1.5 = {round(self.dimension**1.5)} (the paper's rule, §4)",
        )
        require_positive("summarization.eta", self.eta)
        steps = 2.0 / self.eta
        if self.eta > 1.0 or abs(steps - round(steps)) > 1e-9 * steps:
            raise FieldError(
                "summarization.eta",
                f"η = {self.eta:g} does not divide 2: the grid S = {{−1, −1 + η, …, 1}} "
                "would not end at 1",
                "give 2/k for an integer k >= 2, e.g. 0.05 or 0.1",
            )
        for name in (
            "gamma",
            "epsilon_validation",
            "epsilon_first",
            "summary_scale",
            "auction_epsilon",
            "timeout",
        ):
            require_positive(f"summarization.{name}", getattr(self, name))
        if self.auction not in AUCTIONS:
            raise FieldError(
                "summarization.auction",
                f"unknown auction {self.auction!r}",
                'give "private" (ε_auc-DP coins, the default) or "paper" (Algorithm 3 as '
                "printed: the top bidder always asked, not ε-DP)",
            )
        self._check_standardise()
        if self.dataset == "csv":
            self._check_columns()
        if self.dataset == "synthetic" and self.synthetic_records < 10 * self.owners:
            raise FieldError(
                "summarization.synthetic_records",
                f"{self.synthetic_records} records for {self.owners} owners",
                f"give at least {10 * self.owners} records",
            )

    def _check_standardise(self) -> None:
        """``true``/``false`` become ``"seed"``/``"none"``; ``"owners"`` only where it
        reproduces a documented table; ``"seed"`` needs a seed set that can vary."""
        if isinstance(self.standardise, bool):  # the CSV input's earlier spelling
            object.__setattr__(self, "standardise", "seed" if self.standardise else "none")
        if self.standardise not in typing.get_args(Standardise):
            shown = repr(self.standardise)
            raise FieldError(
                "summarization.standardise",
                f"unknown choice {shown if len(shown) <= 40 else shown[:40] + '…'}",
                'give "seed" (the default), "none" or "owners"',
            )
        if self.standardise == "owners" and self.dataset not in ("occupancy", "wine"):
            problem = (
                "a user's data is never standardised by the owners' own statistics (they "
                "would be released outside the ledger)"
                if self.dataset == "csv"
                else f"the {self.dataset!r} set-up is on a public scale and not standardised"
            )
            raise FieldError(
                "summarization.standardise",
                f'"owners" applies to the occupancy and wine set-ups only: {problem}',
                'give "seed" (the seed set\'s public mean and sd, the default) or "none"',
            )
        if (
            self.standardise == "seed"
            and self.dataset in ("occupancy", "wine")
            and self.seed_size < 2
        ):
            raise FieldError(
                "summarization.seed_size",
                f"features cannot be standardised by {self.seed_size} seed point: its spread is 0",
                'give seed_size >= 2 (§4: 150), or set summarization.standardise = "none"',
            )

    def _check_columns(self) -> None:
        """The CSV fields name a file and distinct columns (the file is read by
        :func:`~privsim.protocols.summarization.data.load_user_csv`)."""
        if not (self.csv_path and self.features and self.target and self.role_column):
            raise FieldError(
                "summarization.csv_path",
                "dataset = 'csv' needs csv_path, features, target and role_column",
                'add csv_path = "data.csv", features = ["a", "b"], target = "y" '
                '(role_column defaults to "role")',
            )
        repeated = sorted({c for c in self.features if self.features.count(c) > 1})
        if repeated:
            raise FieldError(
                "summarization.features", f"column {repeated[0]!r} is listed twice", "list it once"
            )
        if self.target in self.features:
            raise FieldError(
                "summarization.target",
                f"the label {self.target!r} is also listed in summarization.features",
                "remove it from the features: a summary's points must not carry their label",
            )
        if self.role_column in (*self.features, self.target):
            raise FieldError(
                "summarization.role_column",
                f"the role column {self.role_column!r} is also a feature or the label",
                "give the column that holds owner-<k>, validation, test or seed",
            )

    @property
    def summary_epsilon(self) -> float:
        """ε_{ℓ,T} for ℓ > 1: 0.01/√(p·T_sub) in §4 (``summary_scale`` = 0.01)."""
        return self.summary_scale / math.sqrt(self.summary_size * self.t_sub)
