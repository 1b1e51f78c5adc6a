"""The tables of iterative private learning: ``[training]`` (rounds, cohort, clipping,
noise, aggregation, the server's optimiser), ``[model]``, ``[dataset]`` and
``[availability]``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from privsim.scenarios.checks import MAX_SECONDS
from privsim.scenarios.errors import FieldError, require_at_least, require_positive

__all__ = [
    "MAX_CANARIES",
    "AvailabilityConfig",
    "DatasetConfig",
    "ModelConfig",
    "TrainingConfig",
]

Aggregation = Literal["dca", "trusted", "local", "secagg_plus", "secagg"]

#: The most canary clients a run takes (``training.canaries``): K directions of the
#: model's size are held in memory, and past a few thousand the estimate's spread
#: (about 1/√K) no longer improves on the other errors.
MAX_CANARIES = 10_000
#: The smallest positive noise multiplier (ε beyond 10¹² below it) and the largest.
MIN_NOISE_MULTIPLIER = 1e-6
MAX_NOISE_MULTIPLIER = 1e6
#: The largest client or server learning rate.
MAX_LEARNING_RATE = 1e4


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingConfig:
    """R rounds of DP-SGD or DP-FedAvg (McMahan et al. 2018; Heikkilä et al. 2017, §3).

    Each round the server picks a cohort (``sampling``: Poisson at ``rate`` q, or a
    ``cohort`` of m drawn without replacement), sends the parameters, and every picked,
    available client returns its update clipped to L2 norm ``clip_norm`` C through the
    ``aggregation``, with Gaussian noise of multiplier z = σ/Δ on the sum (Δ = C for
    add/remove-one neighbours, 2C for replace-one). ``noise_multiplier`` unset: the
    planner calibrates the smallest z whose R planned rounds meet ``privacy.epsilon``.
    The server divides the noisy sum by the planned cohort size (q·N, or m) and applies
    it with FedAvg or FedAdam (Reddi et al. 2021)."""

    algorithm: Literal["dp_fedavg", "dp_sgd"] = "dp_fedavg"
    """``dp_fedavg``: E local epochs of minibatch SGD, the update w_i − w clipped to C;
    ``dp_sgd``: one clipped per-client gradient (the server's step is the learning rate)."""
    rounds: int = 20
    """R, the number of training rounds."""
    aggregation: Aggregation = "dca"
    """How the noisy sum is formed: ``dca`` (noise shares through DCA's compute nodes),
    ``trusted`` (a curator adds central noise), ``local`` (each client adds the whole
    noise), ``secagg_plus`` / ``secagg`` (integer noise through SecAgg)."""
    sampling: Literal["poisson", "fixed"] = "fixed"
    """``poisson``: each client independently at ``rate`` (add/remove-one neighbours);
    ``fixed``: ``cohort`` clients without replacement (replace-one neighbours)."""
    rate: float = 0.1
    """q of Poisson sampling, in (0, 1]."""
    cohort: int = 10
    """m of fixed-size sampling: clients picked per round."""
    clip_norm: float = 1.0
    """C: every client's update (or gradient) is clipped to this L2 norm."""
    noise_multiplier: float | None = None
    """z = σ/Δ of the round's sum; unset: the planner's smallest z meeting the budget."""
    central_noise: Literal["sum", "mean"] = "sum"
    """``trusted`` only: the curator's noise is calibrated to the sum (dropouts leave it
    whole) or to the mean over the planned cohort (Flower's central DP: dropouts raise
    the mean's sensitivity, so the realised multiplier is z·k/m)."""
    expected_dropout: float = 0.0
    """The planner's expected share of a cohort that drops out (sets T for ``dca`` when
    ``dca.tolerated`` is left at 0, and the expected noise for ``central_noise = "mean"``)."""
    local_epochs: int = 1
    """E, local passes over a client's records (``dp_fedavg``)."""
    local_batch: int = 16
    """Local minibatch size (``dp_fedavg``)."""
    client_lr: float = 0.1
    """The clients' SGD learning rate (``dp_fedavg``)."""
    server_optimizer: Literal["fedavg", "fedadam"] = "fedavg"
    """The server's step: FedAvg (w += η·Δ̄) or FedAdam (Adam on the pseudo-gradient −Δ̄)."""
    server_lr: float = 1.0
    """η, the server's learning rate."""
    adam_beta1: float = 0.9
    """FedAdam's β₁, the decay of its first moment."""
    adam_beta2: float = 0.99
    """FedAdam's β₂, the decay of its second moment."""
    adam_tau: float = 1e-3
    """FedAdam's τ, the adaptivity floor under √v."""
    integer_noise: Literal["discrete_gaussian", "skellam"] = "discrete_gaussian"
    """``secagg_plus`` / ``secagg``: the clients' integer noise, a distributed discrete
    Gaussian (Kairouz, Liu & Steinke 2021) or Skellam (Agarwal, Kairouz & Liu 2021)."""
    modulus_bits: int = 32
    """``secagg_plus`` / ``secagg``: b, the sum is taken mod 2^b; the scale of the
    updates is the largest that fits (fewer bits: coarser rounding)."""
    security_bits: int = 40
    """``secagg_plus``: σ of the graph's security (Bell et al. 2020)."""
    correctness_bits: int = 20
    """``secagg_plus``: η of the graph's correctness (Bell et al. 2020)."""
    corruption: float | None = None
    """``secagg_plus`` / ``secagg``: γ, the share of colluding clients (k, t) are chosen
    to withstand (Bell et al. 2020), in [0, 0.5); default: the scenario's own share
    (``threat.colluding_clients`` / N). Set it to study a coalition past what the
    deployment planned for (Sybils)."""
    deadline: float = 2.0
    """Simulated seconds a round waits for the clients' contributions; later ones are dropped."""
    eval_every: int = 1
    """Evaluate the model on the test set every this many rounds (and after the last)."""
    canaries: int = 0
    """K canary clients for a one-run empirical ε (Andrew et al., ICLR 2024): each has a
    fixed random unit direction c_k, is sampled into a round like a client (rate q, or
    m/N beside a fixed cohort) and, when picked, sends C·c_k; the result's ``empirical``
    section holds the ε estimated from the cosines of the c_k with the final model's
    change, beside the claimed ε. Canaries hold no data and count in no accuracy; 0: none."""
    model_check: bool = False
    """A defence against model inconsistency: every picked client sends a hash of the model it
    received to its neighbours (SecAgg+: its graph's; otherwise every other picked client) and
    withholds its update when one differs."""
    update_check: Literal["none", "norm_bound", "range_check"] = "none"
    """A defence against poisoning that works through secure aggregation: ``norm_bound``, the
    server rescales the released sum to the norm k clipped updates and the planned noise reach
    (k·C + σ_Σ(√P + √(2 ln 10⁹))); ``range_check``, each client proves every coordinate of its
    quantised input in [−C, C] (RoFL's L∞ check, Lycklama et al. 2023) and a client that fails
    is dropped; ``none``: unchecked."""

    def __post_init__(self) -> None:
        require_at_least("training.rounds", self.rounds)
        if not (0 < self.rate <= 1):
            raise FieldError(
                "training.rate", f"must be in (0, 1], got {self.rate!r}", "give q, e.g. rate = 0.1"
            )
        require_at_least("training.cohort", self.cohort)
        require_positive("training.clip_norm", self.clip_norm)
        z = self.noise_multiplier
        if z is not None and not (
            math.isfinite(z) and (z == 0 or MIN_NOISE_MULTIPLIER <= z <= MAX_NOISE_MULTIPLIER)
        ):
            raise FieldError(
                "training.noise_multiplier",
                f"must be 0 (no noise) or in [{MIN_NOISE_MULTIPLIER:g}, "
                f"{MAX_NOISE_MULTIPLIER:g}], got {z!r} (below, ε exceeds 10¹² and the "
                "accountant's 1/z² overflows; above, the noise drowns any sum)",
                "give z, e.g. 1.0, or leave it out for the planner's",
            )
        if not 0 <= self.expected_dropout < 1:
            raise FieldError(
                "training.expected_dropout",
                f"must be in [0, 1), got {self.expected_dropout!r}",
                "give the expected share of a cohort that drops, e.g. 0.1",
            )
        require_at_least("training.local_epochs", self.local_epochs)
        require_at_least("training.local_batch", self.local_batch)
        require_at_least("training.eval_every", self.eval_every)
        if not 0 <= self.canaries <= MAX_CANARIES:
            raise FieldError(
                "training.canaries",
                f"must be in [0, {MAX_CANARIES}], got {self.canaries}",
                "use a few hundred canaries, e.g. canaries = 200 (the estimate's spread "
                "shrinks as 1/√K; each costs a model-sized direction in memory), or 0 for none",
            )
        if not 2 <= self.modulus_bits <= 64:
            raise FieldError(
                "training.modulus_bits",
                f"must be in [2, 64], got {self.modulus_bits}",
                "use e.g. modulus_bits = 32",
            )
        if self.corruption is not None and not (
            isinstance(self.corruption, (int, float)) and 0.0 <= self.corruption < 0.5
        ):
            raise FieldError(
                "training.corruption",
                f"must be in [0, 0.5), got {self.corruption!r}",
                "give the share of colluding clients to plan for, e.g. 0.05, or leave it out",
            )
        for name in ("security_bits", "correctness_bits"):
            value = getattr(self, name)
            if not 1 <= value <= 128:
                raise FieldError(
                    f"training.{name}", f"must be in [1, 128], got {value}", "use e.g. 40"
                )
        for name in ("client_lr", "server_lr", "adam_tau", "deadline"):
            require_positive(f"training.{name}", getattr(self, name))
        for name in ("client_lr", "server_lr"):
            if getattr(self, name) > MAX_LEARNING_RATE:
                raise FieldError(
                    f"training.{name}",
                    f"{getattr(self, name)!r} is past {MAX_LEARNING_RATE:g}: one step would "
                    "throw the model beyond any loss the run could report",
                    f"give a learning rate of at most {MAX_LEARNING_RATE:g}, e.g. 1.0",
                )
        for name in ("adam_beta1", "adam_beta2"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise FieldError(
                    f"training.{name}", f"must be in [0, 1), got {value!r}", "use e.g. 0.9"
                )


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelConfig:
    """The model every client trains: ``logistic`` (binary), ``softmax``, ``mlp`` (one
    hidden layer of ``hidden`` units), or a user's registered model."""

    name: str = "softmax"
    """The model: ``logistic`` (two classes), ``softmax``, ``mlp``, or a name given to
    :func:`~privsim.protocols.fedlearn.models.register_model`."""
    hidden: int = 32
    """The MLP's hidden units."""
    activation: Literal["relu", "tanh"] = "relu"
    """The MLP's activation."""
    l2: float = 0.0
    """L2 regularisation added to each client's loss."""

    def __post_init__(self) -> None:
        require_at_least("model.hidden", self.hidden)
        if not (self.l2 >= 0 and math.isfinite(self.l2)):
            raise FieldError("model.l2", f"must be >= 0, got {self.l2!r}", "use e.g. l2 = 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class DatasetConfig:
    """The clients' records. ``synthetic``: LEAF's Synthetic(α, β), generated per client
    on demand (no download); a named real set from ``PRIVSIM_DATA_DIR`` (``htru2``,
    ``skin``, ``occupancy``) or scikit-learn's bundled ``digits``, or a user's ``csv``,
    split into N clients by ``partition`` with a held-out test set."""

    source: str = "synthetic"
    """``synthetic``, ``htru2``, ``skin``, ``occupancy``, ``digits`` or ``csv``."""
    path: str = ""
    """``csv``: the file's path."""
    features: tuple[str, ...] = ()
    """``csv``: the feature columns."""
    target: str = ""
    """``csv``: the label column."""
    partition: Literal["iid", "dirichlet", "quantity"] = "iid"
    """How a real set is split: ``iid``, ``dirichlet`` (label skew, Dir(α)) or ``quantity``
    (size skew, Dir(α))."""
    alpha: float = 0.5
    """α of the Dirichlet partitions."""
    test_fraction: float = 0.2
    """The share of a real set held out for testing."""
    synthetic_alpha: float = 1.0
    """``synthetic``: α of Synthetic(α, β), how much the clients' models differ."""
    synthetic_beta: float = 1.0
    """``synthetic``: β of Synthetic(α, β), how much the clients' features differ."""
    synthetic_features: int = 60
    """``synthetic``: the number of features per record."""
    synthetic_classes: int = 10
    """``synthetic``: the number of classes the labels take."""
    synthetic_iid: bool = False
    """``synthetic``: FedProx's Synthetic-IID (one model for every client, v_k = B_k·1)."""

    def __post_init__(self) -> None:
        require_positive("dataset.alpha", self.alpha)
        if not 0 < self.test_fraction < 1:
            raise FieldError(
                "dataset.test_fraction",
                f"must be in (0, 1), got {self.test_fraction!r}",
                "use e.g. test_fraction = 0.2",
            )
        for name in ("synthetic_alpha", "synthetic_beta"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise FieldError(f"dataset.{name}", f"must be >= 0, got {value!r}", "use e.g. 1.0")
        require_at_least("dataset.synthetic_features", self.synthetic_features)
        require_at_least("dataset.synthetic_classes", self.synthetic_classes, 2)
        if self.source == "csv" and not (self.path and self.features and self.target):
            raise FieldError(
                "dataset.path",
                "a csv source needs the file's path, its feature columns and its target column",
                'set path = "my.csv", features = ["a", "b"], target = "label"',
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class AvailabilityConfig:
    """Whether a picked client is online in a round: ``always``; ``bernoulli`` with
    ``probability`` per round; or a ``trace`` CSV of per-client online windows (columns
    ``client,start,end`` in simulated seconds of a ``period``-long day), in the spirit
    of FedScale's device traces: round r starts at r·``round_seconds``."""

    model: Literal["always", "bernoulli", "trace"] = "always"
    """``always``, ``bernoulli`` or ``trace``."""
    probability: float = 1.0
    """``bernoulli``: the chance a picked client is online."""
    trace: str = ""
    """``trace``: the CSV file of online windows."""
    period: float = 86400.0
    """``trace``: the windows repeat with this period (a day)."""
    round_seconds: float = 600.0
    """``trace``: simulated seconds between round starts on the trace's clock."""

    def __post_init__(self) -> None:
        if not 0 < self.probability <= 1:
            raise FieldError(
                "availability.probability",
                f"must be in (0, 1], got {self.probability!r}",
                "use e.g. probability = 0.8",
            )
        for name in ("period", "round_seconds"):
            value = getattr(self, name)
            require_positive(f"availability.{name}", value)
            if value > MAX_SECONDS:  # r·round_seconds would overflow the trace's clock
                raise FieldError(
                    f"availability.{name}",
                    f"{value!r} seconds is beyond {MAX_SECONDS:g} s (about 30 years)",
                    "give seconds, e.g. period = 86400 and round_seconds = 600",
                )
        if self.model == "trace" and not self.trace:
            raise FieldError(
                "availability.trace",
                "model = 'trace' needs the CSV of online windows",
                'set trace = "windows.csv" (columns client,start,end)',
            )
