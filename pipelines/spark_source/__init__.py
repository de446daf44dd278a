"""The ``paimon`` Spark data source and Spark SQL over it.

* :mod:`pipelines.spark_source.source`: the data source (reads, ``spark.read.format("paimon")``);
* :mod:`pipelines.spark_source.options`: its option keys, declared once, and their validator;
* :mod:`pipelines.spark_source.filters`: Spark filters -> paimon_core predicates (pushdown);
* :mod:`pipelines.spark_source.sink`: its writers (``df.write`` / ``writeStream``);
* :mod:`pipelines.spark_source.sink_schema`: a write's schema against the table's (evolution);
* :mod:`pipelines.spark_source.sql`: ``spark.sql`` over catalog tables (``register_sql``);
* :mod:`pipelines.spark_source.statements`: the statements it runs (CREATE, INSERT, ALTER, ...);
* :mod:`pipelines.spark_source.tables`: catalog tables as Spark sees them (CREATE options).
"""
