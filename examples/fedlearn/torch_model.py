"""A user's own model in PyTorch for iterative private learning: any ``torch.nn.Module``
becomes a privsim model through ``torch.func`` — each client's mean loss and gradient
for a whole cohort in one vectorised call (``vmap`` over the clients). Needs ``torch``
(``pip install torch``); privsim itself does not.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.func import functional_call, grad_and_value, vmap

from privsim.api import run
from privsim.protocols.fedlearn.models import register_model
from privsim.scenarios import scenario_from_dict


class TorchModel:
    """A module's parameters as one flat float64 vector; cross-entropy loss."""

    def __init__(self, module: torch.nn.Module, name: str = "torch") -> None:
        self.name, self.module = name, module.double()
        self.shapes = [(k, p.shape) for k, p in self.module.named_parameters()]
        self.n_params = sum(p.numel() for p in self.module.parameters())

    def _named(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        out, i = {}, 0
        for key, shape in self.shapes:
            out[key] = flat[i : i + shape.numel()].reshape(shape)
            i += shape.numel()
        return out

    def _mean_loss(self, flat, X, y, mask):
        logits = functional_call(self.module, self._named(flat), (X,))
        each = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        return (each * mask).sum() / mask.sum().clamp(min=1.0)

    def init(self, rng: np.random.Generator) -> np.ndarray:
        torch.manual_seed(int(rng.integers(2**31)))
        for layer in self.module.modules():
            if hasattr(layer, "reset_parameters"):
                layer.reset_parameters()
        flat = torch.nn.utils.parameters_to_vector(self.module.parameters())
        return flat.detach().numpy().copy()

    def batch_loss_grad(self, params, X, y, mask):
        """params (k, P), X (k, b, d), y (k, b), mask (k, b) -> (k,), (k, P)."""
        args = (torch.tensor(params), torch.tensor(X), torch.tensor(y))
        grads, losses = vmap(grad_and_value(self._mean_loss))(
            *args, torch.tensor(mask, dtype=torch.float64)
        )
        return losses.detach().numpy(), grads.detach().numpy()

    def predict(self, params, X):
        with torch.no_grad():
            logits = functional_call(
                self.module, self._named(torch.tensor(params)), (torch.tensor(X),)
            )
        return logits.argmax(dim=1).numpy()

    def loss(self, params, X, y):
        mask = np.ones((1, len(y)), dtype=bool)
        return float(self.batch_loss_grad(params[None], X[None], y[None], mask)[0][0])


def torch_mlp(n_features: int, n_classes: int) -> TorchModel:
    layers = torch.nn.Sequential(
        torch.nn.Linear(n_features, 32), torch.nn.ReLU(), torch.nn.Linear(32, n_classes)
    )
    return TorchModel(layers, name="torch_mlp")


register_model("torch_mlp", torch_mlp)

if __name__ == "__main__":
    scenario = scenario_from_dict(
        {
            "name": "torch-model",
            "protocol": "fedlearn",
            "population": {"clients": 100},
            "privacy": {"epsilon": 8.0, "delta": 1e-5},
            "training": {"rounds": 20, "cohort": 20, "aggregation": "trusted", "client_lr": 0.5},
            "dataset": {"source": "digits"},
            "model": {"name": "torch_mlp"},
        }
    )
    result = run(scenario)
    print(
        f"test accuracy {result.accuracy['test_accuracy']:.3f}, ε = {result.privacy.achieved_epsilon:.3f}"
    )
