"""Warm start (buddy.cli.warm, docs/cli.md#warm-start), run as a user runs it: real processes
of the command with ``BUDDY_WARM=1``, each test with its own socket folder
(``XDG_RUNTIME_DIR`` in tmp_path), its servers stopped at the end.

Nothing here asserts a duration: every wait is on a condition, with a generous deadline
(the suite shares two cores with other workers)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEADLINE = 30.0

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or not hasattr(os, "pidfd_open"), reason="warm start is Linux only"
)


class Warm:
    """A user's environment with warm start on: the command as a console script (its
    folder, not the working directory, is ``sys.path[0]``, so one server serves every
    folder), its own socket folder."""

    def __init__(self, root: Path, package: Path, runtime: Path | None = None, **env: str) -> None:
        self.root = root
        # A short folder of its own: a Unix socket's path has at most 107 bytes, and
        # tmp_path under xdist (…/popen-gw0/test_<its name>0/) can be longer than that.
        self.runtime = runtime or Path(tempfile.mkdtemp(prefix="buddy-warm-"))
        self.runtime.mkdir(mode=0o700, exist_ok=True)
        bin_dir = root / "bin"
        bin_dir.mkdir(exist_ok=True)
        self.script = bin_dir / "buddy"
        self.script.write_text(
            f"#!{sys.executable}\nimport sys\nfrom buddy.cli.warm import entry\n"
            "sys.exit(entry())\n",
            encoding="utf-8",
        )
        self.script.chmod(0o755)
        self.env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "BUDDY_WARM": "1",
            "XDG_RUNTIME_DIR": str(self.runtime),
            "BUDDY_WARM_IDLE": "300",
            # buddy from a copy: the server's key is about its files only (nobody edits them
            # while the test runs; a test may change them).
            "PYTHONPATH": str(package),
            **env,
        }

    def run(
        self, *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, warm: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        environ = dict(env if env is not None else self.env)
        if not warm:
            environ["BUDDY_WARM"] = "0"
        return subprocess.run(
            [str(self.script), *args],
            cwd=cwd,
            env=environ,
            # A terminal's or /dev/null: under xdist the worker's own stdin is closed, and a
            # command without its standard streams always runs in its own process.
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
            check=False,
        )

    def status(self, env: dict[str, str] | None = None) -> dict[str, str] | None:
        done = self.run("warm", "status", env=env)
        if done.returncode != 0:
            return None
        out = done.stdout.decode()
        return dict(re.findall(r"^(\w[\w ]*): (.*)$", out, re.MULTILINE))

    def server(self, env: dict[str, str] | None = None, other_than: str = "") -> dict[str, str]:
        """The running server's status, once one answers (and is not ``other_than``)."""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            status = self.status(env)
            if status is not None and status["pid"] != other_than:
                return status
            time.sleep(0.1)
        folder = self.runtime / "buddy"
        found = sorted(os.listdir(folder)) if folder.exists() else "no socket folder"
        last = self.run("warm", "status", env=env)
        raise AssertionError(f"no warm server answered; {folder}: {found}; status: {last!r}")

    def served(self, *args: str, cwd: Path = REPO, env: dict[str, str] | None = None):
        """Run a command that the server must serve (its request count goes up by one)."""
        before = int(self.server(env)["requests"])
        done = self.run(*args, cwd=cwd, env=env)
        after = self.server(env)
        assert int(after["requests"]) == before + 1, (args, done)
        return done

    def stop(self) -> None:
        for env in (self.env,):
            self.run("warm", "stop", "--all", env=env)
        shutil.rmtree(self.runtime, ignore_errors=True)


def _copy(target: Path) -> Path:
    # With its bytecode (copy2 keeps the sources' times, so it stays valid): each of the
    # tests' processes would otherwise compile the whole package again.
    shutil.copytree(REPO / "framework" / "buddy", target / "buddy")
    return target


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the buddy package, put first on ``PYTHONPATH``."""
    return _copy(tmp_path_factory.mktemp("site"))


@pytest.fixture
def warm(tmp_path: Path, package: Path) -> Iterator[Warm]:
    user = Warm(tmp_path, package)
    yield user
    user.stop()


def _same(a: subprocess.CompletedProcess[bytes], b: subprocess.CompletedProcess[bytes]) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


MINIMAL = """\
name: case
model: test
persona:
  prompt: hi
"""

INVALID = """\
name: broken
model: test
persona:
  prompt: hi
tools:
  - name: 1nope
"""


def test_first_call_starts_a_server_that_serves_the_next(warm: Warm) -> None:
    first = warm.run("validate", "manifests/aunt-tu")
    assert first.returncode == 0, first.stderr
    status = warm.server()
    assert Path(status["socket"]).parent == warm.runtime / "buddy"
    assert status["key"] == "matches"
    second = warm.served("validate", "manifests/aunt-tu")
    _same(first, second)
    assert oct((warm.runtime / "buddy").stat().st_mode & 0o777) == "0o700"


def _shape(line: str) -> str:
    """A status line with what differs between two servers made alike: the socket's
    folder, its name's key, and every number."""
    key, _, value = line.partition(": ")
    if key == "socket":
        value = re.sub(r"[0-9a-f]{16}", "<key>", Path(value).name)
    return f"{key}: {re.sub(r'[0-9]+', '<n>', value)}"


def test_the_status_example_in_docs_cli_md_is_what_status_prints(warm: Warm) -> None:
    doc = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    example = re.search(r"```text\n\$ buddy warm status\n(.*?)```", doc, re.DOTALL)
    assert example is not None, "docs/cli.md has no `buddy warm status` example"
    warm.run("validate", "manifests/aunt-tu")
    warm.server()
    printed = warm.run("warm", "status")
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.decode().splitlines()
    assert [_shape(x) for x in example.group(1).splitlines()] == [_shape(x) for x in lines]


def test_output_is_the_same_as_in_process(warm: Warm, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "buddy.yaml").write_text(INVALID, encoding="utf-8")
    warm.run("validate", "manifests/aunt-tu")
    warm.server()
    commands = [
        ("validate", "manifests/aunt-tu"),
        ("validate", str(broken)),
        ("validate", "manifests/aunt-tu", "manifests/cardio", "manifests/xiaoman"),
        ("validate", "--format", "json", "manifests/aunt-tu", str(broken)),
        ("validate", "--format", "github", str(broken)),
        ("render", "manifests/cardio"),
        ("render", "--format", "json", "manifests/aunt-tu"),
        ("schema",),
        ("schema", "--scenario"),
        ("validate",),  # usage error
        ("render", "--nope", "x"),
        ("validate", "no/such/path"),
        ("diff", "manifests/aunt-tu", "manifests/cardio"),
        ("validate", "-h"),
    ]
    codes = set()
    for argv in commands:
        served = warm.served(*argv)
        cold = warm.run(*argv, warm=False)
        _same(served, cold)
        codes.add(served.returncode)
    assert codes == {0, 1, 2}
    assert b"broken/buddy.yaml:6:5: error" in warm.run("validate", str(broken)).stdout


def test_the_child_has_the_clients_folder_and_environment(warm: Warm, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "cardio").mkdir(parents=True)
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    (project / "cardio" / "buddy.yaml").write_text(MINIMAL, encoding="utf-8")
    warm.run("validate", "cardio", cwd=project)
    warm.server()
    # Relative paths are the client's: its working directory.
    here = warm.served("validate", "cardio", cwd=project)
    assert here.returncode == 0, here.stderr
    _same(here, warm.run("validate", "cardio", cwd=project, warm=False))
    # The environment is the client's: BUDDY_MODEL changes the result.
    env = {**warm.env, "BUDDY_MODEL": "offline"}
    model = warm.served("render", "--format", "json", "cardio", cwd=project, env=env)
    _same(model, warm.run("render", "--format", "json", "cardio", cwd=project, env=env, warm=False))
    plain = warm.served("render", "--format", "json", "cardio", cwd=project)
    assert (model.returncode, plain.returncode) == (0, 0)
    assert model.stdout != plain.stdout
    # A variable the client does not have is not in the child: `git` is looked up on the
    # client's PATH (a fake one that says what it sees).
    fake = tmp_path / "fakebin"
    fake.mkdir()
    seen_file = tmp_path / "seen"
    (fake / "git").write_text(
        f'#!/bin/sh\necho "${{WARM_MARKER-unset}}" > {seen_file}\nexit 3\n', encoding="utf-8"
    )
    (fake / "git").chmod(0o755)
    with_marker = {**warm.env, "PATH": f"{fake}:{os.environ['PATH']}", "WARM_MARKER": "here"}
    seen = warm.served("diff", "--git", "HEAD", cwd=project, env=with_marker)
    assert seen_file.read_text(encoding="utf-8") == "here\n"
    without = {k: v for k, v in with_marker.items() if k != "WARM_MARKER"}
    unseen = warm.served("diff", "--git", "HEAD", cwd=project, env=without)
    assert seen_file.read_text(encoding="utf-8") == "unset\n"
    _same(seen, unseen)
    _same(unseen, warm.run("diff", "--git", "HEAD", cwd=project, env=without, warm=False))


PLUGGED = """\
name: plugged
model: test
persona:
  prompt: hi
tools:
  - name: add
    description: Add two integers.
    parameters:
      type: object
      properties:
        a: { type: integer }
      required: [a]
    handler: plugins.tools:add
"""


def test_user_code_edited_between_served_calls_is_seen(warm: Warm, tmp_path: Path) -> None:
    project = tmp_path / "plugged"
    (project / "plugins").mkdir(parents=True)
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    (project / "plugins" / "__init__.py").write_text("", encoding="utf-8")
    tools = project / "plugins" / "tools.py"
    tools.write_text("def other(conversation, params):\n    return 1\n", encoding="utf-8")
    (project / "buddy.yaml").write_text(PLUGGED, encoding="utf-8")
    warm.run("validate", str(project))
    warm.server()
    missing = warm.served("validate", str(project))
    assert missing.returncode == 1, missing
    _same(missing, warm.run("validate", str(project), warm=False))
    tools.write_text("async def add(conversation, params):\n    return 1\n", encoding="utf-8")
    found = warm.served("validate", str(project))
    assert found.returncode == 0, found
    _same(found, warm.run("validate", str(project), warm=False))


def test_a_changed_framework_file_makes_the_server_stale(tmp_path: Path) -> None:
    copy = _copy(tmp_path / "site")
    warm = Warm(tmp_path, copy)
    try:
        _stale(warm, copy)
    finally:
        warm.stop()


def _stale(warm: Warm, copy: Path) -> None:
    env = warm.env
    first = warm.run("validate", "manifests/aunt-tu", env=env)
    assert first.returncode == 0, first.stderr
    old = warm.server(env)
    served = warm.served("validate", "manifests/aunt-tu", env=env)
    _same(first, served)
    touched = copy / "buddy" / "errors.py"
    stat = touched.stat()
    os.utime(touched, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    stale = warm.run("validate", "manifests/aunt-tu", env=env)
    _same(first, stale)
    new = warm.server(env, other_than=old["pid"])
    assert new["socket"] == old["socket"]
    assert new["key"] == "matches"
    assert new["requests"] == "0"  # the stale call ran in its own process
    _same(first, warm.served("validate", "manifests/aunt-tu", env=env))
    _wait_gone(int(old["pid"]))


def test_sigint_to_the_client_ends_the_child(warm: Warm, tmp_path: Path) -> None:
    fake = tmp_path / "fakebin"
    fake.mkdir()
    started = tmp_path / "started"
    (fake / "git").write_text(f"#!/bin/sh\ntouch {started}\nexec sleep 120\n", encoding="utf-8")
    (fake / "git").chmod(0o755)
    env = {**warm.env, "PATH": f"{fake}:{os.environ['PATH']}"}
    warm.run("validate", "manifests/aunt-tu", env=env)
    before = int(warm.server(env)["requests"])
    client = subprocess.Popen(
        [str(warm.script), "diff", "--git", "HEAD"],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for(started.exists)
        assert int(warm.server(env)["requests"]) == before + 1
        client.send_signal(signal.SIGINT)
        _, err = client.communicate(timeout=DEADLINE)
    finally:
        client.kill()
    assert client.returncode == -signal.SIGINT
    assert b"KeyboardInterrupt" in err
    _wait_for(lambda: warm.server(env)["running"] == "0")


def test_idle_server_exits(tmp_path: Path, package: Path) -> None:
    # Long enough for the first `warm status` (a cold process: a second or two on a loaded
    # machine) to find the server before it exits: with 1 s the server was gone first.
    user = Warm(tmp_path, package, BUDDY_WARM_IDLE="4")
    try:
        user.run("validate", "manifests/aunt-tu")
        status = user.server()
        _wait_gone(int(status["pid"]))
        assert not Path(status["socket"]).exists()
        assert user.status() is None
    finally:
        user.stop()


@pytest.mark.parametrize("how", ["mode", "owner"])
def test_an_unsafe_folder_is_not_used(tmp_path: Path, package: Path, how: str) -> None:
    user = Warm(tmp_path, package)
    folder = user.runtime / "buddy"
    folder.mkdir(mode=0o700)
    if how == "mode":
        folder.chmod(0o755)
    elif os.getuid() == 0:
        os.chown(folder, 12345, 12345)
    else:
        pytest.skip("only root can give the folder to someone else")
    try:
        for _ in range(2):
            done = user.run("validate", "manifests/aunt-tu")
            assert done.returncode == 0, done.stderr
        assert list(folder.iterdir()) == []
        assert user.status() is None
    finally:
        user.stop()


def test_a_socket_path_too_long_runs_in_process(tmp_path: Path, package: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)  # the socket's path: over 107 bytes
    deep.mkdir(parents=True)
    user = Warm(tmp_path, package, runtime=deep)
    try:
        for _ in range(2):
            done = user.run("validate", "manifests/aunt-tu")
            assert (done.returncode, done.stdout) == (0, b"ok: 1 buddy valid\n"), done.stderr
        assert list((deep / "buddy").iterdir()) == []
        assert user.status() is None
    finally:
        user.stop()


def test_off_never_creates_a_socket(tmp_path: Path, package: Path) -> None:
    user = Warm(tmp_path, package, BUDDY_WARM="0")
    try:
        for _ in range(2):
            assert user.run("validate", "manifests/aunt-tu").returncode == 0
        assert user.run("warm", "status").returncode == 1
        assert list(user.runtime.iterdir()) == []
    finally:
        user.stop()


def _wait_for(condition, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _wait_gone(pid: int) -> None:
    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    _wait_for(gone)
