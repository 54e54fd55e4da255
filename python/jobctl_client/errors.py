"""The API's errors as an exception: every error answer is {"error": {"code", "message", "field"}}."""

from typing import Optional


class ApiError(Exception):
    """jobctld refused a request (status 4xx/5xx), or could not be reached (status 0, code "unreachable").

    code: the API's error code ("invalid_argument", "not_found", "conflict", ...: docs/api.md, "Errors");
    field: the offending input ("train.epochs", "id", "Authorization") or None.
    """

    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None):
        super().__init__(f"{code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
