"""Spark integration (``pip install smserve[spark]``): ``score(df, model_dir)`` scores a
DataFrame's rows with the endpoint's own service and output names, loading the model once per
Python worker process::

    from smserve.spark import score

    scored = score(spark.read.parquet("s3://bucket/features/"), "/models/xgb", keep=["id"])
    scored.write.parquet("s3://bucket/scores/")

``smserve score --engine spark`` (``smserve.spark.engine``) scores whole files with the local
engine's bytes. Only this package imports pyspark; see docs/design/spark.md for the design."""

from smserve.spark.dataframe import score

__all__ = ["score"]
