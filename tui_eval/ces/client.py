"""The CES MCP client: JSON-RPC `tools/call` over streamable HTTP, on the official `mcp` SDK.

The SDK and the HTTP stack are imported inside the functions that need them: nothing of this is paid
for at dashboard start-up. Every failure reaches the caller as one `CesError` whose message is a single
line naming the endpoint and what to do, never a traceback.

What went wrong is read from the error's canonical status (`{"error": {"code", "message", "status"}}`,
Google's error shape), wherever the server puts it: a tool result's structured content (or its JSON
text), a JSON-RPC error's `data`, an HTTP error's body; never from the message's wording.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..schema.ces.model import (
    Evaluation,
    EvaluationPage,
    EvaluationResult,
    EvaluationResultPage,
    EvaluationRun,
    EvaluationRunPage,
    Operation,
)

logger = logging.getLogger(__name__)

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
TOKEN_ENV = "CES_ACCESS_TOKEN"
LOGIN_HINT = "run `gcloud auth application-default login` (or set CES_ACCESS_TOKEN)"
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
P = TypeVar("P", EvaluationPage, EvaluationRunPage, EvaluationResultPage)
X = TypeVar("X")


# google.rpc.Code by number, for a Status that gives only its code.
CANONICAL_CODES = {
    1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
    6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
    15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}
# An HTTP code whose canonical status is not in doubt, for an error that gives no status.
HTTP_STATUSES = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}
CONFLICT_STATUSES = frozenset({"ABORTED", "FAILED_PRECONDITION"})


def status_of(error: object) -> str | None:
    """The canonical status of a Google error object (`{"error": {...}}` or the inner object), else None."""
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if not isinstance(error, dict):
        return None
    status = error.get("status")
    if isinstance(status, str) and status.strip():
        return status.strip().upper()
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool):
        return CANONICAL_CODES.get(code) or HTTP_STATUSES.get(code)
    return None


def _message_of(error: object) -> str | None:
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message.strip() else None


class CesError(Exception):
    """A CES failure, said in one line; `status` is its canonical status when CES gave one."""

    def __init__(self, message: str, status: str | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.status = status


class CesAuthError(CesError):
    """No credentials, or credentials the server refused."""


class CesNetworkError(CesError):
    """The endpoint could not be reached."""


def status_message(where: str, status: str | None, detail: str, tool: str = "") -> str:
    """One line per canonical status: where it happened, what CES said, and what to do about it."""
    if status in CONFLICT_STATUSES:
        if tool in ("update_evaluation", "delete_evaluation"):
            return (f"{where}: the evaluation changed in CES since it was read ({status}: {detail}): pull again "
                    "(`tui-eval ces pull`), re-apply your edits, then push")
        return f"{where}: refused in the resource's current state ({status}: {detail}): check it in CES, then retry"
    if status == "UNAUTHENTICATED":
        return f"{where}: the credentials were refused ({status}: {detail}): {LOGIN_HINT}"
    if status == "PERMISSION_DENIED":
        return (f"{where}: permission denied ({detail}): the account needs a CES role in this project (and "
                f"roles/mcp.toolUser to call MCP tools); to use another account, {LOGIN_HINT}")
    if status == "NOT_FOUND":
        return (f"{where}: not found ({detail}): check the resource name (projects/P/locations/L/apps/A) and "
                "that the endpoint serves its location (--location / --endpoint)")
    if status == "RESOURCE_EXHAUSTED":
        return f"{where}: quota exhausted ({detail}): wait a minute and try again, or raise the project's CES quota"
    if status == "INVALID_ARGUMENT":
        return f"{where}: CES refused the request as invalid ({detail})"
    return f"{where}: {status}: {detail}" if status else f"{where}: {detail}"


class CesToolError(CesError):
    """A tool call that failed: an error result (isError) or a JSON-RPC error; `status` says why."""

    def __init__(self, tool: str, detail: str, status: str | None = None, endpoint: str = "CES") -> None:
        super().__init__(status_message(f"{tool} at {endpoint}", status, detail, tool), status)
        self.tool = tool
        self.detail = detail


class CesConflictError(CesToolError):
    """ABORTED or FAILED_PRECONDITION: the evaluation changed since it was read (an etag mismatch)."""


class CesRunError(CesError):
    """A run in CES that could not start (its operation failed) or that ended in state ERROR."""


def tool_error(tool: str, endpoint: str, error: object, fallback: str) -> CesToolError:
    """The CesToolError for a Google error object (`{"error": {...}}`); `fallback` when it has no message."""
    status = status_of(error)
    detail = _message_of(error) or fallback or "the tool reported an error"
    kind = CesConflictError if status in CONFLICT_STATUSES else CesToolError
    return kind(tool, detail, status, endpoint)


def auth_headers(endpoint: str) -> dict[str, str]:
    """The request headers that authenticate: a bearer token from $CES_ACCESS_TOKEN, else from Google
    Application Default Credentials, plus the ADC quota project (user credentials need one to bill to)."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return {"Authorization": f"Bearer {token}"}
    import google.auth
    import google.auth.exceptions
    from google.auth.transport.requests import Request

    try:
        credentials, _project = google.auth.default(scopes=list(SCOPES))
        credentials.refresh(Request())  # type: ignore[no-untyped-call]  # google-auth leaves it untyped
    except google.auth.exceptions.DefaultCredentialsError:
        raise CesAuthError(f"no Google credentials found for {endpoint}: {LOGIN_HINT}", "UNAUTHENTICATED") from None
    except google.auth.exceptions.GoogleAuthError as exc:
        raise CesAuthError(f"Google credentials for {endpoint} could not be refreshed ({exc}): {LOGIN_HINT}",
                           "UNAUTHENTICATED") from None
    token = getattr(credentials, "token", None)
    if not isinstance(token, str) or not token:
        raise CesAuthError(f"Google credentials gave no access token for {endpoint}: {LOGIN_HINT}", "UNAUTHENTICATED")
    headers = {"Authorization": f"Bearer {token}"}
    quota_project = getattr(credentials, "quota_project_id", None)
    if isinstance(quota_project, str) and quota_project:
        headers["x-goog-user-project"] = quota_project
    return headers


@dataclass
class _LastHttpError:
    """The last HTTP error status the endpoint answered: the SDK only says 'error response'."""

    status: int | None = None
    body: str = ""


class CesClient:
    """Typed calls to the CES MCP tools, over one open MCP session."""

    def __init__(self, session: Any, endpoint: str) -> None:
        self._session = session
        self.endpoint = endpoint

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call one tool; its JSON result (structured content, else the JSON text)."""
        from mcp.shared.exceptions import MCPError

        logger.debug("CES %s %s", tool, sorted(arguments))
        try:
            result = await self._session.call_tool(tool, arguments)
        except MCPError as exc:  # the JSON-RPC error style: Google's error object in `data`
            raise tool_error(tool, self.endpoint, exc.data, f"MCP error {exc.code}: {exc.message}") from None
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            error: object = result.structured_content
            if status_of(error) is None:  # some servers send the error object as the text only
                try:
                    error = json.loads(text)
                except ValueError:
                    error = None
            raise tool_error(tool, self.endpoint, error, text.strip())
        if isinstance(result.structured_content, dict):
            return result.structured_content
        if not text.strip():
            return {}
        try:
            value = json.loads(text)
        except ValueError:
            raise CesError(f"{tool} at {self.endpoint} answered with text that is not JSON: {text[:120]!r}") from None
        if not isinstance(value, dict):
            raise CesError(f"{tool} at {self.endpoint} answered with JSON that is not an object")
        return value

    async def _typed(self, tool: str, arguments: dict[str, Any], model: type[M]) -> M:
        data = await self.call(tool, arguments)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CesError(f"{tool} at {self.endpoint} answered an unexpected shape at {where}: {first['msg']}") from None

    async def _listed(self, tool: str, args: dict[str, Any], page_model: type[P],
                      items: Callable[[P], list[X]]) -> list[X]:
        """Every item of a list tool, following `nextPageToken` until the last page."""
        out: list[X] = []
        token: str | None = None
        while True:
            page = await self._typed(tool, {**args, "pageToken": token} if token else args, page_model)
            out.extend(items(page))
            token = page.next_page_token
            if not token:
                return out

    # ---- evaluations ----

    async def list_evaluations(self, app: str, *, last_ten_results: bool = False, page_size: int | None = None) -> list[Evaluation]:
        """Every evaluation of an app, following page tokens."""
        args = _arguments({"parent": app}, lastTenResults=last_ten_results, pageSize=page_size)
        return await self._listed("list_evaluations", args, EvaluationPage, lambda page: page.evaluations)

    async def get_evaluation(self, name: str) -> Evaluation:
        return await self._typed("get_evaluation", {"name": name}, Evaluation)

    async def create_evaluation(self, app: str, evaluation: dict[str, Any], evaluation_id: str | None = None) -> Evaluation:
        args = _arguments({"parent": app, "evaluation": evaluation}, evaluationId=evaluation_id)
        return await self._typed("create_evaluation", args, Evaluation)

    async def update_evaluation(self, evaluation: dict[str, Any], update_mask: list[str]) -> Evaluation:
        """Update the named fields only; the evaluation carries the etag it was read with."""
        args = {"evaluation": evaluation, "updateMask": ",".join(update_mask)}
        return await self._typed("update_evaluation", args, Evaluation)

    async def delete_evaluation(self, name: str, etag: str | None = None) -> None:
        await self.call("delete_evaluation", _arguments({"name": name}, etag=etag))

    # ---- runs and results ----

    async def run_evaluation(self, app: str, evaluations: list[str] | None = None, display_name: str | None = None,
                             app_version: str | None = None) -> Operation:
        """Start a run of the evaluations named by id (not by resource name, as the reference says)."""
        args = _arguments({"app": app}, evaluations=evaluations, displayName=display_name, appVersion=app_version)
        return await self._typed("run_evaluation", args, Operation)

    async def list_evaluation_runs(self, app: str) -> list[EvaluationRun]:
        return await self._listed("list_evaluation_runs", {"parent": app}, EvaluationRunPage,
                                  lambda page: page.evaluation_runs)

    async def get_evaluation_run(self, name: str) -> EvaluationRun:
        return await self._typed("get_evaluation_run", {"name": name}, EvaluationRun)

    async def list_evaluation_results(self, evaluation: str, filter: str | None = None) -> list[EvaluationResult]:
        args = _arguments({"parent": evaluation}, filter=filter)
        return await self._listed("list_evaluation_results", args, EvaluationResultPage,
                                  lambda page: page.evaluation_results)

    async def get_evaluation_result(self, name: str) -> EvaluationResult:
        return await self._typed("get_evaluation_result", {"name": name}, EvaluationResult)


def _arguments(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """A tool's arguments: the required ones, and each optional one that is set (empty or false: left out)."""
    return {**required, **{key: value for key, value in optional.items() if value}}


@asynccontextmanager
async def _open(
    endpoint: str, headers: dict[str, str], last: _LastHttpError, timeout: float
) -> AsyncIterator[CesClient]:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from ..judge.answer_size import with_answer_bound

    async def remember_errors(response: httpx2.Response) -> None:
        # Only the JSON-RPC POSTs: a 405 to the optional GET stream or the closing DELETE is no error.
        if response.status_code >= 400 and response.request.method == "POST":
            last.status = response.status_code
            try:
                last.body = (await response.aread()).decode("utf-8", "replace")[:300]
            except httpx2.HTTPError as exc:
                logger.debug("could not read the error body from %s: %s", endpoint, exc)

    http = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(timeout, read=max(timeout, 60.0)),
        event_hooks=with_answer_bound({"response": [remember_errors]}),
    )
    async with http, streamable_http_client(endpoint, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield CesClient(session, endpoint)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _explain(exc: BaseException, endpoint: str, last: _LastHttpError) -> CesError | None:
    """One CesError for whatever the SDK or the transport raised; None for what is not ours to explain."""
    import httpx2
    from mcp.shared.exceptions import MCPError

    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, CesError):
            return leaf
    status = _http_status(last)
    if last.status in (401, 403):
        return CesAuthError(f"{endpoint} refused the credentials (HTTP {last.status}): {LOGIN_HINT}; "
                            "also check that the account may use CES in this project", status)
    for leaf in leaves:
        if isinstance(leaf, httpx2.TransportError):
            return CesNetworkError(
                f"cannot reach the CES MCP server at {endpoint} ({type(leaf).__name__}: {leaf}): "
                "check the network, or pass --endpoint / --location"
            )
    if last.status is not None:
        try:
            body: object = json.loads(last.body)
        except ValueError:
            body = None
        return CesError(status_message(f"{endpoint} answered HTTP {last.status}", status,
                                       _message_of(body) or last.body), status)
    for leaf in leaves:
        if isinstance(leaf, MCPError):
            return CesError(f"{endpoint}: MCP error: {leaf}", status_of(leaf.data))
    return None


def _http_status(last: _LastHttpError) -> str | None:
    """The canonical status of an HTTP error: from its JSON body, else from the HTTP code."""
    if last.status is None:
        return None
    try:
        body = json.loads(last.body)
    except ValueError:
        body = None
    return status_of(body) or HTTP_STATUSES.get(last.status)


async def with_client(
    endpoint: str, work: Callable[[CesClient], Awaitable[T]], *, token: str | None = None, timeout: float = 60.0
) -> T:
    """Open a session to `endpoint`, run `work` with a client, close. Raises only CesError (or cancellation)."""
    headers = {"Authorization": f"Bearer {token}"} if token else auth_headers(endpoint)
    last = _LastHttpError()
    try:
        async with _open(endpoint, headers, last, timeout) as client:
            return await work(client)
    except Exception as exc:  # the SDK wraps failures in exception groups: explain them in one line
        explained = _explain(exc, endpoint, last)
        if explained is None:
            # At debug level: the default last-resort handler would print an ERROR's traceback.
            logger.debug("unexpected failure talking to %s", endpoint, exc_info=True)
            raise CesError(f"{endpoint}: unexpected failure: {type(exc).__name__}: {exc}") from exc
        raise explained from None
