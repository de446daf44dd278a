"""The Spark jobs' entry points, each runnable as ``python -m pipelines.jobs.<job>`` or
``spark-submit pipelines/jobs/<job>.py``, all on one runner (:mod:`pipelines.jobs.runner`):

* :mod:`pipelines.jobs.cdc_ingest`: CDC change events -> a primary-key table
  (:mod:`pipelines.cdc`);
* :mod:`pipelines.jobs.batch_overwrite`: INSERT OVERWRITE from files or a table
  (:mod:`pipelines.batch_overwrite`);
* :mod:`pipelines.jobs.compact`: compaction in Spark tasks (:mod:`pipelines.compact`);
* :mod:`pipelines.jobs.expire`: snapshot expiry and orphan removal (:mod:`pipelines.expire`).
"""
