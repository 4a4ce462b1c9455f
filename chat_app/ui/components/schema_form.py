"""A form generated at run time: one control per `FormField` row (see `chat_app.ui.forms`).

Inputs are uncontrolled (no websocket round trip per keystroke); every form posts to one
handler (the page binds it: `ChatState.submit_form`), with hidden inputs naming the decision
and the form, because a per-item `on_submit` inside `rx.foreach` breaks in Reflex 0.10.
"""

from __future__ import annotations

import json
from typing import Any

import reflex as rx

from chat_app.ui.forms import DRAFT_FIELD, FormField
from chat_app.ui.identity_state import SIGN_IN_ROUTE

from ._types import Handler


def _label(row: FormField) -> rx.Component:
    return rx.el.label(
        row.label,
        rx.cond(row.required, rx.text.span(" *", color=rx.color("red", 10), aria_hidden="true")),
        html_for=row.control_id,
        class_name="field-label",
        font_weight="500",
        font_size="0.875rem",
    )


def _help(row: FormField) -> rx.Component:
    """The field's description, and the longest text it takes (said before it is too long,
    not only once Submit refuses it)."""
    return rx.fragment(
        rx.cond(
            row.description != "",
            rx.text(
                row.description, size="1", color_scheme="gray", id=row.control_id + "-help"
            ),
        ),
        rx.cond(
            row.max_length != "",
            rx.text(
                f"At most {row.max_length} characters.", size="1", color_scheme="gray",
                class_name="field-limit", id=row.control_id + "-limit",
            ),  # fmt: skip
        ),
    )


def _error(row: FormField) -> rx.Component:
    return rx.cond(
        row.error != "",
        rx.text(
            row.error,
            size="1",
            color=rx.color("red", 11),
            role="alert",
            class_name="field-error",
            id=row.control_id + "-error",
            key=row.error_round,
        ),
    )


def _described(row: FormField) -> dict[str, Any]:
    """A control's state for assistive technology: required (the label's "*" is hidden
    from it), invalid, and described by its hints (`_help`) and, while it shows one, its
    error. Not the `required` attribute: the browser's own check would stop the form before
    the page could say what is wrong in its words."""
    failed = row.error != ""
    hints = rx.cond(row.description != "", row.control_id + "-help ", "") + rx.cond(
        row.max_length != "", row.control_id + "-limit ", ""
    )
    return {
        "aria_required": rx.cond(row.required, "true", "false"),
        "aria_invalid": rx.cond(failed, "true", "false"),
        "aria_describedby": hints + rx.cond(failed, row.control_id + "-error", ""),
    }


def _text_input(row: FormField, **extra: Any) -> rx.Component:
    return rx.input(
        name=row.path,
        id=row.control_id,
        default_value=row.value,
        type=row.input_type,
        placeholder=row.placeholder,
        width="100%",
        **_described(row),
        **extra,
    )


def _lines(row: FormField, **extra: Any) -> rx.Component:
    """Text of several lines: free text, one item a line, or a JSON value."""
    return rx.text_area(
        name=row.path, id=row.control_id, default_value=row.value, width="100%",
        **_described(row), **extra,
    )  # fmt: skip


def _control(row: FormField) -> rx.Component:
    return rx.match(
        row.kind,
        (
            "boolean",
            rx.el.label(
                rx.checkbox(
                    name=row.path, id=row.control_id, default_checked=row.value == "true",
                    **_described(row),
                ),  # fmt: skip
                rx.text(row.label, size="2"),
                display="flex",
                gap="0.5em",
                align_items="center",
            ),
        ),  # fmt: skip
        (
            "radio",
            rx.radio_group(
                row.options,
                name=row.path,
                id=row.control_id,  # what the label's `for` names
                default_value=row.value,
                direction="row",
                aria_label=row.label,
                **_described(row),
            ),
        ),  # fmt: skip
        (
            "select",
            # The id and the state go to the select's button, which its label names.
            rx.select(
                row.options, name=row.path, default_value=row.value, id=row.control_id,
                custom_attrs={name.replace("_", "-"): v for name, v in _described(row).items()},
            ),  # fmt: skip
        ),
        ("number", _text_input(row, custom_attrs={"inputmode": row.input_mode})),
        ("integer", _text_input(row, custom_attrs={"inputmode": row.input_mode})),
        ("textarea", _lines(row)),
        ("json", _lines(row, placeholder=row.placeholder, rows="3", font_family="monospace")),
        ("list", _lines(row, placeholder=row.placeholder, rows="3")),
        (
            "checks",
            rx.hstack(
                rx.foreach(
                    row.options,
                    lambda option: rx.el.label(
                        rx.el.input(
                            type="checkbox",
                            name=row.path,
                            value=option,
                            default_checked=row.chosen.contains(option),
                        ),
                        rx.text(option, size="2"),
                        display="flex",
                        gap="0.35em",
                        align_items="center",
                    ),
                ),
                wrap="wrap",
                spacing="3",
                role="group",
                aria_label=row.label,
                **_described(row),
            ),
        ),  # fmt: skip
        _text_input(row),
    )


#: Marks an edited-arguments field `changed` while its value differs from the proposal, so
#: the proposal shows beside it (`.proposed-value`, in assets/forms.css). Delegated, once per
#: page: fields come and go with the decisions.
PROPOSED_SCRIPT = """
(() => {
  const mark = (event) => {
    const control = event.target;
    const row = control && control.closest && control.closest('.form-field[data-proposed]');
    if (!row || !row.closest('.form-edit')) return;
    const value = control.type === 'checkbox' ? (control.checked ? 'true' : '') : control.value;
    row.classList.toggle('changed', value !== row.dataset.proposed);
  };
  document.addEventListener('input', mark, true);
  document.addEventListener('change', mark, true);
})();
"""


#: Keeps what is typed in a decision form as its draft on the server, so a reload or a
#: reconnect shows it again: once typing pauses (or a field is left, a box ticked, an option
#: chosen), the form is submitted with `__draft` set, which stores the values and sends
#: nothing (the one path that reads a whole form, lists of ticked boxes included). A field
#: typed over since a refused Submit hides that Submit's error at once (the draft then takes
#: it away). Delegated, once per page.
#:
#: Text typed within the pause before a reload would miss the server, and an unloading page
#: cannot count on a message reaching it: so until the draft is sent, typed text is also held
#: in the tab's own storage, and a form that comes back in this tab with text still held takes
#: it back (and sends it as its draft). Boxes and options are sent at once and need no such
#: copy. The storage is read once per page load; with nothing held, nothing watches the page,
#: and a page watches for a minute at most. Signing out, switching person or the sign-in page
#: empties it, and text held for ten minutes is dropped.
DRAFT_SCRIPT = """
(() => {
  const timers = new WeakMap();
  const HELD = 'chat_app_unsent_drafts';
  const HOLD_MS = 10 * 60 * 1000;  // a reload comes back well within it
  const read = () => {
    try { return JSON.parse(sessionStorage.getItem(HELD) || '{}') || {}; } catch (e) { return {}; }
  };
  const write = (held) => {
    try {
      if (Object.keys(held).length) sessionStorage.setItem(HELD, JSON.stringify(held));
      else sessionStorage.removeItem(HELD);
    } catch (e) { /* storage full or refused: the server's draft still comes */ }
  };
  const hidden = (form, name) => form.querySelector('input[name="' + name + '"]');
  const whose = (form) => {
    const interrupt = hidden(form, '__interrupt'), kind = hidden(form, '__form');
    return interrupt && kind && interrupt.value ? interrupt.value + ' ' + kind.value : '';
  };
  const typed = (control) => Boolean(control && control.name) && (
    control.tagName === 'TEXTAREA' ||
    (control.tagName === 'INPUT' && !['hidden', 'checkbox', 'radio'].includes(control.type))
  );
  const hold = (form, control) => {
    const key = whose(form);
    if (!key) return;
    const held = read();
    const entry = held[key] = held[key] || { at: 0, values: {} };
    entry.values[control.name] = control.value;
    entry.at = Date.now();
    write(held);
  };
  const release = (form) => {
    const held = read(), key = whose(form);
    if (key in held) { delete held[key]; write(held); }
  };
  const keep = (form) => {
    const flag = form.querySelector('input[name="__draft"]');
    if (!flag || !form.isConnected) return;
    flag.value = '1';
    try { form.requestSubmit(); } finally { flag.value = ''; }
    release(form);
  };
  // The draft takes a changed field's error away (`_keep_draft`); the page hides it as the
  // field is typed over, so the form moves while the person types, not under their next click.
  const typedOver = (control) => {
    const row = control.closest('.form-field');
    const error = row && row.querySelector('.field-error');
    if (error) error.classList.toggle('typed-over', control.value !== control.defaultValue);
  };
  const soon = (event, wait) => {
    const form = event.target && event.target.closest && event.target.closest('.decision-form');
    if (!form) return;
    if (event.type === 'input' && typed(event.target)) {
      hold(form, event.target);
      typedOver(event.target);
    }
    clearTimeout(timers.get(form));
    timers.set(form, setTimeout(() => keep(form), wait));
  };
  // Whoever signs out, or switches to another demo person, leaves nothing held for the next
  // person in this tab (as the server forgets their drafts).
  document.addEventListener('input', (event) => soon(event, 700), true);
  document.addEventListener('change', (event) => {
    if (event.target && event.target.id === 'demo-person') write({});
    else soon(event, 0);
  }, true);
  document.addEventListener('click', (event) => {
    const target = event.target.closest ? event.target : null;
    if (target && target.closest('#sign-out')) write({});
    // Radix's boxes and options are buttons: their form input changes a render later.
    else if (target && target.closest('[role=checkbox], [role=radio]')) soon(event, 150);
  }, true);
  // A Submit sends the values itself: no draft of them after it. (An error it brings back
  // is a new element, `error_round`, shown whatever was typed over the last.)
  document.addEventListener('submit', (event) => {
    const form = event.target;
    const flag = form && form.querySelector && form.querySelector('input[name="__draft"]');
    if (flag && flag.value !== '1') { clearTimeout(timers.get(form)); release(form); }
  }, true);
  // Held from before this page loaded: given back to each form as it appears, once, while
  // the page comes up (a minute). The sign-in page is a new person's: nothing is given, and
  // text held for longer than that page would show it is dropped.
  const held = read(), waiting = {};
  const fresh = !location.pathname.startsWith(SIGN_IN_ROUTE);
  for (const [key, entry] of Object.entries(held)) {
    if (fresh && entry && entry.values && Date.now() - entry.at < HOLD_MS) waiting[key] = entry;
    else delete held[key];
  }
  write(held);
  if (!Object.keys(waiting).length) return;
  const giveBack = () => {
    for (const form of document.querySelectorAll('form.decision-form')) {
      const key = whose(form), entry = waiting[key];
      if (!entry) continue;
      delete waiting[key];
      for (const [name, value] of Object.entries(entry.values)) {
        const control = form.elements.namedItem(name);
        if (!typed(control) || control.value === value) continue;
        control.value = value;
        control.dispatchEvent(new Event('input', { bubbles: true }));  // held, then kept
      }
    }
    if (!Object.keys(waiting).length) watcher.disconnect();
  };
  const watcher = new MutationObserver(giveBack);
  watcher.observe(document.documentElement, { childList: true, subtree: true });
  setTimeout(() => watcher.disconnect(), 60000);
  giveBack();
})();
""".replace("SIGN_IN_ROUTE", json.dumps(SIGN_IN_ROUTE))


def _proposed(row: FormField) -> rx.Component:
    return rx.text(
        "Proposed: ",
        rx.code(rx.cond(row.proposed != "", row.proposed, "(empty)")),
        size="1",
        color_scheme="amber",
        class_name="proposed-value",
    )


def field_row(row: FormField) -> rx.Component:
    return rx.cond(
        row.kind == "group",
        rx.box(
            rx.text(
                row.label,
                rx.cond(
                    row.required,
                    rx.text.span(" *", color=rx.color("red", 10), aria_hidden="true"),
                ),
                weight="bold",
                size="2",
            ),
            _help(row),
            _error(row),
            padding_left=f"calc({row.depth} * 1em)",
            padding_top="0.25em",
            class_name="form-group",
            data_field=row.path,
        ),
        rx.vstack(
            rx.cond(row.kind != "boolean", _label(row)),
            _control(row),
            rx.cond(row.has_proposed, _proposed(row)),
            _help(row),
            _error(row),
            spacing="1",
            width="100%",
            padding_left=rx.cond(row.depth > 0, f"calc({row.depth} * 1em)", "0"),
            # `changed` is kept by the page's script as the person types (PROPOSED_SCRIPT).
            class_name=rx.cond(
                row.has_proposed & (row.value != row.proposed), "form-field changed", "form-field"
            ),
            data_field=row.path,
            custom_attrs={"data-proposed": rx.cond(row.has_proposed, row.proposed, "")},
        ),
    )


def schema_form(
    interrupt_id: Any,
    form: str,
    fields: Any,
    *actions: rx.Component,
    on_submit: Handler,
    key: Any = None,
    note: Any = "",
) -> rx.Component:
    """A form of `fields` whose submit goes to `on_submit` with its identity (hidden
    `__interrupt` and `__form` inputs), after `note` when there is one (what the form leaves
    out, and why)."""
    return rx.form(
        rx.el.input(type="hidden", name="__interrupt", value=interrupt_id),
        rx.el.input(type="hidden", name="__form", value=form),
        rx.el.input(type="hidden", name=DRAFT_FIELD, value=""),
        *([] if isinstance(note, str) and not note else [rx.cond(
            note != "",
            rx.text(note, size="2", color=rx.color("gray", 11), class_name="form-note",
                    margin_bottom="0.5em"),
        )]),  # fmt: skip
        rx.vstack(rx.foreach(fields, field_row), spacing="3", width="100%"),
        rx.hstack(*actions, spacing="2", padding_top="0.5em", wrap="wrap", align="center"),
        on_submit=on_submit,
        reset_on_submit=False,
        # Our own checks (jsonschema) word the errors; the browser's would pre-empt them.
        no_validate=True,
        width="100%",
        class_name=f"decision-form form-{form}",
        key=key,
    )
