"""A throwaway local PostgreSQL cluster, for the tests and the benchmarks.

``Cluster.start()`` runs ``initdb`` into a temporary folder and starts the server
on a Unix socket in that folder only (no TCP port). The server refuses to run as
root, so under root both run as the ``postgres`` OS user (``runuser``), in a
folder chowned to it. ``missing()`` says, in one line, why no cluster can be
started here (no server binaries, no psycopg, no non-root user), or ``None``.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

SERVER = ("initdb", "pg_ctl")
PORT = 5432  # only names the socket file: the server listens on no TCP port
TEST_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


def bin_dir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: Debian's newest, else the PATH's."""
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if all(Path(folder, name).is_file() for name in SERVER):
            return Path(folder)
    found = [shutil.which(name) for name in SERVER]
    if all(found):
        return Path(os.path.realpath(str(found[0]))).parent
    return None


def missing() -> str | None:
    """Why no cluster can be started here, in one line; ``None`` if one can."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'tierlog[postgres]')"
    if bin_dir() is None:
        return "PostgreSQL server binaries (initdb, pg_ctl) not found; apt-get install postgresql"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' OS user to run the server as"
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing"
    return None


class Cluster:
    """A running throwaway cluster; ``stop()`` removes it."""

    def __init__(self, root: Path, bindir: Path, as_user: list[str]) -> None:
        self.root = root
        self.data = root / "data"
        self.socket = root
        self._bin = bindir
        self._as = as_user
        self._names = itertools.count()
        self._options = ""

    @classmethod
    def start(cls, settings: tuple[str, ...] = TEST_SETTINGS) -> Cluster:
        """initdb and start a server with ``settings`` (``name=value``) on a fresh folder."""
        reason = missing()
        if reason is not None:
            raise RuntimeError(reason)
        bindir = bin_dir()
        assert bindir is not None
        root = Path(tempfile.mkdtemp(prefix="tierlog-pg-"))
        as_user: list[str] = []
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(root, entry.pw_uid, entry.pw_gid)
            as_user = ["runuser", "-u", "postgres", "--"]
        cluster = cls(root, bindir, as_user)
        try:
            cluster._run(
                "initdb", "-D", str(cluster.data), "-U", "postgres", "--auth=trust",
                "--encoding=UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
            cluster._options = " ".join(
                [f"-k {root}", "-c listen_addresses=''", f"-p {PORT}"]
                + [f"-c {s}" for s in settings]
            )
            cluster.start_server()
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return cluster

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(
            [*self._as, str(self._bin / program), *args],
            check=True,
            capture_output=True,
            cwd=self.root,
        )

    def url(self, dbname: str = "postgres") -> str:
        """A ``postgresql://`` URL for ``dbname`` over the cluster's Unix socket."""
        return f"postgresql://postgres@/{dbname}?host={self.socket}&port={PORT}"

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        """Run one statement outside a transaction (CREATE DATABASE, ...)."""
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            conn.execute(sql.encode())

    def create_database(self, prefix: str = "t", template: str = "template0") -> str:
        """A new, empty database's URL."""
        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        self.execute(f'CREATE DATABASE "{name}" TEMPLATE {template}')
        return self.url(name)

    def create_schema(self, prefix: str = "t", dbname: str = "postgres") -> str:
        """A new, empty schema's URL (its ``search_path`` names only that schema)."""
        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        self.execute(f'CREATE SCHEMA "{name}"', dbname)
        return f"{self.url(dbname)}&options=-csearch_path%3D{name}"

    def start_server(self) -> None:
        """Start the server on the cluster's folder, waiting until it accepts connections."""
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"),
            "-o", self._options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop_server(self) -> None:
        """Stop the server (fast shutdown: every connection is cut); the folder stays."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def restart(self) -> None:
        """Restart the server: every connection is cut; back when it accepts connections."""
        self.stop_server()
        self.start_server()

    def server_cpu(self) -> float:
        """CPU seconds the server's processes have used: the postmaster's own and those
        of its children that have exited (each backend, once its client disconnects)."""
        pid = (self.data / "postmaster.pid").read_text().split()[0]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder."""
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
