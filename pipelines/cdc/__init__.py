"""The CDC job's room: change events -> primary-key Paimon tables, exactly once.

* :mod:`pipelines.cdc.ingest`: the job (batches, passes, the one commit per batch);
* :mod:`pipelines.cdc.database`: the database sync (one feed, every table it names);
* :mod:`pipelines.cdc.source_tables`: the table each event names, which tables a job takes;
* :mod:`pipelines.cdc.formats` (with ``.avro``, ``.views``, ``.reference``,
  ``.ogg_compressed``): the change-event formats (Debezium JSON / Avro, canal, maxwell, ogg,
  AWS DMS);
* :mod:`pipelines.cdc.decode`, :mod:`pipelines.cdc.view` and :mod:`pipelines.cdc.values`
  (``.convert``, ``.connect_decimal``, ``.geometry``, ``.shared_schema``): the vectorised
  decoder (lines -> typed change rows);
* :mod:`pipelines.cdc.events`: the Spark SQL reference semantics of decoding;
* :mod:`pipelines.cdc.ranges`, :mod:`pipelines.cdc.avro_blocks`: byte ranges of large landing
  files (line-aligned; Avro blocks);
* :mod:`pipelines.cdc.routing`: which write task gets each row (its bucket);
* :mod:`pipelines.cdc.toast`: unchanged TOASTed values filled from the previous row;
* :mod:`pipelines.cdc.schema`: a batch's new columns, committed with its rows.
"""
