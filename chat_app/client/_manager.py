"""The interrupt manager: one batch of interrupts, the answers to it, and its submission.

Owns `InterruptManager` and `InterruptHandle` (`docs/protocol.md` §4, rule by rule).
Synchronous and I/O-free: every mutating call returns the `Submission` to send when the batch became
complete (auto-submit), or `None`. The chat client sends it and reports back with
`submission_failed` / `submission_settled`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from chat_app.interrupts import (
    ABSENT,
    APPROVED_BOOLEAN_REQUIRED,
    CLIENT_TOOL_REASON,
    LEGACY_CLIENT_TOOL_REASON,
    BatchInterruptError,
    BatchInterruptErrorCode,
    Decision,
    DecisionProblem,
    InterruptError,
    ItemInterruptError,
    ItemInterruptErrorCode,
    canonicalize_interrupt_resolutions,
    check_decision,
)

from ._classify import Hydration, classify, first_party_index_counts, legacy_kind
from ._errors import UsageError
from ._items import (
    InterruptItem,
    ItemRecord,
    ItemStatus,
    ManagerSnapshot,
    Submission,
    UnboundInterrupt,
)
from ._records import (
    Record,
    binding_kind,
    canonical_entry,
    decision_target,
    error_matches,
    public_item,
    same_correlation,
    with_continuation,
)
from ._tools import ClientInterruptDefinition, ClientTool

__all__ = ["ChangeSource", "InterruptHandle", "InterruptManager", "TransactionResolver"]

ChangeSource: TypeAlias = Literal["live", "hydrate"]
_NO_RETRY_CODES = frozenset({"stale", "expired", "conflict", "forbidden"})
#: Statuses of an item whose resume entry is ready to send: an answer or cancellation, or
#: the cancellation that closes an expired item.
_READY = ("staged", "expired")


@dataclass(eq=False)
class _Token:
    active: bool = True


class InterruptHandle:
    """An item plus its controls, as a `resolve_interrupts(fn)` resolver receives it."""

    def __init__(self, manager: InterruptManager, item: InterruptItem, token: _Token) -> None:
        self.item = item
        self._manager = manager
        self._token = token

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def kind(self) -> str:
        return self.item.kind

    def resolve_interrupt(
        self,
        approved: bool | None = None,
        *,
        edited_args: object = ABSENT,
        payload: object = ABSENT,
        response: object = ABSENT,
    ) -> None:
        self._manager._resolve(
            self.item.id, self._token, approved=approved, edited_args=edited_args,
            payload=payload, response=response,
        )  # fmt: skip

    def cancel(self) -> None:
        self._manager._cancel(self.item.id, self._token)

    def clear_resolution(self) -> None:
        self._manager._clear(self.item.id, self._token)


TransactionResolver: TypeAlias = Callable[[InterruptHandle], object]


class InterruptManager:
    """Classifies a batch, stages answers, and decides when the batch is complete.

    Example::

        manager = InterruptManager(tools=[transfer], definitions=[shipping])
        manager.hydrate(thread_id="t", interrupted_run_id="run-1", generation=0,
                        descriptors=outcome["interrupts"])
        submission = manager.resolve("approval_call_1", approved=True)
    """

    def __init__(
        self,
        *,
        tools: Iterable[ClientTool] = (),
        definitions: Iterable[ClientInterruptDefinition] = (),
        on_change: Callable[[ChangeSource], None] | None = None,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.definitions: dict[str, ClientInterruptDefinition] = {}
        for definition in definitions:
            if definition.id in self.definitions:
                raise UsageError(f"Duplicate interrupt definition id: {definition.id}")
            self.definitions[definition.id] = definition
        self.on_change = on_change
        self._hydration: Hydration | None = None
        self._items: list[Record] = []
        self._root_errors: tuple[BatchInterruptError, ...] = ()
        self._submission_root_errors: tuple[BatchInterruptError, ...] = ()
        self._retry: Submission | None = None
        self._active: Submission | None = None
        self._transaction: _Token | None = None
        self._interrupts: tuple[InterruptItem, ...] = ()

    # --- reading ----------------------------------------------------------------------------

    @property
    def interrupts(self) -> tuple[InterruptItem, ...]:
        """Public items: no hidden client-tool executions, nothing being submitted."""
        return self._interrupts

    @property
    def errors(self) -> tuple[BatchInterruptError, ...]:
        return self._root_errors

    @property
    def resuming(self) -> bool:
        return self._active is not None

    @property
    def active_submission(self) -> Submission | None:
        return self._active

    @property
    def can_retry(self) -> bool:
        return self._retry is not None

    @property
    def hydration(self) -> Hydration | None:
        return self._hydration

    def can_resolve_all(self, approved: bool) -> bool:
        """Whether Approve all (`True`) or Reject all (`False`) applies: every item still to
        answer is a tool approval whose branch takes no payload."""
        items = self._bulk_items()
        return bool(items) and all(
            item.kind == "tool-approval"
            and (item.tool is None or item.tool.branch_schema(approved) is None)
            for item in items
        )

    def _bulk_items(self) -> list[Record]:
        return [
            item for item in self._items
            if item.resumable and item.kind != "client-tool-execution" and item.status != "expired"
        ]  # fmt: skip

    @property
    def has_open_items(self) -> bool:
        """Whether answers this client can give are still owed (blocks a new message)."""
        return any(item.resumable for item in self._items)

    def client_tool_requests(self) -> list[tuple[str, str, object]]:
        """`(toolCallId, toolName, input)` of client tools the batch asks this client to run.

        As TanStack: read from the legacy `metadata.kind == "client_tool"` marker, and none
        while a generic interrupt shares the batch (its answer decides whether tools run).
        """
        if self._hydration is None:
            return []
        if any(binding_kind(item.descriptor) == "generic" for item in self._items):
            return []
        requests: list[tuple[str, str, object]] = []
        for item in self._items:
            descriptor = item.descriptor
            metadata = descriptor.get("metadata")
            call_id = descriptor.get("toolCallId")
            if not isinstance(metadata, Mapping) or not isinstance(call_id, str):
                continue
            if not (
                metadata.get("kind") == "client_tool"
                or descriptor.get("reason") == LEGACY_CLIENT_TOOL_REASON
            ):
                continue
            if item.status != "pending":
                continue
            name = metadata.get("toolName")
            requests.append((call_id, str(name or ""), metadata.get("input", {})))
        return requests

    # --- lifecycle ----------------------------------------------------------------------------

    def hydrate(
        self,
        *,
        thread_id: str,
        interrupted_run_id: str,
        generation: int,
        descriptors: Sequence[Mapping[str, object]],
        source: ChangeSource = "live",
    ) -> None:
        """Replace the batch (a `RUN_FINISHED` with an interrupt outcome arrived)."""
        self._active = None
        hydration = Hydration(
            thread_id=thread_id,
            interrupted_run_id=interrupted_run_id,
            generation=generation,
            descriptors=tuple({str(k): v for k, v in d.items()} for d in descriptors),
        )
        self._hydration = hydration
        counts = first_party_index_counts(hydration.descriptors)
        self._items = []
        for descriptor in hydration.descriptors:
            found = classify(descriptor, hydration, self.tools, self.definitions, counts)
            item = Record(
                descriptor=descriptor, kind=found.kind, binding=found.binding,
                can_resolve=found.can_resolve, resumable=found.resumable, tool=found.tool,
                definition=found.definition, payload=found.payload,
            )  # fmt: skip
            if found.error is not None:
                item.status = "error"
                item.error = self._item_error(item.id, "stale", found.error)
            self._items.append(item)
        self._root_errors = ()
        self._submission_root_errors = ()
        self._retry = None
        self._publish(source)

    def reset(self, *, source: ChangeSource = "live") -> None:
        """Forget the batch (the run finished, or failed, without pausing)."""
        self._active = None
        self._hydration = None
        self._items = []
        self._root_errors = ()
        self._submission_root_errors = ()
        self._retry = None
        self._publish(source)

    # --- answering one item -------------------------------------------------------------

    def resolve(
        self,
        interrupt_id: str,
        *,
        approved: bool | None = None,
        edited_args: object = ABSENT,
        payload: object = ABSENT,
        response: object = ABSENT,
    ) -> Submission | None:
        """Answer one item: `approved=` (+ `edited_args=`, `payload=`) or `response=`."""
        return self._resolve(
            interrupt_id, None, approved=approved, edited_args=edited_args, payload=payload,
            response=response,
        )  # fmt: skip

    def cancel_item(self, interrupt_id: str) -> Submission | None:
        """Abandon one item without an answer (`status: "cancelled"`, no payload)."""
        return self._cancel(interrupt_id, None)

    def expire_item(self, interrupt_id: str, note: str) -> Submission | None:
        """Close one item nobody answered in time: the same cancellation as `cancel_item`
        (past its expiry the server reads it as the expiry), but the item is `expired`, with
        `note`, and nothing can answer or change it any more."""
        self._assert_item_mutable(None)
        item = self._find_answerable(interrupt_id)
        self._retry = None
        item.resolution = with_continuation(item, Decision.cancel(item.id).resume_entry())
        item.status = "expired"
        item.error = None
        item.expiry_note = note
        self._publish()
        return self._maybe_submit()

    def clear_item(self, interrupt_id: str) -> None:
        """Drop the staged answer and the error; the item is pending again."""
        self._clear(interrupt_id, None)

    # An `InterruptHandle` passes the token of its transaction (`None` outside one): inside a
    # transaction nothing is published or submitted until the resolver returns.

    def _resolve(
        self,
        interrupt_id: str,
        token: _Token | None,
        *,
        approved: bool | None,
        edited_args: object,
        payload: object,
        response: object,
    ) -> Submission | None:
        self._assert_item_mutable(token)
        item = self._find_answerable(interrupt_id)
        if item.kind != "tool-approval":
            if response is ABSENT or approved is not None:
                raise UsageError(
                    f"Interrupt {interrupt_id} is a question: answer it with response=… "
                    "(approved=, payload= and edited_args= are a tool approval's; one whose tool "
                    "this client was not given, in tools=, arrives as a question)."
                )
            if edited_args is not ABSENT or payload is not ABSENT:
                raise UsageError(f"Interrupt {interrupt_id} takes only response=.")
            return self._resolve_item(item, Decision.answer(item.id, response), token)
        if response is not ABSENT:
            raise UsageError("Tool approvals are resolved with approved=, not response=.")
        if not isinstance(approved, bool):
            return self._resolve_item(item, APPROVED_BOOLEAN_REQUIRED, token)
        # As TanStack's client: edited arguments on a rejection are dropped, not refused.
        decision = Decision.approval(
            item.id, approved, payload=payload, edited_args=edited_args if approved else ABSENT
        )
        return self._resolve_item(item, decision, token)

    def _cancel(self, interrupt_id: str, token: _Token | None) -> Submission | None:
        self._assert_item_mutable(token)
        item = self._find_answerable(interrupt_id)
        self._retry = None
        item.resolution = with_continuation(item, Decision.cancel(item.id).resume_entry())
        item.status = "staged"
        item.error = None
        if token is not None:
            return None
        self._publish()
        return self._maybe_submit()

    def _clear(self, interrupt_id: str, token: _Token | None) -> None:
        self._assert_item_mutable(token)
        item = self._find_answerable(interrupt_id)
        self._retry = None
        item.resolution = None
        item.error = None
        item.draft = None
        item.status = "pending"
        if token is None:
            self._publish()

    def resolve_client_tool_output(
        self, tool_call_id: str, output: object
    ) -> tuple[bool, Submission | None]:
        """Stage a client tool's output for its (hidden) item; `(found, submission)`."""
        item = self._client_tool_item(tool_call_id)
        if item is None:
            return False, None
        return True, self._resolve_item(item, Decision.answer(item.id, output), None)

    def client_tool_name(self, tool_call_id: str) -> str | None:
        """The tool a client tool item of this batch runs, whatever its status."""
        item = self._client_tool_item(tool_call_id)
        if item is None:
            return None
        metadata = item.descriptor.get("metadata")
        name = (item.binding or {}).get("toolName") or (
            metadata.get("toolName") if isinstance(metadata, Mapping) else None
        )
        return name if isinstance(name, str) else None

    def cancel_client_tool(self, tool_call_id: str) -> Submission | None:
        """Cancel a client tool's (hidden) item, which no result of it can answer."""
        item = self._client_tool_item(tool_call_id)
        return None if item is None else self._cancel(item.id, None)

    def _client_tool_item(self, tool_call_id: str) -> Record | None:
        for item in self._items:
            if _runs_a_client_tool(item) and _call_id_of(item) == tool_call_id:
                return item
        return None

    def client_tool_item_ids(self) -> set[str]:
        """The items that carry a client tool's output: what answers them is the tool call's
        result, not a person's answer."""
        return {item.id for item in self._items if _runs_a_client_tool(item)}

    # --- root operations ----------------------------------------------------------------

    def resolve_all(self, approved: bool) -> Submission | None:
        """`resolveInterrupts(true|false)`: only for batches of payloadless approvals."""
        self._assert_root_mutable()
        if not self.can_resolve_all(approved):
            self._add_root_error(
                "unsupported-bulk-operation",
                "Boolean bulk resolution requires payloadless tool approvals.",
            )
            return None
        self._retry = None
        for item in self._bulk_items():
            decision = Decision.approval(item.id, approved)
            item.resolution = canonical_entry(decision.resume_entry())
            item.draft = decision.envelope()
            item.status = "staged"
            item.error = None
        self._publish()
        return self._maybe_submit()

    def transaction(self, resolver: TransactionResolver) -> Submission | None:
        """`resolveInterrupts(fn)`: all items answered in one synchronous call, or none."""
        self._assert_root_mutable()
        checkpoints = [(i.status, i.resolution, i.error, i.draft) for i in self._items]
        token = _Token()
        self._transaction = token
        failure: tuple[BatchInterruptErrorCode, str] | None = None
        try:
            for item in self._public_items():
                if isinstance(item, UnboundInterrupt) or item.status == "expired":
                    continue
                result = resolver(InterruptHandle(self, item, token))
                if inspect.isawaitable(result):
                    if inspect.iscoroutine(result):
                        result.close()
                    failure = (
                        "async-resolver",
                        "Interrupt transaction resolvers must be synchronous.",
                    )
                    break
                if result is not None:
                    failure = (
                        "inactive-transaction",
                        "Interrupt transaction resolvers must return literal undefined.",
                    )
                    break
            if failure is None and any(
                item.resumable
                and item.kind != "client-tool-execution"
                and (item.resolution is None or item.status not in _READY)
                for item in self._items
            ):
                failure = ("incomplete-batch", "Interrupt transaction did not resolve every item.")
        except Exception as problem:  # the resolver's own failure rolls the batch back
            failure = ("item-validation-failed", str(problem))
        finally:
            token.active = False
            self._transaction = None
        if failure is not None:
            for record, checkpoint in zip(self._items, checkpoints, strict=True):
                record.status, record.resolution, record.error, record.draft = checkpoint
            self._add_root_error(*failure)
            return None
        self._publish()
        return self._maybe_submit()

    def cancel_all(self) -> Submission | None:
        """`cancelInterrupts()`: cancel every resumable item (hidden client tools too)."""
        self._assert_root_mutable()
        self._retry = None
        for item in self._items:
            if not item.resumable or item.status == "expired":
                continue
            item.resolution = with_continuation(item, Decision.cancel(item.id).resume_entry())
            item.status = "staged"
            item.error = None
        self._publish()
        return self._maybe_submit()

    def retry(self) -> Submission | None:
        """Re-send the identical submission after a retryable failure."""
        if self._active is not None:
            raise UsageError("Interrupt submission is already active.")
        if self._retry is None:
            self._add_root_error("transport", "There is no retryable interrupt submission.")
            return None
        return self._submit(self._retry)

    # --- submission outcome -------------------------------------------------------------

    def submission_failed(
        self,
        submission: Submission,
        *,
        message: str,
        errors: Sequence[InterruptError] = (),
    ) -> None:
        """The continuation failed: a transport failure (no `errors`) or the server's errors."""
        if self._active is not submission:
            return  # superseded: a newer batch owns the state
        if not errors:
            self._add_root_error(
                "transport", message, retryable=True, source="transport", publish=False
            )
            self._retry = submission
            for item in self._items:
                if item.resumable:
                    item.status = _unsent(item)
            return
        correlated = [e for e in errors if error_matches(e, submission)]
        if len(correlated) != len(errors):
            self._add_root_error(
                "protocol",
                "Interrupt submission errors did not match the active batch.",
                publish=False,
            )
        no_retry = any(e.code in _NO_RETRY_CODES for e in correlated)
        retryable = any(e.retryable for e in correlated)
        batch: list[BatchInterruptError] = []
        for error in correlated:
            if isinstance(error, ItemInterruptError):
                for item in self._items:
                    if item.resumable and item.id == error.interrupt_id:
                        item.status = "error"
                        item.error = error
                        item.expiry_note = None  # the server did not take it as expired
            else:
                batch.append(error)
        self._merge_batch_errors(batch)
        for item in self._items:
            if item.resumable and item.status == "submitting":
                item.status = _unsent(item)
        self._retry = submission if retryable and not no_retry else None

    def submission_settled(self, submission: Submission) -> None:
        """The continuation ended (either way); publish if this batch still owns the state."""
        if self._active is submission:
            self._active = None
            self._publish()

    # --- state ------------------------------------------------------------------------------

    def snapshot(self) -> ManagerSnapshot:
        hydration = self._hydration
        return ManagerSnapshot(
            thread_id=hydration.thread_id if hydration else None,
            interrupted_run_id=hydration.interrupted_run_id if hydration else None,
            generation=hydration.generation if hydration else 0,
            descriptors=hydration.descriptors if hydration else (),
            items=tuple(
                ItemRecord(
                    id=i.id, status=i.status, resolution=i.resolution, error=i.error,
                    draft=i.draft, expiry_note=i.expiry_note,
                )  # fmt: skip
                for i in self._items
            ),
            root_errors=self._root_errors,
            submission_root_errors=self._submission_root_errors,
            retry_submission=self._retry,
            active_submission=self._active,
        )

    def restore(self, snapshot: ManagerSnapshot, *, in_flight: bool = False) -> None:
        """Rebuild from a snapshot (after a reload), re-classifying with the current tools.

        A submission that was in flight when the snapshot was taken is treated as a failed
        send: the items are in error and `retry` re-sends it; with `in_flight`, the snapshot
        is of a run still going on elsewhere, and it stays in flight.
        """
        if snapshot.thread_id is None or snapshot.interrupted_run_id is None:
            self.reset(source="hydrate")
            return
        self.hydrate(
            thread_id=snapshot.thread_id, interrupted_run_id=snapshot.interrupted_run_id,
            generation=snapshot.generation, descriptors=snapshot.descriptors, source="hydrate",
        )  # fmt: skip
        records = {record.id: record for record in snapshot.items}
        for item in self._items:
            record = records.get(item.id)
            if record is None or not item.resumable:
                continue
            item.status, item.resolution = record.status, record.resolution
            item.error, item.draft = record.error, record.draft
            item.expiry_note = record.expiry_note
        self._root_errors = snapshot.root_errors
        self._submission_root_errors = snapshot.submission_root_errors
        self._retry = snapshot.retry_submission
        self._active = snapshot.active_submission
        if self._active is not None and not in_flight:
            self.submission_failed(
                self._active,
                message="The interrupt submission did not finish before the client was restored.",
            )
            self._active = None
        self._publish("hydrate")

    # --- internals ----------------------------------------------------------------------

    def _resolve_item(
        self, item: Record, decision: Decision | DecisionProblem, token: _Token | None
    ) -> Submission | None:
        """Stage `decision` for `item` once the client's checks pass (a `DecisionProblem`:
        the answer given was not a decision at all)."""
        self._retry = None
        if isinstance(decision, DecisionProblem):
            item.draft = {"approved": None}
        elif item.kind == "tool-approval":
            item.draft = decision.envelope()
        else:
            item.draft = {"response": decision.payload}
        if not item.can_resolve:
            item.status = "error"
            item.error = self._item_error(
                item.id, "invalid-response-schema",
                "The interrupt response schema is invalid and cannot be resolved.",
            )  # fmt: skip
            if token is None:
                self._publish()
            return None
        if isinstance(decision, DecisionProblem):
            return self._refuse(item, decision, token)
        problems = check_decision(decision, decision_target(item), side="client")
        if problems:
            return self._refuse(item, problems[0], token)
        item.resolution = canonical_entry(with_continuation(item, decision.resume_entry()))
        item.status = "staged"
        item.error = None
        if token is not None:
            return None
        self._publish()
        return self._maybe_submit()

    def _refuse(
        self, item: Record, problem: DecisionProblem, token: _Token | None
    ) -> Submission | None:
        """The answer to `item` is not valid: the item shows why, and nothing is staged."""
        item.status = "error"
        item.error = self._item_error(item.id, problem.code, problem.message, problem.path)
        if item.kind == "client-tool-execution":
            self._root_errors = (
                *(
                    e for e in self._root_errors
                    if not (e.code == "item-validation-failed" and item.id in e.interrupt_ids)
                ),
                self._batch_error(
                    "item-validation-failed", problem.message, interrupt_ids=(item.id,)
                ),
            )  # fmt: skip
        if token is None:
            self._publish()
        return None

    def _maybe_submit(self) -> Submission | None:
        has_generic = any(item.kind == "generic" for item in self._items)
        ours = [
            item for item in self._items
            if item.resumable and not (has_generic and item.kind == "client-tool-execution")
        ]  # fmt: skip
        if not ours or any(i.resolution is None or i.status not in _READY for i in ours):
            return None
        hydration = self._require_hydration()
        canonical = canonicalize_interrupt_resolutions(
            [item.resolution for item in ours if item.resolution is not None]
        )
        return self._submit(
            Submission(
                thread_id=hydration.thread_id,
                interrupted_run_id=hydration.interrupted_run_id,
                generation=hydration.generation,
                resolutions=canonical.resolutions,
                canonical_resolutions=canonical.text,
                fingerprint=canonical.fingerprint,
            )
        )

    def _submit(self, submission: Submission) -> Submission:
        self._active = submission
        self._retry = None
        for item in self._items:
            if item.resumable:
                item.status = "submitting"
        self._publish()
        return submission

    def _merge_batch_errors(self, incoming: Sequence[BatchInterruptError]) -> None:
        replaceable = [e for e in incoming if e.source != "transport"]

        def superseded(candidate: BatchInterruptError) -> bool:
            return any(same_correlation(candidate, e) for e in replaceable)

        self._root_errors = (
            *(
                e for e in self._root_errors
                if not (e in self._submission_root_errors and superseded(e))
            ),
            *incoming,
        )  # fmt: skip
        self._submission_root_errors = (
            *(e for e in self._submission_root_errors if not superseded(e)),
            *replaceable,
        )

    def _assert_item_mutable(self, token: _Token | None) -> None:
        if token is not None and not token.active:
            raise UsageError("Interrupt transaction is inactive.")
        if self._transaction is not None and token is not self._transaction:
            raise UsageError("Interrupt transaction is inactive.")
        if self._active is not None:
            raise UsageError("Interrupts cannot be mutated while submitting.")

    def _assert_root_mutable(self) -> None:
        if self._transaction is not None:
            raise UsageError("Interrupt transaction is already active.")
        if self._active is not None:
            raise UsageError("Interrupts cannot be mutated while submitting.")

    def _find_answerable(self, interrupt_id: str) -> Record:
        for item in self._items:
            if item.id == interrupt_id:
                if item.kind == "unbound":
                    raise UsageError(f"Interrupt {interrupt_id} belongs to another system.")
                if item.status == "expired":
                    raise UsageError(f"Interrupt {interrupt_id} has expired; nobody can answer it.")
                return item
        raise UsageError(f"Unknown interrupt: {interrupt_id}")

    def _require_hydration(self) -> Hydration:
        if self._hydration is None:
            raise UsageError("InterruptManager is not hydrated.")
        return self._hydration

    def _item_error(
        self,
        interrupt_id: str,
        code: ItemInterruptErrorCode,
        message: str,
        path: tuple[str | int, ...] | None = None,
    ) -> ItemInterruptError:
        hydration = self._require_hydration()
        return ItemInterruptError(
            thread_id=hydration.thread_id, interrupted_run_id=hydration.interrupted_run_id,
            generation=hydration.generation, interrupt_id=interrupt_id, code=code,
            message=message, path=path,
        )  # fmt: skip

    def _batch_error(
        self,
        code: BatchInterruptErrorCode,
        message: str,
        *,
        retryable: bool = False,
        source: Literal["client", "server", "transport"] = "client",
        interrupt_ids: tuple[str, ...] | None = None,
    ) -> BatchInterruptError:
        hydration = self._require_hydration()
        ids = interrupt_ids
        if ids is None:
            ids = tuple(item.id for item in self._items if item.resumable)
        return BatchInterruptError(
            thread_id=hydration.thread_id, interrupted_run_id=hydration.interrupted_run_id,
            generation=hydration.generation, interrupt_ids=ids, code=code, message=message,
            source=source, retryable=retryable,
        )  # fmt: skip

    def _add_root_error(
        self,
        code: BatchInterruptErrorCode,
        message: str,
        *,
        retryable: bool = False,
        source: Literal["client", "server", "transport"] = "client",
        publish: bool = True,
    ) -> None:
        error = self._batch_error(code, message, retryable=retryable, source=source)
        self._root_errors = (*self._root_errors, error)
        if publish:
            self._publish()

    def _publish(self, source: ChangeSource = "live") -> None:
        self._interrupts = self._public_items()
        if self.on_change is not None:
            self.on_change(source)

    def items_of(self, interrupt_ids: Collection[str]) -> tuple[InterruptItem, ...]:
        """The public items of `interrupt_ids` in this batch, being submitted or not."""
        hydration = self._hydration
        if hydration is None:
            return ()
        return tuple(
            public_item(item, hydration) for item in self._items if item.id in interrupt_ids
        )

    def _public_items(self) -> tuple[InterruptItem, ...]:
        hydration = self._hydration
        if hydration is None:
            return ()
        return tuple(
            public_item(item, hydration)
            for item in self._items
            if item.kind != "client-tool-execution" and item.status != "submitting"
        )


def _unsent(item: Record) -> ItemStatus:
    """What an item of a batch that was not taken becomes: still expired (its expiry goes
    again with the batch, and nobody can answer it), else in error until answered again."""
    return "expired" if item.expiry_note is not None else "error"


def _runs_a_client_tool(item: Record) -> bool:
    """A client tool's item: bound as one (hidden), or TanStack's legacy marker on a generic
    one (degraded)."""
    if item.kind == "client-tool-execution":
        return True
    return (
        item.kind == "generic"
        and item.descriptor.get("reason") in (CLIENT_TOOL_REASON, LEGACY_CLIENT_TOOL_REASON)
        and legacy_kind(item.descriptor) == "client_tool"
    )


def _call_id_of(item: Record) -> object:
    if item.kind == "client-tool-execution":
        return (item.binding or {}).get("toolCallId")
    return item.descriptor.get("toolCallId")
