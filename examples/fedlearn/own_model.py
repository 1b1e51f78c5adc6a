"""A user's own model for iterative private learning, in NumPy: a multiclass linear
SVM (Crammer–Singer hinge, squared), trained by DP-FedAvg on scikit-learn's digits.

A model is anything with the methods of ``privsim.protocols.fedlearn.models.Model``:
``init``, ``batch_loss_grad`` (one vectorised call for a whole cohort), ``predict`` and
``loss``, over a flat float64 parameter vector. Register a factory under a name and
scenarios use it with ``model.name``.
"""

from __future__ import annotations

import numpy as np

from privsim.api import run
from privsim.protocols.fedlearn.models import register_model
from privsim.scenarios import scenario_from_dict


class SquaredHingeSVM:
    """Scores s = W x + b; per record the loss Σ_{c ≠ y} max(0, 1 + s_c − s_y)²."""

    name = "svm"

    def __init__(self, n_features: int, n_classes: int) -> None:
        self.d, self.c = n_features, n_classes
        self.n_params = n_classes * (n_features + 1)

    def init(self, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(self.n_params)

    def _scores(self, params: np.ndarray, X: np.ndarray) -> np.ndarray:
        W = params[..., : self.c * self.d].reshape(*params.shape[:-1], self.c, self.d)
        b = params[..., self.c * self.d :]
        if params.ndim == 1:
            return X @ W.T + b
        return np.einsum("knd,kcd->knc", X, W) + b[:, None, :]

    def batch_loss_grad(self, params, X, y, mask):
        """params (k, P), X (k, b, d), y (k, b), mask (k, b): mean loss and gradient per row."""
        s = self._scores(params, X)  # (k, b, c)
        true = np.take_along_axis(s, y[..., None], axis=-1)
        margin = np.maximum(0.0, 1.0 + s - true)
        np.put_along_axis(margin, y[..., None], 0.0, axis=-1)
        weight = mask / np.maximum(mask.sum(axis=1, keepdims=True), 1)  # (k, b)
        loss = ((margin**2).sum(-1) * weight).sum(1)
        ds = 2.0 * margin  # d loss / d s_c for c ≠ y
        np.put_along_axis(ds, y[..., None], -ds.sum(-1, keepdims=True), axis=-1)
        ds *= weight[..., None]
        gW = np.einsum("knc,knd->kcd", ds, X).reshape(len(params), -1)
        return loss, np.concatenate([gW, ds.sum(1)], axis=1)

    def predict(self, params, X):
        return np.argmax(self._scores(params, X), axis=1)

    def loss(self, params, X, y):
        mask = np.ones((1, len(y)), dtype=bool)
        return float(self.batch_loss_grad(params[None], X[None], y[None], mask)[0][0])


register_model("svm", SquaredHingeSVM)

if __name__ == "__main__":
    scenario = scenario_from_dict(
        {
            "name": "own-model",
            "protocol": "fedlearn",
            "population": {"clients": 100},
            "privacy": {"epsilon": 8.0, "delta": 1e-5},
            "training": {"rounds": 20, "cohort": 20, "aggregation": "trusted", "client_lr": 0.05},
            "dataset": {"source": "digits"},
            "model": {"name": "svm"},
        }
    )
    result = run(scenario)
    print(
        f"test accuracy {result.accuracy['test_accuracy']:.3f}, ε = {result.privacy.achieved_epsilon:.3f}"
    )
