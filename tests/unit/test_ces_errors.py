"""A CES error's canonical status, read from Google's error object however it is given, and its exit code."""

from __future__ import annotations

import pytest

from tui_eval.ces_cli import exit_code_for
from tui_eval.ces.client import CesConflictError, CesError, CesRunError, CesToolError, status_of, tool_error


@pytest.mark.parametrize(("error", "status"), [
    ({"error": {"code": 409, "message": "m", "status": "ABORTED"}}, "ABORTED"),
    ({"code": 403, "message": "m", "status": "permission_denied"}, "PERMISSION_DENIED"),  # the inner object
    ({"error": {"code": 10, "message": "m"}}, "ABORTED"),  # a google.rpc.Code number
    ({"error": {"code": 9}}, "FAILED_PRECONDITION"),
    ({"error": {"code": 429, "message": "m"}}, "RESOURCE_EXHAUSTED"),  # an HTTP code, no status
    ({"error": {"code": 400, "message": "m"}}, None),  # 400 could be several statuses: not guessed
    ({"error": {"message": "etag mismatch, ABORTED"}}, None),  # wording is never read
    ("ABORTED", None),
    (None, None),
])
def test_status_of(error: object, status: str | None) -> None:
    assert status_of(error) == status


def test_the_class_follows_the_status_not_the_text() -> None:
    conflict = tool_error("update_evaluation", "http://x/mcp", {"error": {"status": "ABORTED", "message": "busy"}}, "")
    assert isinstance(conflict, CesConflictError) and conflict.detail == "busy"
    plain = tool_error("update_evaluation", "http://x/mcp", None, "etag mismatch: ABORTED")
    assert type(plain) is CesToolError and plain.status is None
    assert str(plain) == "update_evaluation at http://x/mcp: etag mismatch: ABORTED"


@pytest.mark.parametrize(("status", "code"), [
    ("ABORTED", 1), ("FAILED_PRECONDITION", 1), ("INVALID_ARGUMENT", 2), ("ALREADY_EXISTS", 2), (None, 2),
    ("UNAUTHENTICATED", 4), ("PERMISSION_DENIED", 5), ("NOT_FOUND", 6), ("RESOURCE_EXHAUSTED", 7),
])
def test_exit_codes_by_status(status: str | None, code: int) -> None:
    assert exit_code_for(CesError("x", status)) == code


def test_a_run_that_could_not_start_is_incomplete_whatever_its_status() -> None:
    assert exit_code_for(CesRunError("x", "FAILED_PRECONDITION")) == 3
