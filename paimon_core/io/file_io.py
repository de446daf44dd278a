"""Storage access: local disk, ``memory://`` and ``s3://`` through fsspec.

``FileIO`` is deliberately small and storage-only (read, write, list, delete, atomic
create-if-absent). It pickles cleanly (the fsspec filesystem is rebuilt lazily after
unpickling), so Spark executors and Dagster steps can use it. Listings are never served from a
cache: s3fs caches directory listings per instance, so every listing invalidates first.

Errors from the OS, fsspec or botocore are translated to :mod:`paimon_core.errors` here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

import pyarrow.fs as pafs

from paimon_core.errors import FileNotFoundInTableError, StorageError


@dataclass(frozen=True, slots=True)
class FileStatus:
    path: str
    size: int
    is_dir: bool
    mtime_millis: int | None = None


def _split_scheme(path: str) -> tuple[str, str]:
    if "://" in path:
        scheme, rest = path.split("://", 1)
        return scheme.lower(), rest
    return "file", path


def join(*parts: str) -> str:
    """Join path segments with ``/`` (works for local paths and URLs)."""
    out = parts[0].rstrip("/") if parts[0] != "/" else "/"
    for p in parts[1:]:
        p = p.strip("/")
        if not p:
            continue
        out = out + p if out.endswith("/") else out + "/" + p
    return out


#: S3 answers that mean "the request was not applied, try again" (AWS documents 409
#: ConditionalRequestConflict for concurrent conditional writes to one key).
_S3_RETRY_CODES = frozenset({"ConditionalRequestConflict", "OperationAborted", "SlowDown",
                             "RequestTimeout", "InternalError", "ServiceUnavailable"})
_S3_RETRY_STATUS = frozenset({409, 500, 502, 503, 504})
_S3_ATTEMPTS = 6
#: keys per ``DeleteObjects`` request (the S3 maximum)
_DELETE_BATCH = 1000
#: Modules whose exceptions are storage failures (translated to StorageError, rule I6).
_REMOTE_MODULES = ("botocore", "aiobotocore", "aiohttp", "s3fs", "urllib3")


def _s3_error(e: BaseException) -> tuple[str | None, int | None]:
    """(S3 error code, HTTP status) of an exception or of the botocore error it wraps."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        response = getattr(cur, "response", None)
        if isinstance(response, dict):
            err = response.get("Error") or {}
            meta = response.get("ResponseMetadata") or {}
            status = meta.get("HTTPStatusCode")
            code = err.get("Code")
            return (str(code) if code is not None else None,
                    int(status) if status is not None else None)
        cur = cur.__cause__ or cur.__context__
    return None, None


def _is_precondition_failed(e: BaseException) -> bool:
    code, status = _s3_error(e)
    return code == "PreconditionFailed" or status == 412


def _is_retryable_s3(e: BaseException) -> bool:
    code, status = _s3_error(e)
    return code in _S3_RETRY_CODES or status in _S3_RETRY_STATUS


def _is_remote_error(e: BaseException) -> bool:
    mod = type(e).__module__ or ""
    return mod.split(".", 1)[0] in _REMOTE_MODULES or isinstance(e, TimeoutError)


def _backoff(attempt: int) -> None:
    """Exponential back-off with full jitter (50 ms, 100 ms, ... capped at 2 s)."""
    time.sleep(random.uniform(0, min(2.0, 0.05 * 2**attempt)))


class FileIO:
    """Storage for one warehouse root (any path under any scheme is accepted).

    Args:
        root: a local path, ``memory://...`` or ``s3://bucket/prefix``.
        options: storage options; for S3: ``s3.endpoint``, ``s3.access-key``,
            ``s3.secret-key``, ``s3.region``, ``s3.session-token`` (or the usual AWS
            environment variables); ``s3.max-attempts`` (botocore attempts per request,
            default botocore's) to bound how long an unreachable endpoint is retried.

    S3 semantics (reliability.md): conditional creates answer 412 -> "exists" whether or not
    the body names the condition; 409 ConditionalRequestConflict and 5xx/throttling answers
    that outlive s3fs's own retries are retried a bounded number of times with jitter;
    ``exists`` treats a 403 on HEAD (S3's answer for a missing key without s3:ListBucket) as
    unknown and asks a listing; reads are a single GET; every botocore / aiohttp failure is a
    :class:`StorageError`.
    """

    def __init__(self, root: str, options: Mapping[str, str] | None = None) -> None:
        self.root = root
        self.options = dict(options or {})
        self.scheme, _ = _split_scheme(root)
        if self.scheme not in ("file", "memory", "s3", "s3a"):
            raise StorageError(root, f"unsupported storage scheme {self.scheme!r}")
        self._fs: Any = None

    # ---- pickling: drop the live filesystem
    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "options": self.options, "scheme": self.scheme}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root = state["root"]
        self.options = state["options"]
        self.scheme = state["scheme"]
        self._fs = None

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    @property
    def is_s3(self) -> bool:
        return self.scheme in ("s3", "s3a")

    @property
    def fs(self) -> Any:
        """The fsspec filesystem (created on first use; fsspec itself is imported here, not
        at import time: local reads never need it)."""
        if self._fs is None:
            import fsspec

            if self.scheme in ("s3", "s3a"):
                kw: dict[str, Any] = {"use_listings_cache": False, "skip_instance_cache": True}
                client: dict[str, Any] = {}
                if "s3.endpoint" in self.options:
                    client["endpoint_url"] = self.options["s3.endpoint"]
                if "s3.region" in self.options:
                    client["region_name"] = self.options["s3.region"]
                if client:
                    kw["client_kwargs"] = client
                if "s3.access-key" in self.options:
                    kw["key"] = self.options["s3.access-key"]
                    kw["secret"] = self.options.get("s3.secret-key")
                if "s3.session-token" in self.options:
                    kw["token"] = self.options["s3.session-token"]
                if "s3.max-attempts" in self.options:
                    try:
                        attempts = int(self.options["s3.max-attempts"])
                    except ValueError as e:
                        raise StorageError(self.root, "s3.max-attempts must be an integer"
                                           ) from e
                    if attempts < 1:
                        raise StorageError(self.root, "s3.max-attempts must be >= 1")
                    kw["config_kwargs"] = {"retries": {"max_attempts": attempts}}
                self._fs = fsspec.filesystem("s3", **kw)
            elif self.scheme == "memory":
                self._fs = fsspec.filesystem("memory")
            else:
                self._fs = fsspec.filesystem("file")
        return self._fs

    def _fs_path(self, path: str) -> str:
        scheme, rest = _split_scheme(path)
        if scheme == "memory":
            return "/" + rest.lstrip("/")
        if scheme in ("s3", "s3a"):
            return rest
        return rest

    def arrow_filesystem(self, path: str) -> tuple[pafs.FileSystem, str]:
        """A pyarrow filesystem and the path inside it, for the format readers."""
        if self.is_local:
            return pafs.LocalFileSystem(), self._fs_path(path)
        return pafs.PyFileSystem(pafs.FSSpecHandler(self.fs)), self._fs_path(path)

    def invalidate(self, path: str | None = None) -> None:
        if not self.is_local:
            self.fs.invalidate_cache(self._fs_path(path) if path else None)

    # ---- reading
    @contextmanager
    def _translate(self, path: str) -> Iterator[None]:
        try:
            yield
        except FileNotFoundError as e:
            raise FileNotFoundInTableError(path) from e
        except IsADirectoryError as e:
            raise StorageError(path, "is a directory") from e
        except PermissionError as e:
            raise StorageError(path, f"permission denied: {e}") from e
        except OSError as e:
            if e.errno == errno.ENOENT:
                raise FileNotFoundInTableError(path) from e
            raise StorageError(path, str(e) or type(e).__name__) from e
        except Exception as e:
            # botocore / aiohttp errors that s3fs passes through untranslated (endpoint
            # unreachable, read timeouts, ...): never let a library error escape (I6)
            if self.is_local or not _is_remote_error(e):
                raise
            raise StorageError(path, f"{type(e).__name__}: {e}") from e

    def read_bytes(self, path: str) -> bytes:
        with self._translate(path):
            if self.is_local:
                with open(self._fs_path(path), "rb") as f:
                    return f.read()
            if self.is_s3:
                # one GET (s3fs would HEAD first to decide on a concurrent download)
                data: bytes = self.fs.cat_file(self._fs_path(path), max_concurrency=1)
            else:
                data = self.fs.cat_file(self._fs_path(path))
            return data

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """``length`` bytes of ``path`` from byte ``start`` (fewer at the end of the file):
        one ranged read (local: seek + read; S3: one ``GET`` with a ``Range`` header), so a
        task reads only its part of a large file.

        Raises:
            ValueError: ``start`` or ``length`` is negative.
            FileNotFoundInTableError: ``path`` does not exist.
            StorageError: any other storage failure.
        """
        if start < 0 or length < 0:
            raise ValueError(f"bad byte range of {path}: start {start}, length {length}")
        if length == 0:
            return b""
        with self._translate(path):
            if self.is_local:
                with open(self._fs_path(path), "rb") as f:
                    f.seek(start)
                    return f.read(length)
            data: bytes = self.fs.cat_file(self._fs_path(path), start=start,
                                           end=start + length)
            return data

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise StorageError(path, "not UTF-8 text") from e

    def open_sized(self, path: str, size: int) -> IO[bytes]:
        """Open a file whose exact ``size`` the metadata records, for a format reader: no
        request for the size, a small file in one ``GET`` (see
        :class:`~paimon_core.io.range_reader.RangeReader`). Local files open as usual. The
        caller closes it."""
        if self.is_local:
            with self._translate(path):
                return open(self._fs_path(path), "rb")
        from paimon_core.io.range_reader import RangeReader

        def fetch(start: int, end: int) -> bytes:
            return self.read_range(path, start, end - start)

        return RangeReader(path, size, fetch)  # type: ignore[return-value]

    @contextmanager
    def open_input(self, path: str) -> Iterator[IO[bytes]]:
        with self._translate(path):
            f = (
                open(self._fs_path(path), "rb")  # noqa: SIM115 - closed below
                if self.is_local
                else self.fs.open(self._fs_path(path), "rb")
            )
        try:
            yield f
        finally:
            f.close()

    def exists(self, path: str) -> bool:
        with self._translate(path):
            if self.is_local:
                return os.path.exists(self._fs_path(path))
            self.invalidate(path)
            if not self.is_s3:
                return bool(self.fs.exists(self._fs_path(path)))
            try:
                return bool(self.fs.exists(self._fs_path(path)))
            except PermissionError:
                # S3 answers HEAD of a *missing* key with 403 when the principal may not
                # list the bucket; a 403 proves nothing: ask a listing, which either answers
                # exactly or fails with a typed StorageError
                return self._s3_exists_by_listing(path)

    def is_file(self, path: str) -> bool:
        """Does the file ``path`` exist? For an object store one ``HEAD`` (``exists`` also
        lists the prefix when the key is missing, to find a directory)."""
        if not self.is_s3:
            return self.exists(path)
        with self._translate(path):
            bucket, _, key = self._fs_path(path).partition("/")
            try:
                self.fs.call_s3("head_object", Bucket=bucket, Key=key)
                return True
            except FileNotFoundError:
                return False
            except PermissionError:
                return self._s3_exists_by_listing(path)

    def _s3_exists_by_listing(self, path: str) -> bool:
        bucket, _, key = self._fs_path(path).partition("/")
        key = key.rstrip("/")
        # the exact key sorts first among the keys it prefixes
        out = self.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=key, MaxKeys=1)
        if any(obj.get("Key") == key for obj in out.get("Contents", [])):
            return True
        out = self.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=key + "/", MaxKeys=1)
        return bool(out.get("Contents") or out.get("CommonPrefixes"))

    def size(self, path: str) -> int:
        with self._translate(path):
            if self.is_local:
                return os.stat(self._fs_path(path)).st_size
            return int(self.fs.size(self._fs_path(path)))

    def list_status(self, directory: str) -> list[FileStatus]:
        """Entries directly under ``directory`` (fresh listing; missing directory = [])."""
        with self._translate(directory):
            if self.is_local:
                d = self._fs_path(directory)
                try:
                    entries = list(os.scandir(d))
                except FileNotFoundError:
                    return []
                out = []
                for e in entries:
                    try:
                        st = e.stat()
                    except FileNotFoundError:
                        continue
                    out.append(
                        FileStatus(
                            join(directory, e.name),
                            st.st_size,
                            e.is_dir(),
                            int(st.st_mtime * 1000),
                        )
                    )
                return out
            self.invalidate(directory)
            try:
                infos = self._ls_fresh(directory)
            except FileNotFoundError:
                return []
            res = []
            for info in infos:
                name = info["name"].rstrip("/").rsplit("/", 1)[-1]
                mtime = info.get("LastModified") or info.get("mtime") or info.get("created")
                millis = None
                if mtime is not None:
                    try:
                        millis = int(mtime.timestamp() * 1000)
                    except AttributeError:
                        millis = int(float(mtime) * 1000)
                res.append(
                    FileStatus(
                        join(directory, name),
                        int(info.get("size") or 0),
                        info.get("type") == "directory",
                        millis,
                    )
                )
            return res

    def _ls_fresh(self, directory: str) -> list[dict[str, Any]]:
        """The entries under ``directory`` from the store itself; on S3 one ``LIST`` of the
        prefix (``fs.ls`` lists the parent again when the prefix is empty)."""
        if not self.is_s3:
            out: list[dict[str, Any]] = self.fs.ls(self._fs_path(directory), detail=True,
                                                   refresh=True)
            return out
        from fsspec.asyn import sync

        entries: list[dict[str, Any]] = sync(self.fs.loop, self.fs._lsdir,
                                             self._fs_path(directory).rstrip("/"), refresh=True)
        return entries

    def list_names(self, directory: str) -> list[str]:
        return [s.path.rsplit("/", 1)[-1] for s in self.list_status(directory)]

    def is_dir(self, path: str) -> bool:
        with self._translate(path):
            if self.is_local:
                return os.path.isdir(self._fs_path(path))
            self.invalidate(path)
            return bool(self.fs.isdir(self._fs_path(path)))

    # ---- writing
    def mkdirs(self, path: str) -> None:
        with self._translate(path):
            if self.is_local:
                os.makedirs(self._fs_path(path), exist_ok=True)
            elif self.scheme == "memory":
                self.fs.makedirs(self._fs_path(path), exist_ok=True)
            # object stores have no directories

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or overwrite) a whole file; readers see the old or the new content, never
        a torn one (local: a temp file renamed over it; S3: one PUT). Not exclusive: use
        :meth:`try_create` for commits."""
        with self._translate(path):
            if self.is_local:
                p = self._fs_path(path)
                d = os.path.dirname(p) or "."
                os.makedirs(d, exist_ok=True)
                tmp = os.path.join(d, f".{os.path.basename(p)}.{uuid.uuid4()}.tmp")
                try:
                    with open(tmp, "xb") as f:
                        f.write(data)
                    os.replace(tmp, p)
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
                return
            parent = self._fs_path(path).rsplit("/", 1)[0]
            if self.scheme == "memory":
                self.fs.makedirs(parent, exist_ok=True)
                self.fs.pipe_file(self._fs_path(path), data)
                return
            for attempt in range(_S3_ATTEMPTS):
                try:
                    self.fs.pipe_file(self._fs_path(path), data)
                    return
                except OSError as e:
                    # an unconditional PUT is idempotent: retry what S3 says to retry
                    if attempt + 1 >= _S3_ATTEMPTS or not _is_retryable_s3(e):
                        raise
                _backoff(attempt)

    def try_create(self, path: str, data: bytes) -> bool:
        """Atomically create ``path`` with ``data`` only if it does not exist.

        Returns False if the file already exists. Local disk: temp file + fsync + ``os.link``
        (fails with EEXIST). S3: ``PutObject`` with ``If-None-Match: *``. A False return does
        not prove someone else wrote it (a retried request may have created it): callers must
        read the file back to decide.
        """
        with self._translate(path):
            if self.is_local:
                p = self._fs_path(path)
                d = os.path.dirname(p) or "."
                os.makedirs(d, exist_ok=True)
                tmp = os.path.join(d, f".{os.path.basename(p)}.{uuid.uuid4()}.tmp")
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                        f.flush()
                        os.fsync(f.fileno())
                    try:
                        os.link(tmp, p)
                    except FileExistsError:
                        return False
                    return True
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
            if self.scheme == "memory":
                fp = self._fs_path(path)
                if self.fs.exists(fp):
                    return False
                self.fs.makedirs(fp.rsplit("/", 1)[0], exist_ok=True)
                self.fs.pipe_file(fp, data)
                return True
            return self._s3_try_create(path, data)

    def _s3_try_create(self, path: str, data: bytes) -> bool:
        """``PutObject`` with ``If-None-Match: *``.

        * 412 PreconditionFailed means "exists", with or without the ``<Condition>`` element
          s3fs looks for (some S3-compatible stores omit it).
        * 409 ConditionalRequestConflict (a concurrent conditional write to the same key),
          and throttling / 5xx answers s3fs gave up on, were not applied: retried with
          jittered back-off, a bounded number of times.
        * A lost response is retried by botocore and then answered 412 for our own object:
          False here; the caller reads the object back to decide (rule 2).
        """
        for attempt in range(_S3_ATTEMPTS):
            try:
                self.fs.pipe_file(self._fs_path(path), data, mode="create")
                return True
            except FileExistsError:
                return False
            except OSError as e:
                if _is_precondition_failed(e):
                    return False
                if attempt + 1 >= _S3_ATTEMPTS or not _is_retryable_s3(e):
                    raise
            _backoff(attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def delete(self, path: str) -> bool:
        """Delete a file; False if it did not exist."""
        try:
            with self._translate(path):
                if self.is_local:
                    os.unlink(self._fs_path(path))
                else:
                    # object stores answer DELETE of a missing key with 204: ask first
                    self.invalidate(path)
                    if not self.is_file(path):
                        return False
                    self.fs.rm_file(self._fs_path(path))
            return True
        except FileNotFoundInTableError:
            return False

    def delete_files(self, paths: Sequence[str]) -> list[bool]:
        """Delete many files, on an object store in batches (``DeleteObjects``, up to 1,000
        keys a request) without asking first; missing files are fine. Returns, per path,
        whether it was deleted: exact on local disk; on an object store True for every path
        (S3 answers a deletion of a missing key as a success)."""
        if not self.is_s3:
            return [self.delete(p) for p in paths]
        keys = [self._fs_path(p) for p in paths]
        for i in range(0, len(keys), _DELETE_BATCH):
            batch = keys[i : i + _DELETE_BATCH]
            with self._translate(paths[i]):
                self._s3_delete_batch(batch)
        return [True] * len(paths)

    def _s3_delete_batch(self, keys: Sequence[str]) -> None:
        """One ``DeleteObjects`` per bucket; a key it reports as failed raises."""
        by_bucket: dict[str, list[str]] = {}
        for k in keys:
            bucket, _, key = k.partition("/")
            by_bucket.setdefault(bucket, []).append(key)
        for bucket, names in by_bucket.items():
            for attempt in range(_S3_ATTEMPTS):
                try:
                    out = self.fs.call_s3(
                        "delete_objects", Bucket=bucket,
                        Delete={"Objects": [{"Key": n} for n in names], "Quiet": True})
                    break
                except OSError as e:
                    if attempt + 1 >= _S3_ATTEMPTS or not _is_retryable_s3(e):
                        raise
                _backoff(attempt)
            errors = out.get("Errors") or []
            if errors:
                first = errors[0]
                raise StorageError(f"{bucket}/{first.get('Key')}",
                                   f"{len(errors)} of {len(names)} deletions failed: "
                                   f"{first.get('Code')}: {first.get('Message')}")

    def delete_dir(self, path: str) -> None:
        with self._translate(path):
            if self.is_local:
                import shutil

                shutil.rmtree(self._fs_path(path), ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    self.fs.rm(self._fs_path(path), recursive=True)
