"""The client against a real jobctld and worker (conftest.py): every call the README shows."""

import os
import struct
import zlib

import pytest

from jobctl_client import ApiError, Job, JobArray, LogLine, Output, Placement, ResolvedTask, pack_directory
from jobctl_client.crc32c import crc32c

# A command job's program: prints, leaves a file in JOBCTL_OUTPUT_DIR, exits 0.
HELLO = """#!/bin/sh
echo "hello from the bundle: $(cat message.txt)"
mkdir -p "$JOBCTL_OUTPUT_DIR/sub"
printf 'the result' > "$JOBCTL_OUTPUT_DIR/sub/result.txt"
echo done
"""


def make_workdir(tmp_path):
    d = tmp_path / "code"
    (d / ".git").mkdir(parents=True)
    (d / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (d / "run.sh").write_text(HELLO)
    (d / "run.sh").chmod(0o755)
    (d / "message.txt").write_text("packed by python")
    (d / "link.txt").symlink_to("message.txt")
    return d


def test_crc32c_matches_the_rfc_3720_vectors():
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(b"123456789") == 0xE3069283


def test_a_bundle_has_the_cli_format(tmp_path):
    bundle = pack_directory(str(make_workdir(tmp_path)))
    assert bundle[:8] == b"JCBUNDL1"
    payload_bytes, unpacked_bytes, entries, crc, reserved = struct.unpack("<QQIIQ", bundle[8:40])
    payload = bundle[40:]
    assert (payload_bytes, entries, reserved) == (len(payload), 3, 0)  # .git left out
    assert crc == crc32c(payload)
    raw = zlib.decompress(payload)
    assert len(raw) == unpacked_bytes
    seen = []
    at = 0
    while at < len(raw):
        kind, mode, path_len, _, data_len = struct.unpack("<cBHIQ", raw[at:at + 16])
        path = raw[at + 16:at + 16 + path_len].decode()
        data = raw[at + 16 + path_len:at + 16 + path_len + data_len]
        seen.append((kind, mode, path, data))
        at += 16 + path_len + data_len
    assert seen == [(b"l", 0, "link.txt", b"message.txt"), (b"f", 0, "message.txt", b"packed by python"),
                    (b"f", 1, "run.sh", HELLO.encode())]


def test_a_link_out_of_the_folder_is_refused(tmp_path):
    d = tmp_path / "code"
    d.mkdir()
    (d / "out").symlink_to("/etc/passwd")
    with pytest.raises(ApiError) as e:
        pack_directory(str(d))
    assert e.value.field == "workdir"


def test_a_command_with_its_workdir_runs_and_its_logs_and_outputs_come_back(client, tmp_path, service):
    job = client.submit({"name": "py-hello", "resources": {"gpu": "any"}}, command=["./run.sh"],
                        workdir=str(make_workdir(tmp_path)))
    assert isinstance(job, Job) and job.state == "queued" and job.name == "py-hello"
    # Followed from the submit to the end, as `jobctl logs -f`.
    lines = list(client.logs(job.id, follow=True, poll_s=0.2))
    assert all(isinstance(line, LogLine) for line in lines)
    assert "hello from the bundle: packed by python" in [line.text for line in lines], service.logs()
    done = client.wait(job.id, timeout_s=60)
    assert done.state == "succeeded", (done.error, service.logs())
    assert len(done.spec["bundle"]) == 64
    assert [e.type for e in done.events][:1] == ["submitted"] and done.events[-1].to_state == "succeeded"
    outputs = client.outputs(job.id)
    assert all(isinstance(o, Output) for o in outputs)
    assert [(o.path, o.bytes) for o in outputs] == [("sub/result.txt", 10)]
    assert client.output(job.id, "sub/result.txt") == b"the result"
    client.download_outputs(job.id, str(tmp_path / "got"))
    assert (tmp_path / "got" / "sub" / "result.txt").read_bytes() == b"the result"
    assert job.id in [j.id for j in client.jobs(state="succeeded")]


def test_a_task_file_is_launched_with_its_workdir(client, tmp_path, service):
    make_workdir(tmp_path)
    task = tmp_path / "hello.yaml"
    task.write_text("# the README's call, on a task of its own\nworkdir: code\nrun: ./run.sh\n"
                    "resources:\n  gpu: any\nestimate:\n  hours: 0.01\n")
    resolved = client.resolve_task(str(task), set=["priority=70"])
    assert isinstance(resolved, ResolvedTask) and resolved.jobs == 1
    assert resolved.workdir == str(tmp_path / "code")
    assert resolved.spec["command"] == ["/bin/sh", "-c", "./run.sh"] and resolved.spec["name"] == "hello"
    assert resolved.origins["priority"] == "--set priority" and resolved.origins["resources.gpu"] == "hello.yaml:5:8"
    quote = client.launch(str(task), dry_run=True)
    assert isinstance(quote, Placement) and quote.outcome == "run_local", quote.raw
    job = client.launch(str(task), set=["priority=70"])
    assert isinstance(job, Job) and job.name == "hello" and job.priority == 70
    done = client.wait(job.id, timeout_s=60)
    assert done.state == "succeeded", (done.error, service.logs())
    assert client.output(job.id, "sub/result.txt") == b"the result"


def test_a_sweep_task_is_one_array_listed_side_by_side_and_cancelled_as_one(client, service):
    source = os.environ.get("JOBCTL_SOURCE_DIR")
    if not source:
        pytest.skip("JOBCTL_SOURCE_DIR is not set")
    array = client.launch(os.path.join(source, "examples", "tasks", "sweep.yaml"))
    assert isinstance(array, JobArray) and len(array.jobs) == 3
    assert array.array_id == array.jobs[0].id
    jobs = client.array(array.array_id)
    assert [j.id for j in jobs] == [j.id for j in array.jobs]
    results = []
    for j in jobs:
        done = client.wait(j.id, timeout_s=60, poll_s=0.2)
        assert done.state == "succeeded", (done.error, service.logs())
        results.append((done.spec["array"]["index"], done.spec["array"]["parameters"]["lr"]))
    assert results == [(0, "0.1"), (1, "0.01"), (2, "0.001")]

    # A sweep of sleepers, cancelled as one before any has ended.
    sleepers = client.submit_array({"name": "py-sleepers", "command": ["sleep", "300"],
                                    "sweep": {"cases": [{"n": 1}, {"n": 2}]}})
    assert [j.state for j in sleepers.jobs] == ["queued", "queued"]
    cancelled = client.cancel_array(sleepers.array_id)
    assert [j.state for j in cancelled.jobs] == ["cancelled", "cancelled"]
    assert [j.state for j in client.array(sleepers.array_id)] == ["cancelled", "cancelled"]


def test_a_task_files_errors_name_its_line_and_field(client, tmp_path):
    task = tmp_path / "bad.yaml"
    task.write_text("run: python3 x.py\nresources:\n  gpus: 0\n")
    with pytest.raises(ApiError) as e:
        client.launch(str(task))
    assert (e.value.status, e.value.code, e.value.field) == (400, "invalid_argument", "resources.gpus")
    assert e.value.message.startswith("bad.yaml:3:9: resources.gpus"), e.value.message
    task.write_text("run: [a, b\n")
    with pytest.raises(ApiError) as e:
        client.resolve_task(str(task))
    assert (e.value.status, e.value.field) == (400, "task") and "bad.yaml:" in e.value.message
    task.write_text("run: x\n")
    with pytest.raises(ApiError) as e:
        client.resolve_task(str(task), set=["novalue"])
    assert (e.value.status, e.value.field) == (400, "--set")


def _event_time(job, kind):
    times = [e.time_ms for e in job.events if e.type == kind]
    return times[0] if times else None


def test_a_job_runs_after_its_dependencies_and_is_cancelled_when_one_fails(client, service):
    first = client.submit({"name": "py-first"}, command=["sh", "-c", "sleep 3"])
    after = client.submit({"name": "py-after", "priority": 90, "after": [first.id]}, command=["true"])
    waiting = client.wait(after.id, timeout_s=30, poll_s=0.2,
                          until=lambda j: (j.raw.get("waiting") or {}).get("reason", "").startswith("waiting for job"))
    assert waiting.raw["waiting"]["reason"] in (f"waiting for job {first.id} (queued) to have succeeded",
                                                f"waiting for job {first.id} (placed) to have succeeded",
                                                f"waiting for job {first.id} (running) to have succeeded")
    assert waiting.spec["after"] == [{"job": first.id, "condition": "succeeded"}]
    done_first = client.wait(first.id, timeout_s=60)
    done_after = client.wait(after.id, timeout_s=60)
    assert (done_first.state, done_after.state) == ("succeeded", "succeeded"), service.logs()
    assert _event_time(done_after, "leased") >= _event_time(done_first, "succeeded")

    # A dependency that fails: the job waiting for its success is cancelled, saying which; one
    # that waits for it to end in any way runs.
    failing = client.submit({"name": "py-failing"}, command=["sh", "-c", "exit 3"])
    needs_success = client.submit({"name": "py-needs-success", "after": [failing.id]}, command=["true"])
    needs_end = client.submit({"name": "py-needs-end", "after": [{"job": failing.id, "condition": "ended"}]},
                              command=["true"])
    assert client.wait(failing.id, timeout_s=60).state == "failed"
    cancelled = client.wait(needs_success.id, timeout_s=60)
    assert cancelled.state == "cancelled", cancelled
    assert cancelled.error == f"cancelled: job {failing.id} failed (this job was to run after it succeeded)"
    detail = [e.detail for e in cancelled.events if e.type == "cancelled"][0]
    assert detail == {"by": "dependency", "reason": f"job {failing.id} failed (this job was to run after it succeeded)"}
    assert client.wait(needs_end.id, timeout_s=60).state == "succeeded"

    # After a whole sweep: every case has ended first.
    sweep = client.submit_array({"name": "py-cases", "command": ["sh", "-c", "sleep 1"],
                                 "sweep": {"cases": [{"n": 1}, {"n": 2}]}})
    last = client.submit({"name": "py-after-sweep", "after": [f"a{sweep.array_id}"]}, command=["true"])
    cases = [client.wait(j.id, timeout_s=60) for j in sweep.jobs]
    assert [c.state for c in cases] == ["succeeded", "succeeded"]
    done_last = client.wait(last.id, timeout_s=60)
    assert done_last.state == "succeeded"
    assert _event_time(done_last, "leased") >= max(_event_time(c, "succeeded") for c in cases)

    with pytest.raises(ApiError) as e:
        client.submit({"name": "py-nothing-first", "after": [987654321]}, command=["true"])
    assert (e.value.status, e.value.field) == (400, "after[0]")
    assert e.value.message == "after[0] names job 987654321, which does not exist"


def test_a_quote_prices_the_spec_on_the_local_worker(client):
    quote = client.quote({"name": "q", "command": ["true"], "estimate": {"hours": 0.5}})
    assert isinstance(quote, Placement)
    assert quote.outcome == "run_local", quote.raw
    assert quote.chosen is not None and quote.chosen["option"] == "local"
    assert any(c["option"] == "local" for c in quote.candidates)


def test_a_running_job_is_moved_then_cancelled(client):
    job = client.submit({"name": "py-sleeper"}, command=["sh", "-c", "echo up; sleep 120"])
    running = client.wait(job.id, timeout_s=60, poll_s=0.2, until=lambda j: j.state == "running" or j.finished)
    assert running.state == "running", running
    moved = client.move(job.id, to="local", reason="from the python client")
    assert moved.move == {"to": "local", "reason": "from the python client"}
    cancelled = client.cancel(job.id)
    assert cancelled.state == "cancelled"
    final = client.wait(job.id, timeout_s=30)
    assert final.state == "cancelled"
    assert "move_requested" in [e.type for e in final.events]


def test_errors_carry_the_apis_code_and_field(client):
    with pytest.raises(ApiError) as e:
        client.submit({"model": {"kind": "mlp"}, "data": {"dataset": "synthetic"}, "train": {"epochs": -1}})
    assert (e.value.status, e.value.code, e.value.field) == (400, "invalid_argument", "train.epochs")
    with pytest.raises(ApiError) as e:
        client.job(987654321)
    assert (e.value.status, e.value.code) == (404, "not_found")
    with pytest.raises(ApiError) as e:
        client.move(1, to="moon")
    assert (e.value.status, e.value.code, e.value.field) == (400, "invalid_argument", "to")
    finished = client.submit({"name": "py-true"}, command=["true"])
    assert client.wait(finished.id, timeout_s=60).state == "succeeded"
    with pytest.raises(ApiError) as e:
        client.cancel(finished.id)
    assert (e.value.status, e.value.code) == (409, "conflict")


def test_the_served_document_is_the_repositorys(client):
    source = os.environ.get("JOBCTL_SOURCE_DIR")
    if not source:
        pytest.skip("JOBCTL_SOURCE_DIR is not set")
    import json
    with open(os.path.join(source, "docs", "openapi.json")) as f:
        assert client.openapi() == json.load(f)


def test_the_worker_protocol_round_trip(client, service):
    # The test acts as a second worker (an H100 the CPU worker cannot stand in for), so that the
    # worker protocol's bodies are exchanged, and recorded for docs/openapi.json's schemas too.
    registered = client._json("POST", "/v1/workers/register", {
        "name": "py-protocol",
        "capabilities": {"gpus": [{"model": "NVIDIA H100 80GB HBM3", "memory_mb": 81920}], "cpu_cores": 2,
                         "memory_mb": 4096, "commands": True}})
    worker_id = registered["worker_id"]
    secret = {"X-Worker-Secret": registered["worker_secret"]}
    job = client.submit({"name": "py-protocol-job", "resources": {"gpu": "H100", "gpus": 1}}, command=["true"])
    lease = client._json("POST", f"/v1/workers/{worker_id}/lease", query={"wait_s": 10}, headers=secret)
    assert lease["job_id"] == job.id, (lease, service.logs())
    report = {"worker_id": worker_id, "epoch": lease["epoch"]}
    beat = client._json("POST", f"/v1/jobs/{job.id}/heartbeat", headers=secret, body={
        **report, "progress": {"step": 1, "total_steps": 2}, "log": [{"time_ms": 1795000000000, "text": "step 1"}]})
    assert beat["cancel"] is False
    done = client._json("POST", f"/v1/jobs/{job.id}/complete", headers=secret,
                        body={**report, "result": {"final_loss": 0.5, "elapsed_s": 1.0}})
    assert done["state"] == "succeeded"
    assert [line.text for line in client.logs(job.id)] == ["step 1"]
    assert client.checkpoints(job.id) == []
    with pytest.raises(ApiError) as e:  # a report under a lease that is over
        client._json("POST", f"/v1/jobs/{job.id}/fail", headers=secret, body={**report, "error": "late"})
    assert (e.value.status, e.value.code, e.value.field) == (409, "stale_epoch", "epoch")


def test_the_read_routes_answer_as_documented(client):
    # No client method of their own yet: read through the client's transport, so that their
    # bodies are recorded and checked against docs/openapi.json's schemas as well.
    assert client._json("GET", "/healthz")["status"] == "ok"
    assert "groups" in client._json("GET", "/v1/reports/spend", query={"group_by": "user"})
    assert isinstance(client._json("GET", "/v1/catalog")["offers"], list)
    assert client._json("GET", "/v1/instances") == {"provider": None, "instances": []}
    assert client._json("GET", "/v1/auth/whoami")["auth"] is False
    finished = client.jobs(state="succeeded")[0]
    assert client._json("GET", f"/v1/jobs/{finished.id}/progress")["job_id"] == finished.id
    with pytest.raises(ApiError) as e:  # token administration while auth is off
        client._json("GET", "/v1/tokens")
    assert (e.value.status, e.value.code) == (403, "permission_denied")
