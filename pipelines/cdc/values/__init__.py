"""How event values become Paimon-typed Arrow columns: :mod:`.convert` (JSON values per type
family), :mod:`.connect_decimal` (Kafka Connect decimals), :mod:`.geometry` (Debezium's
spatial types), :mod:`.shared_schema` (an envelope schema shared by a file's events) and
:mod:`.event_time` (each event's time of change, the ``op_ts`` metadata column)."""
