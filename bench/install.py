"""What a newcomer waits for: the runtime install, and `make run` to its first page.

    python3 bench/install.py [--requirements FILE] [--make-run [--repo PATH]]
        [--only-make-run] [--pip] [--keep]

1. A fresh virtual environment in a temporary folder, FILE (default: this checkout's
   requirements.txt) installed as the Makefile does (pip installs uv from
   requirements-bootstrap.txt, uv installs FILE; `--pip`: pip alone), every cache off
   (`--no-cache-dir`, UV_NO_CACHE=1): the install's wall time and the environment's
   size on disk (MB of allocated blocks, as `du -sm`; target: under 500 MB).
2. With `--make-run`: `git clone` of `--repo` (default: this checkout; the clone has
   its committed HEAD, not uncommitted changes) into a temporary folder, then `make
   run` there with nothing set but PORT (a free port), PIP_NO_CACHE_DIR=1 and
   UV_NO_CACHE=1, as the
   README's quickstart on a fresh clone: the time until `GET /login/` first answers
   200 (target: under 60 s), and when each step before it ended (pip, migrate,
   load_demo: the next command in make's output). Then the
   launcher's process group gets SIGTERM (SIGKILL after 20 s). `--only-make-run`
   skips step 1.

Nothing is left behind unless `--keep`. The figures depend on the machine's load and
on the package index (pip's cache is off, so every wheel is read again).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_VENV_MB = 500
TARGET_FIRST_PAGE_SECONDS = 60.0
FIRST_PAGE_TIMEOUT = 900.0
# (the step that ends, a text of the line make prints as the next one starts)
STEPS = [
    ("install", "manage.py migrate"),
    ("migrate", "manage.py load_demo"),
    ("load_demo", "flaskapp.launcher"),
]
# The quickstart sets nothing: a developer's services must not leak into the clone.
UNSET = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "FLASK_VAR_DIR",
         "DJANGO_SECRET_KEY", "DJANGO_DEBUG", "VIRTUAL_ENV", "PYTHONPATH")  # fmt: skip


def python() -> str:
    """The interpreter a newcomer has (`make`'s PYTHON default), not this venv's."""
    return shutil.which("python3") or sys.executable


def disk_mb(path: Path) -> float:
    """Allocated size of everything under `path`, hard links counted once."""
    seen, total = set(), 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(folder, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total / 2**20


def bench_install(
    requirements: Path, workdir: Path, *, pip_only: bool
) -> tuple[float, float]:
    """(seconds of the install, MB of the environment) for a fresh venv."""
    venv = workdir / "venv"
    subprocess.run([python(), "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "--no-cache-dir",
           "--disable-pip-version-check"]  # fmt: skip
    if pip_only:
        steps = [[*pip, "-r", str(requirements)]]
    else:
        steps = [
            [*pip, "-q", "-r", str(ROOT / "requirements-bootstrap.txt")],
            [str(venv / "bin" / "uv"), "pip", "install", "--python",
             str(venv / "bin" / "python"), "-r", str(requirements)],
        ]  # fmt: skip
    env = {**os.environ, "UV_NO_CACHE": "1"}
    start = time.perf_counter()
    with (workdir / "pip.log").open("w") as log:
        for step in steps:
            done = subprocess.run(
                step, cwd=requirements.parent, env=env, stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
            if done.returncode:
                sys.exit((workdir / "pip.log").read_text()[-3000:] + "\ninstall failed")
    seconds = time.perf_counter() - start
    return seconds, disk_mb(venv)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers_200(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def bench_make_run(repo: Path, workdir: Path) -> dict[str, float]:
    """Seconds from `make run` on a fresh clone to pip's end and to the first 200."""
    clone = workdir / "clone"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update(PORT=str(port), PIP_NO_CACHE_DIR="1", UV_NO_CACHE="1")
    log = (workdir / "make-run.log").open("w")
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["make", "run"], cwd=clone, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    marks: dict[str, float] = {}

    def read():
        # make echoes each command as it starts it: the end of the one before
        for line in proc.stdout:
            log.write(line)
            for step, text in STEPS:
                if text in line and step not in marks:
                    marks[step] = time.perf_counter() - start
        log.close()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        while time.perf_counter() - start < FIRST_PAGE_TIMEOUT:
            if proc.poll() is not None:
                raise SystemExit(f"make run exited {proc.returncode}; see the log")
            if answers_200(f"http://127.0.0.1:{port}/login/"):
                marks["first_page"] = time.perf_counter() - start
                break
            time.sleep(0.25)
        else:
            raise SystemExit(f"no 200 within {FIRST_PAGE_TIMEOUT:.0f} s")
    finally:
        stop(proc)
        reader.join(timeout=5)
    return marks


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the launcher's process group (make, the launcher, gunicorn, the
    worker), SIGKILL after 20 s."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--make-run", action="store_true")
    parser.add_argument("--repo", type=Path, default=ROOT)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    parser.add_argument("--only-make-run", action="store_true")
    parser.add_argument("--pip", action="store_true", help="install with pip alone")
    args = parser.parse_args()
    args.make_run |= args.only_make_run

    workdir = Path(tempfile.mkdtemp(prefix="flaskeval-install-"))
    try:
        if not args.only_make_run:
            seconds, size = bench_install(
                args.requirements.resolve(), workdir, pip_only=args.pip
            )
            how = "pip alone" if args.pip else "pip installs uv, uv the rest"
            print(f"requirements         {args.requirements}")
            print(f"install              {seconds:.1f} s ({how}; caches off)")
            print(f"venv size            {size:.0f} MB (target < {TARGET_VENV_MB} MB)")
            shutil.rmtree(workdir / "venv")
        if args.make_run:
            marks = bench_make_run(args.repo.resolve(), workdir)
            print(f"make run             clone of {args.repo}")
            for step, _ in STEPS:
                print(f"  {step + ' done':<19}{marks.get(step, float('nan')):.1f} s")
            print(
                f"  first 200          {marks['first_page']:.1f} s "
                f"(target < {TARGET_FIRST_PAGE_SECONDS:.0f} s)"
            )
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
