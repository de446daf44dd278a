"""How change events are decoded: one frozen, picklable :class:`DecodeSettings` built once by
the caller (the job from its :class:`~pipelines.cdc.ingest.CdcOptions`, a test by hand) and
handed to every decoder (:mod:`pipelines.cdc.decode`, :mod:`pipelines.cdc.values.convert`,
:mod:`pipelines.cdc.formats`, :mod:`pipelines.cdc.formats.avro`), instead of loose keywords.
A value the decoders do not know is refused here, naming the setting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Literal, cast, get_args

from paimon_core.errors import ConfigError

if TYPE_CHECKING:
    from pipelines.cdc.source_tables import TableFilter

#: the unit of a numeric timestamp whose event names no logical type (Debezium's
#: ``time.precision.mode``: ``connect`` / ``adaptive`` write milliseconds, ``adaptive_time_
#: microseconds`` microseconds)
EpochUnit = Literal["ms", "us"]
#: what becomes of a value that is Debezium's unchanged-TOAST placeholder
#: (:data:`pipelines.cdc.events.UNAVAILABLE`): ``previous`` (the default): the column keeps
#: its previous value (the job fills it from the key's earlier change in the batch, else from
#: the table as the batch starts); ``store``: the placeholder is stored as the value;
#: ``refuse``: the event is quarantined (``unchanged TOAST value for <col>``)
Unavailable = Literal["previous", "store", "refuse"]


@dataclass(frozen=True)
class DecodeSettings:
    """The knobs of decoding one batch's events.

    ``position_fields``: the fields of ``source`` ordering the events (``None``: those of the
    events' ``source.connector``); ``epoch_unit``: see :data:`EpochUnit`;
    ``sequence_column``: the table column filled with the source position (``None``: none);
    ``unavailable``: see :data:`Unavailable`; ``source_tables``: the source tables whose
    events are decoded (:class:`~pipelines.cdc.source_tables.TableFilter`; the others get
    the outcome :data:`~pipelines.cdc.source_tables.OTHER_TABLE`; ``None``: every event);
    ``decimal_base64``: Debezium JSON without schemas (``schemas.enable=false``) under
    ``decimal.handling.mode=precise``: a DECIMAL column's text values whose event names no
    logical type are Kafka Connect ``Decimal`` bytes (base64 of the unscaled value), decoded
    with the column's scale (never guessed: text that is no base64 is read as decimal text);
    ``op_ts_column``: the table column filled with each event's time of change in the source
    database (the ``op_ts`` metadata column, :mod:`pipelines.cdc.values.event_time`; an event
    without one is rejected; ``None``: none); ``filled_columns``: table columns the job
    fills itself after decoding (the ``database_name`` / ``table_name`` metadata columns),
    never expected in the events' images (a GoldenGate compressed update does not lack them).

    Raises:
        ConfigError: a value the decoders do not know (the message names the setting).
    """

    position_fields: tuple[str, ...] | None = None
    epoch_unit: EpochUnit = "ms"
    sequence_column: str | None = None
    unavailable: Unavailable = "previous"
    source_tables: TableFilter | None = None
    decimal_base64: bool = False
    op_ts_column: str | None = None
    filled_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.source_tables is not None:
            from pipelines.cdc.source_tables import TableFilter  # (it imports the decoders)

            if not isinstance(self.source_tables, TableFilter):
                raise ConfigError("source_tables",
                                  f"{self.source_tables!r} is not a TableFilter")
        if self.epoch_unit not in get_args(EpochUnit):
            raise ConfigError("epoch_unit", f"{self.epoch_unit!r} is not one of "
                                            f"{', '.join(get_args(EpochUnit))}")
        if self.unavailable not in get_args(Unavailable):
            raise ConfigError("unavailable", f"{self.unavailable!r} is not one of "
                                             f"{', '.join(get_args(Unavailable))}")
        pf = self.position_fields
        if pf is not None:
            if isinstance(pf, str) or not isinstance(pf, Sequence):
                raise ConfigError("position_fields", f"{pf!r} is not a sequence of field names")
            if not pf or not all(isinstance(f, str) and f for f in pf):
                raise ConfigError("position_fields", f"{list(pf)!r}: give one or more "
                                                     "non-empty field names")
            object.__setattr__(self, "position_fields", tuple(pf))
        if not isinstance(self.decimal_base64, bool):
            raise ConfigError("decimal_base64", f"{self.decimal_base64!r} is not a bool")
        for name in ("sequence_column", "op_ts_column"):
            sc = getattr(self, name)
            if sc is not None and (not isinstance(sc, str) or not sc):
                raise ConfigError(name, f"{sc!r} is not a column name")

    @classmethod
    def of(cls, settings: Mapping[str, object]) -> DecodeSettings:
        """Settings from a mapping of their names (e.g. a caller's keywords); a name that is
        not a setting raises :class:`ConfigError` naming it."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ConfigError(", ".join(unknown), "unknown decode setting(s); known: "
                                                  f"{', '.join(sorted(known))}")
        return cls(**cast("dict[str, object]", dict(settings)))  # type: ignore[arg-type]


#: decoding with every setting at its default
DEFAULT_SETTINGS = DecodeSettings()
