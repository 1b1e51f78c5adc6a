"""Models for federated learning: flat float64 parameter vectors, per-client losses and
gradients computed for a whole cohort at once, and the cohort-level steps of DP-SGD and
DP-FedAvg (clipping, per-client gradients, local SGD updates).

A model's parameters are one vector θ ∈ R^P. :meth:`Model.batch_loss_grad` evaluates k
parameter vectors (one per client) on k padded minibatches in one vectorised computation:
row i gets

    L_i(θ_i) = (1/|B_i|) Σ_{j ∈ B_i} ℓ(θ_i; x_ij, y_ij) + (λ/2)‖w_i‖²,    ∇L_i(θ_i),

where B_i is the set of masked-in records of row i (and L_i = 0, ∇L_i = 0 when B_i is
empty), λ the model's L2 coefficient and w_i the weights (never the biases).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from privsim.scenarios.errors import FieldError

if TYPE_CHECKING:
    from privsim.protocols.fedlearn.data import CohortData

__all__ = [
    "MLP",
    "MODELS",
    "CheckedModel",
    "LogisticRegression",
    "Model",
    "SoftmaxRegression",
    "UserModelError",
    "accuracy",
    "client_gradients",
    "clip_rows",
    "local_updates",
    "make_model",
    "register_model",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

#: client_gradients evaluates at most about this many (client, record) pairs per call of
#: batch_loss_grad, so its temporaries stay near (this × width × 8) bytes whatever the
#: cohort's size.
GRADIENT_BLOCK_RECORDS = 1 << 16


@runtime_checkable
class Model(Protocol):
    """A differentiable classifier with a flat parameter vector of ``n_params`` floats."""

    name: str
    n_params: int

    def init(self, rng: np.random.Generator) -> F64:
        """Initial parameters, shape (P,)."""
        ...

    def batch_loss_grad(self, params: F64, X: F64, y: I64, mask: B) -> tuple[F64, F64]:
        """Per-row mean loss (k,) and mean gradient (k, P) over the masked records of
        ``X`` (k, b, d), ``y`` (k, b), ``mask`` (k, b), row i at ``params[i]``."""
        ...

    def predict(self, params: F64, X: F64) -> I64:
        """Labels of the rows of ``X`` (n, d) under ``params`` (P,)."""
        ...

    def loss(self, params: F64, X: F64, y: I64) -> float:
        """The objective (mean loss plus the L2 term) on ``(X, y)`` at ``params`` (P,)."""
        ...


# -- numerically stable pieces ------------------------------------------------------------


def _log_sum_exp(z: F64) -> F64:
    """log Σ_c exp(z_c) over the last axis, shifted by the maximum (never overflows)."""
    top = np.max(z, axis=-1, keepdims=True)
    return np.asarray(top[..., 0] + np.log(np.sum(np.exp(z - top), axis=-1)))


def _softmax(z: F64) -> F64:
    e = np.exp(z - np.max(z, axis=-1, keepdims=True))
    return np.asarray(e / np.sum(e, axis=-1, keepdims=True))


def _sigmoid(z: F64) -> F64:
    """σ(z) = exp(−log(1 + e^{−z})): no overflow for any z."""
    return np.asarray(np.exp(-np.logaddexp(0.0, -z)))


def _check_batch(params: F64, X: F64, y: I64, mask: B, n_params: int) -> tuple[F64, F64, B]:
    params = np.asarray(params, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    if params.ndim != 2 or params.shape[1] != n_params:
        raise ValueError(f"params must have shape (k, {n_params}), got {params.shape}")
    if X.ndim != 3 or X.shape[0] != params.shape[0] or mask.shape != X.shape[:2]:
        raise ValueError(
            f"X must be (k, b, d) and mask (k, b) with k = {params.shape[0]}: "
            f"got X {X.shape}, mask {mask.shape}"
        )
    if np.shape(y) != mask.shape:
        raise ValueError(f"y must have shape {mask.shape}, got {np.shape(y)}")
    return params, X, mask


def _weights(mask: B) -> tuple[F64, F64]:
    """Each record's weight 1/|B_i| (0 when masked out) and the row indicator |B_i| > 0."""
    counts = mask.sum(axis=1)
    present = (counts > 0).astype(np.float64)
    weight = mask / np.maximum(counts, 1)[:, None]
    return np.asarray(weight, dtype=np.float64), present


def _cross_entropy(logits: F64, y: I64, mask: B, weight: F64) -> tuple[F64, F64]:
    """Per-row Σ_j weight_j (logsumexp(z_j) − z_{j,y_j}), and ∂/∂z = weight·(softmax − onehot)."""
    labels = np.where(mask, y, 0)[..., None]
    picked = np.take_along_axis(logits, labels, axis=-1)[..., 0]
    loss = np.sum(weight * (_log_sum_exp(logits) - picked), axis=-1)
    dz = _softmax(logits)
    np.put_along_axis(dz, labels, np.take_along_axis(dz, labels, axis=-1) - 1.0, axis=-1)
    dz *= weight[..., None]
    return np.asarray(loss), dz


def _check_l2(l2: float) -> float:
    if not (l2 >= 0 and math.isfinite(l2)):
        raise FieldError("l2", f"must be a finite number >= 0, got {l2!r}", "give 0 or more")
    return float(l2)


def _check_count(field: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise FieldError(
            field, f"must be an integer >= {low}, got {value!r}", f"give {low} or more"
        )
    return int(value)


# -- the built-in models --------------------------------------------------------------------


class LogisticRegression:
    """Binary logistic regression, labels 0/1; θ = (w ∈ R^d, b).

    ℓ(θ; x, y) = log(1 + e^z) − y z with z = wᵀx + b (computed as logaddexp(0, z));
    ∇_z ℓ = σ(z) − y. Initialised at zero (the loss is convex)."""

    __slots__ = ("l2", "n_features", "n_params")
    name = "logistic"

    def __init__(self, n_features: int, l2: float = 0.0) -> None:
        self.n_features = _check_count("n_features", n_features, 1)
        self.l2 = _check_l2(l2)
        self.n_params = self.n_features + 1

    def init(self, rng: np.random.Generator) -> F64:
        return np.zeros(self.n_params)

    def _logits(self, params: F64, X: F64) -> F64:
        d = self.n_features
        return np.asarray(np.matmul(X, params[:, :d, None])[..., 0] + params[:, d, None])

    def batch_loss_grad(self, params: F64, X: F64, y: I64, mask: B) -> tuple[F64, F64]:
        params, X, mask = _check_batch(params, X, y, mask, self.n_params)
        d = self.n_features
        weight, present = _weights(mask)
        z = self._logits(params, X)
        target = np.where(mask, y, 0).astype(np.float64)
        loss = np.sum(weight * (np.logaddexp(0.0, z) - target * z), axis=1)
        dz = weight * (_sigmoid(z) - target)  # (k, b)
        grad = np.empty_like(params)
        grad[:, :d] = np.matmul(dz[:, None, :], X)[:, 0, :]
        grad[:, d] = dz.sum(axis=1)
        if self.l2:
            w = params[:, :d]
            loss += present * 0.5 * self.l2 * np.einsum("kd,kd->k", w, w)
            grad[:, :d] += present[:, None] * self.l2 * w
        return loss, grad

    def predict(self, params: F64, X: F64) -> I64:
        p = np.asarray(params, dtype=np.float64)
        z = np.asarray(X, dtype=np.float64) @ p[:-1] + p[-1]
        return (z > 0).astype(np.int64)

    def loss(self, params: F64, X: F64, y: I64) -> float:
        return _full_loss(self, params, X, y)


class SoftmaxRegression:
    """Multinomial logistic regression over c classes; θ = (W ∈ R^{c×d} row-major, b ∈ R^c).

    ℓ(θ; x, y) = logsumexp(z) − z_y with z = W x + b; ∇_z ℓ = softmax(z) − e_y.
    Initialised at zero (the loss is convex)."""

    __slots__ = ("l2", "n_classes", "n_features", "n_params")
    name = "softmax"

    def __init__(self, n_features: int, n_classes: int, l2: float = 0.0) -> None:
        self.n_features = _check_count("n_features", n_features, 1)
        self.n_classes = _check_count("n_classes", n_classes, 2)
        self.l2 = _check_l2(l2)
        self.n_params = self.n_classes * (self.n_features + 1)

    def init(self, rng: np.random.Generator) -> F64:
        return np.zeros(self.n_params)

    def _unpack(self, params: F64) -> tuple[F64, F64]:
        k, c, d = params.shape[0], self.n_classes, self.n_features
        return params[:, : c * d].reshape(k, c, d), params[:, c * d :]

    def batch_loss_grad(self, params: F64, X: F64, y: I64, mask: B) -> tuple[F64, F64]:
        params, X, mask = _check_batch(params, X, y, mask, self.n_params)
        k, c, d = params.shape[0], self.n_classes, self.n_features
        weight, present = _weights(mask)
        W, b = self._unpack(params)
        z = np.matmul(X, W.transpose(0, 2, 1)) + b[:, None, :]  # (k, b, c)
        loss, dz = _cross_entropy(z, np.asarray(y), mask, weight)
        grad = np.empty_like(params)
        grad[:, : c * d] = np.matmul(dz.transpose(0, 2, 1), X).reshape(k, c * d)
        grad[:, c * d :] = dz.sum(axis=1)
        if self.l2:
            w = params[:, : c * d]
            loss += present * 0.5 * self.l2 * np.einsum("kp,kp->k", w, w)
            grad[:, : c * d] += present[:, None] * self.l2 * w
        return loss, grad

    def predict(self, params: F64, X: F64) -> I64:
        W, b = self._unpack(np.asarray(params, dtype=np.float64)[None, :])
        return np.argmax(np.asarray(X, dtype=np.float64) @ W[0].T + b[0], axis=1).astype(np.int64)

    def loss(self, params: F64, X: F64, y: I64) -> float:
        return _full_loss(self, params, X, y)


class MLP:
    """One hidden layer of ``hidden`` units (ReLU or tanh), softmax output over c classes;
    θ = (W₁ ∈ R^{h×d}, b₁ ∈ R^h, W₂ ∈ R^{c×h}, b₂ ∈ R^c), each matrix row-major.

    a = W₁x + b₁, h = φ(a), z = W₂h + b₂, ℓ = logsumexp(z) − z_y; back-propagation:
    ∂z = softmax(z) − e_y, ∂W₂ = ∂z hᵀ, ∂h = W₂ᵀ∂z, ∂a = ∂h ⊙ φ'(a), ∂W₁ = ∂a xᵀ.
    Initialised Glorot-uniform: W ~ U(±sqrt(6/(fan_in + fan_out))), biases zero. The L2
    term covers W₁ and W₂."""

    __slots__ = ("activation", "hidden", "l2", "n_classes", "n_features", "n_params")
    name = "mlp"

    def __init__(
        self,
        n_features: int,
        hidden: int,
        n_classes: int,
        activation: Literal["relu", "tanh"] = "relu",
        l2: float = 0.0,
    ) -> None:
        self.n_features = _check_count("n_features", n_features, 1)
        self.hidden = _check_count("hidden", hidden, 1)
        self.n_classes = _check_count("n_classes", n_classes, 2)
        if activation not in ("relu", "tanh"):
            raise FieldError("activation", f"no activation {activation!r}", "use 'relu' or 'tanh'")
        self.activation = activation
        self.l2 = _check_l2(l2)
        d, h, c = self.n_features, self.hidden, self.n_classes
        self.n_params = h * d + h + c * h + c

    def _unpack(self, params: F64) -> tuple[F64, F64, F64, F64]:
        k, d, h, c = params.shape[0], self.n_features, self.hidden, self.n_classes
        W1 = params[:, : h * d].reshape(k, h, d)
        b1 = params[:, h * d : h * d + h]
        W2 = params[:, h * d + h : h * d + h + c * h].reshape(k, c, h)
        b2 = params[:, h * d + h + c * h :]
        return W1, b1, W2, b2

    def init(self, rng: np.random.Generator) -> F64:
        d, h, c = self.n_features, self.hidden, self.n_classes
        out = np.zeros(self.n_params)
        r1, r2 = math.sqrt(6.0 / (d + h)), math.sqrt(6.0 / (h + c))
        out[: h * d] = rng.uniform(-r1, r1, size=h * d)
        out[h * d + h : h * d + h + c * h] = rng.uniform(-r2, r2, size=c * h)
        return out

    def _hidden(self, a: F64) -> F64:
        return np.maximum(a, 0.0) if self.activation == "relu" else np.tanh(a)

    def batch_loss_grad(self, params: F64, X: F64, y: I64, mask: B) -> tuple[F64, F64]:
        params, X, mask = _check_batch(params, X, y, mask, self.n_params)
        k, d, h, c = params.shape[0], self.n_features, self.hidden, self.n_classes
        weight, present = _weights(mask)
        W1, b1, W2, b2 = self._unpack(params)
        a = np.matmul(X, W1.transpose(0, 2, 1)) + b1[:, None, :]  # (k, b, h)
        act = self._hidden(a)
        z = np.matmul(act, W2.transpose(0, 2, 1)) + b2[:, None, :]  # (k, b, c)
        loss, dz = _cross_entropy(z, np.asarray(y), mask, weight)
        da = np.matmul(dz, W2)  # ∂h, then ∂a in place
        if self.activation == "relu":
            da *= a > 0
        else:
            da *= 1.0 - act * act
        grad = np.empty_like(params)
        grad[:, : h * d] = np.matmul(da.transpose(0, 2, 1), X).reshape(k, h * d)
        grad[:, h * d : h * d + h] = da.sum(axis=1)
        grad[:, h * d + h : h * d + h + c * h] = np.matmul(dz.transpose(0, 2, 1), act).reshape(
            k, c * h
        )
        grad[:, h * d + h + c * h :] = dz.sum(axis=1)
        if self.l2:
            for lo, hi in ((0, h * d), (h * d + h, h * d + h + c * h)):
                w = params[:, lo:hi]
                loss += present * 0.5 * self.l2 * np.einsum("kp,kp->k", w, w)
                grad[:, lo:hi] += present[:, None] * self.l2 * w
        return loss, grad

    def predict(self, params: F64, X: F64) -> I64:
        W1, b1, W2, b2 = self._unpack(np.asarray(params, dtype=np.float64)[None, :])
        act = self._hidden(np.asarray(X, dtype=np.float64) @ W1[0].T + b1[0])
        return np.argmax(act @ W2[0].T + b2[0], axis=1).astype(np.int64)

    def loss(self, params: F64, X: F64, y: I64) -> float:
        return _full_loss(self, params, X, y)


def _full_loss(model: Model, params: F64, X: F64, y: I64) -> float:
    """The objective on all of (X, y), in record blocks: each block's value is its mean
    loss plus the L2 term, so the record-weighted mean of the blocks is the whole's."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n = X.shape[0]
    if n == 0:
        return 0.0
    p = np.asarray(params, dtype=np.float64)[None, :]
    total = 0.0
    for lo in range(0, n, GRADIENT_BLOCK_RECORDS):
        hi = min(n, lo + GRADIENT_BLOCK_RECORDS)
        ones = np.ones((1, hi - lo), dtype=bool)
        loss, _ = model.batch_loss_grad(p, X[None, lo:hi], y[None, lo:hi], ones)
        total += float(loss[0]) * (hi - lo)
    return total / n


# -- the registry ---------------------------------------------------------------------------


def _logistic(n_features: int, n_classes: int, *, l2: float = 0.0) -> Model:
    if n_classes > 2:
        raise FieldError(
            "model",
            f"model 'logistic' is binary; the data has {n_classes} classes",
            "use model = 'softmax' (or 'mlp')",
        )
    return LogisticRegression(n_features, l2=l2)


def _softmax_model(n_features: int, n_classes: int, *, l2: float = 0.0) -> Model:
    return SoftmaxRegression(n_features, n_classes, l2=l2)


def _mlp(
    n_features: int,
    n_classes: int,
    *,
    hidden: int = 32,
    activation: Literal["relu", "tanh"] = "relu",
    l2: float = 0.0,
) -> Model:
    return MLP(n_features, hidden, n_classes, activation=activation, l2=l2)


#: name -> factory(n_features, n_classes, **options). Options: ``l2`` for every model;
#: ``hidden`` (default 32) and ``activation`` ('relu' or 'tanh') for 'mlp'.
MODELS: dict[str, Callable[..., Model]] = {
    "logistic": _logistic,
    "softmax": _softmax_model,
    "mlp": _mlp,
}


BUILT_IN = frozenset(MODELS)


#: A registered model's name: a plain identifier (letters, digits, '_' and '-'), never
#: a path character, at most this long.
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


class UserModelError(FieldError):
    """A user's model (:func:`register_model`) failed: ``model`` names it, ``method`` the
    call (``factory``, ``init``, ``batch_loss_grad``, ``predict``, ``loss``). The user's
    exception, if any, is the ``__cause__``, and the message ends with the user's own
    frames (privsim's are left out), so a CLI run's one line says where to look."""

    def __init__(self, model: str, method: str, problem: str, fix: str) -> None:
        super().__init__("model.name", f"model {model!r}, {method}: {problem}", fix)
        self.model = model
        self.method = method


def _user_frames(exc: BaseException, limit: int = 3) -> str:
    """The innermost ``limit`` frames of ``exc``'s traceback outside privsim, as
    ``file:line in function``."""
    import traceback
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[2])  # the privsim package
    frames = [
        f"{Path(f.filename).name}:{f.lineno} in {f.name}"
        for f in traceback.extract_tb(exc.__traceback__)
        if not str(Path(f.filename).resolve()).startswith(here)
    ]
    return f" (at {'; '.join(frames[-limit:])})" if frames else ""


def _shown(value: object, how: Callable[[object], str], limit: int = 300) -> str:
    """``how(value)`` (``str`` or ``repr`` of a user's object) cut to ``limit``
    characters; a ``__str__`` or ``__repr__`` of the user's that fails shows as such."""
    try:
        text = how(value)
    except Exception as exc:  # the user's own method
        return f"<{type(value).__name__} whose {how.__name__}() raised {type(exc).__name__}>"
    return text if len(text) <= limit else text[:limit] + "…"


def _raised(model: str, method: str, exc: Exception) -> UserModelError:
    return UserModelError(
        model,
        method,
        f"raised {type(exc).__name__}: {_shown(exc, str)}{_user_frames(exc)}",
        f"fix the model's {method} (register_model({model!r}, ...))",
    )


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _MODEL_NAME.fullmatch(name):
        raise FieldError(
            "model.name",
            f"a model's name is a plain identifier of letters, digits, '_' and '-' "
            f"(at most 64), got {_shown(name, repr, 80)}",
            "register the model under a name such as 'my_model'",
        )
    return name


def register_model(name: str, factory: Callable[..., Model]) -> None:
    """Make ``model.name = name`` build ``factory(n_features, n_classes, **options)``: a
    user's own model (anything with the :class:`Model` methods), in this process. Its
    keyword-only parameters are its options (``model.l2`` is passed when it is not 0).
    A bad name or factory is a :class:`FieldError` naming ``model.name``; whatever the
    model does wrong later is a :class:`UserModelError` naming the model and method."""
    name = _check_name(name)
    if name in BUILT_IN:
        raise FieldError(
            "model.name",
            f"{name!r} is a built-in model",
            "register yours under another name",
        )
    if not callable(factory):
        raise UserModelError(
            name,
            "factory",
            f"must be callable (a class or function (n_features, n_classes, **options)), "
            f"got {type(factory).__name__} {_shown(factory, repr, 80)}",
            "pass the model's class or a function building it",
        )
    MODELS[name] = factory


def _floats(model: str, method: str, what: str, value: object, shape: tuple[int, ...]) -> F64:
    """``value`` as a finite float64 array of ``shape``, else a :class:`UserModelError`."""
    fix = f"make {method} return {what} as a finite float array of shape {shape}"
    if value is None:
        raise UserModelError(model, method, f"returned None for {what}", fix)
    given: Any = value  # the user's object, of any type
    try:
        complex_ = np.iscomplexobj(given)
        out = None if complex_ else np.asarray(given, dtype=np.float64)
    except Exception as exc:  # the user's object: ragged, or its own conversion failed
        raise UserModelError(
            model,
            method,
            f"{what} is not a float array ({type(value).__name__}: {_shown(exc, str)})",
            fix,
        ) from exc
    if out is None:  # a cast to float would drop the imaginary parts silently
        raise UserModelError(model, method, f"{what} is complex, not real", fix)
    if out.shape != shape:
        raise UserModelError(model, method, f"{what} has shape {out.shape}, not {shape}", fix)
    if not np.isfinite(out).all():
        bad = int(np.size(out) - np.count_nonzero(np.isfinite(out)))
        raise UserModelError(
            model,
            method,
            f"{what} has {bad} non-finite value(s) (inf or NaN)",
            fix + " (if training diverged, lower training.client_lr or training.server_lr)",
        )
    return out


#: The largest label a user's ``predict`` may return: whole numbers up to here are exact
#: as floats and as int64 (a class index is far below it).
_LARGEST_LABEL = float(2**53)


class CheckedModel:
    """A user's model behind a checked boundary: each call's exception, and each output of
    the wrong type, shape or not finite, becomes a :class:`UserModelError` naming the
    model and the method (applied by :func:`make_model` to every non-built-in model)."""

    __slots__ = ("inner", "n_params", "name")

    def __init__(self, name: str, inner: object) -> None:
        self.name = name
        self.inner = inner
        if inner is None:
            raise UserModelError(
                name, "factory", "returned None", "make the factory return the model object"
            )
        missing = [
            m
            for m in ("init", "batch_loss_grad", "predict", "loss")
            if not callable(self._attribute(m))
        ]
        if missing:
            raise UserModelError(
                name,
                "factory",
                f"returned a {type(inner).__name__} without the method(s) {missing}",
                "give the model init, batch_loss_grad, predict and loss (see Model)",
            )
        n = self._attribute("n_params")
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise UserModelError(
                name,
                "n_params",
                f"must be an integer >= 1, got {_shown(n, repr, 80)}",
                "set n_params to the length of the flat parameter vector",
            )
        self.n_params = int(n)

    def _attribute(self, attribute: str) -> Any:
        """The user's model's ``attribute`` (None when it has none); a property of
        the user's that raises is named as that attribute's failure."""
        try:
            return getattr(self.inner, attribute, None)
        except Exception as exc:  # the user's property: named, and chained
            raise _raised(self.name, attribute, exc) from exc

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.inner, method)(*args)
        except UserModelError:
            raise
        except Exception as exc:  # the user's code: any failure is named, and chained
            raise _raised(self.name, method, exc) from exc

    def init(self, rng: np.random.Generator) -> F64:
        out = self._call("init", rng)
        return _floats(self.name, "init", "the parameters", out, (self.n_params,))

    def batch_loss_grad(self, params: F64, X: F64, y: I64, mask: B) -> tuple[F64, F64]:
        k = int(np.shape(params)[0])
        out = self._call("batch_loss_grad", params, X, y, mask)
        if not isinstance(out, tuple | list) or len(out) != 2:
            raise UserModelError(
                self.name,
                "batch_loss_grad",
                f"returned {type(out).__name__} {_shown(out, repr, 60)}, not a pair (loss, gradient)",
                f"return (loss of shape ({k},), gradient of shape ({k}, {self.n_params}))",
            )
        loss = _floats(self.name, "batch_loss_grad", "the loss", out[0], (k,))
        grad = _floats(self.name, "batch_loss_grad", "the gradient", out[1], (k, self.n_params))
        return loss, grad

    def predict(self, params: F64, X: F64) -> I64:
        n = int(np.shape(X)[0])
        out = _floats(self.name, "predict", "the labels", self._call("predict", params, X), (n,))
        if not np.array_equal(out, np.round(out)) or np.any(np.abs(out) > _LARGEST_LABEL):
            raise UserModelError(
                self.name,
                "predict",
                "returned labels that are not whole numbers of at most 2^53 (class indices)",
                f"return integer class labels of shape ({n},)",
            )
        return out.astype(np.int64)

    def loss(self, params: F64, X: F64, y: I64) -> float:
        out = self._call("loss", params, X, y)
        if isinstance(out, np.ndarray) and out.size == 1:
            out = out.reshape(())
        return float(_floats(self.name, "loss", "the loss", out, ()))


def make_model(name: str, n_features: int, n_classes: int, **options: Any) -> Model:
    """The model ``name`` for data of ``n_features`` features and ``n_classes`` classes.
    Errors are :class:`~privsim.scenarios.errors.FieldError` naming the field at fault:
    ``model`` (unknown name, or logistic on more than two classes), ``n_classes`` (fewer
    than two), or the option (unknown or out of range). A user's model comes wrapped in
    :class:`CheckedModel`; its failures are :class:`UserModelError`."""
    import inspect

    factory = MODELS.get(name)
    if factory is None:
        raise FieldError(
            "model", f"no model {_shown(name, repr, 80)}", f"use one of {sorted(MODELS)}"
        )
    if n_classes < 2:
        raise FieldError(
            "n_classes",
            f"the data has {n_classes} class(es); a classifier needs at least 2",
            "give data whose target takes two or more values",
        )
    if not callable(factory):
        raise UserModelError(
            name, "factory", f"is not callable ({type(factory).__name__})", "register a callable"
        )
    try:
        parameters = inspect.signature(factory).parameters.values()
    except Exception:  # a callable without a (readable) signature: no options
        parameters = ()  # type: ignore[assignment]
    allowed = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    for option in options:
        if option not in allowed:
            raise FieldError(
                option,
                f"model {name!r} has no option {option!r}",
                f"its options are {allowed}" if allowed else "give no options",
            )
    if name in BUILT_IN:
        return factory(n_features, n_classes, **options)
    try:
        built = factory(n_features, n_classes, **options)
    except FieldError:
        raise  # the user's own named refusal of an option
    except Exception as exc:  # the user's code
        raise _raised(name, "factory", exc) from exc
    return CheckedModel(name, built)  # type: ignore[return-value]


# -- cohort-level steps ---------------------------------------------------------------------


def clip_rows(U: F64, C: float) -> tuple[F64, F64]:
    """Clip each row to L2 norm at most C (Abadi et al. 2016, Algorithm 1, "clip gradient";
    McMahan et al. 2018, the per-user update clip):

        Ū_i = U_i · min(1, C / ‖U_i‖₂).

    Returns (Ū, ‖U_i‖₂ before clipping)."""
    if not (C > 0 and math.isfinite(C)):
        raise FieldError("clip_norm", f"must be a finite number > 0, got {C!r}", "give C > 0")
    U = np.asarray(U, dtype=np.float64)
    norms = np.sqrt(np.einsum("kp,kp->k", U, U))
    factor = np.minimum(1.0, C / np.maximum(norms, np.finfo(np.float64).tiny))
    return U * factor[:, None], norms


def client_gradients(model: Model, params: F64, cohort: CohortData) -> F64:
    """Each client's mean gradient over all its records, at the common point θ:

        g_i = (1/n_i) Σ_{j=1}^{n_i} ∇ℓ(θ; x_ij, y_ij) + λ w        (0 when n_i = 0),

    shape (k, P). The records are taken in blocks along the record axis (every client at
    once per block), g_i = Σ_blocks (n_ib / n_i) · ḡ_ib, so memory stays bounded."""
    params = np.asarray(params, dtype=np.float64)
    k, n_max = cohort.mask.shape
    rows = np.broadcast_to(params, (k, params.size))
    if k == 0 or n_max == 0:
        return np.zeros((k, params.size))
    block = max(1, GRADIENT_BLOCK_RECORDS // k)
    if block >= n_max:
        return model.batch_loss_grad(rows, cohort.X, cohort.y, cohort.mask)[1]
    total = np.zeros((k, params.size))
    for lo in range(0, n_max, block):
        hi = min(n_max, lo + block)
        mask = cohort.mask[:, lo:hi]
        _, grad = model.batch_loss_grad(rows, cohort.X[:, lo:hi], cohort.y[:, lo:hi], mask)
        total += grad * mask.sum(axis=1)[:, None]
    return np.asarray(total / np.maximum(cohort.mask.sum(axis=1), 1)[:, None])


def local_updates(
    model: Model,
    params: F64,
    cohort: CohortData,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    rng: np.random.Generator,
) -> F64:
    """DP-FedAvg client work (McMahan et al. 2018, Algorithm 1, UserUpdate), every client
    of the cohort at once. Client i starts at w_i = θ and, for each of ``epochs`` passes
    over its own n_i records in a fresh random order, takes a step per minibatch B of
    ``batch_size`` records (the last one smaller):

        w_i ← w_i − η · ∇L_i(w_i; B),    then returns Δ_i = w_i − θ.

    Step s of an epoch processes batch s of every client together (masked); a client with
    fewer records runs out of batches and stops changing. The orders are the argsort of one
    ``rng.random((k, n_max))`` draw per epoch with padded entries keyed +∞ (sorted last),
    so a run is a pure function of the generator's state."""
    epochs = _check_count("epochs", epochs, 1)
    batch_size = _check_count("batch_size", batch_size, 1)
    if not math.isfinite(lr):
        raise FieldError("lr", f"must be a finite number, got {lr!r}", "give a learning rate")
    params = np.asarray(params, dtype=np.float64)
    mask = np.asarray(cohort.mask, dtype=bool)
    k, n_max = mask.shape
    w = np.tile(params, (k, 1))
    if k == 0 or n_max == 0:
        return np.zeros_like(w)
    counts = mask.sum(axis=1)
    longest = int(counts.max())
    positions = np.arange(n_max)
    for _ in range(epochs):
        keys = rng.random((k, n_max))
        keys[~mask] = np.inf
        order = np.argsort(keys, axis=1, kind="stable")[:, :longest]
        for lo in range(0, longest, batch_size):
            idx = order[:, lo : lo + batch_size]  # (k, b): the real records come first
            batch_mask = positions[lo : lo + idx.shape[1]][None, :] < counts[:, None]
            Xb = np.take_along_axis(cohort.X, idx[:, :, None], axis=1)
            yb = np.take_along_axis(cohort.y, idx, axis=1)
            _, grad = model.batch_loss_grad(w, Xb, yb, batch_mask)
            w -= lr * grad
    return np.asarray(w - params[None, :])


def accuracy(model: Model, params: F64, X: F64, y: I64) -> float:
    """The share of rows of ``X`` whose predicted label is ``y``."""
    y = np.asarray(y)
    if y.size == 0:
        return float("nan")
    return float(np.mean(model.predict(params, X) == y))
