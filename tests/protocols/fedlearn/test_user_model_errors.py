"""A user's model that misbehaves (issue 39): every failure is one named error saying
which model and which method failed and how, with the user's own frames, never a
traceback from inside privsim. The models below wrap the built-in softmax regression
and break one thing each."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
import pytest

from privsim.protocols.fedlearn import EXAMPLE, models
from privsim.protocols.fedlearn.models import (
    SoftmaxRegression,
    UserModelError,
    make_model,
    register_model,
)
from privsim.scenarios.errors import FieldError, ScenarioError

NAMED = (FieldError, ScenarioError)


@pytest.fixture(autouse=True)
def _registry_restored() -> Iterator[None]:
    saved = dict(models.MODELS)
    yield
    models.MODELS.clear()
    models.MODELS.update(saved)


class _Broken(SoftmaxRegression):
    """Softmax regression with one method replaced by ``how``."""

    name = "broken"
    how: ClassVar[dict[str, Callable[..., Any]]] = {}

    def init(self, rng: np.random.Generator) -> Any:
        return self.how.get("init", super().init)(rng)

    def batch_loss_grad(self, params: Any, X: Any, y: Any, mask: Any) -> Any:
        return self.how.get("batch_loss_grad", super().batch_loss_grad)(params, X, y, mask)

    def predict(self, params: Any, X: Any) -> Any:
        return self.how.get("predict", super().predict)(params, X)

    def loss(self, params: Any, X: Any, y: Any) -> Any:
        return self.how.get("loss", super().loss)(params, X, y)


def _explode(*args: Any) -> Any:
    return 1 / 0  # the user's own bug


def _inf_loss(params: Any, X: Any, y: Any, mask: Any) -> Any:
    return np.full(params.shape[0], np.inf), np.zeros_like(params)


def _short_grad(params: Any, X: Any, y: Any, mask: Any) -> Any:
    return np.zeros(params.shape[0]), np.zeros((params.shape[0], 3))


CASES = {
    "explodes in batch_loss_grad": (
        "batch_loss_grad",
        _explode,
        "ZeroDivisionError",
    ),
    "inf loss": ("batch_loss_grad", _inf_loss, "non-finite"),
    "wrong gradient shape": ("batch_loss_grad", _short_grad, "has shape"),
    "None from batch_loss_grad": ("batch_loss_grad", lambda *a: None, "not a pair"),
    "None from init": ("init", lambda rng: None, "returned None"),
    "wrong init shape": ("init", lambda rng: np.zeros(2), "has shape"),
    "NaN test loss": ("loss", lambda *a: float("nan"), "non-finite"),
    "None from predict": ("predict", lambda *a: None, "returned None"),
}


def _run(name: str, extra: dict[str, Any] | None = None) -> None:
    from privsim.api import run
    from privsim.scenarios import scenario_from_dict
    from privsim.scenarios.convert import set_fields

    fields = {"model.name": name, "training.rounds": 2, "training.aggregation": "trusted"}
    run(scenario_from_dict(set_fields(EXAMPLE, fields | (extra or {}))), seed=0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_misbehaving_model_is_named_with_its_method(case: str) -> None:
    method, how, says = CASES[case]
    broken = type("Broken", (_Broken,), {"how": {method: how}})
    register_model("broken", lambda d, c: broken(d, c))
    with pytest.raises(NAMED) as found:
        _run("broken")
    message = str(found.value)
    assert found.value.field == "model.name"
    assert "model 'broken'" in message and method in message and says in message, message
    assert "Fix:" in message


def test_the_users_exception_is_chained_and_their_frame_shown() -> None:
    broken = type("Broken", (_Broken,), {"how": {"batch_loss_grad": _explode}})
    register_model("broken", lambda d, c: broken(d, c))
    with pytest.raises(NAMED) as found:
        _run("broken")
    assert isinstance(found.value.__cause__, ZeroDivisionError)
    with pytest.raises(UserModelError) as direct:
        make_model("broken", 4, 3).batch_loss_grad(
            np.zeros((1, 15)), np.zeros((1, 2, 4)), np.zeros((1, 2), int), np.ones((1, 2), bool)
        )
    assert (direct.value.model, direct.value.method) == ("broken", "batch_loss_grad")
    assert isinstance(direct.value.__cause__, ZeroDivisionError)
    assert "test_user_model_errors.py" in str(found.value) and "_explode" in str(found.value)
    assert "privsim/" not in str(found.value).split("(at ")[-1]


def test_a_factory_that_raises_or_returns_none_is_named() -> None:
    register_model("boom", lambda d, c: _explode())
    with pytest.raises(FieldError, match=r"model 'boom', factory: raised ZeroDivisionError"):
        make_model("boom", 4, 3)
    register_model("nothing", lambda d, c: None)
    with pytest.raises(NAMED, match=r"model 'nothing', factory: returned None"):
        _run("nothing")
    register_model("half", lambda d, c: object())
    with pytest.raises(FieldError, match=r"without the method"):
        make_model("half", 4, 3)


def test_a_factory_that_is_not_callable_is_named_at_registration() -> None:
    with pytest.raises(UserModelError, match=r"model 'x', factory: must be callable"):
        register_model("x", 42)  # type: ignore[arg-type]
    models.MODELS["y"] = 42  # type: ignore[assignment]  # bypassing register_model
    with pytest.raises(UserModelError, match=r"model 'y', factory: is not callable"):
        make_model("y", 4, 3)


@pytest.mark.parametrize("name", ["", "../evil", "a/b", "a\\b", "x" * 65, None, "é"])
def test_a_bad_model_name_is_a_named_error_at_registration(name: Any) -> None:
    with pytest.raises(FieldError) as found:
        register_model(name, SoftmaxRegression)
    assert found.value.field == "model.name"
    with pytest.raises(FieldError, match="built-in"):
        register_model("softmax", SoftmaxRegression)


def test_a_well_behaved_user_model_runs_through_the_checked_boundary() -> None:
    register_model("mine", lambda d, c: SoftmaxRegression(d, c))
    model = make_model("mine", 4, 3)
    assert isinstance(model, models.CheckedModel) and model.n_params == 15
    _run("mine")


def test_the_cli_prints_one_line_without_privsims_frames(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from privsim.cli import EXIT_INVALID, _main
    from privsim.scenarios import scenario_from_dict
    from privsim.scenarios.convert import set_fields
    from privsim.scenarios.loader import scenario_to_toml

    broken = type("Broken", (_Broken,), {"how": {"batch_loss_grad": _inf_loss}})
    register_model("broken", lambda d, c: broken(d, c))
    path = tmp_path / "s.toml"
    fields = {"model.name": "broken", "training.rounds": 2, "training.aggregation": "trusted"}
    path.write_text(scenario_to_toml(scenario_from_dict(set_fields(EXAMPLE, fields))))
    code = _main(["run", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == EXIT_INVALID
    assert "Traceback" not in err and "model 'broken', batch_loss_grad" in err
