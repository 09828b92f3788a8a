"""`make lab` starts JupyterLab on the chapters, headless here: start it, fetch the lab page, stop it."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, ""
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, ""  # not listening yet


@pytest.mark.slow
def test_make_lab_serves_the_chapters(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    port, token = _free_port(), secrets.token_hex(16)
    args = (f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
            f"--ServerApp.port_retries=0 --IdentityProvider.token={token}")
    if os.geteuid() == 0:  # containers often run as root; JupyterLab refuses that without the flag
        args += " --allow-root"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, status = time.monotonic() + 90, 0
        while time.monotonic() < deadline and proc.poll() is None:
            status, page = _get(f"{base}/lab?token={token}")
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, f"JupyterLab did not answer on {base}:\n{(tmp_path / 'lab.log').read_text()[-2000:]}"
        assert "JupyterLab" in page
        status, listing = _get(f"{base}/api/contents/book?token={token}")
        assert status == 200
        names = {item["name"] for item in json.loads(listing)["content"]}
        assert {"index.md", "one_step_adam.ipynb", "scoreboard.ipynb"} <= names
        status, _ = _get(f"{base}/api/kernelspecs?token={token}")
        assert status == 200
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the process group this test started (make and its server)
            proc.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
