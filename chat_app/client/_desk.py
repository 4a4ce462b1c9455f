"""The approval desk over HTTP, for scripts and bots: `DeskClient` and `DeskRequestError`.

Owns `DeskClient`, an async `httpx` client of the desk's routes (`docs/protocol.md` §10):
start a stored conversation and add messages to it (the runs go on on the server), read it,
list the inbox, decide, retry, and wait for a conversation to settle. Answers are the
server's JSON as dicts; every refusal raises `DeskRequestError` with the server's own message
(`_http.server_message`) and code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import httpx

from ._connections import bearer
from ._http import network_reason, seconds, server_message, status_words

__all__ = ["ABSENT", "DeskClient", "DeskRequestError"]


class _Absent:
    """The default of an optional answer field: not sent (unlike `None`, which is JSON null)."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


#: "Not given": `decide(..., payload=ABSENT)` sends no `payload` field.
ABSENT: Final = _Absent()


def _settled(conversation: Mapping[str, Any]) -> bool:
    """`wait`'s default: the conversation is not running."""
    return conversation.get("status") != "running"


class DeskRequestError(Exception):
    """The desk refused, or could not be reached.

    `status` is the HTTP status (0 when nothing was answered: the network, a timeout);
    `code` the desk's reason (`invalid`, `forbidden`, `unknown`, `already-decided`, `busy`,
    `expired`, `unavailable`; `unauthorized` for a 401, `transport` for no answer);
    `message` what the server said, for a person; `details` the rest of its JSON (the schema
    `errors`, `decidedBy`, …).
    """

    def __init__(
        self, status: int, code: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def __repr__(self) -> str:
        return f"DeskRequestError({self.status}, {self.code!r}, {self.message!r})"


class DeskClient:
    """The approval desk of a chat_app server, over HTTP.

    Example::

        async with DeskClient("http://127.0.0.1:8001", token=token) as desk:
            thread = await desk.start("transfer 5000 to Ada")
            conversation = await desk.wait(thread)            # settled: waiting for finance
            for item in await desk.inbox(tool="transfer"):    # as the token's owner
                print(item["summary"], item["requester"]["name"], item["waitingFor"])
                result = await desk.decide(item["decisionId"], True)
                print(result["status"], result["message"])    # decided  Approved.

    Parameters:
        base_url: the server (`http://host:port`; the routes are under `/api`).
        token: an API token (`python -m chat_app tokens create`): the desk acts as its owner.
        timeout: seconds allowed for connecting and for each answer.
        headers: extra request headers (a session cookie, a proxy's).
        transport: an `httpx` transport (e.g. `httpx.ASGITransport(app)` in tests).
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json", **dict(headers or {}), **bearer(token)}
        self._timeout = timeout
        self._client = httpx.AsyncClient(
            base_url=self.base_url, timeout=httpx.Timeout(timeout), transport=transport
        )

    async def __aenter__(self) -> DeskClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    # --- conversations ------------------------------------------------------------------

    async def start(self, message: str) -> str:
        """A new conversation as the caller, starting with `message`; its thread id. The run
        goes on on the server (`wait` for it)."""
        answer = await self._request("POST", "/api/conversations", {"message": message})
        return str(answer["threadId"])

    async def post(self, thread_id: str, message: str) -> None:
        """The next message of the caller's conversation (refused while it runs or waits for
        decisions: `busy`)."""
        await self._request("POST", f"/api/conversations/{thread_id}/messages",
                            {"message": message})  # fmt: skip

    async def conversation(self, thread_id: str) -> dict[str, Any]:
        """A conversation: `status` (`running`, `waiting`, `done`, `failed`), `messages`,
        the pending `decisions`, `waitingFor`, `error`, …"""
        return await self._request("GET", f"/api/conversations/{thread_id}")

    async def conversations(self) -> list[dict[str, Any]]:
        """The caller's conversations, newest first."""
        answer = await self._request("GET", "/api/conversations")
        return list(answer["conversations"])

    async def retry(self, thread_id: str) -> None:
        """Run again what failed in the conversation (its last continuation or message)."""
        await self._request("POST", f"/api/conversations/{thread_id}/retry")

    async def wait(
        self,
        thread_id: str,
        until: Callable[[dict[str, Any]], bool] = _settled,
        *,
        timeout: float = 60.0,
        interval: float = 0.1,
    ) -> dict[str, Any]:
        """Poll the conversation until `until(conversation)` holds (by default: it is not
        running) and return it; `TimeoutError` after `timeout` seconds, naming its status."""
        deadline = time.monotonic() + timeout
        while True:
            found = await self.conversation(thread_id)
            if until(found):
                return found
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"Conversation {thread_id} did not get there within {seconds(timeout)} "
                    f"(it is {found.get('status')})."
                )
            await asyncio.sleep(interval)

    # --- the inbox ----------------------------------------------------------------------

    async def inbox(
        self,
        tool: str | None = None,
        requester: str | None = None,
        all: bool = False,  # noqa: A002 - the route's own name for it
        *,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The pending decisions the caller may make, newest first (every pending one with
        `all`, for an admin); filtered by tool name and requester's email."""
        params: dict[str, str] = {}
        if tool:
            params["tool"] = tool
        if requester:
            params["requester"] = requester
        if all:
            params["all"] = "1"
        if limit is not None:
            params["limit"] = str(limit)
        answer = await self._request("GET", "/api/inbox", params=params)
        return list(answer["items"])

    async def decided(self, *, limit: int | None = None) -> list[dict[str, Any]]:
        """What the caller decided, newest first: their answers, and their approvals towards
        a quorum once it is settled; each an inbox item with its `outcome`, `decidedBy` and
        `actedAt` (when the caller acted)."""
        params = {} if limit is None else {"limit": str(limit)}
        answer = await self._request("GET", "/api/decided", params=params)
        return list(answer["items"])

    async def decide(
        self,
        decision_id: str,
        approved: bool | None = None,
        *,
        payload: Any = ABSENT,
        edited_args: Any = ABSENT,
        cancelled: bool = False,
        value: Any = ABSENT,
    ) -> dict[str, Any]:
        """Answer a decision: `approved` True or False (with `payload`, `edited_args` as the
        tool asks), `cancelled=True`, or a question's `value`. Returns `{"status": "decided"
        | "waiting", "message", "decision"}`; a refusal raises `DeskRequestError` (403 who
        may, 409 already decided and by whom, 410 expired, 400 the schema's errors)."""
        body: dict[str, Any]
        given = sum((approved is not None, cancelled, value is not ABSENT))
        if given != 1:
            raise ValueError("Give exactly one of approved=, cancelled=True or value=.")
        if (payload is not ABSENT or edited_args is not ABSENT) and approved is None:
            raise ValueError("payload= and edited_args= go with approved=.")
        if cancelled:
            body = {"cancelled": True}
        elif value is not ABSENT:
            body = {"value": value}
        else:
            body = {"approved": approved}
            if payload is not ABSENT:
                body["payload"] = payload
            if edited_args is not ABSENT:
                body["editedArgs"] = edited_args
        return await self._request("POST", f"/api/inbox/{decision_id}", body)

    # --- HTTP ---------------------------------------------------------------------------

    async def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        url = self.base_url + path
        try:
            response = await self._client.request(
                method, path, json=body, params=params, headers=self._headers
            )
        except httpx.TimeoutException as error:
            raise DeskRequestError(
                0, "transport", f"The desk at {url} did not answer within {seconds(self._timeout)}."
            ) from error
        except httpx.HTTPError as error:
            raise DeskRequestError(
                0, "transport", f"Could not reach the desk at {url}: {network_reason(error)}."
            ) from error
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and isinstance(data, dict):
            return data
        content_type = response.headers.get("content-type", "")
        if response.is_success:
            raise DeskRequestError(
                response.status_code, "transport",
                f"The desk at {url} answered something that is not a JSON object.",
            )  # fmt: skip
        said = server_message(response.content, content_type)
        details = dict(data) if isinstance(data, dict) else {}
        code = details.pop("code", None)
        details.pop("error", None)
        if not isinstance(code, str):
            code = "unauthorized" if response.status_code == 401 else "http"
        message = said or f"The desk at {url} answered " + status_words(
            response.status_code, response.content, content_type
        )
        raise DeskRequestError(response.status_code, code, message, details)
