"""Hostile input on the surfaces of iterative training (issue 39, round three), beside the
corpus of mutated scenarios (``test_hostile.py``), files (``test_hostile_files.py``) and
limits (``test_hostile_limits.py``).

Drawn here: a user's model registered through the public :func:`register_model` whose
factory or methods misbehave (a loss of ∞ or NaN, arrays of the wrong shape or kind,
``None``, exceptions, properties that raise, a factory that is not callable, parameter
counts past any memory) and model names that are not names; availability traces of
hostile content (empty, binary, wrong columns, fields past csv's limit, negative, NaN or
infinite times, windows across the period, rows past the limit, files past the data
limit, clocks past 30 years); and ``--allow-large`` / ``PRIVSIM_ALLOW_LARGE`` (1, yes, 0,
garbage) beside work far past the limits.

Each input ends in a run with finite figures that releases only what holds a client's
update, or in privsim's named error on the field at fault — for a user's model, naming
the model and the method — never another exception, never a hang (SIGALRM, as in
``test_hostile.py``, and each example timed), never a NaN. Runs write only under
``tmp_path``. Derandomised; ``PRIVSIM_HOSTILE_SURFACES_EXAMPLES`` draws more.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomli_w
from hypothesis import event, given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from privsim.api import ResultError, nan_field, run
from privsim.cli import main
from privsim.inputs import MAX_DATA_BYTES
from privsim.limits import ALLOW_LARGE_ENV, EnvError, WorkLimitError
from privsim.protocols.fedlearn import EXAMPLE, _footprint, models
from privsim.protocols.fedlearn.cohort import MAX_TRACE_WINDOWS, Availability
from privsim.protocols.fedlearn.config import AvailabilityConfig
from privsim.protocols.fedlearn.models import SoftmaxRegression, UserModelError, register_model
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.checks import (
    MAX_MEMORY_ENV,
    MAX_SECONDS_EVEN_LARGE,
    MAX_TIME_ENV,
    memory_limit,
    time_limit,
)
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.sim.ledger import BudgetExceededError
from tests.hostile_helpers import Hang, deadline, hostile_settings
from tests.test_hostile import _explained

CI = hostile_settings("PRIVSIM_HOSTILE_SURFACES_EXAMPLES", 40)
#: An example taking longer than this is a hang (SIGALRM); one past SLOW fails too.
HANG = 60
SLOW = 20.0
NAMED = (FieldError, ScenarioError, BudgetExceededError, WorkLimitError, EnvError)
#: A small training run: 2 rounds of the example (60 clients, a cohort of 20).
SMALL = {"training.rounds": 2}


@contextlib.contextmanager
def _timed(what: str) -> Iterator[None]:
    """A hang fails (SIGALRM after HANG s), and so does an example slower than SLOW s."""
    started = time.monotonic()
    with deadline(HANG):
        yield
    took = time.monotonic() - started
    assert took < SLOW, f"{what}: took {took:.1f} s (more than {SLOW:g} s: a hang in the making)"


def _note(text: str) -> None:
    """An outcome counted in Hypothesis's statistics (``--hypothesis-show-statistics``)."""
    with contextlib.suppress(InvalidArgument):  # outside a Hypothesis test: nothing
        event(text)


def _check_result(result: Any) -> dict[str, Any]:
    """A finished run: no NaN anywhere, finite accuracy and loss, and a release only where
    some round's sum held a client's update (never a release without data)."""
    where = nan_field(result)
    assert where is None, f"silent-wrong: NaN at {where}"
    out = result.to_dict()
    assert out["status"] in ("released", "aborted"), out["status"]
    for key, value in (out["accuracy"] or {}).items():
        assert not isinstance(value, float) or math.isfinite(value), (key, value)
    curves = out["fedlearn"]["curves"]
    included = sum(r["included"] or 0 for r in curves)
    if out["status"] == "released":
        assert included > 0 and out["parties"]["included"], "a release without data"
    for r in curves:
        assert r["online"] <= r["picked"] and (r["included"] or 0) <= r["online"], r
    return out


def _run_or_named(data: dict[str, Any], what: str) -> BaseException | dict[str, Any]:
    """``data`` run in-process (its checks, preflight and training): the result's dict, or
    the named error (any other exception propagates: a traceback)."""
    with _timed(what), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = run(scenario_from_dict(data), seed=0)
        except ResultError as exc:
            raise AssertionError(f"silent-wrong: a NaN result ({exc})") from exc
        except NAMED as exc:
            assert "Traceback" not in str(exc) and "Fix" in str(exc), str(exc)
            _note(f"named: {getattr(exc, 'field', type(exc).__name__)}")
            return exc
    out = _check_result(result)
    _note(f"ran: {out['status']}")
    return out


# ------------------------------------------------------------------ a user's own models


class _UserBug(Exception):
    """The user's own exception."""


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("the user's __str__ is broken too")


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("the user's __repr__ is broken")


def _shaped(good: Any, make: Callable[[np.ndarray], Any]) -> Any:
    if isinstance(good, tuple):
        return tuple(make(np.asarray(g)) for g in good)
    return make(np.asarray(good))


def _raise(exc: BaseException) -> Callable[[Any], Any]:
    def go(good: Any) -> Any:
        raise exc

    return go


def _recurse(good: Any) -> Any:
    return _recurse(good)


#: How a method misbehaves: its output made from the good one (or it raises).
MISBEHAVIOURS: dict[str, Callable[[Any], Any]] = {
    "returns None": lambda g: None,
    "raises its own error": _raise(_UserBug("the user's bug")),
    "raises KeyError": _raise(KeyError("k")),
    "raises MemoryError": _raise(MemoryError()),
    "raises an unprintable error": _raise(_Unprintable()),
    "recurses forever": _recurse,
    "loss or values inf": lambda g: _shaped(g, lambda a: np.full(np.shape(a), np.inf)),
    "values NaN": lambda g: _shaped(g, lambda a: np.full(np.shape(a), np.nan)),
    "values -inf": lambda g: _shaped(g, lambda a: np.full(np.shape(a), -np.inf)),
    "one value too many": lambda g: _shaped(g, lambda a: np.zeros(a.size + 1)),
    "transposed": lambda g: _shaped(g, lambda a: np.atleast_2d(a).T.copy()),
    "a scalar": lambda g: _shaped(g, lambda a: 0.0) if isinstance(g, tuple) else 0.0,
    "complex": lambda g: _shaped(g, lambda a: a + 1j),
    "text": lambda g: "abc",
    "an object with a broken repr": lambda g: _BadRepr(),
    "a ragged list": lambda g: [[1.0], [1.0, 2.0]],
    "a triple": lambda g: (*g, g[0]) if isinstance(g, tuple) else (g, g, g),
    "a generator": lambda g: (x for x in [1.0]),
    "past float64": lambda g: _shaped(g, lambda a: np.full(np.shape(a), 10**400, dtype=object)),
    "labels past 2^53": lambda g: _shaped(g, lambda a: np.full(np.shape(a), 1e300)),
    "half labels": lambda g: _shaped(g, lambda a: a + 0.5),
    "the right output": lambda g: g,
}
METHODS = ["init", "batch_loss_grad", "predict", "loss"]
ALL = frozenset(METHODS)
#: Where each misbehaviour must be refused (naming the model and the method); elsewhere
#: its value is usable as it is (a 1×1 array as a loss, labels of 1e300 as parameters):
#: the run may go through, or stop on a named error.
REFUSED: dict[str, frozenset[str]] = {
    **{how: ALL for how in MISBEHAVIOURS},
    "transposed": ALL - {"loss"},
    "a scalar": ALL - {"loss"},
    "labels past 2^53": frozenset({"predict"}),
    "half labels": frozenset({"predict"}),
    "the right output": frozenset(),
}


class _Misbehaving:
    """Softmax regression (the built-in) with one method misbehaving as drawn."""

    def __init__(self, d: int, c: int, method: str, how: str, n_params: Any) -> None:
        self.inner = SoftmaxRegression(d, c)
        self.method, self.how = method, how
        self.n_params = self.inner.n_params if n_params == "right" else n_params

    def _out(self, method: str, good: Any) -> Any:
        return MISBEHAVIOURS[self.how](good) if method == self.method else good

    def init(self, rng: np.random.Generator) -> Any:
        return self._out("init", self.inner.init(rng))

    def batch_loss_grad(self, params: Any, X: Any, y: Any, mask: Any) -> Any:
        return self._out("batch_loss_grad", self.inner.batch_loss_grad(params, X, y, mask))

    def predict(self, params: Any, X: Any) -> Any:
        return self._out("predict", self.inner.predict(params, X))

    def loss(self, params: Any, X: Any, y: Any) -> Any:
        return self._out("loss", self.inner.loss(params, X, y))


class _RaisingProperty(_Misbehaving):
    """A model whose ``n_params`` (or a method) is a property of the user's that raises."""

    def __getattribute__(self, name: str) -> Any:
        if name == object.__getattribute__(self, "method"):
            raise _UserBug(f"the user's property {name}")
        return object.__getattribute__(self, name)


#: Parameter counts a model may declare: the right one, or one past any memory or type.
N_PARAMS = ["right", "right", "right", 10**12, 2**63, 10**40, 0, -1, 33.0, "33", None, True]
FACTORIES = ["class", "function", "returns None", "raises", "wrong signature", "property"]


@st.composite
def user_models(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "method": draw(st.sampled_from(METHODS)),
        "how": draw(st.sampled_from(sorted(MISBEHAVIOURS))),
        "n_params": draw(st.sampled_from(N_PARAMS)),
        "factory": draw(st.sampled_from(FACTORIES)),
        "aggregation": draw(st.sampled_from(["trusted", "local", "dca"])),
        "algorithm": draw(st.sampled_from(["dp_fedavg", "dp_sgd"])),
    }


@contextlib.contextmanager
def _registry() -> Iterator[None]:
    """The models registered inside are forgotten after."""
    saved = dict(models.MODELS)
    try:
        yield
    finally:
        models.MODELS.clear()
        models.MODELS.update(saved)


def _factory(case: dict[str, Any]) -> Callable[..., Any]:
    method, how, n_params = case["method"], case["how"], case["n_params"]
    kind = case["factory"]
    if kind == "class":
        return lambda d, c: _Misbehaving(d, c, method, how, n_params)
    if kind == "function":

        def build(n_features: int, n_classes: int) -> Any:
            return _Misbehaving(n_features, n_classes, method, how, n_params)

        return build
    if kind == "returns None":
        return lambda d, c: None
    if kind == "raises":
        return _raise(_UserBug("the factory's bug"))
    if kind == "wrong signature":
        return lambda: None
    return lambda d, c: _RaisingProperty(d, c, method, how, n_params)


def _expect_user_model(case: dict[str, Any], name: str, outcome: Any) -> None:
    """A run only where nothing wrong reached privsim; else the named error on
    ``model.name`` saying the model and the failing method (or the memory it needs)."""
    kind, n, how, method = case["factory"], case["n_params"], case["how"], case["method"]
    built = kind in ("class", "function")
    must_refuse = not built or n != "right" or method in REFUSED[how]
    if isinstance(outcome, dict):  # a run with finite figures (checked)
        assert not must_refuse, (case, "a misbehaving model ran")
        return
    exc, text = outcome, str(outcome)
    if not must_refuse:  # a usable value of a scale the training may not survive
        assert getattr(exc, "field", None) in ("model.name", "training.server_lr"), text
        return
    assert getattr(exc, "field", None) == "model.name", (case, text)
    if built and isinstance(n, int) and not isinstance(n, bool) and n > 10**9:
        assert "memory" in text, (case, text)  # past any memory, named before the work
        return
    assert f"model {name!r}" in text, (case, text)
    if kind in ("returns None", "raises", "wrong signature"):
        assert "factory" in text, (case, text)
    elif kind == "property" or n == "right":
        assert f"{name!r}, {method}:" in text, (case, text)
    else:
        assert "n_params" in text, (case, text)
    if built and n == "right" and how.startswith("raises"):
        assert "test_hostile_surfaces.py" in text, (case, text)  # the user's own frame


@CI
@given(user_models())
def test_a_users_model_that_misbehaves_runs_or_is_named(case):
    """A user's model registered through ``register_model`` whose factory, parameter
    count or one method misbehaves in a drawn way (None, an exception, ∞/NaN, a wrong
    shape, complex values, text, a broken repr, a property that raises, a count past any
    memory) ends in a run with finite figures only when nothing wrong reached privsim,
    else in one named error on ``model.name`` that says which model and which method
    failed (with the user's own frame where it raised), or the memory it would need:
    never another exception, a hang or a NaN."""
    name = "hostile_model"
    fields = {
        **SMALL,
        "model.name": name,
        "training.aggregation": case["aggregation"],
        "training.algorithm": case["algorithm"],
    }

    def outcome(case: dict[str, Any]) -> None:
        with _registry():
            register_model(name, _factory(case))
            _expect_user_model(case, name, _run_or_named(set_fields(EXAMPLE, fields), name))

    _explained(outcome, f"a user's model {case}", case)


NAMES = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "a/b",
            "../model",
            "a\\b",
            "C:",
            "x" * 65,
            "x" * 10**6,
            "a\n",
            "a\x00",
            "é",
            "-a",
            "_a",
            "softmax",
            "mlp",
            ".",
            "..",
            "~",
            "$HOME",
            None,
            3,
            b"bytes",
            ["a"],
            "ok_name",
            "Ok-Name-2",
        ]
    ),
    st.text(max_size=80),
)


@CI
@given(NAMES, st.sampled_from(["callable", None, 3, "text", SoftmaxRegression(2, 2)]))
def test_a_model_name_or_factory_that_is_not_one_is_named(name, factory):
    """``register_model`` with a name that is not a plain identifier (empty, a path
    character, past 64 characters, not text, a built-in's) or a factory that is not
    callable raises a named error on ``model.name`` before anything is registered; a good
    name with a callable registers, and a scenario naming it runs."""
    target = SoftmaxRegression if factory == "callable" else factory
    with _registry(), _timed(repr(name)[:60]):
        before = dict(models.MODELS)
        try:
            register_model(name, target)
        except FieldError as exc:
            assert exc.field == "model.name" and "Fix" in str(exc), str(exc)
            assert len(str(exc)) < 1000, "the message quotes a hostile name whole"
            assert models.MODELS == before
            if isinstance(exc, UserModelError):
                assert exc.method == "factory" and not callable(target)
            return
        assert isinstance(name, str) and callable(target), (name, factory)
        assert models.MODELS[name] is target
    with _registry():
        register_model(name, target)
        _run_or_named(set_fields(EXAMPLE, {**SMALL, "model.name": name}), name)


# -------------------------------------------------------------------- availability traces

HEADERS = [
    "client,start,end",
    "client,start,end",
    "\ufeffclient,start,end",
    "start,end,client",
    "client,start",
    "client;start;end",
    "a,b,c",
    "client,start,end,extra",
    "",
]
CLIENTS = ["0", "client-1", "59", "client-59", "60", "-1", "²", "１", "9" * 25, "", "x", "client-"]
TIMES = [
    "0", "1", "599", "600", "700", "1000", "1200", "86000", "86399", "87400", "86400",
    "172800", "-1", "-0.0", "nan", "inf", "-inf", "1e308", "5e-324", "1e400", "x", "",
    "0x10", "1_000", " 7 ",
]  # fmt: skip
KINDS = ["rows", "rows", "rows", "rows", "garbage", "empty", "nul", "huge-field", "too-many-rows",
         "over-the-data-limit", "directory", "missing"]  # fmt: skip


GOOD_CLIENTS = ["0", "1", "client-2", "client-59", "7"]
GOOD_TIMES = ["0", "300", "599", "600", "1000", "1199", "86000", "86399"]


@st.composite
def traces(draw: st.DrawFn) -> dict[str, Any]:
    good = draw(st.booleans())  # half the traces hold only rows a run can use
    clients, times = (GOOD_CLIENTS, GOOD_TIMES) if good else (CLIENTS, TIMES)
    row = st.tuples(st.sampled_from(clients), st.sampled_from(times), st.sampled_from(times))
    if good:  # end = start + a length, across the period's end at times
        row = st.tuples(
            st.sampled_from(clients),
            st.sampled_from(times),
            st.sampled_from(["1", "600", "1400", "86400"]),
        ).map(lambda r: (r[0], r[1], str(int(r[1]) + int(r[2]))))
    return {
        "kind": "rows" if good else draw(st.sampled_from(KINDS)),
        "header": HEADERS[0] if good else draw(st.sampled_from(HEADERS)),
        "rows": draw(st.lists(row, max_size=8)),
        "garbage": draw(st.binary(max_size=200)),
        "period": draw(st.sampled_from([86_400.0, 86_400.0, 1_200.0, 1e-300, 1e9, 1e10])),
        "round_seconds": draw(st.sampled_from([600.0, 700.0, 600.0, 1e-300, 1e9, 2e9])),
        "aggregation": draw(st.sampled_from(["trusted", "dca", "local"])),
    }


def _trace_file(root: Path, case: dict[str, Any]) -> Path:
    path = root / "trace.csv"
    kind = case["kind"]
    if kind == "directory":
        path.mkdir()
    elif kind == "missing":
        pass
    elif kind == "over-the-data-limit":
        with path.open("wb") as fh:
            fh.truncate(MAX_DATA_BYTES + 1)  # sparse: no disk space
    elif kind == "too-many-rows":
        path.write_bytes(b"client,start,end\n" + b"0,0,1\n" * (MAX_TRACE_WINDOWS + 1))
    elif kind == "garbage":
        path.write_bytes(case["garbage"])
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        rows = ["{},{},{}".format(*r) for r in case["rows"]]
        if kind == "nul":
            rows.append("0,\x00,1")
        elif kind == "huge-field":
            rows.append("0," + "1" * 200_000 + ",5")
        path.write_text("\n".join([case["header"], *rows]) + "\n", encoding="utf-8")
    return path


@CI
@given(traces())
def test_a_hostile_availability_trace_runs_or_is_named(tmp_path_factory, case):
    """An availability trace of drawn content — rows of good and hostile clients and
    times (negative, NaN, ∞, past float64, across the period), wrong or missing columns,
    a byte-order mark, binary garbage, a NUL, a 200 kB field, rows past the limit, a
    file past the data limit, a directory, nothing — under drawn periods and round
    clocks (up to past 30 years): a run with finite figures whose online clients are
    within those picked, released only when a client's update reached a sum, or a named
    error on an ``availability`` field; never a traceback, a hang or a NaN."""
    root = tmp_path_factory.mktemp("trace")
    path = _trace_file(root, case)
    fields = {
        **SMALL,
        "training.aggregation": case["aggregation"],
        "availability.model": "trace",
        "availability.trace": str(path),
        "availability.period": case["period"],
        "availability.round_seconds": case["round_seconds"],
    }
    _explained(_trace_outcome, f"a trace {str(case)[:300]}", (case, fields))


def _trace_outcome(args: tuple[dict[str, Any], dict[str, Any]]) -> None:
    case, fields = args
    _note(f"trace: {case['kind']}")
    outcome = _run_or_named(set_fields(EXAMPLE, fields), "the trace")
    if isinstance(outcome, BaseException):
        assert getattr(outcome, "field", "").startswith("availability."), str(outcome)
        if case["kind"] in ("too-many-rows", "over-the-data-limit"):
            assert "limit" in str(outcome), str(outcome)
        return
    assert case["kind"] in ("rows", "garbage"), "a trace privsim cannot read was run"


@CI
@given(
    st.lists(
        st.tuples(
            st.integers(0, 9),
            st.integers(0, 1199),
            st.integers(1, 1200),
        ),
        max_size=12,
    ),
    st.sampled_from([1200, 86_400]),
    st.sampled_from([1, 300, 599, 600, 700, 1199, 86_399]),
    st.integers(1, 10**6),
)
def test_a_traces_windows_wrap_around_the_period(tmp_path_factory, rows, period, step, r):
    """Whole-second windows [start, start + length) within a period, some running past
    its end: client i is online in round r exactly when some window of its holds
    r·round_seconds shifted by a whole number of periods (the wrap-around of the
    documentation), computed here without ``fmod``."""
    rows = [(c, lo % period, lo % period + length) for c, lo, length in rows]
    path = tmp_path_factory.mktemp("wrap") / "trace.csv"
    path.write_text("client,start,end\n" + "".join(f"{c},{a},{b}\n" for c, a, b in rows))
    config = AvailabilityConfig(
        model="trace", trace=str(path), period=float(period), round_seconds=float(step)
    )
    clients = np.arange(10)
    got = Availability.of(config, 10).online(clients, r, np.random.default_rng(0))
    t = r * step  # whole seconds: exact
    shifts = (t // period - 1, t // period)
    want = [
        any(a <= t - j * period < b for c2, a, b in rows if c2 == c for j in shifts)
        for c in range(10)
    ]
    assert got.tolist() == want


# ------------------------------------------------------------------------- --allow-large

ALLOW = [None, "1", "yes", "0", "garbage", "", "YES", "2"]
BIG = {
    "training.rounds": [2, 10**5, 10**7, 10**9],
    "training.local_epochs": [1, 10**6],
    "population.compute_nodes": [3, 10**6],
    "model.hidden": [32, 10**9],
}


@contextlib.contextmanager
def _environment() -> Iterator[None]:
    """The variables set inside are restored after."""
    names = (ALLOW_LARGE_ENV, MAX_TIME_ENV, MAX_MEMORY_ENV)
    before = {n: os.environ.get(n) for n in names}
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@st.composite
def big_work(draw: st.DrawFn) -> tuple[dict[str, Any], str | None]:
    """One field drawn big, the others drawn from their small and big values."""
    big = draw(st.sampled_from(sorted(BIG)))
    fields: dict[str, Any] = {
        k: draw(st.sampled_from(v[1:] if k == big else v)) for k, v in BIG.items()
    }
    if fields["model.hidden"] > 32:
        fields["model.name"] = "mlp"
    if draw(st.booleans()):  # the multiplier given: nothing to calibrate
        fields |= {"training.noise_multiplier": 1.0, "privacy.on_overspend": "warn"}
    fields["training.aggregation"] = draw(st.sampled_from(["dca", "trusted", "local"]))
    return fields, draw(st.sampled_from(ALLOW))


def _checked(fields: dict[str, Any]) -> tuple[BaseException | None, Any]:
    """The scenario's checks (the limits, before any work): the named error, or the
    scenario."""
    try:
        return None, scenario_from_dict(set_fields(EXAMPLE, fields))
    except NAMED as exc:
        return exc, None


@CI
@given(big_work())
def test_big_work_is_refused_before_it_starts_whatever_allow_large_says(tmp_path_factory, case):
    """Work far past the limits (10⁵–10⁹ rounds, 10⁶ local epochs, 10⁶ compute nodes, an
    MLP of 10⁹ hidden units) beside ``PRIVSIM_ALLOW_LARGE`` = 1, yes, 0, garbage or unset,
    under a time limit of 60 s: refused with a named error in seconds, before any work
    starts, where the switch is off; under it, refused all the same when the work cannot fit in memory or finish
    within a year, and otherwise accepted only as work the time limit alone refused
    (within memory, past the limit, within the year; not started here). Such a refusal
    under ``privsim run --allow-large`` exits 2 with one line in seconds, writing
    nothing."""
    with _environment():
        _explained(_big_work_outcome, str(case), (tmp_path_factory, *case))


def _big_work_outcome(args: tuple[Any, dict[str, Any], str | None]) -> None:
    tmp_path_factory, fields, allow = args
    os.environ[MAX_TIME_ENV] = "60"  # the corpus's limit: every drawn big value is past it
    os.environ.pop(MAX_MEMORY_ENV, None)
    if allow is None:
        os.environ.pop(ALLOW_LARGE_ENV, None)
    else:
        os.environ[ALLOW_LARGE_ENV] = allow
    truthy = allow is not None and allow.lower() in ("1", "yes")
    with _timed("the checks"):
        refused, scenario = _checked(fields)
    _note(f"switch {'on' if truthy else 'off'}: {'refused' if refused else 'accepted'}")
    if not truthy:
        assert refused is not None, "big work accepted without --allow-large"
        if allow in ("garbage", "2"):  # read where a limit is passed: the variable named
            assert isinstance(refused, EnvError) or "PRIVSIM_" not in str(refused), refused
        return
    if refused is not None:
        assert "memory" in str(refused) or "does not lift" in str(refused), str(refused)
        out = tmp_path_factory.mktemp("allow-large")
        (out / "cwd").mkdir()
        path = out / "big.toml"
        path.write_text(tomli_w.dumps(set_fields(EXAMPLE, fields)))
        err = io.StringIO()
        with (
            _timed("privsim run --allow-large"),
            contextlib.chdir(out / "cwd"),
            contextlib.redirect_stderr(err),
        ):
            code = main(["run", str(path), "--out", str(out / "out"), "--allow-large"])
        assert code == 2 and "Traceback" not in err.getvalue(), err.getvalue()
        assert err.getvalue().startswith("privsim: error: "), err.getvalue()
        assert not (out / "out").exists() and not any((out / "cwd").iterdir()), "written"
        return
    # accepted under the switch: only work the time limit alone refused (never started)
    estimate = _footprint(scenario)
    assert estimate.bytes <= memory_limit(), estimate
    assert time_limit() < estimate.seconds <= MAX_SECONDS_EVEN_LARGE, estimate
    os.environ.pop(ALLOW_LARGE_ENV)
    with _timed("the checks without the switch"):
        assert _checked(fields)[0] is not None, "accepted without the switch too"


# ------------------------------------------------------------------------ regressions

#: Inputs the corpus of round three met (each once a traceback, a hang or a silent
#: result): the changes to the example and the field its named error must be on.
MET: list[tuple[str, dict[str, Any], str]] = [
    ("client '²' (a digit to str.isdigit)", {"rows": "²,0,10\n"}, "availability.trace"),
    ("client of 5000 digits", {"rows": "1" * 5000 + ",0,10\n"}, "availability.trace"),
    (
        "round_seconds 1e308 (fmod of ∞)",
        {"availability.round_seconds": 1e308},
        "availability.round_seconds",
    ),
    ("period 1e308", {"availability.period": 1e308}, "availability.period"),
    (
        "10⁷ rounds under --allow-large (a 23 GiB planner)",
        {"training.rounds": 10**7, "allow": "1"},
        "training.rounds",
    ),
]


@pytest.mark.parametrize(("what", "changes", "field"), MET, ids=[m[0] for m in MET])
def test_inputs_met_by_the_corpus_are_named(tmp_path, monkeypatch, what, changes, field):
    changes = dict(changes)
    if "allow" in changes:
        monkeypatch.setenv(ALLOW_LARGE_ENV, changes.pop("allow"))
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\n" + changes.pop("rows", "0,0,100\n"), encoding="utf-8")
    data = set_fields(
        EXAMPLE,
        {**SMALL, "availability.model": "trace", "availability.trace": str(trace), **changes},
    )
    outcome = _run_or_named(data, what)
    assert isinstance(outcome, BaseException), f"{what}: ran"
    assert getattr(outcome, "field", None) == field, str(outcome)


def _model_with(attribute: str, value: Any) -> Callable[..., Any]:
    def build(d: int, c: int) -> Any:
        model = _Misbehaving(d, c, "", "the right output", "right")
        setattr(model, attribute, value)
        return model

    return build


def test_a_users_property_that_raises_is_named_with_the_model_and_attribute():
    """Once a ``ValueError`` read as 'choose a model that fits the data's classes' (and
    any other exception a traceback): a property of the user's that raises."""
    with _registry():
        register_model("prop", lambda d, c: _RaisingProperty(d, c, "n_params", "", "right"))
        outcome = _run_or_named(set_fields(EXAMPLE, {**SMALL, "model.name": "prop"}), "prop")
    assert isinstance(outcome, ScenarioError), outcome
    assert "model 'prop', n_params: raised _UserBug" in str(outcome)


@pytest.mark.parametrize("method", METHODS)
def test_complex_values_from_a_users_model_are_named_not_cast(method):
    """Once cast to float silently (the imaginary parts dropped, a run 'released')."""
    with _registry():
        register_model("cplx", lambda d, c: _Misbehaving(d, c, method, "complex", "right"))
        outcome = _run_or_named(set_fields(EXAMPLE, {**SMALL, "model.name": "cplx"}), method)
    assert isinstance(outcome, ScenarioError) and "is complex" in str(outcome), outcome
    assert f"model 'cplx', {method}" in str(outcome)


def test_a_ragged_or_unprintable_output_is_named():
    """Once a ``ValueError`` from NumPy, or a ``RuntimeError`` from the user's own
    ``__str__``/``__repr__``, out of privsim's check of the output."""
    with _registry():
        for how in ("a ragged list", "raises an unprintable error", "an object with a broken repr"):
            register_model("odd", lambda d, c, how=how: _Misbehaving(d, c, "init", how, "right"))
            outcome = _run_or_named(set_fields(EXAMPLE, {**SMALL, "model.name": "odd"}), how)
            assert isinstance(outcome, ScenarioError), (how, outcome)
            assert "model 'odd', init" in str(outcome), (how, outcome)


def test_huge_labels_from_predict_are_named_not_cast_to_garbage():
    """Once cast to int64 with an invalid-value warning (labels of 1e300)."""
    with _registry():
        register_model("big", lambda d, c: _Misbehaving(d, c, "predict", "labels past 2^53", "right"))  # fmt: skip
        outcome = _run_or_named(set_fields(EXAMPLE, {**SMALL, "model.name": "big"}), "big")
    assert isinstance(outcome, ScenarioError) and "2^53" in str(outcome), outcome


def test_a_users_model_of_huge_size_names_the_model_not_the_cohort():
    """A user's model of 10¹² parameters: refused for memory naming ``model.name`` (it
    named ``training.cohort``, which the user had not changed)."""
    with _registry():
        register_model("huge", _model_with("n_params", 10**12))
        outcome = _run_or_named(set_fields(EXAMPLE, {**SMALL, "model.name": "huge"}), "huge")
    assert isinstance(outcome, ScenarioError) and "of memory" in str(outcome), outcome
    assert outcome.field == "model.name"


def test_a_trace_is_checked_by_validation_not_only_by_the_run(tmp_path, capsys):
    """``privsim validate`` reads the trace (it passed a trace that every run refused)."""
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\nclient-999,0,10\n")
    scenario = tmp_path / "s.toml"
    fields = {**SMALL, "availability.model": "trace", "availability.trace": str(trace)}
    scenario.write_text(tomli_w.dumps(set_fields(EXAMPLE, fields)))
    assert main(["validate", str(scenario)]) == 2
    assert "availability.trace" in capsys.readouterr().err


def test_a_trace_of_many_windows_for_one_client_is_looked_up_in_one_pass(tmp_path):
    """10⁵ windows of one client: a round's lookup is one array operation (it was a
    Python loop over every window of every picked client, each round)."""
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\n" + "".join(f"0,{i},{i + 0.5}\n" for i in range(100_000)))
    config = AvailabilityConfig(model="trace", trace=str(trace), period=200_000.0)
    availability = Availability.of(config, 10)
    started = time.monotonic()
    for r in range(1, 400):
        online = availability.online(np.arange(10), r, np.random.default_rng(0))
        assert online.tolist() == [(r * 600) % 200_000 < 100_000] + [False] * 9
    assert time.monotonic() - started < 5.0


def test_the_deadline_helper_is_the_suites():
    """The timing helper turns a hang into a failure (SIGALRM, ``hostile_helpers``)."""
    with pytest.raises(Hang), deadline(1):
        time.sleep(3)


@pytest.mark.parametrize(
    "fields",
    [{"training.local_epochs": 10**6}, {"training.rounds": 10**5}],
    ids=["10⁶ local epochs", "10⁵ rounds"],
)
def test_the_switch_lifts_the_time_limit_and_nothing_else(monkeypatch, fields):
    """Under a 60 s limit, work of days is refused; ``PRIVSIM_ALLOW_LARGE=1`` lets it
    through only because it fits in memory and finishes within the year (estimated, not
    started here); ``0`` and garbage lift nothing."""
    fields = {**fields, "training.noise_multiplier": 1.0}
    monkeypatch.setenv(MAX_TIME_ENV, "60")
    for value in ("0", "garbage", ""):
        monkeypatch.setenv(ALLOW_LARGE_ENV, value)
        with _timed(value):
            refused, _ = _checked(fields)
        assert isinstance(refused, NAMED), (value, refused)
    monkeypatch.setenv(ALLOW_LARGE_ENV, "yes")
    with _timed("yes"):
        refused, scenario = _checked(fields)
    assert refused is None, refused
    estimate = _footprint(scenario)
    assert 60 < estimate.seconds <= MAX_SECONDS_EVEN_LARGE and estimate.bytes <= memory_limit()


def test_a_trace_past_the_row_limit_is_refused_unless_large_is_allowed(tmp_path, monkeypatch):
    """A trace of more rows than the limit is refused by name before it is parsed; the
    switch lifts the limit (memory still bounds it)."""
    from privsim.protocols.fedlearn import cohort

    monkeypatch.setattr(cohort, "MAX_TRACE_WINDOWS", 10)
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\n" + "0,0,600\n" * 11)
    config = AvailabilityConfig(model="trace", trace=str(trace))
    monkeypatch.delenv(ALLOW_LARGE_ENV, raising=False)
    with pytest.raises(FieldError, match="more than the limit of 10 windows") as found:
        Availability.of(config, 10)
    assert found.value.field == "availability.trace"
    monkeypatch.setenv(ALLOW_LARGE_ENV, "1")
    assert Availability.of(config, 10).online(np.arange(2), 1, np.random.default_rng(0)).tolist() == [False, False]  # fmt: skip
    monkeypatch.setenv(MAX_MEMORY_ENV, "1000")  # bytes: 11 rows need more
    with pytest.raises(FieldError, match="of memory"):
        Availability.of(config, 10)


def test_a_window_of_one_whole_period_in_decimals_is_read(tmp_path):
    """A client online for one day from 65,989.363… s: written in decimals, end − start
    comes out 86,400.00000000001 s, a few ulps past the period (it was refused as longer
    than the period)."""
    trace = tmp_path / "trace.csv"
    trace.write_text("client,start,end\n0,65989.36330496047,152389.36330496048\n")
    config = AvailabilityConfig(model="trace", trace=str(trace), period=86_400.0)
    online = Availability.of(config, 2).online(np.arange(2), 1, np.random.default_rng(0))
    assert online.tolist() == [True, False]  # 600 s: within the part past midnight
