"""Writing data files: Parquet layout and options, column statistics, the data-file writer
(``org.apache.paimon.io``). Used by table writes and by compaction, below both."""
