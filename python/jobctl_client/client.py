"""The client: jobctld's user API over HTTP (urllib), with typed results and errors as ApiError.

Thread safety: a Client holds no connection between calls; one may be shared by threads.
"""

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

from jobctl_client.bundle import pack_directory
from jobctl_client.errors import ApiError
from jobctl_client.models import Checkpoint, Job, JobArray, LogLine, Output, Placement, ResolvedTask, Worker

Spec = Union[Dict[str, Any], str, None]


class Client:
    """Client("http://127.0.0.1:8080", token) — token: an API token (docs/security.md), or None
    while auth is off. record_to: a file each JSON exchange is appended to as a JSON line
    ({"method", "path", "status", "request", "response"}; secrets in answers redacted), for checking
    bodies against docs/openapi.json."""

    def __init__(self, server: str, token: Optional[str] = None, timeout_s: float = 60.0,
                 record_to: Optional[str] = None):
        self.server = server.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.record_to = record_to

    # -- jobs --------------------------------------------------------------------------------

    def submit(self, spec: Spec = None, command: Optional[Sequence[str]] = None, workdir: Optional[str] = None,
               idempotency_key: Optional[str] = None) -> Job:
        """Submits a job spec (a dict, or the path of a JSON file), or a command job: `command`
        (the program and its arguments) with the spec's other fields, its code the folder `workdir`
        packed and uploaded as `jobctl submit --workdir` does."""
        body = _spec_dict(spec)
        if command is not None:
            body["command"] = list(command)
        if workdir is not None:
            if "command" not in body:
                raise ApiError(0, "invalid_argument", "workdir is for a command job: give the command", "workdir")
            body["bundle"] = self.upload_bundle(pack_directory(workdir))
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return Job.from_json(self._json("POST", "/v1/jobs", body, headers=headers))

    def submit_array(self, spec: Spec, workdir: Optional[str] = None) -> JobArray:
        """Submits a sweep: a command job's spec with `sweep` (a grid or a list of cases) becomes one
        job per case, all stored or none (POST /v1/arrays); `workdir` is packed as in submit()."""
        body = _spec_dict(spec)
        if workdir is not None:
            body["bundle"] = self.upload_bundle(pack_directory(workdir))
        return JobArray.from_json(self._json("POST", "/v1/arrays", body))

    def array(self, array_id: int) -> List[Job]:
        """The array's jobs, in case order (each one's spec.array holds its index and parameters)."""
        return sorted(self.jobs(array=array_id), key=lambda j: j.id)

    def cancel_array(self, array_id: int) -> JobArray:
        """Cancels each of the array's jobs that has not ended; returns every job as it now is."""
        return JobArray.from_json(self._json("POST", f"/v1/arrays/{int(array_id)}/cancel", {}))

    def resolve_task(self, path: str, set: Sequence[str] = ()) -> ResolvedTask:
        """The task file at `path` (YAML: docs/task-files.md) as jobctld resolves it — the spec, how
        many jobs it stands for, the workdir to pack (a local path, resolved against the task
        file's folder) — without submitting. `set`: KEY=VALUE replacements, as `jobctl launch
        --set`. Errors name the file, line and column, and the task's field."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        body = {"task": text, "path": os.path.basename(path) or "task.yaml", "set": list(set)}
        resolved = ResolvedTask.from_json(self._json("POST", "/v1/tasks/resolve", body))
        if resolved.workdir is not None:
            resolved.workdir = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), resolved.workdir))
        return resolved

    def launch(self, path: str, set: Sequence[str] = (), dry_run: bool = False) -> Union[Job, JobArray, Placement]:
        """`jobctl launch` from Python: the task file resolved, its workdir packed and uploaded,
        then one job submitted (a Job), or one per case of its sweep (a JobArray). dry_run: the
        quote of one job (a Placement), nothing packed or stored."""
        task = self.resolve_task(path, set)
        spec = dict(task.spec)
        if dry_run:
            spec.pop("sweep", None)
            return self.quote(spec)
        if task.workdir is not None:
            spec["bundle"] = self.upload_bundle(pack_directory(task.workdir))
        if "sweep" in spec:
            return JobArray.from_json(self._json("POST", "/v1/arrays", spec))
        return Job.from_json(self._json("POST", "/v1/jobs", spec))

    def upload_bundle(self, bundle: bytes) -> str:
        """Stores a code bundle; returns its name (SHA-256), which a spec's `bundle` names."""
        return self._json("POST", "/v1/bundles", raw=bundle)["bundle"]

    def job(self, job_id: int) -> Job:
        return Job.from_json(self._json("GET", f"/v1/jobs/{int(job_id)}"))

    def jobs(self, state: Optional[str] = None, array: Optional[int] = None) -> List[Job]:
        """Every job (in this state, of this array), following the pages."""
        out: List[Job] = []
        after: Optional[str] = None
        while True:
            query: Dict[str, Any] = {"limit": 1000}
            if state:
                query["state"] = state
            if array is not None:
                query["array"] = int(array)
            if after:
                query["after"] = after
            page = self._json("GET", "/v1/jobs", query=query)
            out += [Job.from_json(j) for j in page["jobs"]]
            after = page.get("next")
            if not after:
                return out

    def wait(self, job_id: int, timeout_s: Optional[float] = None, poll_s: float = 0.5,
             until: Optional[Callable[[Job], bool]] = None) -> Job:
        """Polls the job until it has finished (or `until(job)` holds); raises TimeoutError past
        `timeout_s`."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        done = until or (lambda j: j.finished)
        while True:
            job = self.job(job_id)
            if done(job):
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is still {job.state} after {timeout_s} s")
            time.sleep(poll_s)

    def cancel(self, job_id: int) -> Job:
        return Job.from_json(self._json("POST", f"/v1/jobs/{int(job_id)}/cancel", {}))

    def move(self, job_id: int, to: Optional[str] = None, reason: Optional[str] = None) -> Job:
        """Asks a running job to move (checkpoint now, place anew): to "local", "on_demand" or "spot"."""
        body: Dict[str, Any] = {}
        if to is not None:
            body["to"] = to
        if reason is not None:
            body["reason"] = reason
        return Job.from_json(self._json("POST", f"/v1/jobs/{int(job_id)}/move", body))

    def quote(self, spec: Spec) -> Placement:
        """Where the spec would run now and at what cost (nothing is stored)."""
        return Placement.from_json(self._json("POST", "/v1/quote", _spec_dict(spec)))

    def logs(self, job_id: int, follow: bool = False, poll_s: float = 1.0, after: int = 0) -> Iterator[LogLine]:
        """The job's log lines, oldest first; with follow=True it goes on until the job has
        finished and its last line has been read (as `jobctl logs -f`)."""
        while True:
            finished = (not follow) or self.job(job_id).finished
            while True:
                page = self._json("GET", f"/v1/jobs/{int(job_id)}/log", query={"after": after})
                for line in page["lines"]:
                    yield LogLine(line["n"], line["time_ms"], line["text"])
                after = page.get("next", after)
                if not page.get("more"):
                    break
            if finished:
                return
            time.sleep(poll_s)

    def outputs(self, job_id: int) -> List[Output]:
        page = self._json("GET", f"/v1/jobs/{int(job_id)}/outputs")
        return [Output(o["path"], o["bytes"], o.get("uploaded_ms")) for o in page["outputs"]]

    def output(self, job_id: int, path: str) -> bytes:
        """One output file's bytes."""
        return self._request("GET", f"/v1/jobs/{int(job_id)}/outputs/file", query={"path": path})[1]

    def download_outputs(self, job_id: int, to: str) -> List[Output]:
        """Every output file under the folder `to` (as `jobctl outputs ID --to DIR`)."""
        outputs = self.outputs(job_id)
        root = os.path.realpath(to)
        for o in outputs:
            dest = os.path.realpath(os.path.join(root, o.path))
            if not dest.startswith(root + os.sep):
                raise ApiError(0, "invalid_argument", f"output path {o.path} leaves {to}", "path")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(self.output(job_id, o.path))
        return outputs

    def checkpoints(self, job_id: int) -> List[Checkpoint]:
        page = self._json("GET", f"/v1/jobs/{int(job_id)}/checkpoints")
        return [Checkpoint(c["step"], c["bytes"], c["crc32c"], c.get("created_ms")) for c in page["checkpoints"]]

    def workers(self) -> List[Worker]:
        out: List[Worker] = []
        after: Optional[str] = None
        while True:
            page = self._json("GET", "/v1/workers", query={"limit": 1000, **({"after": after} if after else {})})
            out += [Worker.from_json(w) for w in page["workers"]]
            after = page.get("next")
            if not after:
                return out

    def openapi(self) -> Dict[str, Any]:
        """The OpenAPI document jobctld serves (docs/openapi.json)."""
        return self._json("GET", "/v1/openapi.json")

    # -- HTTP --------------------------------------------------------------------------------

    def _json(self, method: str, path: str, body: Any = None, query: Optional[Dict[str, Any]] = None,
              headers: Optional[Dict[str, str]] = None, raw: Optional[bytes] = None) -> Any:
        if raw is None and body is None and method in ("POST", "PUT"):
            body = {}  # a POST carries a JSON body, even an empty one (docs/api.md)
        status, data = self._request(method, path, body, query, headers, raw)
        answer = json.loads(data) if data else None
        self._record(method, path, status, body, answer)
        return answer

    def _request(self, method: str, path: str, body: Any = None, query: Optional[Dict[str, Any]] = None,
                 headers: Optional[Dict[str, str]] = None, raw: Optional[bytes] = None):
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        data = None
        if raw is not None:
            data = raw
            h["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                answer = json.loads(payload)
            except ValueError:
                answer = None
            self._record(method, path, e.code, body, answer)
            err = answer.get("error") if isinstance(answer, dict) else None
            if isinstance(err, dict):
                raise ApiError(e.code, err.get("code", "unknown"), err.get("message", ""), err.get("field")) from None
            raise ApiError(e.code, "unknown", payload.decode(errors="replace")[:500]) from None
        except urllib.error.URLError as e:
            raise ApiError(0, "unreachable", f"cannot reach {self.server}: {e.reason}") from None

    def _record(self, method: str, path: str, status: int, request: Any, response: Any) -> None:
        if not self.record_to:
            return
        if isinstance(response, dict):  # the secrets an answer carries stay out of the record
            response = {k: "(redacted)" if k in ("worker_secret", "token") and isinstance(v, str) else v
                        for k, v in response.items()}
        with open(self.record_to, "a") as f:
            f.write(json.dumps({"method": method, "path": path, "status": status, "request": request,
                                "response": response}) + "\n")


def _spec_dict(spec: Spec) -> Dict[str, Any]:
    if spec is None:
        return {}
    if isinstance(spec, str):
        with open(spec) as f:
            return json.load(f)
    return dict(spec)
