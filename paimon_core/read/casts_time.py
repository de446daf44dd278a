"""Read-side casts of Paimon Java 0.9 that involve DATE, TIME, TIMESTAMP and TIMESTAMP_LTZ
(``TimestampToTimestampCastRule``, ``TimestampToDateCastRule``, ``DateToTimestampCastRule``,
``TimestampToTimeCastRule``, ``TimeToTimestampCastRule``, ``TimestampToNumericPrimitive``,
``NumericPrimitiveToTimestamp``, ``*ToStringCastRule``, ``StringTo{Date,Timestamp}CastRule``).

Java's quirks are kept: a TIMESTAMP becomes a DATE by ``millis / 86400000`` truncated toward
zero (so 1969-12-31 23:00 reads as 1970-01-01) and a TIME by ``millis % 86400000``; lowering a
timestamp's precision to 3 or less truncates its epoch milliseconds toward zero.

TIMESTAMP_LTZ: Java 0.9's rules take the JVM's default zone (``TimeZone.getDefault()`` /
``ZoneId.systemDefault()``: ``-Duser.timezone`` or ``TZ``), never an engine's session zone
(Flink's ``table.local-time-zone``, Spark's ``spark.sql.session.timeZone`` do not reach
``CastExecutors``). We read as a JVM in UTC does (the zone our readers give LTZ values in;
the oracle's JVM runs with ``-Duser.timezone=UTC``). Under another JVM zone Z, Java reads
differently: TIMESTAMP <-> LTZ (the wall time taken in Z), DATE / TIME / STRING / INT / BIGINT
-> LTZ (midnight, the time of 1970-01-01, the parsed wall time, the epoch seconds' wall time,
each in Z), LTZ -> DATE / TIME / STRING (the instant's wall time in Z). LTZ -> INT / BIGINT
(``Timestamp.toLocalDateTime``, zone-free epoch seconds) and LTZ -> LTZ do not depend on Z.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.read.casts_values import check_values, from_numpy, to_numpy
from paimon_core.types import STRING_ROOTS, AtomicType, TypeRoot, timestamp_unit, to_arrow_type

__all__ = ["TEMPORAL_ROOTS", "rule"]

TEMPORAL_ROOTS = frozenset({TypeRoot.DATE, TypeRoot.TIME, TypeRoot.TIMESTAMP,
                            TypeRoot.TIMESTAMP_LTZ})
_TS = frozenset({TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ})
_PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
_DAY_MS = 86_400_000
_MAX_STRING = 2**31 - 1

_Rule = Callable[[pa.Array, AtomicType, AtomicType], pa.Array]


def rule(s: AtomicType, t: AtomicType) -> _Rule | None:
    sr, tr = s.root, t.root
    if sr in _TS and tr in _TS:
        return _ts_to_ts
    if sr in _TS and tr is TypeRoot.DATE:
        return _ts_to_date
    if sr is TypeRoot.DATE and tr in _TS:
        return _date_to_ts
    if sr in _TS and tr is TypeRoot.TIME:
        return _ts_to_time
    if sr is TypeRoot.TIME and tr in _TS:
        return _time_to_ts
    if sr in _TS and tr in (TypeRoot.INT, TypeRoot.BIGINT):
        return _ts_to_seconds
    if sr in (TypeRoot.INT, TypeRoot.BIGINT) and tr in _TS:
        return _seconds_to_ts
    string_target = tr is TypeRoot.VARCHAR and (t.length or 0) == _MAX_STRING
    if string_target and sr in _TS:
        return _ts_to_string
    if string_target and sr is TypeRoot.DATE:
        return _date_to_string
    if string_target and sr is TypeRoot.TIME:
        return _time_to_string
    if sr in STRING_ROOTS and tr is TypeRoot.DATE:
        return _string_to_date
    if sr in STRING_ROOTS and tr in _TS:
        return _string_to_ts
    if sr in STRING_ROOTS and tr is TypeRoot.TIME:
        return _string_to_time
    return None


def _ticks(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, int]:
    """Epoch ticks of a timestamp array (its own unit), validity, ticks per second."""
    unit = arr.type.unit
    values, valid = to_numpy(pc.cast(arr, pa.int64()), 0)
    return values.astype(np.int64), valid, _PER_SECOND[unit]


def _epoch_millis(ticks: np.ndarray, per_second: int) -> np.ndarray:
    """``Timestamp.getMillisecond()``: floor to milliseconds."""
    if per_second >= 1000:
        return np.asarray(np.floor_divide(ticks, per_second // 1000))
    return np.asarray(ticks * (1000 // per_second))


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """Java's ``a / b`` on longs (toward zero)."""
    q = np.floor_divide(a, b)
    return np.asarray(np.where((a % b != 0) & (a < 0), q + 1, q))


def _ts_array(ticks: np.ndarray, valid: np.ndarray, per_second: int, t: AtomicType) -> pa.Array:
    """Ticks (``per_second``) as the Arrow type of ``t``, converted exactly."""
    unit = timestamp_unit(t.precision if t.precision is not None else 6)
    want = _PER_SECOND[unit]
    out = ticks * (want // per_second) if want >= per_second else ticks // (per_second // want)
    return pc.cast(from_numpy(out, valid, pa.int64()), to_arrow_type(t))


def _ts_to_ts(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    ticks, valid, per = _ticks(arr)
    sp, tp = s.precision or 0, t.precision or 0
    if tp >= sp:
        return _ts_array(ticks, valid, per, t)
    if tp <= 3:  # DateTimeUtils.truncate: zeroLastDigits(millis, 3 - p), toward zero
        step = 10 ** (3 - tp)
        ms = _trunc_div(_epoch_millis(ticks, per), step) * step
        return _ts_array(ms, valid, 1000, t)
    step = 10 ** (9 - tp)  # nano of millisecond floored (a floor of the whole value)
    nanos = ticks * (1_000_000_000 // per)
    return _ts_array(np.floor_divide(nanos, step) * step, valid, 1_000_000_000, t)


def _ts_to_date(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    ticks, valid, per = _ticks(arr)
    ms = _epoch_millis(ticks, per)
    days = (np.floor_divide(ms, _DAY_MS) if s.root is TypeRoot.TIMESTAMP_LTZ
            else _trunc_div(ms, _DAY_MS))
    return pc.cast(from_numpy(days.astype(np.int32), valid, pa.int32()), pa.date32())


def _date_to_ts(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    days, valid = to_numpy(pc.cast(arr, pa.int32()), 0)
    return _ts_array(days.astype(np.int64) * _DAY_MS, valid, 1000, t)


def _ts_to_time(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    ticks, valid, per = _ticks(arr)
    ms = _epoch_millis(ticks, per)
    tod = (np.mod(ms, _DAY_MS) if s.root is TypeRoot.TIMESTAMP_LTZ
           else np.fmod(ms, _DAY_MS))  # Java's % keeps the dividend's sign
    return pc.cast(from_numpy(tod.astype(np.int32), valid, pa.int32()), pa.time32("ms"))


def _time_to_ts(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    ms, valid = to_numpy(pc.cast(arr, pa.int32()), 0)
    return _ts_array(ms.astype(np.int64), valid, 1000, t)


def _ts_to_seconds(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    ticks, valid, per = _ticks(arr)
    secs = _trunc_div(_epoch_millis(ticks, per), 1000)  # DateTimeUtils.unixTimestamp
    np_type = np.int64 if t.root is TypeRoot.BIGINT else np.int32
    return from_numpy(secs.astype(np_type), valid, to_arrow_type(t))


def _seconds_to_ts(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    secs, valid = to_numpy(pc.cast(arr, pa.int64()), 0)
    return _ts_array(secs.astype(np.int64) * 1000, valid, 1000, t)


def _ts_to_string(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    """``formatTimestamp``: ``yyyy-MM-dd HH:mm:ss`` and, for a precision p > 0, ``.`` and
    the first p of the nine fraction digits."""
    ticks, valid, per = _ticks(arr)
    secs = np.floor_divide(ticks, per)
    whole = pc.strftime(from_numpy(secs, valid, pa.timestamp("s")), "%Y-%m-%d %H:%M:%S")
    p = s.precision or 0
    if p == 0:
        return whole
    nanos = (ticks - secs * per) * (1_000_000_000 // per)
    frac = pc.utf8_lpad(pc.cast(from_numpy(nanos, valid, pa.int64()), pa.string()), 9, "0")
    return pc.binary_join_element_wise(whole, pc.utf8_slice_codeunits(frac, 0, p), ".")


def _date_to_string(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    return pc.strftime(pc.cast(arr, pa.timestamp("s")), "%Y-%m-%d")


def _time_to_string(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    """``formatTimestampMillis``: ``HH:mm:ss`` and, for p > 0, the millisecond digits up to
    the last non-zero one (at least one, at most p)."""
    ms, valid = to_numpy(pc.cast(arr, pa.int32()), 0)
    ms = np.mod(ms.astype(np.int64), _DAY_MS)
    whole = pc.strftime(from_numpy(ms // 1000, valid, pa.timestamp("s")), "%H:%M:%S")
    p = s.precision or 0
    if p == 0:
        return whole
    digits = pc.utf8_lpad(pc.cast(from_numpy(ms % 1000, valid, pa.int64()), pa.string()), 3,
                          "0")
    digits = pc.utf8_rtrim(digits, characters="0")
    digits = pc.utf8_slice_codeunits(pc.if_else(pc.equal(digits, ""), "0", digits), 0, p)
    return pc.binary_join_element_wise(whole, digits, ".")


# DateTimeUtils.parseDate on the text before its first space (unless it starts with one):
# y[-m[-d]], each part an unsigned integer with blanks around it
_DATE_TEXT = r"^\s*(?P<y>[0-9]+)\s*(?:-\s*(?P<m>[0-9]+)\s*(?:-\s*(?P<d>[0-9]+)\s*)?)?$"


def _string_to_date(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    """``BinaryStringUtils.toDate``: digits only are a day number, else
    ``DateTimeUtils.parseDate``: ``y[-m[-d]]`` (month and day default to 1; a time after a
    space is ignored: '2017-12-12 09:30:00' is 2017-12-12), the date checked as its
    ``isIllegalDate`` does (years 0-9999, a day that exists in its month; '2024-02-30' fails)."""
    numeric = pc.match_substring_regex(arr, r"^[0-9]+$")
    dated = pc.replace_substring_regex(pc.fill_null(arr, "1970"), r"^([^ ].*?) .*$", r"\1")
    parts = pc.extract_regex(dated, _DATE_TEXT)

    def num(key: str) -> np.ndarray:
        """The part's value; past 9 digits (leading zeros aside) 10**9, out of any range."""
        given = pc.fill_null(parts.field(key), "")
        digits = pc.utf8_ltrim(given, characters="0")
        value = pc.if_else(pc.greater(pc.utf8_length(digits), 9), "1000000000",
                           pc.if_else(pc.equal(given, ""), "1", pc.if_else(
                               pc.equal(digits, ""), "0", digits)))
        return np.asarray(to_numpy(pc.cast(value, pa.int64()), 0)[0], dtype=np.int64)

    y, m, d = (num(k) for k in ("y", "m", "d"))
    leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
    mc = np.clip(m, 1, 12)
    ok = ((y <= 9999) & (m >= 1) & (m <= 12) & (d >= 1)
          & (d <= _MONTH_DAYS[mc] + (leap & (mc == 2))))
    ok = pc.and_(pc.is_valid(parts), pa.array(ok))
    check_values(arr, pc.or_(pc.fill_null(numeric, False), ok), s, t, "not a date")
    days = pc.if_else(numeric, pc.cast(pc.if_else(numeric, arr, "0"), pa.int32()),
                      pa.array(_days_from_civil(y, mc, d).astype(np.int32)))
    return pc.cast(days, pa.date32())


# DateTimeUtils.DEFAULT_TIMESTAMP_FORMATTER: yyyy-[MM][M]-[dd][d][ [HH][H]:[mm][m]:[ss][s][.f]]
_TS_TEXT = (r"^(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
            r"(?: (?P<h>[0-9]{1,2}):(?P<mi>[0-9]{1,2}):(?P<s>[0-9]{1,2})"
            r"(?:\.(?P<f>[0-9]{0,9}))?)?$")
_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], np.int64)


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (years >= 1)."""
    y = y - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * np.where(m > 2, m - 3, m + 9) + 2) // 5 + d - 1
    return np.asarray(era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468)


def _parsed_seconds(arr: pa.Array, s: AtomicType, t: AtomicType
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Epoch seconds and nano of second of ``yyyy-M-d[ H:m:s[.f]]`` strings as Java's
    formatter resolves them (``ResolverStyle.SMART``): fields out of range fail, a day past
    the month's end (up to 31) is its last day ('2024-02-30' is 2024-02-29), and 24:00:00
    is the next day's midnight."""
    check_values(arr, pc.match_substring_regex(arr, _TS_TEXT), s, t,
                 "not a timestamp (yyyy-M-d[ H:m:s[.fffffffff]])")
    parts = pc.extract_regex(pc.fill_null(arr, "1970-1-1"), _TS_TEXT)

    def num(key: str, default: str) -> np.ndarray:
        value = pc.if_else(pc.equal(pc.fill_null(parts.field(key), ""), ""), default,
                           parts.field(key))
        return np.asarray(to_numpy(pc.cast(value, pa.int64()), 0)[0], dtype=np.int64)

    y, mo, d, h, mi, sec = (num(k, v) for k, v in (("y", "1970"), ("mo", "1"), ("d", "1"),
                                                  ("h", "0"), ("mi", "0"), ("s", "0")))
    nanos = num("f", "0") * 10 ** (9 - pc.utf8_length(pc.fill_null(parts.field("f"), ""))
                                   .to_numpy(zero_copy_only=False).astype(np.int64))
    midnight = (h == 24) & (mi == 0) & (sec == 0) & (nanos == 0)
    ok = ((y >= 1) & (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= 31) & ((h <= 23) | midnight)
          & (mi <= 59) & (sec <= 59))
    check_values(arr, pa.array(ok), s, t, "not a timestamp (a field out of its range)")
    mo = np.clip(mo, 1, 12)
    leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
    d = np.minimum(d, _MONTH_DAYS[mo] + (leap & (mo == 2)))
    days = _days_from_civil(y, mo, d) + midnight
    return days * 86400 + np.where(midnight, 0, h) * 3600 + mi * 60 + sec, nanos


def _string_to_ts(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    """``DateTimeUtils.parseTimestampData``: ``yyyy-M-d[ H:m:s[.f...]]`` (four year digits, one
    or two for each of month to second, up to nine fraction digits, no ``T``, nothing
    trimmed; :func:`_parsed_seconds`), the nano of second floored to the target precision
    (before 1970 too: '1600-02-29 12:34:56.789' is 12:34:56 at precision 0). Years 1-9999
    are read; TIMESTAMP(7..9) holds years 1678-2261 only (int64 nanoseconds): a value
    outside is refused, naming it."""
    secs, nanos = _parsed_seconds(arr, s, t)
    valid = np.asarray(pc.is_valid(arr))
    tp = t.precision if t.precision is not None else 6
    step = 10 ** (9 - tp)  # fromTemporalAccessor floors the nano of second to the precision
    per = _PER_SECOND[timestamp_unit(tp)]
    limit = np.iinfo(np.int64).max // per - 1
    check_values(arr, pa.array((np.abs(secs) <= limit) | ~valid), s, t,
                 f"outside the range of TIMESTAMP({tp}) (years 1678-2261 at nanoseconds)")
    ticks = secs * per + nanos // step * step // (1_000_000_000 // per)
    return _ts_array(ticks, valid, per, t)


# DateTimeUtils.parseTime: H[:m[:s[.f]]] and an optional [+|-]h[:m] offset, each number of
# any width, blanks around each part
_TIME_TEXT = (r"^\s*(?P<h>[0-9]+)\s*(?::\s*(?P<m>[0-9]+)\s*(?::\s*(?P<s>[0-9]+)\s*"
              r"(?:\.\s*(?P<f>[0-9]*)\s*)?)?)?"
              r"(?:(?P<op>[+-])\s*(?P<th>[0-9]+)\s*(?::\s*(?P<tm>[0-9]+)\s*)?)?$")


def _string_to_time(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    """``BinaryStringUtils.toTime``: digits are milliseconds of the day, else
    ``DateTimeUtils.parseTime``: ``H[:m[:s[.fff]]]`` where a fourth fraction digit of 5 or
    more rounds the millisecond up, and a ``+h[:m]`` / ``-h[:m]`` offset is added to
    (subtracted from) the hours and minutes, as Java does (not a conversion to UTC)."""
    numeric = pc.match_substring_regex(arr, r"^[0-9]+$")
    check_values(arr, pc.or_(numeric, pc.match_substring_regex(arr, _TIME_TEXT)), s, t,
                 "not a time of day (H[:m[:s[.fff]]][+|-h[:m]])")
    parts = pc.extract_regex(pc.fill_null(pc.if_else(pc.fill_null(numeric, False), "0",
                                                     arr), "0"), _TIME_TEXT)

    def num(key: str) -> np.ndarray:
        field = parts.field(key)
        field = pc.if_else(pc.equal(pc.fill_null(field, ""), ""), "0", field)
        return np.asarray(pc.cast(field, pa.int64()))

    frac = pc.utf8_rpad(pc.fill_null(parts.field("f"), ""), 4, "0")
    milli = (np.asarray(pc.cast(pc.utf8_slice_codeunits(frac, 0, 3), pa.int64()))
             + (np.asarray(pc.cast(pc.utf8_slice_codeunits(frac, 3, 4), pa.int64())) >= 5))
    sign = np.where(np.asarray(pc.equal(pc.fill_null(parts.field("op"), "+"), "-")), -1, 1)
    ms = ((num("h") + sign * num("th")) * 3_600_000 + (num("m") + sign * num("tm")) * 60_000
          + num("s") * 1000 + milli)
    digits = pc.cast(pc.if_else(pc.fill_null(numeric, False), arr, "0"), pa.int64())
    ms = np.where(np.asarray(pc.fill_null(numeric, False)), np.asarray(digits), ms)
    valid = np.asarray(pc.is_valid(arr))
    return pc.cast(from_numpy(ms.astype(np.int32), valid, pa.int32()), pa.time32("ms"))
