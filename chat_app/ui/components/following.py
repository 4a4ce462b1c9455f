"""A scrolling log that keeps its newest line in view while its reader is at the bottom.

The chat's transcript grows at the end: messages, the streamed reply, a decision card, the
run's status. A reader at the bottom expects to see what arrives; a reader who scrolled up to
read something earlier expects it to stay put. So the log follows its end until the reader
scrolls away from it, and follows again when they scroll back down, press "Newest", send a
message, or another conversation is shown in it. It opens at the end. Opened on another
conversation's address, it shows nothing of the conversation it held until that one comes.

This is the page's own behaviour, in the browser alone (no state, no round trip): a React
layout effect on the log element (it runs before the log is first painted), a
`ResizeObserver` on what it holds (one callback per frame in which it changed size, after
layout), and a `scroll` listener that tells the reader's scrolling from the log's own.
"""

from __future__ import annotations

from typing import Any

import reflex as rx
from reflex.components.radix.themes.layout.box import Box
from reflex.utils.imports import ImportDict
from reflex.vars.base import Var

#: How far from the end (px) a reader still counts as at the bottom: a nudge of the wheel
#: or a line of a growing reply should not stop the log following.
NEAR_END_PX = 48

#: The id of the "Newest" button; shown (by CSS) while the log is not following.
JUMP_ID = "jump-to-newest"

#: The effect, with REF for the log's ref name. `data-following` on the log says whether it
#: follows (the tests and the CSS read it); `data-thread` changing means another
#: conversation is shown. Our own scrolling is told from the reader's by the position it
#: left: the first scroll event after it at that position is ours.
#:
#: `data-opening` hides what the log holds while the address names a conversation
#: (`data-addresses`, then its id) other than the one in it: the page was opened on it (from
#: the Inbox, say) and the tab's state, still the conversation shown before, has not caught
#: up. It goes when the conversation changes, or when the page's load is over (`#app-root`
#: hydrated again), whatever the load brought (a notice that it cannot be shown, say).
_EFFECT = """
useLayoutEffect(() => {
  const log = REF.current;
  if (!log) return;
  let following = true;
  let placed = null;
  const mark = () => { log.dataset.following = following ? 'true' : 'false'; };
  const stick = () => {
    if (!following) return;
    log.scrollTop = log.scrollHeight;
    placed = log.scrollTop;
  };
  const follow = () => { following = true; mark(); stick(); };
  const onScroll = () => {
    if (placed !== null && Math.abs(log.scrollTop - placed) < 1) { placed = null; return; }
    placed = null;
    const left = log.scrollHeight - log.scrollTop - log.clientHeight;
    const now = left <= NEAR;
    if (now !== following) { following = now; mark(); }
  };
  const path = window.location.pathname;
  const prefix = log.dataset.addresses;
  if (prefix && path.startsWith(prefix)) {
    const wanted = decodeURIComponent(path.slice(prefix.length)).replace(/[/]+$/, '');
    if (wanted !== (log.dataset.thread || '')) log.dataset.opening = 'true';
  }
  const opened = () => { delete log.dataset.opening; };
  const root = document.getElementById('app-root');
  let loading = false;
  const load = new MutationObserver(() => {
    const hydrated = root.dataset.hydrated === 'true';
    if (!hydrated) loading = true;
    else if (loading) { opened(); load.disconnect(); }
  });
  if (root && log.dataset.opening) {
    load.observe(root, {attributes: true, attributeFilter: ['data-hydrated']});
  }
  const sizes = new ResizeObserver(stick);
  sizes.observe(log);
  for (const child of log.children) sizes.observe(child);
  const children = new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === 'attributes') { opened(); follow(); continue; }
      for (const node of record.addedNodes) if (node.nodeType === 1) sizes.observe(node);
      for (const node of record.removedNodes) if (node.nodeType === 1) sizes.unobserve(node);
    }
  });
  children.observe(log, {childList: true, attributes: true, attributeFilter: ['data-thread']});
  const onSubmit = (event) => {
    if (event.target.querySelector && event.target.querySelector('#composer-input')) follow();
  };
  const onClick = (event) => {
    if (event.target.closest && event.target.closest('#JUMP')) follow();
  };
  const frame = log.parentElement;
  log.addEventListener('scroll', onScroll, {passive: true});
  document.addEventListener('submit', onSubmit, true);
  frame.addEventListener('click', onClick);
  mark();
  stick();
  return () => {
    sizes.disconnect();
    children.disconnect();
    load.disconnect();
    log.removeEventListener('scroll', onScroll);
    document.removeEventListener('submit', onSubmit, true);
    frame.removeEventListener('click', onClick);
  };
}, []);
"""


class _FollowingBox(Box):
    """A box whose effect keeps it scrolled to its end while the reader is there."""

    def add_imports(self) -> ImportDict:
        return {"react": "useLayoutEffect"}

    def add_hooks(self) -> list[str | Var[Any]]:
        ref = self.get_ref()
        if ref is None:
            raise ValueError("a following log needs a fixed id: its effect finds it by its ref")
        effect = _EFFECT.replace("REF", ref).replace("NEAR", str(NEAR_END_PX))
        return [effect.replace("JUMP", JUMP_ID)]


def following_log(
    *children: rx.Component,
    log_id: str,
    thread: Any,
    addresses: str,
    label: str,
    **style: Any,
) -> rx.Component:
    """`children` in a scrolling log (`log_id`, role log) that follows its end, and the
    "Newest" button that brings a reader who scrolled up back to it. `thread` names what is
    shown: when it changes, the log follows again (another conversation opens at its end).
    `addresses` is what the page's address starts with when it names a thread (its id
    after it): opened there, the log hides another thread's lines until that one comes.
    `style` styles the log."""
    return rx.box(
        _FollowingBox.create(
            *children,
            id=log_id,
            role="log",
            aria_label=label,
            custom_attrs={"data-thread": thread, "data-addresses": addresses},
            overflow_y="auto",
            flex="1",
            width="100%",
            **style,
        ),
        rx.button(
            rx.icon("arrow_down", size=14),
            "Newest",
            id=JUMP_ID,
            type="button",
            size="1",
            radius="full",
            variant="surface",
            title="Go to the newest message",
            position="absolute",
            bottom="0.75em",
            left="50%",
            transform="translateX(-50%)",
            box_shadow="0 1px 4px rgba(0, 0, 0, 0.15)",
        ),
        style={
            # An id outranks Radix's button class, which sets display itself.
            f"& > #{JUMP_ID}": {"display": "none"},
            "& > [data-opening='true'] > *": {"visibility": "hidden"},
            f"& > [data-following='false'] + #{JUMP_ID}": {"display": "inline-flex"},
        },
        position="relative",
        display="flex",
        flex_direction="column",
        flex="1",
        # A flex item's height is at least its content's unless told otherwise; the log
        # inside is what scrolls.
        min_height="0",
        width="100%",
    )
