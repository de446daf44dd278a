"""A small fault-injecting HTTP proxy in front of moto_server (loopback only).

Its one home is here (the reliability tests and the process topology of
``scripts/topology.py`` use it; tests load it through ``tests/reliability/s3proxy.py``).

The proxy forwards every request unchanged (SigV4 signs the ``Host`` header, which is passed
through as the client sent it) to one fixed upstream on 127.0.0.1, and applies *rules*, each
bounded by a count:

* ``drop_response``: the request reaches moto (the object lands), then the client connection
  is reset without an answer — botocore sees a connection error and retries, so a
  conditional PUT then gets 412 for *our own* object.
* ``status``: answer with a given status and S3 error body without forwarding (503 SlowDown
  bursts, 409 ConditionalRequestConflict, 403 on HEAD).
* ``strip_condition``: forward, and remove the ``<Condition>`` element of a 412 body.
* ``deny_missing``: forward, and turn a 404 into 403 (S3 without ``s3:ListBucket``).
* ``delay``: forward after ``delay`` seconds (a slow store: keeps a request in flight).

Every exchange is logged as ``(method, path, status, action)`` for assertions, and its
``Range`` header beside it; :meth:`FaultProxy.counting` counts the requests of one operation by
kind (:class:`RequestCount`: what the request-count tests and ``make bench`` report).
"""

from __future__ import annotations

import http.client
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "expect", "te",
        "upgrade", "trailer"}

_ERROR_BODIES = {
    503: ("SlowDown", "Please reduce your request rate."),
    409: ("ConditionalRequestConflict",
          "A conflicting conditional operation is currently in progress against this "
          "resource. Please try again."),
    403: ("AccessDenied", "Access Denied"),
    500: ("InternalError", "We encountered an internal error. Please try again."),
}


@dataclass
class Rule:
    """One bounded fault: applies to the ``skip``+1-th .. ``skip``+``count``-th matching
    requests (``method``, ``*`` for any, and a regex searched in the URL path)."""

    method: str
    path: str
    action: str  # drop_response | status | strip_condition | deny_missing | delay
    count: int = 1
    skip: int = 0
    status: int = 503
    delay: float = 0.0
    seen: int = 0
    fired: int = 0

    def take(self, method: str, path: str) -> bool:
        if self.method not in ("*", method) or not re.search(self.path, path):
            return False
        self.seen += 1
        if self.seen <= self.skip or self.fired >= self.count:
            return False
        self.fired += 1
        return True


def request_kind(method: str, path: str, range_header: str | None) -> str:
    """The S3 operation of one exchange: ``GET`` (whole object), ``GET range``, ``HEAD``,
    ``PUT``, ``DELETE``, ``LIST`` (ListObjects), ``DeleteObjects`` (batch delete), or
    ``<METHOD> ?<query>`` for anything else."""
    _, _, query = path.partition("?")
    params = {kv.partition("=")[0] for kv in query.split("&") if kv}
    if method == "GET" and ("list-type" in params or "prefix" in params
                            or "delimiter" in params):
        return "LIST"
    if method == "POST" and "delete" in params:
        return "DeleteObjects"
    if method == "GET":
        return "GET range" if range_header else "GET"
    if method in ("HEAD", "PUT", "DELETE") and not params - {"x-id"}:
        return method
    return f"{method} ?{'&'.join(sorted(params))}"


@dataclass(frozen=True)
class Exchange:
    method: str
    path: str
    status: int
    action: str
    range: str | None = None

    @property
    def kind(self) -> str:
        return request_kind(self.method, self.path, self.range)


@dataclass
class RequestCount:
    """The requests of one operation (filled when its :meth:`FaultProxy.counting` block
    ends)."""

    label: str
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.exchanges)

    def by_kind(self) -> Counter[str]:
        return Counter(e.kind for e in self.exchanges)

    def count(self, *kinds: str) -> int:
        """How many requests were of any of ``kinds``."""
        return sum(1 for e in self.exchanges if e.kind in kinds)

    def summary(self) -> str:
        """``label: N requests (GET 3, PUT 2, ...)``."""
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.by_kind().items()))
        return f"{self.label}: {self.total} requests ({kinds})"

    def describe(self) -> str:
        """The summary, then one line per request (for assertion messages)."""
        lines = [self.summary()]
        lines += [f"  {e.kind:<13} {e.status} {e.path}"
                  + (f" [{e.range}]" if e.range else "") for e in self.exchanges]
        return "\n".join(lines)


@dataclass
class FaultProxy:
    """Start with :meth:`start`; ``endpoint`` is the URL clients use instead of moto's."""

    upstream: str
    rules: list[Rule] = field(default_factory=list)
    log: list[tuple[str, str, int, str]] = field(default_factory=list)
    #: every exchange with its ``Range`` header (parallel to ``log``)
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    def start(self) -> FaultProxy:
        u = urlsplit(self.upstream)
        if u.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError("the fault proxy only forwards to loopback")
        host, port = u.hostname, u.port or 80
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return out
                        out += self.rfile.read(size)
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _handle(self) -> None:
                method, path = self.command, self.path
                rng = self.headers.get("Range")
                body = self._body()
                with proxy.lock:
                    rule = next((r for r in proxy.rules if r.take(method, path)), None)
                action = rule.action if rule else "forward"
                if rule is not None and rule.action == "status":
                    self._answer_error(rule.status, method, path)
                    return
                if rule is not None and rule.action == "delay":
                    time.sleep(rule.delay)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                if body or method in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                conn = http.client.HTTPConnection(host, port, timeout=60)
                try:
                    conn.request(method, path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    status, rheaders = resp.status, resp.getheaders()
                finally:
                    conn.close()
                if action == "drop_response":
                    proxy._record(method, path, status, action, rng)
                    self._reset()
                    return
                if action == "deny_missing" and status == 404:
                    # S3 without s3:ListBucket: a missing key is 403, not 404
                    proxy._record(method, path, 403, action, rng)
                    self._answer_error(403, method, path, record=False)
                    return
                if action == "strip_condition" and status == 412:
                    data = re.sub(rb"<Condition>[^<]*</Condition>", b"", data)
                proxy._record(method, path, status, action, rng)
                self.send_response(status)
                for k, v in rheaders:
                    if k.lower() in _HOP or (k.lower() == "content-length"
                                             and method != "HEAD"):
                        continue
                    self.send_header(k, v)
                if method != "HEAD":  # a HEAD answer carries the object's length, no body
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(data)

            def _answer_error(self, status: int, method: str, path: str,
                              record: bool = True) -> None:
                code, message = _ERROR_BODIES.get(status, ("Error", "injected"))
                body = (
                    f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                    f"<Message>{message}</Message><RequestId>proxy</RequestId></Error>"
                ).encode()
                if record:
                    proxy._record(method, path, status, "status",
                                  self.headers.get("Range"))
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("x-amz-request-id", "proxy")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if method != "HEAD":
                    self.wfile.write(body)

            def _reset(self) -> None:
                # RST instead of FIN: the client sees "connection reset", no response at all
                self.close_connection = True
                try:
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.connection.close()
                except OSError:
                    pass

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def endpoint(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, rule: Rule) -> Rule:
        with self.lock:
            self.rules.append(rule)
        return rule

    def remove(self, rule: Rule) -> None:
        with self.lock:
            if rule in self.rules:
                self.rules.remove(rule)

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()
            self.log.clear()
            self.exchanges.clear()

    def _record(self, method: str, path: str, status: int, action: str,
                range_header: str | None = None) -> None:
        with self.lock:
            self.log.append((method, path, status, action))
            self.exchanges.append(Exchange(method, path, status, action, range_header))

    @contextmanager
    def counting(self, label: str) -> Iterator[RequestCount]:
        """Count the requests made while the block runs (callers make none concurrently)::

            with proxy.counting("commit") as n:
                table.new_commit(user).commit(messages, 1)
            assert n.total <= 15, n.describe()
        """
        with self.lock:
            start = len(self.exchanges)
        out = RequestCount(label)
        try:
            yield out
        finally:
            with self.lock:
                out.exchanges.extend(self.exchanges[start:])

    def requests(self, method: str, pattern: str) -> list[tuple[str, str, int, str]]:
        with self.lock:
            return [e for e in self.log if e[0] == method and re.search(pattern, e[1])]

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
