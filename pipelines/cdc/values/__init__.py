"""How event values become Paimon-typed Arrow columns: :mod:`.convert` (JSON values per type
family), :mod:`.connect_decimal` (Kafka Connect decimals), :mod:`.geometry` (Debezium's
spatial types) and :mod:`.shared_schema` (an envelope schema shared by a file's events)."""
