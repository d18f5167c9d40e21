"""`make run`'s launcher (`flaskapp.launcher`) starts a web server and a worker that both
stay up, on the embedded SQLite database and broker, with no PostgreSQL or Redis.

Run as separate processes from a fresh interpreter, the way `make run` runs them: an import
order that only a fresh worker meets (a circular import through DRF's settings once made the
worker exit at start, and the launcher then stopped the web server) shows up here and
nowhere else in the suite.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
READY_SECONDS = 90


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _offline_env(var_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_DEBUG"}
    }
    env["FLASK_VAR_DIR"] = str(var_dir)
    env["DJANGO_SETTINGS_MODULE"] = "flaskapp.settings"
    return env


@pytest.mark.integration
def test_make_run_serves_pages_and_keeps_its_worker(tmp_path):
    env = _offline_env(tmp_path / "var")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    port = _free_port()
    log = tmp_path / "launcher.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flaskapp.launcher", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + READY_SECONDS
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            text = log.read_text(errors="replace")
            if status is None:
                try:
                    with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/login/", timeout=5
                    ) as resp:
                        status = resp.status
                except OSError:
                    pass
            if status is not None and " ready." in text:
                break
            time.sleep(0.5)
        # Still up a moment after the worker said ready: nothing exited on its own.
        time.sleep(2)
        text = log.read_text(errors="replace")
        assert proc.poll() is None, text[-4000:]
        assert status == 200, text[-4000:]
        assert " ready." in text, text[-4000:]
        assert "Traceback" not in text, text[-4000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert proc.returncode == 0, log.read_text(errors="replace")[-4000:]
