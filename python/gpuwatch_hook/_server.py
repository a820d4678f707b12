"""The loader protocol's server (docs/architecture.md §6): /metrics and
/debug/pprof/profile on a daemon thread, and the announcement that lets
gpuwatch discover it. Every limit a client could push on is bounded here:
connections at once, each request's total time, a profile's length.

On a shared machine (docs/security.md): every request must carry the
server's token (a random secret written only into the 0600 announcement),
so another local user who finds the port reads nothing. A connection takes
no thread and no slot until its request's headers have come (the serving
thread reads them, IDLE_SECONDS at most; at most MAX_WAITING wait so, a
new one closing the oldest of its kind, and another user's — told by the
kernel's sock_diag — at most OTHERS_CONNECTIONS of them). A scrape with
the token (GET /metrics) is answered there too, and its connection, kept
open (HTTP/1.1), waits for the next scrape as a new one would: gpuwatch's
scrape every second costs no thread and no new connection. Any other
request with the token takes one of MAX_CONNECTIONS slots (a thread each),
one without it one of OTHERS_CONNECTIONS (its 401): connections held open,
by anyone, cannot keep the announced client, gpuwatch, from being served
(issue 57, item 2)."""

from __future__ import annotations

import atexit
import base64
import errno
import hmac
import http.server
import io
import json
import os
import secrets
import selectors
import socket
import stat
import struct
import sys
import tempfile
import threading
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from . import _ceiling, _cost, _env, _gpuprofile, _profiler
from ._env import warn
from ._timing import Stats
from ._version import __version__

#: At most this many requests with the token are served at once (a thread
#: each). A scrape and a profile need two; a flood must not grow threads.
MAX_CONNECTIONS = 16

#: At most this many connections wait for their headers (no thread: the
#: serving thread reads them; a descriptor each), the oldest closed past
#: it: a flood of idle connections fits, and is closed in IDLE_SECONDS,
#: rather than each new one closing another at once.
MAX_WAITING = 64

#: Requests without the token (each answered 401) are served at most this
#: many at once; connections from another user (not this process's, not
#: root) wait for their headers at most this many at once. Where the
#: peer's user cannot be told (no sock_diag), all are this user's.
OTHERS_CONNECTIONS = 4

#: A connection that has not sent its request's headers this long after it
#: was accepted is closed: a connection held open keeps nothing (gpuwatch
#: sends its request at once).
IDLE_SECONDS = 2.0

#: The most bytes of headers read before a request is served.
MAX_HEADER_BYTES = 16 * 1024

#: The header that carries the token: "Authorization: Bearer TOKEN"
#: (or HTTP basic authentication with the token as the password, for a
#: URL that holds it: http://gpuwatch:TOKEN@127.0.0.1:PORT).
TOKEN_ENV = "GPUWATCH_HOOK_TOKEN"

#: The longest profile served, in seconds (gpuwatch asks for 5).
MAX_PROFILE_SECONDS = 60

#: A request's total time: reading it, and writing the answer (a profile
#: adds its own length). A client that sends or reads slowly is cut off
#: then, whatever its pace: one slow client cannot hold a serving thread.
REQUEST_SECONDS = 10


def discovery_dir() -> str:
    """Where serving processes announce themselves: $XDG_RUNTIME_DIR/gpuwatch,
    or /tmp/gpuwatch-UID where there is no runtime folder (gpuwatch reads
    the same place)."""
    d = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(d):
        return os.path.join(d, "gpuwatch")
    return os.path.join(tempfile.gettempdir(), "gpuwatch-%d" % os.geteuid())


def _write_announcement(d: str, url: str, token: str) -> str:
    entry: Dict[str, Any] = {"pid": os.getpid(), "url": url, "kind": "python", "token": token}
    entry.update(_env.rank_env())
    rdzv = _env.rendezvous()
    if rdzv:
        entry["rendezvous"] = rdzv
    path = os.path.join(d, "%d-%s.json" % (os.getpid(), url.rsplit(":", 1)[-1]))
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(entry, f)
    os.replace(tmp, path)
    return path


def announce(url: str, token: str = "") -> List[str]:
    """Writes this process's announcement (its URL and token, 0600) into
    gpuwatch run's private folder when it runs under run, and into the
    discovery folder; returns the paths written. A discovery folder that is
    not private to this user (another user made /tmp/gpuwatch-UID first) is
    a warning when nothing else was announced: attaching by URL still works."""
    paths: List[str] = []
    run = _env.run_dir()
    if run is not None:
        try:
            paths.append(_write_announcement(run, url, token))
        except OSError as e:
            warn("not announced in the run folder: %s" % e)
    d = discovery_dir()
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise OSError("%s is not a private folder of this user" % d)
        paths.append(_write_announcement(d, url, token))
    except OSError as e:
        if not paths:
            warn("not announced for discovery (attach to %s instead): %s" % (url, e))
    return paths


def _unlink(paths: List[str], owner: int) -> None:
    if os.getpid() != owner:  # never from a forked worker
        return
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


def _new_token() -> str:
    """The server's token: GPUWATCH_HOOK_TOKEN when it is set to at least 16
    URL-safe characters (a Prometheus that scrapes the hook needs to know
    it), else 32 random bytes."""
    t = os.environ.get(TOKEN_ENV, "")
    if len(t) >= 16 and len(t) <= 256 and all(c.isalnum() or c in "-_.~" for c in t):
        return t
    return secrets.token_urlsafe(32)


#: Whether the kernel answers sock_diag lookups (None: not tried yet).
_sock_diag: Optional[bool] = None


def peer_uid(conn: socket.socket) -> Optional[int]:
    """The user that owns the other end of a loopback TCP connection, from
    the kernel's sock_diag (NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY; linux
    include/uapi/linux/inet_diag.h): the peer's socket is looked up by its
    four-tuple. None when it cannot be told (not Linux, no tcp_diag, a
    peer on another host)."""
    global _sock_diag
    if _sock_diag is False or not hasattr(socket, "AF_NETLINK"):
        return None
    try:
        fam = conn.family
        lh, lp = conn.getsockname()[:2]
        ph, pp = conn.getpeername()[:2]
        if fam == socket.AF_INET:
            src, dst = socket.inet_aton(ph) + bytes(12), socket.inet_aton(lh) + bytes(12)
        else:
            src, dst = socket.inet_pton(fam, ph), socket.inet_pton(fam, lh)
        # inet_diag_sockid of the peer's socket: its source is the peer.
        sockid = struct.pack("!HH16s16s", pp, lp, src, dst) + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
        req = struct.pack("=BBBBI", fam, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        msg = struct.pack("=IHHII", 16 + len(req), 20, 1, 1, 0) + req  # SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST
        try:
            nl = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)  # NETLINK_SOCK_DIAG
        except OSError:
            _sock_diag = False  # no netlink here (a sandbox): never ask again
            return None
        with nl:
            nl.settimeout(0.5)
            nl.send(msg)
            data = nl.recv(8192)
    except OSError:
        return None
    # An NLMSG_ERROR (the peer's socket is not on this host, or no tcp_diag)
    # is shorter than an inet_diag_msg.
    if len(data) < 16 + 4 + 48 + 16 or struct.unpack_from("=H", data, 4)[0] != 20:
        return None
    _sock_diag = True
    return struct.unpack_from("=I", data, 16 + 4 + 48 + 12)[0]  # inet_diag_msg.idiag_uid


def token_in(authorization: str, token: str) -> bool:
    """Whether an Authorization header's value carries token: as a bearer
    token, or as the password of HTTP basic authentication."""
    scheme, _, value = authorization.partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value, validate=True).decode("utf-8", "replace").partition(":")[2]
        except ValueError:
            value = ""
    elif scheme.lower() != "bearer":
        value = ""
    return hmac.compare_digest(value.encode("utf-8", "replace"), token.encode())


def _header_end(buf: bytearray) -> int:
    """Where a request's headers end in buf (past the blank line), or -1."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        i = buf.find(sep)
        if i >= 0:
            return i + len(sep)
    return -1


def _authorization(head: bytes) -> str:
    """The Authorization header's value in a request's headers ("" if none)."""
    for line in head.split(b"\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"authorization":
            return value.strip().decode("latin-1")
    return ""


def _scrape(head: bytes) -> Optional[bool]:
    """Whether a request's headers are a plain scrape, GET /metrics with no
    body, that the serving thread answers itself: None if not, else
    whether the connection is kept open for the next request (HTTP/1.1
    unless "Connection: close"; HTTP/1.0 only with "Connection:
    keep-alive")."""
    line, _, rest = head.partition(b"\n")
    parts = line.split()
    if len(parts) != 3 or parts[0] != b"GET" or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
        return None
    if parts[1].partition(b"?")[0] != b"/metrics":
        return None
    conn = set()
    for h in rest.split(b"\n"):
        if h[:1] in (b" ", b"\t"):
            return None  # a folded header (obsolete): the thread's parser
        name, _, value = h.partition(b":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == b"transfer-encoding" or (name == b"content-length" and value != b"0"):
            return None  # a body to read: the thread's
        if name == b"connection":
            conn.update(v.strip() for v in value.split(b","))
    if parts[2] == b"HTTP/1.1":
        return b"close" not in conn
    return b"keep-alive" in conn


def _close(conn: socket.socket) -> None:
    """Ends a connection, even where a forked worker holds its descriptor too."""
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


class _Waiting:
    """A connection accepted whose request's headers have not all come, or
    whose answer to a scrape is being written (out) by the serving thread."""

    __slots__ = ("conn", "addr", "other", "until", "buf", "out", "keep")

    def __init__(self, conn: socket.socket, addr: Any, other: bool) -> None:
        self.conn, self.addr, self.other = conn, addr, other
        self.until = time.monotonic() + IDLE_SECONDS
        self.buf = bytearray()
        self.out = memoryview(b"")  # the answer's bytes not yet written
        self.keep = False  # the connection waits for another request once out is written


class _Replay(io.RawIOBase):
    """A connection's bytes: first those read while it waited, then the socket's."""

    def __init__(self, head: bytes, conn: socket.socket) -> None:
        self.head, self.conn = memoryview(head), conn

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self.head:
            n = min(len(b), len(self.head))
            b[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        return self.conn.recv_into(b)


class Server(http.server.ThreadingHTTPServer):
    """One process's server. close() stops it and removes its announcement."""

    daemon_threads = True
    # A deep accept queue: a burst of connections is accepted (and the
    # oldest waiting past MAX_WAITING closed) at once, not after SYN
    # retries.
    request_queue_size = 256

    def __init__(self, addr: Tuple[str, int], stats: Stats) -> None:
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, Handler)
        self.stats = stats
        # Slots (a thread each): requests with the token, and without it.
        self.token_slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.open_slots = threading.BoundedSemaphore(OTHERS_CONNECTIONS)
        self.token = _new_token()
        self.profiling = threading.Lock()
        self.thread_ident: Optional[int] = None
        self.announcements: List[str] = []
        self.owner = os.getpid()
        self.users = 0  # watch() handles that share it
        self.closed = False
        h, p = self.server_address[:2]
        self.url = "http://%s:%d" % ("[%s]" % h if ":" in h else h, p)
        # Each open connection's deadline, kept by one reaper thread that
        # sleeps until the earliest (idle, it waits for a connection).
        self._deadlines: Dict["Handler", float] = {}
        self._cv = threading.Condition()
        self._reaper: Optional[threading.Thread] = None
        self._slots: Dict[Any, threading.BoundedSemaphore] = {}  # each open connection's slot
        self._heads: Dict[Any, bytes] = {}  # each connection's bytes read while it waited
        # Connections waiting for their headers, oldest first (the serving
        # thread's only).
        self._waiting: Dict[socket.socket, _Waiting] = {}
        self._sel: Optional[selectors.BaseSelector] = None
        self._stop = False
        self._stopped = threading.Event()

    def start_reaper(self) -> None:
        self._reaper = threading.Thread(target=self._reap, name="gpuwatch_hook deadlines", daemon=True)
        self._reaper.start()

    def deadline(self, h: "Handler", seconds: float) -> None:
        """Cuts h's connection off seconds from now, unless it ends first."""
        with self._cv:
            self._deadlines[h] = time.monotonic() + seconds
            self._cv.notify()

    def done(self, h: "Handler") -> None:
        with self._cv:
            self._deadlines.pop(h, None)

    def _reap(self) -> None:
        with self._cv:
            while not self.closed:
                if not self._deadlines:
                    self._cv.wait()
                    continue
                h, d = min(self._deadlines.items(), key=lambda kv: kv[1])
                now = time.monotonic()
                if d > now:
                    self._cv.wait(d - now)
                    continue
                del self._deadlines[h]
                h.cut()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a request that failed is the client's problem, not the training log's

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accepts connections and reads their headers, on this one thread;
        a request whose headers have come is served on a thread of its own
        (_dispatch)."""
        self._stopped.clear()
        with selectors.DefaultSelector() as sel:
            self._sel = sel
            sel.register(self.socket, selectors.EVENT_READ, None)
            try:
                while not self._stop:
                    timeout = poll_interval
                    for w in self._waiting.values():  # the oldest: the first to expire
                        timeout = min(timeout, max(0.0, w.until - time.monotonic()))
                        break
                    for key, events in sel.select(timeout):
                        if key.data is None:
                            self._accept()
                        elif events & selectors.EVENT_WRITE:
                            if self._write(key.data) and key.data.buf:
                                self._headers_in(key.data)  # the next request came with the last
                        else:
                            self._read(key.data)
                    self._expire()
            finally:
                for w in list(self._waiting.values()):
                    self._drop(w)
                self._stopped.set()

    def shutdown(self) -> None:
        """Stops serve_forever and waits for it to end."""
        self._stop = True
        self._stopped.wait()

    def _accept(self) -> None:
        """A new connection waits for its headers, with no thread. Past its
        kind's share of the waiting (another user's: OTHERS_CONNECTIONS,
        this user's and root's: the rest of MAX_WAITING), the oldest of its
        kind is closed: connections held open cannot keep a new one out."""
        try:
            conn, addr = self.socket.accept()
        except OSError:
            return
        uid = peer_uid(conn)
        other = _sock_diag is True and not (uid is not None and uid in (os.geteuid(), 0))
        kind = [w for w in self._waiting.values() if w.other == other]
        if len(kind) >= (OTHERS_CONNECTIONS if other else MAX_WAITING - OTHERS_CONNECTIONS):
            self._drop(kind[0])
        conn.setblocking(False)
        w = _Waiting(conn, addr, other)
        self._waiting[conn] = w
        assert self._sel is not None
        self._sel.register(conn, selectors.EVENT_READ, w)

    def _read(self, w: _Waiting) -> None:
        try:
            data = w.conn.recv(MAX_HEADER_BYTES - len(w.buf))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(w)
            return
        w.buf += data
        self._headers_in(w)

    def _headers_in(self, w: _Waiting) -> None:
        """Serves w's requests whose headers have all come: a scrape with
        the token here (_answer), anything else on a thread (_dispatch).
        Requests sent together are answered in turn while each answer is
        written whole."""
        while True:
            end = _header_end(w.buf)
            if end < 0:
                if len(w.buf) >= MAX_HEADER_BYTES:
                    self._drop(w)
                return
            head = bytes(w.buf[:end])
            authorized = token_in(_authorization(head), self.token)
            keep = _scrape(head) if authorized else None
            if keep is None:
                self._drop(w, close=False)
                self._dispatch(w, authorized)
                return
            del w.buf[:end]  # what is left is the next request's
            if not self._answer(w, keep):
                return

    def _answer(self, w: _Waiting, keep: bool) -> bool:
        """Answers a scrape on the serving thread: no thread, no slot (a
        thread's start cost more than the page). The answer is written as
        the socket takes it (_write), within IDLE_SECONDS like the
        headers; kept, the connection then waits for its next request as
        a new one does."""
        try:
            body = self.stats.render()
        except Exception:
            self._drop(w)  # as a thread's failed request: closed
            return False
        head = (
            "HTTP/1.1 200 OK\r\nServer: %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: %d\r\nConnection: %s\r\n\r\n" % (Handler.server_version, len(body), "keep-alive" if keep else "close")
        )
        w.out, w.keep = memoryview(head.encode("latin-1") + body), keep
        self._rearm(w)
        return self._write(w)

    def _rearm(self, w: _Waiting) -> None:
        """w has IDLE_SECONDS from now, last in the order of expiry."""
        self._waiting.pop(w.conn, None)
        w.until = time.monotonic() + IDLE_SECONDS
        self._waiting[w.conn] = w

    def _write(self, w: _Waiting) -> bool:
        """Writes what the socket takes of w's answer; once all is written,
        closes the connection or has it wait for its next request (True)."""
        try:
            n = w.conn.send(w.out)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:
            self._drop(w)
            return False
        w.out = w.out[n:]
        assert self._sel is not None
        if w.out:
            self._sel.modify(w.conn, selectors.EVENT_WRITE, w)
            return False
        if not w.keep:
            self._drop(w)
            return False
        self._sel.modify(w.conn, selectors.EVENT_READ, w)
        self._rearm(w)  # waits for its next request as a new connection does
        return True

    def _dispatch(self, w: _Waiting, authorized: bool) -> None:
        """Serves a request whose headers have come on a thread of its own,
        in a slot of its kind; none free: the connection is closed."""
        slot = self.token_slots if authorized else self.open_slots
        if not slot.acquire(blocking=False):
            _close(w.conn)
            return
        w.conn.setblocking(True)
        self._heads[w.conn] = bytes(w.buf)
        self._slots[w.conn] = slot
        try:
            self.process_request(w.conn, w.addr)
        except Exception:
            self._heads.pop(w.conn, None)
            self._slots.pop(w.conn, None)
            slot.release()
            _close(w.conn)

    def _expire(self) -> None:
        now = time.monotonic()
        for w in list(self._waiting.values()):
            if w.until > now:
                break
            self._drop(w)

    def _drop(self, w: _Waiting, close: bool = True) -> None:
        """w waits no longer; closed unless it is to be served."""
        self._waiting.pop(w.conn, None)
        if self._sel is not None:
            try:
                self._sel.unregister(w.conn)
            except (KeyError, ValueError):
                pass
        if close:
            _close(w.conn)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serves one request on its own thread, whose CPU time is the
        server's (_cost; a profile's is the profiler's)."""
        c = _cost.cost
        inner, t0 = c.inner(), _cost.now()
        try:
            super().process_request_thread(request, client_address)
        finally:
            c.add("server", _cost.now() - t0 - (c.inner() - inner))
            slot = self._slots.pop(request, None)
            if slot is not None:
                slot.release()

    def close(self) -> None:
        """Stops serving, closes the socket and removes the announcement."""
        if self.closed:
            return
        self.closed = True
        with self._cv:
            self._cv.notify()
        if os.getpid() == self.owner:
            if self.thread_ident is not None:
                self.shutdown()
            self.server_close()
            _unlink(self.announcements, self.owner)


class Handler(http.server.BaseHTTPRequestHandler):
    server: Server
    server_version = "gpuwatch_hook/" + __version__
    #: Seconds one read or write may wait (the total is REQUEST_SECONDS).
    timeout = REQUEST_SECONDS

    def setup(self) -> None:
        super().setup()
        head = self.server._heads.pop(self.connection, b"")
        if head:  # what the serving thread read while the connection waited
            self.rfile.close()
            self.rfile = io.BufferedReader(_Replay(head, self.connection))
        self.server.deadline(self, REQUEST_SECONDS)

    def cut(self) -> None:
        """Ends the connection: a blocked read or write fails, the thread
        ends."""
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def finish(self) -> None:
        self.server.done(self)
        try:
            super().finish()
        except OSError:
            pass

    def authorized(self) -> bool:
        """Whether the request carries the server's token: as a bearer
        token, or as the password of HTTP basic authentication."""
        return token_in(self.headers.get("Authorization", ""), self.server.token)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        u = urllib.parse.urlsplit(self.path)
        try:
            if not self.authorized():
                self._send(
                    401,
                    "text/plain; charset=utf-8",
                    b"401: this server wants its token (in its announcement, readable by its user only): Authorization: Bearer TOKEN\n",
                    {"WWW-Authenticate": 'Bearer realm="gpuwatch_hook"'},
                )
            elif u.path == "/metrics":
                self._send(200, "text/plain; version=0.0.4; charset=utf-8", self.server.stats.render())
            elif u.path == "/debug/pprof/profile":
                self._profile(urllib.parse.parse_qs(u.query))
            elif u.path == "/":
                self._send(
                    200,
                    "text/plain; charset=utf-8",
                    b"gpuwatch_hook: /metrics (Prometheus text), /debug/pprof/profile?seconds=N (pprof), POST /ceiling?seconds=N (the ceiling), POST /gpu-profile?steps=N (the GPU's time per step)\n",
                )
            else:
                self._send(404, "text/plain; charset=utf-8", b"404 not found\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client went away, or was cut off

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        """POST /ceiling?seconds=N: measure the ceiling (_ceiling) with a
        replay of N seconds. The loop then trains on repeated batches for
        N seconds: only the token's holder asks."""
        u = urllib.parse.urlsplit(self.path)
        try:
            if not self.authorized():
                self._send(401, "text/plain; charset=utf-8", b"401: this server wants its token\n", {"WWW-Authenticate": 'Bearer realm="gpuwatch_hook"'})
            elif u.path == "/gpu-profile":
                self._gpu_profile(urllib.parse.parse_qs(u.query))
            elif u.path != "/ceiling":
                self._send(404, "text/plain; charset=utf-8", b"404 not found\n")
            else:
                raw = urllib.parse.parse_qs(u.query).get("seconds", [""])[-1]
                seconds = _ceiling.parse_seconds(raw)
                if seconds is None:
                    self._send(400, "text/plain; charset=utf-8", b"seconds: want a number of seconds in (0, %d]\n" % int(_ceiling.MAX_SECONDS))
                    return
                ok, why = self.server.stats.ask_ceiling(seconds)
                if ok:
                    self._send(202, "text/plain; charset=utf-8", b"measuring the ceiling: the loop trains on repeated batches for %g s once it is warm\n" % seconds)
                else:
                    self._send(409, "text/plain; charset=utf-8", (why + "\n").encode())
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def _gpu_profile(self, query: Dict[str, List[str]]) -> None:
        """POST /gpu-profile?steps=N: record the GPU's time over the next N
        steps (_gpuprofile; no steps: DEFAULT_STEPS). 202 when armed, 409
        while a recording is under way, 400 for a bad N."""
        raw = query.get("steps", [""])[-1]
        steps = _gpuprofile.parse_steps(raw)
        if steps is None:
            self._send(400, "text/plain; charset=utf-8", b"steps: want a whole number of steps in [1, %d]\n" % _gpuprofile.MAX_STEPS)
            return
        ok, why = self.server.stats.ask_gpu_profile(steps)
        if ok:
            self._send(202, "text/plain; charset=utf-8", b"recording the GPU's time over %d steps from the next batch\n" % steps)
        else:
            self._send(409, "text/plain; charset=utf-8", (why + "\n").encode())

    def _profile(self, query: Dict[str, List[str]]) -> None:
        raw = query.get("seconds", ["30"])[-1]
        try:
            seconds = float(raw)
        except ValueError:
            seconds = -1.0
        if not 0 < seconds <= MAX_PROFILE_SECONDS:
            msg = "seconds: want a number of seconds in (0, %d]\n" % MAX_PROFILE_SECONDS
            self._send(400, "text/plain; charset=utf-8", msg.encode())
            return
        # The job's own choice only: a client never changes how the
        # process's threads switch (issue 41, item 2). A loop loading
        # inline (num_workers=0) gets it too: its loading runs on the
        # training thread, and a sampler let in only where that thread
        # lets go of the GIL charged the loading to the torch calls that
        # let go (92 % of it to a 2 µs torch.zeros after 0.7 ms of
        # hashing in __getitem__; with the fine switch, the hashing).
        fine = os.environ.get("GPUWATCH_HOOK_FINE_SWITCH") == "1"
        stats = self.server.stats
        if not self.server.profiling.acquire(blocking=False):
            self._send(409, "text/plain; charset=utf-8", b"a profile is already being taken; try again when it ends\n")
            return
        self.server.deadline(self, seconds + REQUEST_SECONDS)
        try:
            exclude = (threading.get_ident(), self.server.thread_ident)
            data = _cost.cost.timed_live(
                "profiler", lambda: _profiler.take_profile(
                    seconds, exclude=exclude, fine_switch=fine, workers=True, inline=lambda: stats.workers == 0
                )
            )
        finally:
            self.server.profiling.release()
        self._send(200, "application/octet-stream", data, {"Content-Disposition": 'attachment; filename="profile"'})

    def _send(self, code: int, ctype: str, body: bytes, headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        pass  # the training script's stderr is not ours to fill


# One server per (host, port) in this process: a second watch() on the same
# port — a validation loader beside the training one — shares it.
_servers: Dict[Tuple[str, int], Server] = {}
_lock = threading.Lock()
_listening: List[Server] = []  # every server started here, shared or not
_fork_handler = False
_exit_handler = False


def _after_fork_in_child() -> None:
    """A DataLoader worker is a fork of the training process: it must not
    hold the training process's listening sockets (they would keep the
    port taken after the training process ends), and it has no server
    thread."""
    global _lock
    _lock = threading.Lock()
    for srv in _listening:
        srv.closed = True
        try:
            srv.socket.close()
        except OSError:
            pass
        for conn in list(srv._waiting):  # the parent's: closed here, not ended
            try:
                conn.close()
            except OSError:
                pass
    _listening.clear()
    _servers.clear()


def _close_all() -> None:
    for srv in list(_listening):
        srv.close()


def install_fork_handler() -> bool:
    """A forked child (a DataLoader worker) lets go of the servers
    (_after_fork_in_child). Once per process."""
    global _fork_handler
    if _fork_handler or not hasattr(os, "register_at_fork"):
        return _fork_handler
    os.register_at_fork(after_in_child=_after_fork_in_child)
    _fork_handler = True
    return True


def install_exit_handler() -> bool:
    """At exit every server closes and its announcement is removed. Once
    per process."""
    global _exit_handler
    if not _exit_handler:
        atexit.register(_close_all)
        _exit_handler = True
    return True


def serve(host: str, port: int, stats_for_new: Optional[Stats], quiet: bool) -> Tuple[Stats, Optional[Server]]:
    """The server on (host, port), started on first use; its Stats (shared
    by every watch on the port). A port that cannot be bound is a warning
    and (fresh Stats, None): batches are still timed."""
    with _lock:
        key = (host, port)
        if key in _servers and not _servers[key].closed:
            srv = _servers[key]
            srv.users += 1
            return srv.stats, srv
        stats = stats_for_new or Stats()
        try:
            srv = Server((host, port), stats)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                warn(
                    "port %d on %s is in use (another training process, or another program): not serving "
                    "metrics; batches are still timed. Pass watch(..., port=0) for a free port." % (port, host)
                )
            else:
                warn("cannot serve on %s:%d (%s): not serving metrics; batches are still timed" % (host, port, e))
            return stats, None
        # Registered with the first server, not at import: importing the
        # hook changes nothing in the process (_patches lists both).
        if not _fork_handler:
            _env.attempt("os.register_at_fork: the server's", install_fork_handler)
        if not _exit_handler:
            _env.attempt("atexit: the servers closed", install_exit_handler)
        if port != 0:  # port 0 is a new port each time: nothing to share
            _servers[key] = srv
        srv.users = 1
        _listening.append(srv)
        t = threading.Thread(target=srv.serve_forever, name="gpuwatch_hook server", daemon=True)
        t.start()
        srv.start_reaper()
        srv.thread_ident = t.ident
        _cost.cost.watch_thread(getattr(t, "native_id", None))  # its CPU time, whole, is the hook's
        if srv._reaper is not None:
            _cost.cost.watch_thread(getattr(srv._reaper, "native_id", None))
        srv.announcements = announce(srv.url, srv.token)
        if not quiet:
            sys.stderr.write("gpuwatch_hook: serving %s — watch it with: gpuwatch attach %s\n" % (srv.url, srv.url))
        if host not in ("127.0.0.1", "localhost", "::1"):
            warn("serving on %s: anyone who can reach it can read this process's metrics and profiles" % host)
        return stats, srv


def release(srv: Optional[Server]) -> None:
    """One watch() is done with srv: the last one closes it."""
    if srv is None:
        return
    with _lock:
        srv.users -= 1
        if srv.users > 0:
            return
        for k, v in list(_servers.items()):
            if v is srv:
                del _servers[k]
        if srv in _listening:
            _listening.remove(srv)
    srv.close()
