"""Writes model artifacts with whichever XGBoost release is importable (an old one, installed
in a folder of its own beside numpy<2; see build.sh), as SageMaker's built-in XGBoost of that
era wrote ``xgboost-model``: a pickle of the Booster and/or ``Booster.save_model`` to a path
without an extension. Beside each artifact, the predictions that release makes on fixed rows
(``<name>.value.npy``, ``<name>.margin.npy``); ``manifest.json`` lists them.

Run as: python3 make_artifacts.py OUT_DIR. Runs under every release from 0.90 to 3.0.5, so it
uses only the API they share. No smserve import: smserve's Python and numpy are not these.
"""

from __future__ import annotations

import json
import os
import pickle
import sys

import numpy as np
import xgboost as xgb

VERSION = tuple(int(part) for part in xgb.__version__.split(".")[:2])
ROUNDS = 6
N_FEATURES = 5

TREE_OBJECTIVES = (
    ("binary:logistic", {}),
    ("binary:logitraw", {}),
    ("reg:squarederror", {}),
    ("reg:gamma", {}),
    ("multi:softprob", {"num_class": 3}),
    ("count:poisson", {}),
    ("binary:logistic", {"base_score": 0.3}),
    ("count:poisson", {"base_score": 2.0}),
)
LINEAR_OBJECTIVES = (("reg:squarederror", {}), ("binary:logistic", {}), ("count:poisson", {}))
DART_OBJECTIVES = (("binary:logistic", {}), ("reg:squarederror", {}))


def rows(seed: int, n: int) -> np.ndarray:
    features = np.random.RandomState(seed).rand(n, N_FEATURES).astype(np.float32)
    features[::7, 2] = np.nan  # missing values take each split's default direction
    return features


def labels(objective: str, features: np.ndarray) -> np.ndarray:
    x0, x1 = features[:, 0], features[:, 1]
    noise = np.random.RandomState(3).rand(len(features))
    if objective.startswith("binary:"):
        return ((x0 + x1 + 0.3 * noise) > 1.1).astype(np.float32)
    if objective.startswith("multi:"):
        return np.minimum((x0 * 3).astype(int), 2).astype(np.float32)
    if objective == "count:poisson":
        return np.round(np.exp(2 * x0 + noise)).astype(np.float32)
    if objective == "reg:gamma":
        return np.exp(x0 + 0.5 * noise).astype(np.float32)
    return (3 * x0 + x1 + noise).astype(np.float32)


def train(booster: str, objective: str, extra: dict, early_stopping: bool = False) -> xgb.Booster:
    params = {"booster": booster, "objective": objective, "max_depth": 3, "eta": 0.3, "seed": 1}
    params.update(extra)
    if booster == "dart":
        # 0.90's DART predict drops trees at random unless rate_drop is 0
        params.update({"rate_drop": 0.1 if VERSION >= (1, 0) else 0.0, "one_drop": 0})
    if booster == "gblinear":
        params.pop("max_depth")
    features = rows(11, 400)
    dtrain = xgb.DMatrix(features, label=labels(objective, features), missing=np.nan)
    if not early_stopping:
        return xgb.train(params, dtrain, ROUNDS)
    held = rows(12, 200)
    top = 2 if objective.startswith("multi:") else 1  # labels that contradict training
    dvalid = xgb.DMatrix(held, label=top - labels(objective, held), missing=np.nan)
    params.update({"max_depth": 6, "eta": 0.8})
    return xgb.train(
        params,
        dtrain,
        40,
        evals=[(dvalid, "validation")],
        early_stopping_rounds=3,
        verbose_eval=False,
    )


def best_limit(model: xgb.Booster) -> int | None:
    best = model.attr("best_iteration")
    return None if best is None else int(best) + 1


def predict(model: xgb.Booster, features: np.ndarray, margin: bool) -> np.ndarray:
    """As the built-in served it: honouring best_iteration (best_ntree_limit)."""
    data = xgb.DMatrix(features, missing=np.nan)
    limit = best_limit(model)
    if limit is None:
        return model.predict(data, output_margin=margin)
    if VERSION >= (1, 4):
        return model.predict(data, output_margin=margin, iteration_range=(0, limit))
    return model.predict(data, output_margin=margin, ntree_limit=limit)


def forms() -> tuple[str, ...]:
    """save_model everywhere (binary up to 2.0, UBJSON from 2.1); pickle everywhere."""
    return ("pickle", "save_model")


def write(out: str, name: str, model: xgb.Booster, features: np.ndarray, meta: dict) -> list:
    value = np.asarray(predict(model, features, False), dtype=np.float32)
    again = np.asarray(predict(model, features, False), dtype=np.float32)
    np.save(os.path.join(out, name + ".value.npy"), value)
    np.save(os.path.join(out, name + ".margin.npy"), predict(model, features, True))
    entries = []
    for form in forms():
        path = os.path.join(out, name + "." + form)
        if form == "pickle":
            with open(path, "wb") as stream:
                pickle.dump(model, stream, protocol=3 if VERSION < (1, 2) else 4)
        else:
            model.save_model(path)
        deterministic = bool(np.array_equal(value, again, equal_nan=True))
        entries.append(
            dict(
                meta,
                file=os.path.basename(path),
                form=form,
                name=name,
                best_limit=best_limit(model),
                deterministic=deterministic,
            )
        )
    return entries


def models() -> list:
    made = []
    for index, (objective, extra) in enumerate(TREE_OBJECTIVES):
        made.append(("gbtree", objective, extra, False, f"gbtree-{index}"))
    for index, (objective, extra) in enumerate(DART_OBJECTIVES):
        made.append(("dart", objective, extra, False, f"dart-{index}"))
    for index, (objective, extra) in enumerate(LINEAR_OBJECTIVES):
        made.append(("gblinear", objective, extra, False, f"gblinear-{index}"))
    made.append(("gbtree", "binary:logistic", {}, True, "early-stopped"))
    made.append(("gbtree", "multi:softprob", {"num_class": 3}, True, "early-stopped-multi"))
    return made


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    features = rows(5, 64)
    np.save(os.path.join(out, "rows.npy"), features)
    manifest = []
    for booster, objective, extra, early, name in models():
        model = train(booster, objective, extra, early)
        meta = {
            "version": xgb.__version__,
            "booster": booster,
            "objective": objective,
            "params": extra,
        }
        manifest.extend(write(out, name, model, features, meta))
    with open(os.path.join(out, "manifest.json"), "w") as stream:
        json.dump({"version": xgb.__version__, "artifacts": manifest}, stream, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
