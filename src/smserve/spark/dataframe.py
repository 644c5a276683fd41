"""``smserve.spark.score(df, model_dir)``: a DataFrame's rows scored with the endpoint's own
service, through ``DataFrame.mapInArrow``.

Each Arrow batch Spark hands a Python worker goes the way an Arrow or Parquet request body
goes on the endpoint, without the bytes: the column rule of ``codecs/columnar.py`` (feature
columns by name in the model's order, else by position; any other column is an error), the
finite check, ``InferenceService.predict`` with the selected outputs, and
``table_from_prediction``, which names the output columns as the Arrow and Parquet encoders
do. The one difference is forced by Spark: it has no fixed-size arrays, so a vector output
is an ``array`` column (an Arrow list) rather than a fixed-size list.

The driver loads the model once (``loaded``) before the job exists, to check the request
(the outputs asked for, the feature columns and their types) and to learn the output schema
from one row of zeros, so a mistake fails at the call, naming what to fix, not in a task."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]

from smserve.codecs.columnar import batch_from_table, table_from_prediction
from smserve.codecs.finite import check_finite
from smserve.config import Settings
from smserve.custom_attributes import OUTPUTS
from smserve.errors import DecodeError, InvalidInput
from smserve.service import InferenceService
from smserve.spark.loaded import service_for
from smserve.types import Batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField, StructType

LABEL = "DataFrame"  # names the input in messages, where the endpoint names the media type


@dataclass(frozen=True, slots=True)
class Request:
    """What every task needs: the settings that load the model (the cache key), the output
    keys (None: the endpoint's) and the columns carried through unscored."""

    settings: Settings
    outputs: tuple[str, ...] | None
    keep: tuple[str, ...]


def score(
    df: DataFrame,
    model_dir: str | Path,
    outputs: Sequence[str] | None = None,
    keep: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> DataFrame:
    """``df``'s rows scored: the ``keep`` columns (ids, say) first, then one column per
    output, named and valued as the endpoint's Arrow and Parquet answers are.

    ``outputs``: keys as in SageMaker's ``CustomAttributes: outputs=<key>,...`` (default:
    the endpoint's, from ``SAGEMAKER_INFERENCE_OUTPUT``). Every column not in ``keep`` is a
    feature column, read by the endpoint's column rule. ``environ``: the endpoint's settings
    (default: the driver's environment), applied in every task. ``model_dir`` must be
    readable at the same path by the driver and every executor. Raises StartupError for a
    model that cannot be loaded, ClientError for unknown outputs or unusable columns."""
    settings = Settings.from_env(environ).replace(model_dir=Path(model_dir).absolute())
    service = service_for(settings)
    request = Request(settings, service.requested(_attribute(outputs)), tuple(keep))
    width = _checked_width(df, request, service)
    schema = _schema(df, request, service, width)
    return df.mapInArrow(functools.partial(answer_batches, request), schema)


def answer_batches(request: Request, batches: Iterator[Any]) -> Iterator[Any]:
    """The function each task runs: Arrow record batches in, answered record batches out."""
    service = service_for(request.settings)
    for batch in batches:
        if batch.num_rows:
            yield from answer_table(service, request, pa.Table.from_batches([batch])).to_batches()


def answer_table(service: InferenceService, request: Request, table: Any) -> Any:
    """The kept columns, then the outputs, for the rows of ``table``."""
    features = _features(service, table.drop_columns(list(request.keep)))
    answer = _spark_typed(table_from_prediction(service.predict(features, request.outputs)))
    kept = [table.column(name) for name in request.keep]
    return pa.table([*kept, *answer.columns], names=[*request.keep, *answer.column_names])


def _features(service: InferenceService, table: Any) -> Batch:
    batch = batch_from_table(table, LABEL, service.context)
    check_finite(batch, LABEL)
    return batch


def _attribute(outputs: Sequence[str] | None) -> str | None:
    """``outputs`` as the custom attribute the endpoint reads, so that keys are checked,
    lower-cased and deduplicated exactly as there."""
    if outputs is None:
        return None
    if isinstance(outputs, str):
        raise InvalidInput(f"outputs= takes a list of keys, e.g. [{outputs!r}], not a string")
    return f"{OUTPUTS}={','.join(outputs)}"


def _checked_width(df: DataFrame, request: Request, service: InferenceService) -> int:
    """The number of feature columns, after the column rule has passed on a row of nulls
    with ``df``'s feature columns and types; raises ClientError saying what to change."""
    missing = [name for name in request.keep if name not in df.columns]
    if missing:
        raise InvalidInput(f"keep= names {missing[0]!r}, which is not a column of the DataFrame")
    fields = [field for field in df.schema.fields if field.name not in request.keep]
    empty = pa.table({field.name: pa.nulls(1, _arrow_type(field)) for field in fields})
    try:
        return _features(service, empty).n_columns
    except InvalidInput as exc:
        raise InvalidInput(f"{exc.message} (keep= carries columns through unscored)") from None


def _arrow_type(field: StructField) -> Any:
    from pyspark.sql.pandas.types import to_arrow_type

    try:
        return to_arrow_type(field.dataType)
    except Exception:  # a type Arrow cannot hold is no number either
        raise DecodeError(
            f"{LABEL}: column {field.name!r} holds {field.dataType.simpleString()} values; "
            "feature columns must be numbers (int, float, boolean or decimal)"
        ) from None


def _schema(df: DataFrame, request: Request, service: InferenceService, width: int) -> StructType:
    """The kept columns' fields, then the outputs' (learned by scoring one row of zeros)."""
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructType

    zeros = Batch(np.zeros((1, width), dtype=np.float32))
    answer = _spark_typed(table_from_prediction(service.predict(zeros, request.outputs)))
    kept = [df.schema[name] for name in request.keep]
    return StructType([*kept, *from_arrow_schema(answer.schema).fields])


def _spark_typed(table: Any) -> Any:
    """``table`` with each fixed-size list made a list (Spark reads no fixed-size lists)."""
    return table.cast(pa.schema([pa.field(f.name, _variable(f.type)) for f in table.schema]))


def _variable(kind: Any) -> Any:
    if pa.types.is_fixed_size_list(kind):
        return pa.list_(_variable(kind.value_type))
    return kind
