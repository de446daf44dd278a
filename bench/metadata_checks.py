"""The metadata scale step's checks (``bench/metadata_scale.py``): the Java 0.9 spot check of
the built table, and issue 28's targets over the step's results."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from metadata_steps import COMMITS, TABLE, Layout

ORACLE_TIMEOUT_S = 1800
GROWTH_LIMIT_MB = 100.0
COMMIT_CPU_LIMIT_S = 0.5
COMMIT_PEAK_LIMIT_MB = 512.0
ONE_PLAN_VS_RUST = 0.5
FULL_PLAN_AHEAD = 5.0
TENTH_VS_FIRST = 1.5
S3_COMMIT_LIMIT = 15
S3_EXPIRE_LIMIT = 40
EXPIRE_DELETE_STAGES = 5  # paimon_core.expire: data, changelog, manifests, lists, snapshots


def expected_rows(lay: Layout, parts: list[int]) -> list[dict[str, Any]]:
    """The rows the layout wrote in ``parts``: ids ``0 .. N/P - 1``, ``v = id // f``."""
    f = lay.files_per_commit
    return [{"part": p, "id": i, "v": i // f, "s": f"c{i // f}"}
            for p in parts for i in range(lay.per_partition)]


def oracle_read(oracle: Path, wh: Path, parts: list[int], engine: str) -> list[dict[str, Any]]:
    cmd = [str(oracle), "read", "--warehouse", str(wh), "--table", TABLE, "--engine", engine,
           "--filter", f"part IN ({', '.join(map(str, parts))})"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=ORACLE_TIMEOUT_S)
    if p.returncode != 0:
        raise RuntimeError(f"oracle read ({engine}) failed (exit {p.returncode}): "
                           f"{p.stderr.strip()[-1500:]}")
    return [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip()]


def java_spot_check(wh: Path, lay: Layout, pypaimon_py: str | None,
                    gen_path: Path) -> dict[str, Any]:
    """Java 0.9 (the oracle) and pypaimon 2.1 read 5 partitions of the latest snapshot: the
    same rows, and the rows the layout wrote."""
    del pypaimon_py  # the oracle runs pypaimon from its own venv
    oracle = gen_path.resolve().parent.parent / "oracle" / "oracle"
    parts = lay.spot_parts()
    try:
        java = oracle_read(oracle, wh, parts, "java")
        py = oracle_read(oracle, wh, parts, "pypaimon")
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return {"ok": False, "message": str(e), "partitions": parts}

    def key(r: dict[str, Any]) -> tuple[int, int]:
        return int(r["part"]), int(r["id"])

    java.sort(key=key)
    py.sort(key=key)
    want = expected_rows(lay, parts)
    same = java == py
    model = [{k: r.get(k) for k in ("part", "id", "v", "s")} for r in java] == want
    return {"ok": same and model, "partitions": parts, "rows_java": len(java),
            "rows_pypaimon": len(py), "rows_expected": len(want),
            "message": f"partitions {parts}: Java {len(java):,} rows, pypaimon {len(py):,} "
                       f"rows, {'identical' if same else 'DIFFERENT'}; "
                       f"{'as written' if model else 'NOT what the layout wrote'}"}


def _t(name: str, value: float | None, limit: float, ok: bool | None = None,
       ) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"target": name, "value": value, "limit": limit,
            "pass": value <= limit if ok is None else ok}


def size_targets(n: int, e: dict[str, Any]) -> list[dict[str, Any] | None]:
    steps, commits = e["steps"], e["build"]["commits"]
    tag = f"{n:,} entries:"

    def cpu(step: str, lib: str) -> float | None:
        s = steps.get(step, {}).get(lib)
        return None if s is None else float(s["cpu_s"])

    def growth(step: str) -> float | None:
        s = steps.get(step, {}).get("ours")
        return None if s is None else float(s["growth_mb"])

    out: list[dict[str, Any] | None] = []
    ours, rust = cpu("plan_one", "ours"), cpu("plan_one", "pypaimon_rust")
    if ours is not None and rust:
        out.append(_t(f"{tag} one-partition plan CPU / pypaimon-rust's <= {ONE_PLAN_VS_RUST}",
                      ours / rust, ONE_PLAN_VS_RUST))
    out.append(_t(f"{tag} one-partition plan growth <= {GROWTH_LIMIT_MB:.0f} MB",
                  growth("plan_one"), GROWTH_LIMIT_MB))
    ours, py = cpu("plan_full", "ours"), cpu("plan_full", "pypaimon")
    if ours and py is not None:
        v = py / ours
        out.append(_t(f"{tag} full plan: pypaimon CPU / ours >= {FULL_PLAN_AHEAD:g}", v,
                      FULL_PLAN_AHEAD, v >= FULL_PLAN_AHEAD))
    out.append(_t(f"{tag} 1-file commit CPU <= {COMMIT_CPU_LIMIT_S} s", cpu("commit1", "ours"),
                  COMMIT_CPU_LIMIT_S))
    out.append(_t(f"{tag} 1-file commit growth <= {GROWTH_LIMIT_MB:.0f} MB", growth("commit1"),
                  GROWTH_LIMIT_MB))
    c1 = steps.get("commit1", {}).get("ours")
    if c1 is not None and "write_cpu_s" in c1:  # what a user pays: the write restores the
        out.append(_t(f"{tag} 1-file write + commit CPU <= {COMMIT_CPU_LIMIT_S} s",  # bucket
                      c1["write_cpu_s"] + c1["cpu_s"], COMMIT_CPU_LIMIT_S))
    if len(commits) == COMMITS and commits[0]["cpu_s"] > 0:
        out.append(_t(f"{tag} build commit {COMMITS} CPU / commit 1's <= {TENTH_VS_FIRST}",
                      commits[-1]["cpu_s"] / commits[0]["cpu_s"], TENTH_VS_FIRST))
    peaks = [c["peak_rss_mb"] for c in commits]
    for step in ("commit1", "day"):
        s = steps.get(step, {}).get("ours")
        if s is not None:
            peaks.append(s["peak_rss_mb"])
    if peaks:
        out.append(_t(f"{tag} peak RSS of any commit <= {COMMIT_PEAK_LIMIT_MB:.0f} MB",
                      max(peaks), COMMIT_PEAK_LIMIT_MB))
    return out


def s3_targets(s3: dict[str, Any]) -> list[dict[str, Any] | None]:
    st = s3.get("steps", {})
    out: list[dict[str, Any] | None] = []
    if "commit1" in st:
        w, both = st["commit1_write_only"], st["commit1"]
        # what Java needs for it (the issue): the data file's PUT, then the commit's requests
        out.append(_t(f"S3: one 1-file commit (its data file's PUT + the commit) <= "
                      f"{S3_COMMIT_LIMIT} requests",
                      w["data_file_requests"] + both["total"] - w["total"], S3_COMMIT_LIMIT))
        # and with the writer's restore of its bucket (the partition's manifests; Java's
        # writer reads them too)
        out.append(_t(f"S3: one 1-file write + commit <= {S3_COMMIT_LIMIT} requests",
                      both["total"], S3_COMMIT_LIMIT))
    if "read" in st:
        r = st["read"]
        out.append(_t(f"S3: the read of the {r['data_files']}-file table <= 1 request per "
                      "data file (+ metadata)", r["data_file_requests"], r["data_files"]))
    if "expire" in st:
        e = st["expire"]
        out.append(_t(f"S3: expiry of 10 snapshots <= {S3_EXPIRE_LIMIT} requests besides the "
                      "deletes", e["total"] - e["deletes"], S3_EXPIRE_LIMIT))
        # deleted in stages (data files, changelog, manifests, lists, snapshot files: a crash
        # never leaves a data file no metadata names), each in batches of up to 1,000 keys
        out.append(_t("S3: expiry deletes batched (DeleteObjects of up to 1,000 keys per "
                      f"stage, {EXPIRE_DELETE_STAGES} stages)", e["deletes"],
                      -(-e["deleted_objects"] // 1000) + EXPIRE_DELETE_STAGES - 1))
    return out


def targets(out: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 28's targets over a whole run (``out`` of ``metadata_scale.drive``)."""
    got: list[dict[str, Any] | None] = []
    for n, e in out["sizes"].items():
        got += size_targets(int(n), e)
    got += s3_targets(out.get("s3") or {})
    return [t for t in got if t is not None]
