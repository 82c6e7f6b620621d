"""Warm start: a background process that has imported the framework once and forks a fresh
child per command, so a short command (``buddy validate``) skips the ~0.3 s of imports and
model building of a new interpreter (docs/cli.md#warm-start).

Two halves, both here:

- the **client** (:func:`entry`, the ``buddy`` command's entry point): for ``validate``,
  ``render``, ``schema``, ``diff`` and ``patterns`` it hands its argv, working directory,
  environment, umask and file descriptors 0-2 to the server over a Unix socket and exits
  with the child's status; when no usable server answers it runs the command in this
  process (:func:`buddy.cli.main.main`) and starts a server for next time.
- the **server** (``python -m buddy.cli.warm serve SPEC``): single-threaded; per request it
  checks the peer's uid and the staleness key, forks, and the child runs the command as
  the client's process would have, with the client's fds, cwd, environment and argv.

This module is imported on every run of the command: at module level it imports only
``os``, ``sys``, ``contextlib`` and ``typing`` (all imported already by then); the client
takes ``_socket``, ``_blake2`` and ``json`` when it runs, the server everything else.
"""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["WARM_COMMANDS", "command", "enabled", "entry", "serve"]

#: The subcommands a warm server runs (short, and their output only depends on the
#: request): the others run in the client's process.
WARM_COMMANDS = frozenset({"validate", "render", "schema", "diff", "patterns"})

#: Environment variables that change what the server imports or builds before any
#: request (its warm-up): part of the server's identity.
_WARMUP_ENV = ("PYTHONPATH", "PYTHONHASHSEED", "BUDDY_DISABLE_CAPABILITY_AUTOLOAD")
_OFF = frozenset({"0", "off", "false", "no"})
_HANDSHAKE_S = 1.0
_IDLE_S = 600.0
_FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP")
_SOCKET_MAX = 107  # bytes of sun_path, less the terminating NUL


# ---------------------------------------------------------------- where, and which server


def enabled() -> bool:
    """Whether warm start may be used here: not switched off (``BUDDY_WARM=0``), Linux,
    and the system calls it needs."""
    if os.environ.get("BUDDY_WARM", "").strip().lower() in _OFF:
        return False
    if sys.platform != "linux" or not hasattr(os, "fork") or not hasattr(os, "pidfd_open"):
        return False
    import _socket

    return hasattr(_socket, "SCM_RIGHTS") and hasattr(_socket, "SO_PEERCRED")


def _directory(create: bool = True) -> str | None:
    """The private folder of the sockets: ``$XDG_RUNTIME_DIR/buddy``, else
    ``$XDG_CACHE_HOME/buddy``, else ``~/.cache/buddy``; created 0700, and refused (None)
    unless it is a real folder of this user with mode 0700."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        base = runtime
    else:
        cache = os.environ.get("XDG_CACHE_HOME", "")
        base = cache if os.path.isabs(cache) else os.path.join(os.path.expanduser("~"), ".cache")
        if not os.path.isabs(base):
            return None
        if create:
            os.makedirs(base, exist_ok=True)
    folder = os.path.join(base, "buddy")
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    elif not os.path.lexists(folder):
        return folder  # no server was ever started here
    import stat

    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return None
    if stat.S_IMODE(st.st_mode) != 0o700:
        return None
    return folder


def _identity() -> dict[str, Any]:
    """What a server must share with its clients, whatever the files: the interpreter, its
    flags, ``sys.path``, buddy's folder and version, the environment of its warm-up."""
    import buddy

    return {
        "executable": sys.executable,
        "version": sys.version,
        "flags": list(sys.flags),
        "warnoptions": list(sys.warnoptions),
        "xoptions": sorted(map(str, sys._xoptions.items())),
        "fsencoding": [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()],
        "path": list(sys.path),
        "env": [os.environ.get(name) for name in _WARMUP_ENV],
        "package": list(buddy.__path__),
        "buddy": buddy.__version__,
        "uid": os.getuid(),
    }


def _digest(identity: dict[str, Any]) -> Any:
    """The identity's hash (its socket's name, and where its staleness key starts)."""
    import json

    return _blake2b(json.dumps(identity, sort_keys=True).encode("utf-8", "replace"))


def _key(identity: dict[str, Any], digest: Any = None) -> str:
    """The staleness key: the identity (its :func:`_digest` when given), then (name, size,
    mtime_ns) of every ``.py`` file of buddy's package and the mtime_ns of each folder on
    ``sys.path`` (a package installed or removed there changes it)."""
    digest = (digest or _digest(identity)).copy()
    files: list[str] = []
    pending = list(identity["package"])
    while pending:
        folder = pending.pop()
        try:
            scan = os.scandir(folder)
        except OSError:
            continue
        with scan:
            for entry in scan:
                name = entry.name
                if name.endswith(".py"):
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    files.append(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}")
                elif name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
    files.sort()
    digest.update("\n".join(files).encode("utf-8", "surrogateescape"))
    for entry in identity["path"]:
        try:
            mtime = os.stat(entry or ".").st_mtime_ns
        except OSError:
            mtime = -1
        digest.update(f"\n{entry}\0{mtime}".encode("utf-8", "surrogateescape"))
    return str(digest.hexdigest())


def _blake2b(data: bytes) -> Any:
    """hashlib.blake2b, without importing hashlib (its OpenSSL part is 3 ms of a start)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter built without it
        from hashlib import blake2b
    return blake2b(data)


class _Place:
    """The socket and lock file of the server for this interpreter and ``sys.path``."""

    def __init__(self, folder: str, identity: dict[str, Any]) -> None:
        self.identity = identity
        self.digest = _digest(identity)
        stem = os.path.join(folder, "warm-" + self.digest.hexdigest()[:16])
        self.socket = stem + ".sock"
        self.lock = stem + ".lock"

    def fits(self) -> bool:
        return len(os.fsencode(self.socket)) <= _SOCKET_MAX


def _place() -> _Place | None:
    folder = _directory()
    if folder is None:
        return None
    place = _Place(folder, _identity())
    return place if place.fits() else None


# ---------------------------------------------------------------- the client


def entry() -> int:
    """The ``buddy`` command: a warm server's child runs the command when one can, else
    this process does (:func:`buddy.cli.main.main`, exactly as without warm start)."""
    code = _client(sys.argv[1:])
    if code is None:
        from buddy.cli.main import main

        return main()
    return code


def _client(argv: list[str]) -> int | None:
    """The command's exit status from a warm server's child, or None: run it here."""
    if not argv or argv[0] not in WARM_COMMANDS:
        return None
    if "importtime" in sys._xoptions or "tracemalloc" in sys._xoptions:
        return None  # the user is measuring this process
    if sys.flags.inspect or sys.flags.verbose or not enabled():
        return None
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        streams = [_stream(s, fd) for fd, s in enumerate((sys.stdin, sys.stdout, sys.stderr))]
        place = _place()
        if place is None:
            return None
        key = _key(place.identity, place.digest)
        request = {
            "op": "run",
            "key": key,
            "argv": list(sys.argv),
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": _umask(),
            "path": list(sys.path),
            "streams": streams,
        }
    except Exception:  # anything amiss before the request: run it here
        return None
    code = _run_remote(place, request)
    if code is None:
        _start(place, key)
    return code


def _stream(stream: Any, fd: int) -> list[Any]:
    """How the interpreter set up ``sys.std*`` for this environment, for the child to set
    up its own the same way."""
    if stream is None or stream.fileno() != fd:
        raise ValueError("not the standard stream")
    raw = not hasattr(stream.buffer, "raw")  # `python -u`: stdout and stderr unbuffered
    return [stream.encoding, stream.errors, stream.line_buffering, stream.write_through, raw]


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _framed(request: dict[str, Any]) -> bytes:
    """A request as sent: its length (4 bytes, big-endian), then its JSON."""
    import json
    import struct

    body = json.dumps(request).encode()
    return struct.pack("!I", len(body)) + body


def _send(sock: Any, message: dict[str, Any]) -> None:
    import json

    sock.sendall(json.dumps(message).encode() + b"\n")


class _Lines:
    """JSON lines read from a socket."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.buffer = b""

    def read(self) -> dict[str, Any]:
        import json

        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the warm server closed the connection")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("not a message")
        return message


def _connect(path: str) -> Any:
    # `_socket`, not `socket`: the client's whole run is a few milliseconds, and `socket`
    # (its enums, `selectors`) would be 4 of them.
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(_HANDSHAKE_S)
    try:
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    return sock


def _run_remote(place: _Place, request: dict[str, Any]) -> int | None:
    """Hand the command to the server. None (nothing was run) when no usable server took
    it within the handshake's second; once it took it, its status."""
    import _socket
    import struct

    try:
        sock = _connect(place.socket)
    except OSError:
        return None
    try:
        try:
            data = _framed(request)
            # What socket.send_fds does: the three fds ride on the first bytes (SCM_RIGHTS).
            rights = (_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))
            sent = sock.sendmsg([data], [rights])
            if sent < len(data):
                sock.sendall(data[sent:])
            lines = _Lines(sock)
            answer = lines.read()
            if answer.get("ok") is not True:
                return None  # stale (it is stopping), or refused
            _send(sock, {"go": True})
        except Exception:  # not committed yet: nothing ran, run it here
            return None
        # Committed: the server runs the command now; never run it a second time here.
        sock.settimeout(None)
        return _wait(sock, lines)
    finally:
        sock.close()


def _wait(sock: Any, lines: _Lines) -> int:
    """Forward SIGINT, SIGTERM and SIGHUP to the child until the server reports its end;
    end as it did (the same exit code, or killed by the same signal)."""
    import signal

    def forward(signum: int, frame: Any) -> None:
        with contextlib.suppress(OSError):
            _send(sock, {"signal": signum})

    forwarded = [getattr(signal, name) for name in _FORWARDED]
    previous = {signum: signal.signal(signum, forward) for signum in forwarded}
    try:
        lines.read()  # {"pid": …}: the child runs
        end = lines.read()
    except Exception as exc:  # committed: the command ran (or runs) there
        print(f"buddy: the warm server stopped before the command ended ({exc})", file=sys.stderr)
        return 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    killed = int(end.get("signal") or 0)
    if killed:
        # Die of the same signal, as the child did (a shell loop stops on Ctrl-C).
        sys.stdout.flush()
        try:
            signal.signal(killed, signal.SIG_DFL)
            os.kill(os.getpid(), killed)
        except (OSError, ValueError):
            pass
    return int(end.get("exit", 1))


def _start(place: _Place, key: str) -> None:
    """Start a server in the background unless one holds the lock (running or starting)."""
    import fcntl
    import json
    import subprocess

    try:
        fd = os.open(place.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # a server holds it
        finally:
            os.close(fd)
        spec = {"socket": place.socket, "lock": place.lock, "key": key, "path": sys.path}
        subprocess.Popen(
            [
                sys.executable,
                *subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]
                "-m",
                "buddy.cli.warm",
                "serve",
                json.dumps(spec),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,
        )
    except Exception:
        pass


# ---------------------------------------------------------------- `buddy warm status|stop`


def command(action: str, every: bool = False) -> int:
    """``buddy warm status`` (exit 0 when a server runs, 1 when none) and ``buddy warm
    stop`` (exit 0)."""
    import glob
    import time

    folder = _directory(create=False)
    if folder is None:
        print("buddy warm: the socket folder is not private (see docs/cli.md#warm-start)")
        return 1
    place = _Place(folder, _identity())
    key = _key(place.identity, place.digest)
    paths = sorted(glob.glob(os.path.join(folder, "warm-*.sock"))) if every else [place.socket]
    if not enabled():
        print("warm start is off here (BUDDY_WARM=0, or not Linux)")
    found = 0
    for path in paths:
        try:
            sock = _connect(path)
            try:
                sock.sendall(_framed({"op": action, "key": key}))
                answer = _Lines(sock).read()
                if action == "stop":
                    _gone(sock)
            finally:
                sock.close()
        except (OSError, EOFError, ValueError):
            if not every:
                print(f"no warm server (socket {path})")
            continue
        if found:
            print()
        found += 1
        if action == "stop":
            print(f"stopped warm server {answer.get('pid')} (socket {path})")
            continue
        age = time.time() - float(answer.get("started", time.time()))
        if path != place.socket:
            state = "(the server of another interpreter or sys.path)"
        elif answer.get("key_matches"):
            state = "matches"
        else:
            state = "differs (stale: the next command replaces it)"
        print(f"socket: {path}")
        print(f"pid: {answer.get('pid')}")
        print(f"age: {age:.1f} s")
        print(f"requests: {answer.get('requests')}")
        print(f"running: {answer.get('running')}")
        print(f"idle exit: {answer.get('idle')} s")
        print(f"key: {state}")
    if every and not found:
        print(f"no warm server in {folder}")
    if action == "status" and not found:
        return 1
    return 0


def _gone(sock: Any, deadline: float = 10.0) -> None:
    """Wait until the server closes the connection (it has stopped listening)."""
    sock.settimeout(deadline)
    try:
        while sock.recv(4096):
            pass
    except OSError:
        pass


# ---------------------------------------------------------------- the server


def serve(spec_text: str) -> int:
    """Run a server: import the framework, listen on the socket, fork a child per command."""
    import json

    spec = json.loads(spec_text)
    sys.path[:] = spec["path"]
    identity = _identity()
    key = _key(identity)
    if key != spec["key"] or not enabled():
        return 0  # another environment than the client's: it will run in process
    import fcntl
    import time

    lock = os.open(spec["lock"], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + 10
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() > deadline:
                return 0  # another server runs there
            time.sleep(0.05)
    _warm_up()
    import threading

    if threading.active_count() != 1:
        return 0  # never fork with threads
    server = _Server(spec["socket"], lock, key)
    return server.run()


def _warm_up() -> None:
    """Import what the warm commands need and build the manifest's model: each child then
    starts where a fresh process would be ~0.3 s later."""
    import importlib

    for name in (
        "buddy.cli.main",
        "buddy.cli.commands",
        "buddy.cli.diff",
        "buddy.cli.patterns",
        "buddy.compile.compiler",
        "buddy.compile.render",
        "buddy.compile.cache",
        "buddy.manifest.jsonschema",
        "buddy.schemas",
        "buddy.capabilities.memory.prompt",
        "buddy.capabilities.memory.slots",
        "encodings.utf_8_sig",
        "locale",
        "tempfile",
        "linecache",
        "traceback",
    ):
        try:
            importlib.import_module(name)
        except Exception:
            continue
    try:
        import buddy.capabilities

        for folder in buddy.capabilities.__path__:
            for name in sorted(os.listdir(folder)):
                for part in ("compile", "compiled"):
                    if os.path.isfile(os.path.join(folder, name, part + ".py")):
                        importlib.import_module(f"buddy.capabilities.{name}.{part}")
        from buddy.manifest.schema import manifest_model

        manifest_model()
        _build_models()
        _rehearse()
    except Exception:
        pass  # the children build what is missing, as a fresh process does
    import gc

    gc.collect()
    gc.freeze()  # keep the children's copy-on-write pages shared


_REHEARSAL = """\
name: warm-up
model: test
persona:
  template: companion.md.j2
  traits: traits/gentle.yaml
memory:
  auto: true
  relations: [allergy]
tools:
  - PLATFORM_TOOL
  - name: remember
    uses: memory.write
    description: keep it
    parameters: {type: object, properties: {topic: {type: string}}, required: [topic]}
    key: "{{ topic }}"
    text: "{{ topic }}"
  - name: add
    description: add
    parameters: {type: object, properties: {a: {type: integer, minimum: 1}}, required: [a]}
    handler: plugins.tools:add
"""


def _rehearse() -> None:
    """Check a throwaway buddy once (in a temporary folder, removed after): what a first
    check sets up for good — Jinja2's environments, compiled regular expressions, the
    validators of tool parameters — is then ready in every child. Only what is kept by
    content (or by a path this folder alone has) is kept: nothing of a user's project."""
    import shutil
    import tempfile

    from buddy.compile.compiler import batch, diagnose
    from buddy.extend import registry

    # A platform tool from the registry (the core names none): its schema is checked once.
    manifest = _REHEARSAL.replace("PLATFORM_TOOL", registry().tool_names()[0])

    folder = tempfile.mkdtemp(prefix="buddy-warm-")
    try:
        with open(os.path.join(folder, "pyproject.toml"), "w", encoding="utf-8"):
            pass
        os.mkdir(os.path.join(folder, "plugins"))
        with open(os.path.join(folder, "plugins", "tools.py"), "w", encoding="utf-8") as out:
            out.write("async def add(conversation, params):\n    return 1\n")
        with open(os.path.join(folder, "buddy.yaml"), "w", encoding="utf-8") as out:
            out.write(manifest)
        with batch():
            diagnose(os.path.join(folder, "buddy.yaml"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        sys.modules["tempfile"].tempdir = None  # type: ignore[attr-defined]


def _build_models() -> None:
    """Build the validators of buddy's models that wait for their first use
    (``defer_build``): in a fresh process that is most of a first validation."""
    from pydantic import BaseModel

    pending: list[type[BaseModel]] = [BaseModel]
    seen: set[type[BaseModel]] = set()
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            pending.append(sub)
            if (
                not sub.__module__.startswith("buddy.")
                or sub.__pydantic_generic_metadata__["parameters"]
            ):
                continue
            if not sub.__pydantic_complete__ or type(sub.__pydantic_validator__).__name__ == (
                "MockValSer"
            ):
                try:
                    sub.model_rebuild()
                    _ = sub.__pydantic_validator__.validate_python  # a mock's builds it
                except Exception:
                    continue


class _Request:
    """One client's connection."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.buffer = b""
        self.fds: list[int] = []
        self.request: dict[str, Any] | None = None
        self.state = "request"  # request → go → running
        self.pid = 0
        self.pidfd = -1

    def close_fds(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []


class _Server:
    def __init__(self, path: str, lock: int, key: str) -> None:
        import selectors
        import signal
        import socket
        import time

        self.path = path
        self.lock = lock
        self.key = key
        self.started = time.time()
        self.last = time.monotonic()
        self.requests = 0
        self.idle = _idle_seconds()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self.listener: Any = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.listener.bind(path)
        finally:
            os.umask(old)
        self.listener.listen(64)
        self.listener.setblocking(False)
        st = os.stat(path)
        self.inode = (st.st_dev, st.st_ino)
        os.chdir("/")
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.selector.register(self.wake_r, selectors.EVENT_READ, "signal")
        signal.set_wakeup_fd(self.wake_w.fileno())
        signal.signal(signal.SIGTERM, lambda *_: None)
        signal.signal(signal.SIGINT, lambda *_: None)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.clients: dict[int, _Request] = {}  # by the connection's fd
        self.children: dict[int, _Request] = {}  # by the pidfd
        self.listening = True

    # ---------------------------------------------------------------- the loop

    def run(self) -> int:
        import signal
        import time

        while self.listening or self.children or self.clients:
            timeout = 1.0
            for item, _ in self.selector.select(timeout):
                what = item.data
                if what == "accept":
                    self._accept()
                elif what == "signal":
                    try:
                        signals = self.wake_r.recv(64)
                    except OSError:
                        signals = b""
                    if signal.SIGTERM in signals or signal.SIGINT in signals:
                        self._stop_listening()
                elif (
                    isinstance(what, _Request)
                    and what.state == "running"
                    and item.fileobj == what.pidfd
                ):
                    self._reap(what)
                elif isinstance(what, _Request):
                    self._readable(what)
            if self.listening:
                if not self._still_ours():
                    self._stop_listening()
                elif not self.children and time.monotonic() - self.last > self.idle:
                    self._stop_listening()
            if not self.listening and not self.children:
                for request in list(self.clients.values()):
                    self._drop(request)
        return 0

    def _still_ours(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.inode

    def _stop_listening(self) -> None:
        """Stop taking requests: the socket is removed (when still ours) and the lock let
        go, so a new server can start while the running children finish."""
        if not self.listening:
            return
        self.listening = False
        if self._still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        self.selector.unregister(self.listener)
        self.listener.close()
        os.close(self.lock)
        self.lock = -1

    def _accept(self) -> None:
        import selectors
        import socket
        import struct
        import time

        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        if uid != os.getuid():
            conn.close()
            return
        self.last = time.monotonic()
        conn.setblocking(False)
        request = _Request(conn)
        self.clients[conn.fileno()] = request
        self.selector.register(conn, selectors.EVENT_READ, request)

    def _drop(self, request: _Request) -> None:
        request.close_fds()
        if request.conn.fileno() >= 0:
            self.clients.pop(request.conn.fileno(), None)
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(request.conn)
            request.conn.close()

    def _reply(self, request: _Request, message: dict[str, Any]) -> bool:
        import json

        try:
            request.conn.setblocking(True)
            request.conn.settimeout(5.0)
            request.conn.sendall(json.dumps(message).encode() + b"\n")
            request.conn.setblocking(False)
        except OSError:
            return False
        return True

    def _readable(self, request: _Request) -> None:
        import json
        import socket
        import struct

        try:
            if request.state == "request":
                data, fds, _, _ = socket.recv_fds(request.conn, 65536, 8)
                request.fds.extend(fds)
            else:
                data = request.conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            if request.state != "running":
                self._drop(request)
                return
            # The client went away: the child it started ends as the client did.
            self.selector.unregister(request.conn)
            _signal(request, 15)
            return
        request.buffer += data
        if request.state == "request":
            if len(request.buffer) < 4:
                return
            (size,) = struct.unpack("!I", request.buffer[:4])
            if len(request.buffer) < 4 + size:
                return
            try:
                message = json.loads(request.buffer[4 : 4 + size])
            except ValueError:
                self._drop(request)
                return
            request.buffer = request.buffer[4 + size :]
            self._request(request, message)
            return
        while b"\n" in request.buffer:
            line, _, request.buffer = request.buffer.partition(b"\n")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if request.state == "go" and message.get("go") is True:
                self._fork(request)
            elif request.state == "running" and message.get("signal") in _forwarded():
                _signal(request, message["signal"])

    def _request(self, request: _Request, message: dict[str, Any]) -> None:
        import time

        op = message.get("op")
        matches = message.get("key") == self.key
        if op == "status":
            self._reply(
                request,
                {
                    "pid": os.getpid(),
                    "started": self.started,
                    "requests": self.requests,
                    "running": len(self.children),
                    "idle": self.idle,
                    "key_matches": matches,
                },
            )
            self._drop(request)
            return
        if op == "stop":
            self._stop_listening()
            self._reply(request, {"pid": os.getpid()})
            self._drop(request)
            return
        if op != "run" or len(request.fds) != 3 or not self.listening:
            self._reply(request, {"ok": False})
            self._drop(request)
            return
        if not matches:
            self._stop_listening()  # stale: a new server takes the socket
            self._reply(request, {"ok": False, "stale": True})
            self._drop(request)
            return
        request.request = message
        request.state = "go"
        self.requests += 1
        self.last = time.monotonic()
        if not self._reply(request, {"ok": True}):
            self._drop(request)

    def _fork(self, request: _Request) -> None:
        import selectors

        assert request.request is not None
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                self._into_child(request)
                code = _child(request.request)
            finally:
                os._exit(code)
        request.close_fds()  # the client's stdio stays open in the child only
        request.pid = pid
        request.state = "running"
        try:
            request.pidfd = os.pidfd_open(pid)
        except OSError:
            request.pidfd = -1
        if request.pidfd >= 0:
            self.children[request.pidfd] = request
            self.selector.register(request.pidfd, selectors.EVENT_READ, request)
        self._reply(request, {"pid": pid})
        if request.pidfd < 0:
            self._reap(request, block=True)

    def _reap(self, request: _Request, block: bool = False) -> None:
        try:
            _, status = os.waitpid(request.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            status = 1 << 8
        if request.pidfd >= 0:
            self.children.pop(request.pidfd, None)
            self.selector.unregister(request.pidfd)
            os.close(request.pidfd)
            request.pidfd = -1
        code = os.waitstatus_to_exitcode(status)
        killed = -code if code < 0 else 0
        self._reply(request, {"exit": 128 + killed if killed else code, "signal": killed})
        self._drop(request)

    def _into_child(self, request: _Request) -> None:
        """In the child: nothing of the server's is kept but the request's stdio."""
        import signal

        signal.set_wakeup_fd(-1)
        for other in list(self.clients.values()):
            if other is not request:
                other.close_fds()
            if other.pidfd >= 0:
                os.close(other.pidfd)
                other.pidfd = -1
            other.conn.close()
        self.selector.close()
        if self.listening:
            self.listener.close()
            os.close(self.lock)
        self.wake_r.close()
        self.wake_w.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for name in ("SIGTERM", "SIGHUP", "SIGCHLD", "SIGQUIT"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        stdio = request.fds
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        for fd in stdio:
            if fd > 2:
                os.close(fd)
        request.fds = []


def _signal(request: _Request, signum: int) -> None:
    import signal

    with contextlib.suppress(OSError):
        signal.pidfd_send_signal(request.pidfd, signum)


def _forwarded() -> set[int]:
    """The numbers of the signals a client forwards to its command (:data:`_FORWARDED`)."""
    import signal

    return {int(getattr(signal, name)) for name in _FORWARDED}


def _idle_seconds() -> float:
    try:
        value = float(os.environ.get("BUDDY_WARM_IDLE", _IDLE_S))
    except ValueError:
        return _IDLE_S
    return value if value > 0 else _IDLE_S


def _child(request: dict[str, Any]) -> int:
    """Become the client's process and run its command; the exit status."""
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    import locale
    import time

    time.tzset()
    with contextlib.suppress(locale.Error):
        locale.setlocale(locale.LC_CTYPE, "")
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None  # type: ignore[attr-defined]  # TMPDIR anew
    if "linecache" in sys.modules:
        sys.modules["linecache"].clearcache()
    import importlib

    importlib.invalidate_caches()
    sys.stdin, sys.stdout, sys.stderr = _streams(request["streams"])
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
    sys.argv[:] = request["argv"]
    sys.path[:] = request["path"]
    from buddy.cli.main import main

    try:
        code = _status(main())
    except SystemExit as exc:
        code = _status(exc.code)
    except BaseException as exc:  # as the interpreter ends on an uncaught exception
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code = 1
        if isinstance(exc, KeyboardInterrupt):
            _finish(code)
            import signal

            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
    return _finish(code)


def _streams(specs: list[list[Any]]) -> list[Any]:
    """New ``sys.stdin``, ``stdout`` and ``stderr`` on fds 0-2, made as the interpreter made
    the client's (encoding, errors, line buffering, write-through, ``-u``)."""
    import io

    streams = []
    for fd, (encoding, errors, line_buffering, write_through, raw_io) in enumerate(specs):
        mode = "rb" if fd == 0 else "wb"
        # Not closed here: they are the process's stdio until it ends (closefd=False).
        buffer = open(fd, mode, buffering=0 if raw_io and fd else -1, closefd=False)  # noqa: SIM115
        raw = getattr(buffer, "raw", buffer)
        with contextlib.suppress(AttributeError):
            raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]  # type: ignore[misc]
        stream = io.TextIOWrapper(
            buffer,
            encoding=encoding,
            errors=errors,
            newline="\n",
            line_buffering=line_buffering,
            write_through=write_through,
        )
        with contextlib.suppress(AttributeError):
            stream.mode = "r" if fd == 0 else "w"  # type: ignore[misc]
        streams.append(stream)
    return streams


def _status(value: Any) -> int:
    """An exit status from ``SystemExit``'s code, as the interpreter makes it."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    with contextlib.suppress(Exception):
        print(value, file=sys.stderr)
    return 1


def _finish(code: int) -> int:
    """What the interpreter does at exit: wait for threads, run ``atexit``, flush."""
    if "threading" in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules["threading"]._shutdown()
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception as exc:
            # As the interpreter reports a failed flush at exit.
            import traceback

            with contextlib.suppress(Exception):
                print(f"Exception ignored in: {stream!r}", file=sys.stderr)
                traceback.print_exception(exc, file=sys.stderr)
            code = 120
    return code


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2]))
    print("usage: python -m buddy.cli.warm serve SPEC", file=sys.stderr)
    sys.exit(2)
