"""The headless chat client: Python's counterpart of `@tanstack/ai-client`.

Imports `chat_app.interrupts` (the wire), `ag_ui.core`, `httpx` and `pydantic`; never the
agent, the server or the UI. An in-process connection takes the agent's run function from
outside.
"""

from ._chat import ANSWERED_BEFORE, RUNNING_ELSEWHERE, ChatClient
from ._connections import (
    Connection,
    EventEncoder,
    InProcessConnection,
    MockConnection,
    RunFunction,
    SSEConnection,
)
from ._desk import ABSENT, DeskClient, DeskRequestError
from ._errors import ClientError, ClientErrorCode, RunError, TransportError, UsageError
from ._items import (
    ANSWERABLE_STATUSES,
    AnsweredQuestion,
    GenericInterrupt,
    InterruptItem,
    ItemRecord,
    ItemStatus,
    ManagerSnapshot,
    Submission,
    ToolApprovalInterrupt,
    UnboundInterrupt,
)
from ._manager import ChangeSource, InterruptHandle, InterruptManager, TransactionResolver
from ._manifest import ToolManifest, fetch_manifest, read_manifest
from ._messages import (
    ChatMessage,
    MessagePart,
    TextPart,
    ToolCallPart,
    ToolCallStatus,
    ToolDecision,
    ToolResultPart,
    from_wire_messages,
    to_wire_messages,
)
from ._processor import LEFT_BEHIND, RunStatus, StreamProcessor, StreamState
from ._request import build_run_input
from ._state import INTERRUPTED, ClientState, ClientStatus
from ._tools import (
    ClientInterruptDefinition,
    ClientTool,
    ClientToolFunction,
    DefinitionLike,
    ToolRequest,
)

__all__ = [
    "ABSENT",
    "ANSWERABLE_STATUSES",
    "ANSWERED_BEFORE",
    "AnsweredQuestion",
    "ChangeSource",
    "ChatClient",
    "ChatMessage",
    "ClientError",
    "ClientErrorCode",
    "ClientInterruptDefinition",
    "ClientState",
    "ClientStatus",
    "ClientTool",
    "ClientToolFunction",
    "Connection",
    "DefinitionLike",
    "DeskClient",
    "DeskRequestError",
    "EventEncoder",
    "GenericInterrupt",
    "INTERRUPTED",
    "InProcessConnection",
    "InterruptHandle",
    "InterruptItem",
    "InterruptManager",
    "ItemRecord",
    "ItemStatus",
    "LEFT_BEHIND",
    "ManagerSnapshot",
    "MessagePart",
    "MockConnection",
    "RUNNING_ELSEWHERE",
    "RunError",
    "RunFunction",
    "RunStatus",
    "SSEConnection",
    "StreamProcessor",
    "StreamState",
    "Submission",
    "TextPart",
    "ToolApprovalInterrupt",
    "ToolCallPart",
    "ToolCallStatus",
    "ToolDecision",
    "ToolManifest",
    "ToolRequest",
    "ToolResultPart",
    "TransactionResolver",
    "TransportError",
    "UnboundInterrupt",
    "UsageError",
    "build_run_input",
    "fetch_manifest",
    "from_wire_messages",
    "read_manifest",
    "to_wire_messages",
]
