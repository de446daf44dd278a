"""Snapshot files (``snapshot/snapshot-<N>``): ``org.apache.paimon.Snapshot``.

Frozen pydantic model with the on-disk camelCase names declared once. Unknown keys are
ignored (every Java version does the same); every optional key of every version is accepted.
"""

from __future__ import annotations

import enum
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from paimon_core.errors import CorruptMetadataError

CURRENT_VERSION = 3
BATCH_COMMIT_IDENTIFIER = 9223372036854775807
#: snapshot property of a commit made of several snapshots under one identifier
#: (:meth:`paimon_core.TableCommit.commit_steps`): ``"<i>/<n>"``, the i-th of n (1-based)
STEP_PROPERTY = "commit.step"


class CommitKind(str, enum.Enum):
    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


class Snapshot(BaseModel):
    """One committed version of a table."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    version: int = CURRENT_VERSION
    id: int
    schema_id: int = Field(alias="schemaId")
    base_manifest_list: str = Field(alias="baseManifestList")
    delta_manifest_list: str = Field(alias="deltaManifestList")
    changelog_manifest_list: str | None = Field(default=None, alias="changelogManifestList")
    index_manifest: str | None = Field(default=None, alias="indexManifest")
    commit_user: str = Field(alias="commitUser")
    commit_identifier: int = Field(alias="commitIdentifier")
    commit_kind: CommitKind = Field(alias="commitKind")
    time_millis: int = Field(alias="timeMillis")
    log_offsets: dict[str, int] | None = Field(default=None, alias="logOffsets")
    total_record_count: int | None = Field(default=None, alias="totalRecordCount")
    delta_record_count: int | None = Field(default=None, alias="deltaRecordCount")
    changelog_record_count: int | None = Field(default=None, alias="changelogRecordCount")
    watermark: int | None = None
    statistics: str | None = None
    base_manifest_list_size: int | None = Field(default=None, alias="baseManifestListSize")
    delta_manifest_list_size: int | None = Field(default=None, alias="deltaManifestListSize")
    changelog_manifest_list_size: int | None = Field(
        default=None, alias="changelogManifestListSize"
    )
    properties: dict[str, str] | None = None
    next_row_id: int | None = Field(default=None, alias="nextRowId")

    def to_json_bytes(self) -> bytes:
        """Java-compatible JSON (``logOffsets`` written as ``{}`` like 0.9, nulls omitted
        except ``changelogManifestList``, which 0.9 always writes)."""
        obj = self.model_dump(by_alias=True, exclude_none=True, mode="json")
        obj.setdefault("changelogManifestList", None)
        obj.setdefault("logOffsets", {})
        return json.dumps(obj, indent=2).encode("utf-8")

    @property
    def commit_step(self) -> tuple[int, int] | None:
        """``(i, n)``: this snapshot is step i of n of its commit (:data:`STEP_PROPERTY`);
        None for a commit of one snapshot (or a value that is no step)."""
        raw = (self.properties or {}).get(STEP_PROPERTY)
        if raw is None:
            return None
        i, _, n = raw.partition("/")
        if not (i.isdigit() and n.isdigit() and 0 < int(i) <= int(n)):
            return None
        return int(i), int(n)


def decode_snapshot(data: bytes, path: str, expected_id: int | None = None) -> Snapshot:
    """Decode a snapshot file. Rejects (``CorruptMetadataError``) bad JSON, missing required
    keys and, when ``expected_id`` is given, an inner id that differs from the file name."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorruptMetadataError(path, f"not valid JSON: {e}") from e
    if not isinstance(obj, dict):
        raise CorruptMetadataError(path, "snapshot JSON is not an object")
    try:
        snap = Snapshot.model_validate(obj)
    except ValidationError as e:
        raise CorruptMetadataError(path, f"invalid snapshot: {e.errors()[0]}") from e
    if expected_id is not None and snap.id != expected_id:
        raise CorruptMetadataError(
            path, f"snapshot id {snap.id} inside the file differs from its name ({expected_id})"
        )
    return snap
