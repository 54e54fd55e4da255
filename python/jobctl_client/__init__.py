"""A Python client for jobctld's REST API (docs/api.md, docs/openapi.json): standard library only."""

from jobctl_client.bundle import pack_directory
from jobctl_client.client import Client
from jobctl_client.errors import ApiError
from jobctl_client.models import Checkpoint, Job, JobArray, JobEvent, LogLine, Output, Placement, ResolvedTask, Worker

__all__ = ["ApiError", "Checkpoint", "Client", "Job", "JobArray", "JobEvent", "LogLine", "Output", "Placement",
           "ResolvedTask", "Worker", "pack_directory"]
