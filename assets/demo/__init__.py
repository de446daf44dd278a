"""The demo's code location as ``defs.yaml`` files of :mod:`assets.components` (the dg
project's defs module): ``resources/``, ``ingestion/``, ``derived/``, ``maintenance/``, and
``jobs.py`` for the jobs that span several tables."""
