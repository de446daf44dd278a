"""The CDC job's room: change events -> a primary-key Paimon table, exactly once.

* :mod:`pipelines.cdc.ingest`: the job (batches, passes, the one commit per batch);
* :mod:`pipelines.cdc.formats`, :mod:`pipelines.cdc.avro`, :mod:`pipelines.cdc.format_events`:
  the change-event formats (Debezium JSON / Avro, canal, maxwell, ogg, AWS DMS);
* :mod:`pipelines.cdc.decode`, :mod:`pipelines.cdc.values`, :mod:`pipelines.cdc.connect_decimal`,
  :mod:`pipelines.cdc.shared_schema`: the vectorised decoder (lines -> typed change rows);
* :mod:`pipelines.cdc.events`: the Spark SQL reference semantics of decoding;
* :mod:`pipelines.cdc.ranges`: line-aligned byte ranges of large landing files;
* :mod:`pipelines.cdc.routing`: which write task gets each row (its bucket);
* :mod:`pipelines.cdc.toast`: unchanged TOASTed values filled from the previous row;
* :mod:`pipelines.cdc.schema`: a batch's new columns, committed with its rows.
"""
