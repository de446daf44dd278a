"""Row-level changes for Spark users in Python: :class:`PaimonTable` (delta-spark's
``DeltaTable``) with UPDATE, DELETE and MERGE, each one commit, plus history and restore.

* :mod:`pipelines.rowlevel.table`: the API (``PaimonTable``, ``PaimonMergeBuilder``);
* :mod:`pipelines.rowlevel.plan`: what the change does to each row (one DataFrame);
* :mod:`pipelines.rowlevel.target`: the snapshot read, each row knowing its data file;
* :mod:`pipelines.rowlevel.apply`: the one commit (row kinds or copy-on-write).
"""

from pipelines.rowlevel.apply import RowLevelResult
from pipelines.rowlevel.plan import MergeMatchError
from pipelines.rowlevel.table import PaimonMergeBuilder, PaimonTable

__all__ = ["MergeMatchError", "PaimonMergeBuilder", "PaimonTable", "RowLevelResult"]
