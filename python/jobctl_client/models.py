"""Typed results: the API's JSON objects (docs/api.md) as dataclasses. Each keeps the whole answer in
`raw`, so a field the dataclass does not name yet is still there."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

TERMINAL_STATES = ("succeeded", "failed", "cancelled")


@dataclass
class JobEvent:
    seq: int
    time_ms: int
    type: str
    from_state: Optional[str]
    to_state: Optional[str]
    detail: Optional[Dict[str, Any]]

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "JobEvent":
        return cls(j["seq"], j["time_ms"], j["type"], j.get("from"), j.get("to"), j.get("detail"))


@dataclass
class Job:
    """A job: the summary fields, and with GET /v1/jobs/{id} its spec, events and placement."""

    id: int
    name: str
    state: str
    priority: int
    gpu: str
    gpus: int
    created_ms: int
    updated_ms: int
    worker_id: Optional[int]
    recoveries: int
    progress: Optional[Dict[str, Any]]
    result: Optional[Dict[str, Any]]
    error: Optional[str]
    spec: Optional[Dict[str, Any]] = None
    events: List[JobEvent] = field(default_factory=list)
    placement: Optional[Dict[str, Any]] = None
    move: Optional[Dict[str, Any]] = None
    # The digest ("sha256:...") of the image its newest lease runs (GET /v1/jobs/{id}; None: no
    # image, or not reported yet).
    image_digest: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "Job":
        resources = j.get("resources") or {}
        return cls(id=j["id"], name=j["name"], state=j["state"], priority=j["priority"],
                   gpu=resources.get("gpu", ""), gpus=resources.get("gpus", 0), created_ms=j["created_ms"],
                   updated_ms=j["updated_ms"], worker_id=j.get("worker_id"), recoveries=j.get("recoveries", 0),
                   progress=j.get("progress"), result=j.get("result"), error=j.get("error"), spec=j.get("spec"),
                   events=[JobEvent.from_json(e) for e in j.get("events", [])], placement=j.get("placement"),
                   move=j.get("move"), image_digest=j.get("image_digest"), raw=j)


@dataclass
class LogLine:
    n: int
    time_ms: int
    text: str


@dataclass
class Output:
    path: str
    bytes: int
    uploaded_ms: Optional[int]


@dataclass
class Checkpoint:
    step: int
    bytes: int
    crc32c: str
    created_ms: Optional[int]


@dataclass
class Placement:
    """The placement document (docs/api.md, "The placement document"): a quote, or a job's decision."""

    outcome: str
    reason: str
    chosen: Optional[Dict[str, Any]]
    candidates: List[Dict[str, Any]]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "Placement":
        return cls(j["outcome"], j.get("reason", ""), j.get("chosen"), j.get("candidates", []), j)


@dataclass
class Worker:
    id: int
    name: str
    state: str
    gpus: List[Optional[str]]
    jobs: List[int]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "Worker":
        return cls(j["id"], j["name"], j["state"], j.get("gpus", []), j.get("jobs", []), j)


@dataclass
class JobArray:
    """A job array (a sweep): its id (its first job's) and its jobs' summaries."""

    array_id: int
    jobs: List[Job]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "JobArray":
        return cls(j["array_id"], [Job.from_json(x) for x in j.get("jobs", [])], j)


@dataclass
class ResolvedTask:
    """A task file as jobctld resolves it (POST /v1/tasks/resolve): the JSON spec, the jobs it
    stands for, the workdir to pack (None: none) and where each spec field was written."""

    spec: Dict[str, Any]
    jobs: int
    workdir: Optional[str]
    origins: Dict[str, str]

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "ResolvedTask":
        return cls(j["spec"], j["jobs"], j.get("workdir"), j.get("origins", {}))
