"""Apache Paimon, in pure Python."""
