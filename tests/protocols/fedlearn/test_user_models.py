"""A user's own model through the model interface: the NumPy example of the README and
the PyTorch one (run when ``torch`` is importable: an optional extra, never needed by
CI). Each example trains on scikit-learn's digits (10 classes: chance is 0.1) and must
learn: a test accuracy above 0.3 is more than 8 binomial sds (√(0.09/360) ≈ 0.016)
above chance, far below the 0.56 (NumPy SVM) and 0.55 (PyTorch MLP) measured when this
was written."""

from __future__ import annotations

import runpy
from collections.abc import Iterator
from pathlib import Path

import pytest

from privsim.protocols.fedlearn import models

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "fedlearn"


@pytest.fixture(autouse=True)
def _registry_restored() -> Iterator[None]:
    saved = dict(models.MODELS)
    yield
    models.MODELS.clear()
    models.MODELS.update(saved)


def _trained(example: str) -> object:
    namespace = runpy.run_path(str(EXAMPLES / example), run_name="__main__")
    return namespace["result"]


def test_a_numpy_model_of_ones_own_learns() -> None:
    result = _trained("own_model.py")
    assert result.accuracy["test_accuracy"] > 0.3  # type: ignore[attr-defined]
    assert result.privacy.guarantee_met  # type: ignore[attr-defined]


def test_a_pytorch_model_learns_through_the_same_interface() -> None:
    pytest.importorskip("torch", reason="torch is an optional extra (pip install torch)")
    result = _trained("torch_model.py")
    assert result.accuracy["test_accuracy"] > 0.3  # type: ignore[attr-defined]


def test_a_registered_model_gradient_matches_finite_differences() -> None:
    """The NumPy example's analytic gradient is its loss's derivative (central
    differences; the squared hinge is smooth except on a measure-zero set, which random
    points miss)."""
    import numpy as np

    namespace = runpy.run_path(str(EXAMPLES / "own_model.py"), run_name="not-main-run")
    svm = namespace["SquaredHingeSVM"](5, 3)
    rng = np.random.default_rng(0)
    params = rng.normal(size=(2, svm.n_params))
    X, y = rng.normal(size=(2, 7, 5)), rng.integers(0, 3, size=(2, 7))
    mask = np.ones((2, 7), dtype=bool)
    mask[1, 4:] = False
    _, grad = svm.batch_loss_grad(params, X, y, mask)
    h = 1e-6
    for j in range(svm.n_params):
        step = np.zeros_like(params)
        step[:, j] = h
        up, _ = svm.batch_loss_grad(params + step, X, y, mask)
        down, _ = svm.batch_loss_grad(params - step, X, y, mask)
        np.testing.assert_allclose(grad[:, j], (up - down) / (2 * h), rtol=1e-5, atol=1e-7)


def test_a_model_name_nobody_registered_is_a_named_error() -> None:
    from privsim.protocols.fedlearn import EXAMPLE
    from privsim.registry import get
    from privsim.scenarios import scenario_from_dict
    from privsim.scenarios.convert import set_fields
    from privsim.scenarios.errors import FieldError, ScenarioError

    with pytest.raises((FieldError, ScenarioError), match="nosuch") as found:
        get("fedlearn").check(scenario_from_dict(set_fields(EXAMPLE, {"model.name": "nosuch"})))
    assert found.value.field == "model.name"
