"""Run the web server and one Celery worker together: what `make run` ends with.

    python -m flaskapp.launcher [--port PORT]

The web server is gunicorn (2 workers x 4 threads, the application preloaded), or
Django's runserver without the autoreloader when DJANGO_DEBUG=1. It starts first;
the worker starts once the web server's port answers. The worker consumes the `celery` and `judge` queues
with a thread pool, on whatever broker the settings name (the embedded filesystem
broker by default).

Each child runs in its own session, so the terminal's Ctrl-C reaches only this process;
on SIGINT or SIGTERM it sends SIGTERM to both children's process groups, waits up to
STOP_TIMEOUT seconds and then kills what is left. If either child exits on its own, the
other is stopped too and the launcher exits non-zero. On Linux the children are also
asked to receive SIGTERM if the launcher itself dies, so nothing is left behind.

Migrations, static files and demo data are the Makefile's job; this module only starts
and stops processes. It needs DJANGO_SECRET_KEY or FLASK_DEV=1 (which `make run` sets),
like the settings: without either it says so and starts nothing. With FLASK_DEV=1 it
creates the development key before starting the children, so they share one.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
STOP_TIMEOUT = 15.0
READY_TIMEOUT = 60.0


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the launcher dies (Linux only)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(
                pr_set_pdeathsig, signal.SIGTERM
            )
        except OSError:
            pass


def web_command(port: int) -> list[str]:
    if os.environ.get("DJANGO_DEBUG", "").strip().lower() in {"1", "true", "yes", "on"}:
        return [
            sys.executable,
            "manage.py",
            "runserver",
            f"127.0.0.1:{port}",
            "--noreload",
        ]
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "flaskapp.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "2",
        "--threads",
        "4",
        "--graceful-timeout",
        "10",
        # Load the application once, in the master, before the port opens: the
        # workers fork with it loaded, so the first page does not wait for imports
        # (flaskapp/wsgi.py loads the URLconf, and with it every view).
        "--preload",
        "--access-logfile",
        "-",
    ]


def worker_command() -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "flaskapp",
        "worker",
        "--pool=threads",
        "--concurrency=8",
        "-Q",
        "celery,judge",
        "--loglevel=INFO",
        # Embedded beat: periodic upkeep (expired rating locks) without a second process.
        "--beat",
        "--schedule",
        str(Path(os.environ.get("FLASK_VAR_DIR", "var")) / "celerybeat-schedule"),
    ]


def port_is_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def logins_text(port: int) -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    import django

    django.setup()
    from demo.management.commands.load_demo import DEMO_USERS

    lines = [
        "",
        f"FLASK Eval is running at http://127.0.0.1:{port}/ (Ctrl-C stops it)",
        f"The Django admin is at http://127.0.0.1:{port}/django-admin/ (admin login)",
        "Run `make test` and other commands in another terminal.",
        "Demo logins (local demo only; see `manage.py load_demo`):",
        f"  {'role':<12}{'username':<12}password",
    ]
    lines += [f"  {r:<12}{u:<12}{p}" for r, u, p in DEMO_USERS]
    return "\n".join(lines + [""])


class Launcher:
    def __init__(self, port: int):
        self.port = port
        self.children: dict[str, subprocess.Popen] = {}
        self.stopping = False

    def start(self, name: str, command: list[str]) -> None:
        self.children[name] = subprocess.Popen(
            command,
            cwd=BASE_DIR,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        print(f"[launcher] started {name} (pid {self.children[name].pid})", flush=True)

    def on_signal(self, signum, frame) -> None:
        self.stopping = True

    def stop(self) -> None:
        """SIGTERM every child's process group, wait, then SIGKILL the stragglers."""
        for child in self.children.values():
            if child.poll() is None:
                try:
                    os.killpg(child.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + STOP_TIMEOUT
        for name, child in self.children.items():
            try:
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"[launcher] {name} did not stop in time; killing it", flush=True)
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                child.wait()
            print(f"[launcher] {name} exited ({child.returncode})", flush=True)

    def exited_child(self) -> str | None:
        return next((n for n, c in self.children.items() if c.poll() is not None), None)

    def run(self) -> int:
        from django.core.exceptions import ImproperlyConfigured

        from flaskapp.secret_key import secret_key_load

        try:
            secret_key_load(
                environ=os.environ,
                var_dir=Path(os.environ.get("FLASK_VAR_DIR", BASE_DIR / "var")),
            )
        except ImproperlyConfigured as exc:
            print(f"[launcher] {exc}", file=sys.stderr)
            return 2
        if port_is_open(self.port):
            print(
                f"[launcher] port {self.port} is already in use; stop whatever serves "
                f"it or choose another with PORT=...",
                file=sys.stderr,
            )
            return 1
        signal.signal(signal.SIGINT, self.on_signal)
        signal.signal(signal.SIGTERM, self.on_signal)
        # The web server first: the worker's start-up would compete with it for the
        # CPU, and the first page matters more (a task sent meanwhile waits on the
        # broker).
        self.start("web", web_command(self.port))

        announced = False
        started = time.monotonic()
        status = 0
        while not self.stopping:
            dead = self.exited_child()
            if dead:
                code = self.children[dead].returncode
                print(f"[launcher] {dead} exited ({code}); stopping", file=sys.stderr)
                status = 1
                break
            if not announced:
                if port_is_open(self.port):
                    self.start("worker", worker_command())
                    print(logins_text(self.port), flush=True)
                    announced = True
                elif time.monotonic() - started > READY_TIMEOUT:
                    print(
                        f"[launcher] the web server did not answer on port {self.port} "
                        f"within {READY_TIMEOUT:.0f}s; stopping",
                        file=sys.stderr,
                    )
                    status = 1
                    break
            time.sleep(0.2)

        # A second Ctrl-C while stopping must not interrupt the cleanup.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("[launcher] stopping web server and worker", flush=True)
        self.stop()
        return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
    args = parser.parse_args(argv)
    return Launcher(args.port).run()


if __name__ == "__main__":
    sys.exit(main())
