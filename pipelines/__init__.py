"""PySpark jobs over paimon_core (issue 5): the ``paimon`` Spark data source
(:mod:`pipelines.spark_source.source`), the bucketed DataFrame write with one driver-side commit
(:mod:`pipelines.writer`), and the jobs :mod:`pipelines.cdc.ingest`,
:mod:`pipelines.batch_overwrite`, :mod:`pipelines.compact` and :mod:`pipelines.expire`, each
runnable as ``python -m pipelines.jobs.<job>`` or with ``spark-submit`` (:mod:`pipelines.jobs`,
one runner); row-level changes
(UPDATE / DELETE / MERGE, delta-spark's ``DeltaTable`` shape) in :mod:`pipelines.rowlevel`.
The SparkSession comes from :func:`pipelines.session.get_session`. Imports point one way:
assets -> pipelines -> paimon_core.
"""
