"""The learning side of a round: the population's data, the model, and the clients'
clipped updates for a cohort, computed together (one array pass per local step, no
loop over clients)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.protocols.fedlearn.cohort import Availability
from privsim.protocols.fedlearn.config import (
    AvailabilityConfig,
    DatasetConfig,
    ModelConfig,
    TrainingConfig,
)
from privsim.protocols.fedlearn.data import FederatedData, LeafSynthetic, load_source
from privsim.protocols.fedlearn.models import (
    BUILT_IN,
    Model,
    accuracy,
    client_gradients,
    clip_rows,
    local_updates,
    make_model,
)
from privsim.protocols.fedlearn.partition import Partitioned
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.streams import Streams

__all__ = ["Learner", "check_learner", "client_records", "learner_of", "preflight_data"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: Sources with a known shape, checked without loading them: (features, classes).
KNOWN_SHAPES = {"digits": (64, 10)}

#: The scenario field behind each argument of the data and model builders.
SCENARIO_FIELDS = {
    "n_clients": "population.clients",
    "alpha": "dataset.alpha",
    "beta": "dataset.synthetic_beta",
    "test_fraction": "dataset.test_fraction",
    "n_features": "dataset.synthetic_features",
    "n_classes": "dataset.synthetic_classes",
    "source": "dataset.source",
    "csv_path": "dataset.path",
    "features": "dataset.features",
    "target": "dataset.target",
    "X": "dataset.features",
    "y": "dataset.target",
    "model": "model.name",
    "hidden": "model.hidden",
    "activation": "model.activation",
    "l2": "model.l2",
}


def _named(exc: FieldError, fallback: str) -> FieldError:
    """``exc`` naming the scenario's field rather than the builder's argument."""
    field = SCENARIO_FIELDS.get(exc.field, exc.field if "." in exc.field else fallback)
    return FieldError(field, exc.problem, exc.fix)


@functools.lru_cache(maxsize=8)
def _real(source: str, path: str, features: tuple[str, ...], target: str) -> tuple[F64, I64]:
    """A real set's (X, y), cached: a study's cells share it (arrays are never written)."""
    X, y, _ = load_source(source, csv_path=path or None, features=features, target=target or None)
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


def _dataset(scenario: Scenario, streams: Streams) -> FederatedData:
    try:
        return _build_dataset(scenario, streams)
    except FieldError as exc:
        raise _named(exc, "dataset.source") from None


def _build_dataset(scenario: Scenario, streams: Streams) -> FederatedData:
    cfg, n = scenario.table("dataset", DatasetConfig), scenario.population.clients
    if cfg.source == "synthetic":
        return LeafSynthetic(
            n,
            alpha=cfg.synthetic_alpha,
            beta=cfg.synthetic_beta,
            seed=streams.seed_sequence("data", "synthetic"),
            n_features=cfg.synthetic_features,
            n_classes=cfg.synthetic_classes,
            iid=cfg.synthetic_iid,
            test_fraction=cfg.test_fraction,
        )
    X, y = _real(cfg.source, cfg.path, tuple(cfg.features), cfg.target)
    try:
        return Partitioned(
            X,
            y,
            n,
            partition=cfg.partition,
            alpha=cfg.alpha,
            test_fraction=cfg.test_fraction,
            rng=streams.fresh("data", "partition"),
        )
    except FieldError:
        raise
    except ValueError as exc:
        raise FieldError(
            "population.clients",
            f"{cfg.source}: {exc}",
            "give fewer clients than the data set's training records",
        ) from None


def _model(scenario: Scenario, n_features: int, n_classes: int) -> Model:
    cfg = scenario.table("model", ModelConfig)
    options: dict[str, object] = {"l2": cfg.l2} if cfg.name in BUILT_IN or cfg.l2 else {}
    if cfg.name == "mlp":
        options |= {"hidden": cfg.hidden, "activation": cfg.activation}
    try:
        return make_model(cfg.name, n_features, n_classes, **options)
    except FieldError as exc:
        raise _named(exc, "model.name") from exc.__cause__
    except ValueError as exc:
        raise FieldError(
            "model.name", str(exc), "choose a model that fits the data's classes"
        ) from None


def check_learner(scenario: Scenario) -> int | None:
    """A model that fits the data's shape, for sources whose shape is known without
    loading them (the synthetic set, digits): its number of parameters; None for real
    sets, checked by :func:`preflight_data`."""
    cfg = scenario.table("dataset", DatasetConfig)
    if cfg.source == "synthetic":
        return _model(scenario, cfg.synthetic_features, cfg.synthetic_classes).n_params
    if cfg.source in KNOWN_SHAPES:
        return _model(scenario, *KNOWN_SHAPES[cfg.source]).n_params
    return None


def preflight_data(scenario: Scenario) -> None:
    """A real set is on disk (a missing file names ``PRIVSIM_DATA_DIR`` and the file),
    splits into the population, and fits the model; an availability trace is read and
    its windows checked (both named before the first round, ``privsim validate`` too)."""
    availability = scenario.table("availability", AvailabilityConfig)
    if availability.model == "trace":
        Availability.of(availability, scenario.population.clients)
    cfg = scenario.table("dataset", DatasetConfig)
    if cfg.source == "synthetic":
        return
    data = _dataset(scenario, Streams(scenario.seed))
    _model(scenario, data.n_features, data.n_classes)


@dataclass(slots=True)
class Learner:
    """The model and data of a run, and the clients' work for a round."""

    scenario: Scenario
    model: Model
    data: FederatedData
    training: TrainingConfig
    start: F64
    test: tuple[F64, I64]
    initial_accuracy: float

    @property
    def model_name(self) -> str:
        return self.scenario.table("model", ModelConfig).name

    def init(self) -> F64:
        """The initial parameters w_0."""
        return self.start.copy()

    def updates(
        self,
        params: F64,
        cohort: I64,
        online: npt.NDArray[np.bool_],
        rng: np.random.Generator,
        *,
        clip: bool = True,
    ) -> F64:
        """Each picked client's update clipped to C, (k, P) (zero rows for the offline ones,
        who never send): ``dp_fedavg``, Δ_i = w_i − w after E local epochs; ``dp_sgd``,
        −∇L_i(w) (the server's step applies the learning rate). ``clip=False``: the raw
        updates, as a malicious client that skips clipping computes them."""
        t = self.training
        out = np.zeros((cohort.size, params.size))
        up = np.flatnonzero(online)
        if up.size == 0:
            return out
        batch = self.data.cohort(cohort[up])
        if t.algorithm == "dp_fedavg":
            raw = local_updates(
                self.model,
                params,
                batch,
                epochs=t.local_epochs,
                batch_size=t.local_batch,
                lr=t.client_lr,
                rng=rng,
            )
        else:
            raw = -client_gradients(self.model, params, batch)
        out[up] = clip_rows(raw, t.clip_norm)[0] if clip else raw
        return out

    def evaluate(self, params: F64) -> tuple[float, float]:
        """Test accuracy and mean test loss."""
        X, y = self.test
        return accuracy(self.model, params, X, y), float(self.model.loss(params, X, y))


def learner_of(scenario: Scenario, streams: Streams) -> Learner:
    """The run's data (from the seed's ``data`` streams), model and initial parameters."""
    data = _dataset(scenario, streams)
    model = _model(scenario, data.n_features, data.n_classes)
    start = model.init(streams.generator("model", "init"))
    test = data.test_set()
    initial = accuracy(model, start, *test)
    return Learner(
        scenario=scenario,
        model=model,
        data=data,
        training=scenario.table("training", TrainingConfig),
        start=start,
        test=test,
        initial_accuracy=initial,
    )


def client_records(scenario: Scenario, seed: int) -> tuple[list[tuple[F64, I64]], tuple[F64, I64]]:
    """Every client's records (X, y) and the test set of ``scenario`` at ``seed``: the
    split a run uses, handed as plain arrays to another framework run side by side."""
    learner = learner_of(scenario, Streams(seed))
    parts = []
    for j in range(scenario.population.clients):
        cohort = learner.data.cohort(np.array([j]))
        n = int(cohort.counts[0])
        parts.append((cohort.X[0, :n].copy(), cohort.y[0, :n].copy()))
    X_test, y_test = learner.test
    return parts, (X_test.copy(), y_test.copy())
