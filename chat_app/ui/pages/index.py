"""The chat page: header, transcript with inline decisions, composer, bound to `ChatState`."""

from typing import Any

import reflex as rx

from chat_app.ui.components.composer import INPUT_ID, composer
from chat_app.ui.components.conversation import conversation_bar
from chat_app.ui.components.decisions import DecisionEvents, batch_bar
from chat_app.ui.components.header import auth_banner, header, viewer_menu
from chat_app.ui.components.page import SCREEN_READER_ONLY, page_frame
from chat_app.ui.components.settled import settled_list
from chat_app.ui.components.transcript import (
    archive_blocks,
    empty_transcript,
    message_rows,
    notice_list,
    status_row,
    streaming_row,
    transcript,
)
from chat_app.ui.conversations_state import CONVERSATION_PREFIX
from chat_app.ui.conversations_state import ROUTE as CONVERSATIONS_ROUTE
from chat_app.ui.forms import DRAFT_FIELD
from chat_app.ui.identity_state import DEMO_CHOICES, SIGN_IN_ROUTE, IdentityState
from chat_app.ui.state import SUGGESTIONS, ChatState, remember_click


def _noted(answer: str, handler: Any) -> Any:
    """`handler`, called with a decision's id, after the tab has noted the `answer` it sends:
    one lost with a dying socket is given again when the page connects (`remember_click`)."""
    return lambda interrupt_id: [remember_click(answer, interrupt_id), handler(interrupt_id)]


def _noted_form(submit: Any) -> Any:
    """A decision form's `submit`, noted with its fields (and so its decision)."""
    return lambda form_data: [
        remember_click(
            "form",
            form_data.to(dict)["__interrupt"].to(str),
            form_data,
            draft=form_data.to(dict)[DRAFT_FIELD],
        ),
        submit(form_data),
    ]


def _noted_batch(answer: str, handler: Any) -> Any:
    """A batch bar button, noted as the `answer` it sends."""
    return [remember_click(answer), handler]


#: What the decision cards call.
DECISIONS = DecisionEvents(
    toggle_panel=ChatState.toggle_panel,
    approve=_noted("approve", ChatState.approve),
    reject=_noted("reject", ChatState.reject),
    submit_form=_noted_form(ChatState.submit_form),
    cancel=_noted("cancel", ChatState.cancel_decision),
    change_answer=ChatState.change_answer,
    start_over=ChatState.start_over,
)
#: The memoized message row and archive block, made once (Reflex registers a memo by its
#: name).
MESSAGE_ROW = message_rows(DECISIONS)
ARCHIVE_BLOCK = archive_blocks(MESSAGE_ROW)


def _transcript() -> rx.Component:
    return transcript(
        has_messages=ChatState.has_messages,
        archive=ChatState.archive,
        block=ARCHIVE_BLOCK,
        recent=ChatState.recent,
        turn=ChatState.turn,
        row=MESSAGE_ROW,
        streaming=streaming_row(
            message_id=ChatState.streaming_id,
            text=ChatState.streaming_text,
            tools=ChatState.streaming_tools,
        ),
        loose_decisions=ChatState.loose_decisions,
        events=DECISIONS,
        batch=batch_bar(
            title=ChatState.batch_title,
            batch_size=ChatState.batch_size,
            open_count=ChatState.open_count,
            bulk_ok=ChatState.bulk_ok,
            cancel_all_ok=ChatState.cancel_all_ok,
            errors=ChatState.batch_errors,
            can_retry=ChatState.may_retry,
            on_approve_all=_noted_batch("approve_all", ChatState.approve_all),
            on_reject_all=_noted_batch("reject_all", ChatState.reject_all),
            on_cancel_all=_noted_batch("cancel_all", ChatState.cancel_all),
            on_retry=_noted_batch("retry", ChatState.retry),
        ),
        status=status_row(
            working=ChatState.working,
            resuming=ChatState.resuming_quiet,
            run_error=ChatState.run_error,
            can_resend=ChatState.may_resend,
            on_retry_send=ChatState.retry_send,
        ),
        # Someone else's conversation, not shown, or nobody signed in (the notice says how):
        # no greeting of a chat of one's own, no phrases that could not be sent.
        empty=rx.cond(
            ChatState.read_only | (ChatState.auth_error != ""),
            rx.fragment(),
            empty_transcript(suggestions=SUGGESTIONS, on_suggestion=ChatState.use_suggestion),
        ),
        notices=notice_list(notices=ChatState.notices, on_dismiss=ChatState.dismiss_notice),
        thread=ChatState.thread_shown,
        addresses=CONVERSATION_PREFIX,
        loaded=rx.State.is_hydrated,
        sent_from=f"#{INPUT_ID}",
        header=conversation_bar(
            owner_name=ChatState.owner_name,
            read_only=ChatState.read_only,
            notice=ChatState.desk_notice,
            has_messages=ChatState.has_messages,
            yours=ChatState.open_count,
            on_new=ChatState.new_conversation,
        ),
    )


def _composer() -> rx.Component:
    return composer(
        draft=ChatState.draft,
        held=ChatState.held,
        open_count=ChatState.open_count,
        running=ChatState.running,
        resuming=ChatState.resuming,
        read_only=ChatState.read_only,
        missing=ChatState.missing,
        owner_name=ChatState.owner_name,
        on_draft=ChatState.set_draft,
        on_send=ChatState.send,
        on_stop=ChatState.stop,
    )


def signed_in_header(
    *, banner: bool = True, pages: bool = True, on_storage: Any = IdentityState.look_again
) -> rx.Component:
    """The header with who is signed in, how many decisions wait for them (kept live by the
    pages' own loops), the page shown, and (with `banner`) what to know about sign-in. With
    `pages` False (the sign-in page) the pages are linked only once someone is signed in:
    before, each would send them back to sign in."""
    return rx.fragment(
        header(
            viewer_menu(
                auth_mode=IdentityState.auth_mode,
                viewer_name=IdentityState.viewer_name,
                viewer_email=IdentityState.viewer_email,
                demo_choices=DEMO_CHOICES,
                on_sign_out=ChatState.sign_out,
            ),
            # Nobody signed in (signed out in this tab): no count left over from before.
            inbox_count=rx.cond(IdentityState.viewer_email != "", IdentityState.inbox_count, 0),
            current=IdentityState.router.url.path,
            # Without sign-in anyone may do anything, the admins' pages included.
            is_admin=IdentityState.viewer_admin | (IdentityState.auth_mode == "none"),
            may_audit=IdentityState.viewer_auditor | (IdentityState.auth_mode == "none"),
            pages=True if pages else IdentityState.viewer_email != "",
        ),
        rx.box(
            auth_banner(
                auth_mode=IdentityState.auth_mode,
                auth_error=IdentityState.auth_error,
                sign_in_route=SIGN_IN_ROUTE,
                here=IdentityState.router.url.path,
            )
            if banner
            else rx.fragment(),
            width="100%",
        ),
        # A sign-out in another tab of this browser: every page of the app looks again
        # (`on_storage`: the chat's forgets what it showed first).
        rx.window_event_listener(on_storage=on_storage),
    )


def index() -> rx.Component:
    """Full-height chat shell; works from phone width up."""
    return page_frame(
        signed_in_header(on_storage=ChatState.storage_changed),
        # The conversation speaks for itself on screen; a screen reader's list of headings
        # still names the page.
        rx.heading("Chat", as_="h1", style=SCREEN_READER_ONLY),
        settled_list(
            rows=ChatState.settled,
            more=ChatState.settled_more,
            more_href=CONVERSATIONS_ROUTE,
            on_dismiss=ChatState.dismiss_settled,
        ),
        _transcript(),
        _composer(),
        height="100dvh",
        border_x=f"1px solid {rx.color('gray', 4)}",
    )
