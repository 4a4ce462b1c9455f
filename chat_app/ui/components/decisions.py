"""Decision cards: approvals inline at their tool call, generic questions, unbound pauses, and
the batch bar.

Functions of their arguments: a card shows a `DecisionView` (a Var of the page's state) and
calls the handlers of a `DecisionEvents`, which the page binds to its state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import reflex as rx

from chat_app.ui.views import DecisionView

from ._types import Handler, Prop
from .composer import INPUT_ID
from .schema_form import schema_form


@dataclass(frozen=True, kw_only=True, slots=True)
class DecisionEvents:
    """What a decision's buttons and forms call, each with the decision's id unless noted."""

    #: `(id, panel)`: open the Approve…, Reject… or Edit arguments form, or close it.
    toggle_panel: Handler
    approve: Handler
    reject: Handler
    #: `(form_data)`: every decision form; hidden inputs name the decision and the form.
    submit_form: Handler
    cancel: Handler
    #: Take back an answer staged while the rest of the batch is open.
    change_answer: Handler
    #: `()`: leave an expired pause behind.
    start_over: Handler


#: Escape in an open Approve…, Reject… or Edit arguments form closes it, as its button would,
#: and gives the keyboard back to that button. What was typed is kept as the form's draft
#: first, and opening the form again shows it: a `change` makes the draft script send it at
#: once, on a timer set before the close's (the focus moves first, as the field's own
#: `change` on leaving it would set a later one). Delegated, once per page; a select's open
#: list takes its own Escape (it is outside the form).
CLOSE_ON_ESCAPE_SCRIPT = """
document.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape' || event.defaultPrevented) return;
  if (event.isComposing || event.keyCode === 229) return;  // an IME's own Escape
  const form = event.target.closest && event.target.closest('form.decision-form');
  const card = form && form.closest('.decision');
  const toggle = card && card.querySelector('button[aria-expanded="true"]');
  if (!toggle) return;
  event.preventDefault();
  toggle.focus();
  form.dispatchEvent(new Event('change', { bubbles: true }));
  setTimeout(() => toggle.click(), 0);
});
"""


#: When a decision is answered its buttons go, and the keyboard's focus with them (to the
#: page's body): the next open decision's control, which becomes the one marked to take the
#: focus (`data-autofocus`, `takes_focus`), takes it then, so the keyboard goes on from
#: decision to decision; after the last one, answered from the keyboard, the message box
#: takes it (the next Tab would otherwise start from the top of the page), or in someone
#: else's conversation, where there is nothing to type, the answered call's card (which says
#: how it went, and where the next Tab goes on from). Only while the
#: person is answering decisions (their last key or click was on one): a focus they let go
#: by clicking elsewhere stays where it is when someone else's answer moves the mark.
#: The batch's bar (Approve all, Reject all, Cancel all) counts as a decision's control.
#: Delegated, once per page (a control that mounts marked takes it by React's autofocus).
FOCUS_NEXT_DECISION_SCRIPT = """
(() => {
  let answering = false;
  const lost = () => !document.activeElement || document.activeElement === document.body;
  const note = (event) => {
    answering = Boolean(event.target.closest && event.target.closest('.decision, .batch-bar'));
  };
  document.addEventListener('pointerdown', note, true);
  document.addEventListener('keydown', (event) => {
    note(event);
    if (!answering || (event.key !== 'Enter' && event.key !== ' ')) return;
    // Answered from the keyboard: once its button goes and no decision is left to take
    // the focus, the message box takes it (looked at for 10 s, until the focus is placed).
    const pressed = event.target;
    const card = pressed.closest('.tool-card') || pressed.closest('.decision');
    let looks = 100;
    const look = setInterval(() => {
      const now = document.activeElement;
      if (--looks < 0 || (!lost() && now !== pressed)) return clearInterval(look);
      if (!lost() || document.querySelector('[data-autofocus="true"]')) return;
      const send = document.getElementById('composer-send');
      if (send && send.dataset.readOnly === 'true') {
        clearInterval(look);
        if (card && card.isConnected) {
          card.tabIndex = -1;  // focusable by script only, and only until it is left
          card.addEventListener('blur', () => card.removeAttribute('tabindex'), { once: true });
          card.focus({ preventScroll: true });
        }
        return;
      }
      const box = document.getElementById(INPUT_ID);
      if (!box || box.disabled) return;  // looked at again until it can take it
      clearInterval(look);
      box.focus({ preventScroll: true });
    }, 100);
  }, true);
  new MutationObserver((records) => {
    if (!answering || !lost()) return;
    const marked = records.find((record) => record.target.dataset.autofocus === 'true');
    if (marked && marked.target.isConnected) marked.target.focus({ preventScroll: true });
  }).observe(document.documentElement, {
    subtree: true, attributes: true, attributeFilter: ['data-autofocus'],
  });
})();
""".replace("INPUT_ID", json.dumps(INPUT_ID))


#: A decision that appears takes the keyboard's focus (React's autofocus, `takes_focus`),
#: but never from someone typing: if it took it from a text field, the field has it back at
#: once, in the same turn, before another key can land on the decision's button (a space
#: typed on, after sending, would press Approve). Only that first focus, as the control
#: mounts, is given back; a focus the person moves there later (Tab, a click, a screen
#: reader) stays. Delegated, once per page.
TYPING_KEEPS_FOCUS_SCRIPT = """
(() => {
  const focused = new WeakSet();  // controls that have had the focus once
  let movedAt = -1;
  const moved = () => { movedAt = performance.now(); };
  document.addEventListener('pointerdown', moved, true);
  document.addEventListener('keydown', (event) => { if (event.key === 'Tab') moved(); }, true);
  const typing = (element) => Boolean(element && element.isConnected && element.matches &&
    element.matches('textarea, [contenteditable=""], [contenteditable="true"], ' +
      'input:not([type=checkbox]):not([type=radio]):not([type=button]):not([type=submit])'));
  document.addEventListener('focusin', (event) => {
    const to = event.target, from = event.relatedTarget;
    if (!to.dataset || to.dataset.autofocus !== 'true') return;
    const first = !focused.has(to);
    focused.add(to);
    if (!first || !typing(from) || performance.now() - movedAt < 500) return;
    from.focus({ preventScroll: true });
  }, true);
})();
"""


#: Once an answer leaves a decision's card (a form's Submit, not its draft, or an Approve,
#: Reject or Cancel that answers at once), the card says "Sending…" (`aria-busy`, drawn by
#: assets/forms.css) and takes no other answer until the server's reply changes it: on a slow
#: link the click would otherwise show nothing, and a corrected answer sent after the first
#: would go nowhere (the first one counts). Every reply changes the card: it goes, turns to
#: the answer or shows an error, and a count of the refused answers (`replies`) changes
#: even when the same refusal comes again. A reply that never comes frees it after
#: `SENDING_MS` (the page's own note of the click, `remember_click`, gives it again on
#: reconnecting). Delegated, once per page; it runs before the draft
#: script, which a refused Submit then never reaches.
SENDING_SCRIPT = """
(() => {
  const SENDING_MS = 10000;
  const ANSWERS = 'button.approve:not([aria-expanded]), button.reject:not([aria-expanded]), ' +
    'button.cancel';
  const free = (card, watcher, timer) => {
    card.removeAttribute('aria-busy');
    watcher.disconnect();
    clearTimeout(timer);
  };
  const sending = (card) => {
    card.setAttribute('aria-busy', 'true');
    const watcher = new MutationObserver(() => free(card, watcher, timer));
    const timer = setTimeout(() => free(card, watcher, timer), SENDING_MS);
    watcher.observe(card, { childList: true, subtree: true, characterData: true });
  };
  const refuse = (event) => { event.preventDefault(); event.stopImmediatePropagation(); };
  document.addEventListener('submit', (event) => {
    const form = event.target;
    const card = form && form.closest && form.closest('.decision');
    const flag = card && form.querySelector('input[name="__draft"]');
    if (!flag || flag.value === '1') return;
    if (card.getAttribute('aria-busy') === 'true') refuse(event);
    else sending(card);
  }, true);
  document.addEventListener('click', (event) => {
    const button = event.target.closest ? event.target.closest('button') : null;
    const card = button && button.closest('.decision');
    if (!card) return;
    if (card.getAttribute('aria-busy') === 'true') refuse(event);
    else if (button.matches(ANSWERS)) sending(card);
  }, true);
})();
"""


#: Whether the person went on after a decision form's last Submit (not a draft's), kept by
#: the form's decision and name (`window.__decisionSubmit`: a card drawn again keeps it): an
#: edit anywhere on the page, or the focus moving to another control, marks it. A refused
#: Submit's errors then leave the focus where the person went (`FOCUS_IN_FORM`): on a slow
#: link the refusal can come while they type in another field or the message box, and taking
#: the focus then would put the rest of their typing into the field in error. The focus
#: coming back to where it was at the Submit (the window focused again), a click on text
#: (the log takes the focus) or on the same form's Submit is no going on. Delegated, once per
#: page, after `SENDING_SCRIPT` (a Submit it refuses is none).
MOVED_ON_SCRIPT = """
(() => {
  const CONTROLS = 'input, textarea, select, button, a[href], [contenteditable=""], ' +
    '[contenteditable="true"]';
  let at = null;  // what had the focus at the Submit
  const named = (form) => [form.elements.__interrupt, form.elements.__form].map(
    (field) => field && field.value);
  document.addEventListener('submit', (event) => {
    const form = event.target.closest && event.target.closest('form.decision-form');
    const flag = form && form.querySelector('input[name="__draft"]');
    if (!flag || flag.value === '1') return;
    const [id, name] = named(form);
    window.__decisionSubmit = { id, name, movedOn: false };
    at = document.activeElement;
  }, true);
  const moved = (event) => {
    const sent = window.__decisionSubmit;
    const to = event.target;
    if (!sent || sent.movedOn) return;
    if (event.type === 'focusin') {
      if (to === at || !(to.matches && to.matches(CONTROLS))) return;
      const own = to.type === 'submit' && to.form && to.form.matches('form.decision-form');
      if (own && named(to.form).join() === [sent.id, sent.name].join()) return;
    }
    sent.movedOn = true;
  };
  document.addEventListener('focusin', moved, true);
  document.addEventListener('input', moved, true);
})();
"""


def _error(decision: DecisionView) -> rx.Component:
    return rx.cond(
        decision.error != "",
        rx.callout(
            decision.error,
            icon="triangle_alert",
            color_scheme="red",
            size="1",
            role="alert",
            class_name="decision-error",
        ),
    )


def _arguments(decision: DecisionView) -> rx.Component:
    return rx.el.dl(
        rx.foreach(
            decision.arguments,
            lambda row: rx.fragment(
                rx.el.dt(row[0], font_weight="500", color=rx.color("gray", 11)),
                rx.el.dd(row[1], margin="0", white_space="pre-wrap", overflow_wrap="anywhere"),
            ),
        ),
        display="grid",
        grid_template_columns="max-content 1fr",
        column_gap="1em",
        row_gap="0.25em",
        font_size="0.875rem",
        margin="0",
    )


def _panel(
    decision: DecisionView,
    events: DecisionEvents,
    form: str,
    fields: object,
    submit: str,
    color: str,
) -> tuple[str, rx.Component]:
    """One `rx.match` case: the form that opens under Approve…, Reject… or Edit arguments."""
    button = rx.button(submit, type="submit", color_scheme=color, class_name="submit")
    key = decision.id + "-" + form
    note: Any = decision.edit_note if form == "edit" else ""
    return form, schema_form(
        decision.id, form, fields, button, on_submit=events.submit_form, key=key, note=note
    )


def takes_focus(decision: DecisionView) -> dict[str, Any]:
    """The props of the control the first open decision gives the focus: React's autofocus
    when it mounts, and a mark the log's opening effect finds (a control mounted while the
    log is hidden, a conversation opened from the Inbox, cannot take the focus then)."""
    return {"auto_focus": decision.focus, "data_autofocus": decision.focus}


def _answer_button(
    decision: DecisionView,
    events: DecisionEvents,
    form: str,
    fields: Any,
    answer: Handler,
    **style: Any,
) -> rx.Component:
    """Approve / Reject: answers at once, or opens its form ("…") when the schema asks."""
    label = form.capitalize()
    return rx.cond(
        fields.length() > 0,
        rx.button(
            label + "…",
            on_click=events.toggle_panel(decision.id, form),
            class_name=form,
            aria_expanded=rx.cond(decision.panel == form, "true", "false"),
            **style,
        ),
        rx.button(label, on_click=answer(decision.id), class_name=form, **style),
    )


def approval_controls(decision: DecisionView, events: DecisionEvents) -> rx.Component:
    """Approve, Reject (with a reason form when the schema asks), Edit arguments, Cancel."""
    approve_button = _answer_button(
        decision,
        events,
        "approve",
        decision.approve_fields,
        events.approve,
        color_scheme="green",
        **takes_focus(decision),
    )
    reject_button = _answer_button(
        decision,
        events,
        "reject",
        decision.reject_fields,
        events.reject,
        color_scheme="red",
        variant="soft",
    )
    return rx.vstack(
        rx.hstack(
            approve_button,
            reject_button,
            rx.cond(
                decision.can_edit,
                rx.button(
                    "Edit arguments",
                    on_click=events.toggle_panel(decision.id, "edit"),
                    variant="outline",
                    class_name="edit",
                    aria_expanded=rx.cond(decision.panel == "edit", "true", "false"),
                ),
            ),
            rx.cond(
                decision.can_cancel,
                rx.button(
                    "Cancel",
                    on_click=events.cancel(decision.id),
                    variant="ghost",
                    color_scheme="gray",
                    class_name="cancel",
                ),
            ),
            spacing="2",
            wrap="wrap",
            align="center",  # a ghost button's box is offset from its text
        ),
        rx.match(
            decision.panel,
            _panel(decision, events, "approve", decision.approve_fields, "Approve", "green"),
            _panel(decision, events, "reject", decision.reject_fields, "Reject", "red"),
            _panel(decision, events, "edit", decision.edit_fields, "Approve with changes", "green"),
            rx.fragment(),
        ),
        _error(decision),
        spacing="2",
        width="100%",
    )


def expired_row(decision: DecisionView, events: DecisionEvents) -> rx.Component:
    """An interrupt past its expiry: nothing can be answered, nothing ran. Closed as expired
    (`expired_note`), the conversation goes on without it: the note, and no buttons;
    refused as expired, the paused run is stuck: Start over."""
    return rx.cond(
        decision.expired_note != "",
        rx.hstack(
            rx.badge("Expired", color_scheme="gray", class_name="expired-badge"),
            rx.text(decision.expired_note, size="2", color_scheme="gray",
                    class_name="expired-note"),
            align="center",
            spacing="2",
            wrap="wrap",
            class_name="expired",
            role="status",
        ),  # fmt: skip
        rx.hstack(
            rx.badge("Expired", color_scheme="gray", class_name="expired-badge"),
            rx.text("This decision expired; nothing ran.", size="2", color_scheme="gray"),
            rx.button(
                "Start over", on_click=events.start_over, size="1", class_name="start-over"
            ),
            align="center",
            spacing="2",
            wrap="wrap",
            class_name="expired",
        ),
    )


def waiting_row(decision: DecisionView, events: DecisionEvents) -> rx.Component:
    """Someone else decides this one: who, and no controls but Withdraw for whoever asked."""
    return rx.hstack(
        # The icon and the sentence are one item of the wrapping row: the icon stays beside
        # the sentence's first line, however many lines it takes on a phone.
        rx.hstack(
            rx.icon("user_check", size=14, flex_shrink="0", margin_top="0.2em"),
            rx.vstack(
                rx.text(decision.waiting, size="2", class_name="waiting-label"),
                rx.cond(
                    decision.expires != "",
                    rx.text(
                        decision.expires, size="1", color_scheme="gray",
                        class_name="waiting-expires",
                    ),  # fmt: skip
                ),
                spacing="0",
                min_width="0",
            ),
            align="start",
            spacing="2",
            flex="1 1 14em",
            min_width="0",
        ),
        rx.cond(
            decision.can_withdraw,
            rx.button(
                "Withdraw",
                on_click=events.cancel(decision.id),
                variant="ghost",
                color_scheme="gray",
                size="1",
                class_name="withdraw",
            ),
        ),
        align="center",
        spacing="2",
        wrap="wrap",
        class_name="waiting",
        role="status",
    )


def staged_row(decision: DecisionView, events: DecisionEvents) -> rx.Component:
    """An answer given while other decisions of the batch are still open."""
    return rx.hstack(
        # The icon says which answer it is: a green check on "Rejected" read as approval.
        rx.match(
            decision.staged_tone,
            ("rejected", rx.icon("circle_x", size=16, color=rx.color("red", 10))),
            ("cancelled", rx.icon("circle_minus", size=16, color=rx.color("gray", 10))),
            rx.icon("circle_check", size=16, color=rx.color("green", 10)),
        ),
        rx.text(decision.staged, size="2", weight="medium", class_name="staged-label"),
        rx.text("— sent with the other decisions.", size="2", color_scheme="gray"),
        rx.button(
            "Change",
            on_click=events.change_answer(decision.id),
            variant="ghost",
            size="1",
            class_name="change",
        ),
        align="center",
        spacing="2",
        class_name="staged",
    )


def _quorum_row(decision: DecisionView) -> rx.Component:
    """How far a quorum has got, for an approver who may still approve."""
    return rx.cond(
        decision.progress != "",
        rx.text(
            "Approvals: ", decision.progress,
            size="2", color_scheme="gray", class_name="card-quorum-progress",
        ),  # fmt: skip
    )


def _decision_card(
    decision: DecisionView,
    events: DecisionEvents,
    *,
    kind: str,
    icon: str,
    title: rx.Var[str] | str,
    color: str,
    details: list[rx.Component],
    controls: rx.Component,
    cannot: str,
) -> rx.Component:
    """The frame every answerable decision shares: heading, details, then what can be done
    (nothing once expired, the staged answer, the controls, or a note that it is not ours)."""
    return rx.box(
        rx.vstack(
            rx.hstack(
                rx.icon(icon, size=16),
                rx.text(title, weight="bold", size="2"),
                align="center",
                spacing="2",
            ),
            *details,
            # Changes with each answer the server refuses: what ends the card's "Sending…"
            # when the same refusal comes again (SENDING_SCRIPT).
            rx.el.span(decision.replies, hidden=True, class_name="card-replies"),
            rx.cond(
                decision.held != "",
                rx.text(decision.held, size="2", color_scheme="amber", class_name="card-held",
                         role="status"),
            ),  # fmt: skip
            rx.cond(
                decision.expired,
                expired_row(decision, events),
                rx.cond(
                    decision.staged != "",
                    staged_row(decision, events),
                    rx.cond(
                        decision.held_only,
                        rx.fragment(),  # decided at the desk: a Retry is all that is left
                        rx.cond(
                            decision.waiting != "",
                            waiting_row(decision, events),
                            rx.cond(
                                decision.can_resolve,
                                rx.fragment(_quorum_row(decision), controls),
                                rx.text(cannot, size="1", color_scheme="gray"),
                            ),
                        ),
                    ),
                ),
            ),
            spacing="2",
            width="100%",
        ),
        class_name=f"decision {kind}-card",
        role="group",
        aria_label=rx.cond(decision.label != "", decision.label, title),
        data_decision=decision.id,
        padding="0.75em",
        border_radius="8px",
        # Muted once closed as expired: it stays readable, but nothing here is to be done.
        border=rx.cond(
            decision.expired_note != "",
            f"1px solid {rx.color('gray', 6)}",
            f"1px solid {rx.color(color, 7)}",
        ),
        background_color=rx.cond(
            decision.expired_note != "", rx.color("gray", 2), rx.color(color, 2)
        ),
        opacity=rx.cond(decision.expired_note != "", "0.75", "1"),
        width="100%",
    )


def approval_card(decision: DecisionView, events: DecisionEvents) -> rx.Component:
    return _decision_card(
        decision,
        events,
        kind="approval",
        icon="shield_check",
        title=decision.title,
        color="amber",
        details=[_arguments(decision)],
        controls=approval_controls(decision, events),
        cannot="This decision cannot be answered here.",
    )


def generic_card(decision: DecisionView, events: DecisionEvents) -> rx.Component:
    payload = [
        rx.cond(
            decision.payload_title != "",
            rx.text(decision.payload_title, weight="medium", size="2"),
        ),
        rx.cond(
            decision.payload_items.length() > 0,
            rx.el.ul(
                rx.foreach(decision.payload_items, lambda item: rx.el.li(item)),
                class_name="payload-items",
                # The theme's reset takes list markers off; a plan's points read as a list.
                list_style_type="disc",
                margin="0",
                padding_left="1.25em",
                font_size="0.875rem",
            ),
        ),
        rx.cond(
            decision.payload_json != "",
            rx.code_block(decision.payload_json, language="json", font_size="0.75rem"),
        ),
    ]
    form = rx.vstack(
        schema_form(
            decision.id,
            "response",
            decision.response_fields,
            rx.button(
                "Submit",
                type="submit",
                class_name="submit",
                **takes_focus(decision),
            ),
            rx.button(
                "Cancel",
                type="button",
                on_click=events.cancel(decision.id),
                variant="ghost",
                color_scheme="gray",
                class_name="cancel",
            ),
            on_submit=events.submit_form,
            key=decision.id + "-response",
        ),
        _error(decision),
        width="100%",
    )
    return _decision_card(
        decision,
        events,
        kind="generic",
        icon="message_circle_question",
        title=decision.message,
        color="indigo",
        details=payload,
        controls=form,
        cannot="This question cannot be answered here.",
    )


def unbound_card(decision: DecisionView) -> rx.Component:
    """A pause another system owns: shown, with what that means for the person reading."""
    return rx.hstack(
        rx.icon("hourglass", size=16),
        rx.vstack(
            rx.text("Paused elsewhere: ", rx.text.span(decision.message), size="2"),
            rx.text(
                "Nothing to answer here: it is decided where it is kept, and your answers "
                "here go on without it.",
                size="1",
                class_name="unbound-note",
            ),
            spacing="0",
        ),
        class_name="decision unbound-card",
        role="status",
        data_decision=decision.id,
        padding="0.6em 0.75em",
        border_radius="8px",
        border=f"1px dashed {rx.color('gray', 7)}",
        color=rx.color("gray", 11),
        align="center",
        spacing="2",
        width="100%",
    )


def loose_decision(decision: DecisionView, events: DecisionEvents) -> rx.Component:
    return rx.match(
        decision.kind,
        ("generic", generic_card(decision, events)),
        ("unbound", unbound_card(decision)),
        approval_card(decision, events),
    )


def batch_bar(
    *,
    title: Prop[str],
    batch_size: Prop[int],
    open_count: Prop[int],
    bulk_ok: Prop[bool],
    cancel_all_ok: Prop[bool],
    errors: Prop[list[str]],
    can_retry: Prop[bool],
    on_approve_all: Handler,
    on_reject_all: Handler,
    on_cancel_all: Handler,
    on_retry: Handler,
) -> rx.Component:
    """Shown when several decisions are pending: bulk actions, batch errors, retry.

    `open_count` is how many decisions can still be answered, `batch_size` how many the batch
    has; `bulk_ok` says whether Approve all / Reject all apply, `cancel_all_ok` whether
    Cancel all does.
    """
    return rx.cond(
        # `errors` is a Var here (see `Prop`), whose `length()` mypy cannot see on the union.
        ((batch_size > 1) & (open_count > 0)) | (errors.length() > 0),  # type: ignore[union-attr]
        rx.vstack(
            rx.hstack(
                rx.text(title, weight="bold", size="2", id="batch-title"),
                rx.spacer(),
                rx.cond(
                    bulk_ok & (open_count > 1),
                    rx.hstack(
                        rx.button(
                            "Approve all",
                            on_click=on_approve_all,
                            color_scheme="green",
                            size="1",
                            id="approve-all",
                        ),
                        rx.button(
                            "Reject all",
                            on_click=on_reject_all,
                            color_scheme="red",
                            variant="soft",
                            size="1",
                            id="reject-all",
                        ),
                        spacing="2",
                    ),
                ),  # fmt: skip
                rx.cond(
                    cancel_all_ok & (open_count > 1),
                    rx.button(
                        "Cancel all",
                        on_click=on_cancel_all,
                        variant="ghost",
                        color_scheme="gray",
                        size="1",
                        id="cancel-all",
                    ),
                ),
                align="center",
                width="100%",
                wrap="wrap",
            ),
            rx.foreach(
                errors,
                lambda message: rx.text(message, size="1", color=rx.color("red", 11), role="alert"),
            ),
            rx.cond(
                can_retry,
                rx.button("Retry", on_click=on_retry, size="1", id="retry"),
            ),
            class_name="batch-bar",
            role="region",
            aria_label="Pending decisions",
            padding="0.6em 0.9em",
            border_radius="8px",
            background_color=rx.color("gray", 3),
            width="100%",
            spacing="1",
        ),
    )
