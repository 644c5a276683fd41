"""What an XGBoost objective lets a model answer besides its outputs (no XGBoost import)."""

from __future__ import annotations

from smserve.algorithms.base import Capabilities, Scores

BINARY_LABELS = ("0", "1")
# Their one number per row is a class label, neither a score nor a regression value.
_LABEL_OBJECTIVES = ("multi:", "binary:hinge")


def objective_capabilities(objective: str, num_class: int) -> Capabilities:
    """binary:logistic scores two classes and regresses its probability; multi:softprob
    scores ``num_class`` classes; label objectives do neither; every other objective (reg:*,
    rank:*, count:*, survival:*, ...) regresses."""
    if objective == "binary:logistic":
        return Capabilities(Scores.PROBABILITY, BINARY_LABELS, regression=True)
    if objective == "multi:softprob":
        labels = tuple(str(i) for i in range(num_class))
        return Capabilities(Scores.PROBABILITIES, labels)
    if objective.startswith(_LABEL_OBJECTIVES):
        return Capabilities()
    return Capabilities(regression=True)
