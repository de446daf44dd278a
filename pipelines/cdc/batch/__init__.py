"""One batch of the CDC job (:func:`pipelines.cdc.ingest.ingest_batch`), stage by stage:

* :mod:`pipelines.cdc.batch.stage`: the decode stage (landing files -> Arrow IPC blobs per
  bucket);
* :mod:`pipelines.cdc.batch.passes`: one write pass (planner, picklable task, collector);
* :mod:`pipelines.cdc.batch.rows`: row-level transforms of the decoded rows;
* :mod:`pipelines.cdc.batch.commit`: the commit in steps of a batch holding truncates.
"""
