"""The client's tests run against a real jobctld and a real jobctl-worker (--allow-commands, on the
CPU), started once for the session as the e2e tests start them (tests/e2e/recovery_support.h).

Environment (set by tests/api/CMakeLists.txt): JOBCTLD, JOBCTL_WORKER, JOBCTL_TRAIN (the built
programs); JOBCTL_API_RECORD (optional): the file every JSON exchange is recorded to, which
tests/api/validate_openapi.mjs then checks against docs/openapi.json's schemas."""

import json
import os
import signal
import subprocess
import tempfile
import time

import pytest

from jobctl_client import Client


def _program(name):
    path = os.environ.get(name)
    if not path:
        pytest.fail(f"{name} is not set: run this suite through ctest (tests/api/CMakeLists.txt)")
    return path


class _Service:
    def __init__(self, folder):
        self.folder = folder
        self.log_path = os.path.join(folder, "jobctld.log")
        # Placement passes every second: a job waiting for its dependencies is placed within a
        # second of their end (the default is 10 s).
        config = os.path.join(folder, "jobctld.json")
        with open(config, "w") as f:
            json.dump({"placement": {"reevaluate_s": 1}}, f)
        self.daemon = subprocess.Popen(
            [_program("JOBCTLD"), "--listen", "127.0.0.1:0", "--data-dir", os.path.join(folder, "data"),
             "--heartbeat-interval-s", "1", "--lease-timeout-s", "30", "--config", config],
            stdout=open(self.log_path, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        self.url = self._listening_url()
        self.worker_log_path = os.path.join(folder, "worker.log")
        self.worker = subprocess.Popen(
            [_program("JOBCTL_WORKER"), "--server", self.url, "--name", "py", "--trainer", _program("JOBCTL_TRAIN"),
             "--work-dir", os.path.join(folder, "work"), "--device", "cpu", "--threads", "1", "--wait-s", "2",
             "--allow-commands"],
            stdout=open(self.worker_log_path, "wb"), stderr=subprocess.STDOUT, start_new_session=True)

    def _listening_url(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                for line in f:
                    if b'"event":"listening"' in line:
                        return json.loads(line)["url"]
            if self.daemon.poll() is not None:
                break
            time.sleep(0.05)
        pytest.fail("jobctld did not start:\n" + open(self.log_path).read())

    def logs(self):
        return ("--- jobctld:\n" + open(self.log_path).read()[-4000:] + "\n--- worker:\n" +
                open(self.worker_log_path).read()[-4000:])

    def stop(self):
        for p in (self.worker, self.daemon):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in (self.worker, self.daemon):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="session")
def service():
    with tempfile.TemporaryDirectory(prefix="jobctl-py-") as folder:
        s = _Service(folder)
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture(scope="session")
def client(service):
    c = Client(service.url, record_to=os.environ.get("JOBCTL_API_RECORD") or None)
    # The worker has registered: command jobs are placed on it.
    deadline = time.monotonic() + 60
    while not c.workers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert c.workers(), service.logs()
    return c
