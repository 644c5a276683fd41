"""What changed between XGBoost versions and must be undone for a legacy model to predict, in
the installed XGBoost, what it predicted in the one that wrote it: the objective's name and
configuration, and ``base_score``.

``base_score``: from 1.0 the file stores it as a probability (the user's value), and XGBoost
takes the margin with the objective's ``ProbToMargin`` when it predicts. Before 1.0 the file
stores the margin itself (except for ``multi:*``), so the probability written for the
installed XGBoost is the objective's transform of it, chosen among float32 neighbours so that
``ProbToMargin`` gives back the stored margin bit for bit. ``binary:logitraw`` took the margin
with the logit up to 1.3.0 and with the identity from 1.3.1 (dmlc/xgboost #6517): its
1.0-1.2 base_score becomes the logit of the stored value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from smserve.algorithms.xgboost.legacy import libm

F = np.float32
ONE = F(1.0)
ALIASES = {"reg:linear": "reg:squarederror"}
SIGMOID_FAMILY = frozenset({"binary:logistic", "reg:logistic"})
EXP_FAMILY = frozenset({"count:poisson", "reg:gamma", "reg:tweedie", "survival:cox"})
_REG = {"reg_loss_param": {"scale_pos_weight": "1"}}
DEFAULT_PARAMS: dict[str, dict[str, dict[str, str]]] = {
    **{name: _REG for name in ("reg:squarederror", "reg:squaredlogerror", "reg:gamma")},
    **{name: _REG for name in ("reg:logistic", "binary:logistic", "binary:logitraw")},
    "reg:pseudohubererror": {"pseudo_huber_param": {"huber_slope": "1"}},
    "count:poisson": {"poisson_regression_param": {"max_delta_step": "0.699999988"}},
    "reg:tweedie": {"tweedie_regression_param": {"tweedie_variance_power": "1.5"}},
    "survival:aft": {
        "aft_loss_param": {"aft_loss_distribution": "normal", "aft_loss_distribution_scale": "1"}
    },
}
# Parameter blocks whose name or meaning the installed XGBoost no longer shares: dropped, so
# its defaults apply (they do not change predictions).
DROPPED_BLOCKS = frozenset({"lambda_rank_param"})
NEIGHBOURS = 8  # float32 steps tried each way for an exact round trip


def objective_name(stored: str) -> str:
    return ALIASES.get(stored, stored)


def objective_config(name: str, num_class: int, attributes: Mapping[str, str]) -> dict[str, Any]:
    """The objective's JSON configuration: the one a 1.x file saved in its ``objective``
    attribute, else XGBoost's defaults, with ``num_class`` and 0.90's saved max_delta_step."""
    config: dict[str, Any] = {"name": name}
    saved = _saved_config(attributes.get("objective"))
    config.update({k: v for k, v in saved.items() if k != "name" and k not in DROPPED_BLOCKS})
    for block, values in DEFAULT_PARAMS.get(name, {}).items():
        config.setdefault(block, dict(values))
    if name.startswith("multi:"):
        config["softmax_multiclass_param"] = {"num_class": str(num_class)}
    delta = attributes.get("count_poisson_max_delta_step")
    if name == "count:poisson" and delta is not None and not saved:
        config["poisson_regression_param"] = {"max_delta_step": delta}
    return config


def _saved_config(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def base_score(objective: str, stored: float, version: tuple[int, int]) -> np.float32:
    """The probability-space ``base_score`` the installed XGBoost must read."""
    value = F(stored)
    if version < (1, 0) and not objective.startswith("multi:"):
        return _prob_from_margin(objective, value)
    if objective == "binary:logitraw" and (1, 0) <= version < (1, 3):
        return logit(value)
    return value


def _prob_from_margin(objective: str, margin: np.float32) -> np.float32:
    if objective in SIGMOID_FAMILY:
        return _exact_inverse(margin, sigmoid, logit)
    if objective in EXP_FAMILY:
        return _exact_inverse(margin, libm.expf, libm.logf)
    return margin


def _exact_inverse(
    margin: np.float32, forward: Callable[[Any], Any], inverse: Callable[[Any], Any]
) -> np.float32:
    """forward(margin), or the nearest float32 whose inverse is exactly ``margin``."""
    guess = F(forward(margin))
    with np.errstate(all="ignore"):
        for step in range(NEIGHBOURS + 1):
            for candidate in {_step(guess, step), _step(guess, -step)}:
                if F(inverse(candidate)) == margin:
                    return candidate
    return guess


def _step(value: np.float32, steps: int) -> np.float32:
    target = F(np.inf) if steps > 0 else F(-np.inf)
    for _ in range(abs(steps)):
        value = np.nextafter(value, target)
    return F(value)


def sigmoid(margin: np.float32) -> np.float32:
    with np.errstate(all="ignore"):
        return F(ONE / (ONE + libm.expf(-F(margin))))


def logit(probability: np.float32) -> np.float32:
    """XGBoost's ProbToMargin for the logistic family, in float32: -logf(1/p - 1)."""
    with np.errstate(all="ignore"):
        return F(-libm.logf(F(ONE / F(probability) - ONE)))


def float_text(value: np.float32) -> str:
    """The shortest text that reads back as the same float32."""
    return np.format_float_positional(F(value), unique=True, trim="-")
