"""A scrolling log that keeps its newest line in view while its reader is at the bottom.

The chat's transcript grows at the end: messages, the streamed reply, a decision card, the
run's status. A reader at the bottom expects to see what arrives; a reader who scrolled up to
read something earlier expects it to stay put. So the log follows its end until the reader
scrolls away from it, and follows again when they scroll back down, press "Newest", send a
message, or another conversation is shown in it. It opens at the end. Opened on another
conversation's address, it shows nothing of the conversation it held until that one comes
(or the page's load is over without it).

This is the page's own behaviour, in the browser alone (no state, no round trip): a React
layout effect on the log element (it runs before the log is first painted), a
`ResizeObserver` on what it holds (one callback per frame in which it changed size, after
layout), and a `scroll` listener that tells the reader's scrolling from the log's own.
"""

from __future__ import annotations

from string import Template
from typing import Any

import reflex as rx
from reflex.components.radix.themes.layout.box import Box
from reflex.utils.imports import ImportDict
from reflex.vars.base import Var

from ._types import Prop

#: How far from the end (px) a reader still counts as at the bottom: a nudge of the wheel
#: or a line of a growing reply should not stop the log following.
NEAR_END_PX = 48

#: The id of the "Newest" button; shown (by CSS) while the log is not following.
JUMP_ID = "jump-to-newest"

#: Following ($ref: the log's ref; $near: `NEAR_END_PX`; $jump: `JUMP_ID`).
#: `data-following` on the log says whether it follows (the CSS and the tests read it). The
#: log's own scrolling is told from the reader's by the position it left: the first scroll
#: event after it, at that position, is its own. The reader stops it following by moving up
#: (a wheel, a key or a finger, seen as it starts, before a frame of the reply could pull
#: them back down) or by scrolling up further than `NEAR_END_PX` from the end (a scroll bar
#: dragged), and starts it again by scrolling down to there. A position moving up by itself
#: is the browser keeping the view steady while a block above is measured
#: (`content-visibility`): it changes nothing. Nor does one moving down by itself, short of
#: the end: a following reader is at the end and cannot scroll further down, so that is the
#: browser's scroll anchoring as what arrives changes a line above the anchored one (the log
#: then follows on to the end). A submit of the form holding `data-sent-from`, Newest, and
#: `data-thread` changing (another conversation shown) follow again.
#:
#: The log does not move itself under a press: a press is a click only if its release lands
#: on what was pressed. While the primary button (a finger, a pen) is down the log neither
#: follows what arrives nor gives up or takes back Newest's room; both catch up once the
#: press is over, after its click, and whether the reader is near the end is measured
#: against the end the log had as the press began. A scroll event comes a frame after its
#: scroll: when it finds the log back at its end (brought there by a touchpad's glide, or a
#: button scrolled into view as it is pressed), Newest would go, the log grow by its room,
#: the view shift down by it, and the press be released on what was above the button.
_FOLLOW = Template("""
useLayoutEffect(() => {
  const log = $ref.current;
  if (!log) return;
  let following = true;
  let placed = null;
  let lastTop = log.scrollTop;
  let pressed = false;
  let presses = 0;  // a release catches up for its own press, not a newer one
  let heldEnd = 0;  // the log's end as the press began: what arrived since is not yet in it
  let owed = false;  // a mark or a stick put off while pressed
  const mark = () => {
    if (pressed) { owed = true; return; }
    log.dataset.following = following ? 'true' : 'false';
  };
  const stick = () => {
    if (!following) return;
    if (pressed) { owed = true; return; }
    log.scrollTop = log.scrollHeight;
    placed = lastTop = log.scrollTop;
  };
  // The primary button only: another's menu may take its release.
  const onPress = (event) => {
    if (event.button !== 0) return;
    pressed = true;
    presses += 1;
    heldEnd = log.scrollHeight;
  };
  // After the click. A mouse's comes in the same task as its release; a touch's or a pen's
  // in a later one, after their compatibility mousedown (a press of its own) and mouseup,
  // so their pointerup waits a while, for that, or for nothing if no click comes.
  const onRelease = (event) => {
    const press = presses;
    const wait = event.type === 'pointerup' && event.pointerType !== 'mouse' ? 500 : 0;
    setTimeout(() => {
      if (!pressed || press !== presses) return;
      pressed = false;
      if (!owed) return;
      owed = false;
      mark();
      stick();
    }, wait);
  };
  // A release the page never saw (the button let go over another window).
  const onMove = (event) => {
    if (pressed && event.pointerType === 'mouse' && event.buttons === 0) onRelease(event);
  };
  const follow = () => { following = true; mark(); stick(); };
  const leave = () => {
    if (log.scrollTop <= 0 || !following) return;
    following = false;
    mark();
  };
  const onScroll = () => {
    const top = log.scrollTop;
    if (placed !== null && Math.abs(top - placed) < 1) { placed = null; return; }
    placed = null;
    const end = pressed ? Math.min(log.scrollHeight, heldEnd) : log.scrollHeight;
    const left = end - top - log.clientHeight;
    const down = top > lastTop;
    const near = left <= $near;
    const now = down ? following || near : following && near;
    lastTop = top;
    if (now !== following) { following = now; mark(); }
  };
  const onWheel = (event) => { if (event.deltaY < 0) leave(); };
  const UP = new Set(['ArrowUp', 'PageUp', 'Home']);
  const onKey = (event) => {
    const typing = event.target.closest('input, textarea, select, [contenteditable]');
    if (UP.has(event.key) && !typing) leave();
  };
  let touchY = null;
  const onTouchStart = (event) => { touchY = event.touches[0].clientY; };
  const onTouchMove = (event) => {
    const y = event.touches[0].clientY;
    if (touchY !== null && y > touchY) leave();
    touchY = y;
  };
  const sizes = new ResizeObserver(stick);
  sizes.observe(log);
  for (const child of log.children) sizes.observe(child);
  const changes = new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === 'attributes') { follow(); continue; }
      for (const node of record.addedNodes) if (node.nodeType === 1) sizes.observe(node);
      for (const node of record.removedNodes) if (node.nodeType === 1) sizes.unobserve(node);
    }
  });
  changes.observe(log, {childList: true, attributes: true, attributeFilter: ['data-thread']});
  const onSubmit = (event) => {
    const sender = log.dataset.sentFrom;
    if (sender && event.target.querySelector && event.target.querySelector(sender)) follow();
  };
  const onClick = (event) => {
    if (!event.target.closest || !event.target.closest('#$jump')) return;
    follow();
    log.focus({preventScroll: true});  // the button goes: keep the keyboard's place here
  };
  const frame = log.parentElement;
  log.addEventListener('scroll', onScroll, {passive: true});
  log.addEventListener('wheel', onWheel, {passive: true});
  log.addEventListener('keydown', onKey);
  log.addEventListener('touchstart', onTouchStart, {passive: true});
  log.addEventListener('touchmove', onTouchMove, {passive: true});
  document.addEventListener('submit', onSubmit, true);
  frame.addEventListener('click', onClick);
  const PRESS = ['pointerdown', 'mousedown'];
  const RELEASE = ['pointerup', 'pointercancel', 'mouseup', 'click', 'dragend', 'contextmenu'];
  for (const type of PRESS) document.addEventListener(type, onPress, true);
  for (const type of RELEASE) document.addEventListener(type, onRelease, true);
  document.addEventListener('pointermove', onMove, true);
  window.addEventListener('blur', onRelease);
  mark();
  stick();
  return () => {
    sizes.disconnect();
    changes.disconnect();
    log.removeEventListener('scroll', onScroll);
    log.removeEventListener('wheel', onWheel);
    log.removeEventListener('keydown', onKey);
    log.removeEventListener('touchstart', onTouchStart);
    log.removeEventListener('touchmove', onTouchMove);
    document.removeEventListener('submit', onSubmit, true);
    frame.removeEventListener('click', onClick);
    for (const type of PRESS) document.removeEventListener(type, onPress, true);
    for (const type of RELEASE) document.removeEventListener(type, onRelease, true);
    document.removeEventListener('pointermove', onMove, true);
    window.removeEventListener('blur', onRelease);
  };
}, []);
""")

#: Opening ($ref: the log's ref). `data-opening`, on the log's frame, hides what the log
#: holds and what is shown above it while the address names a conversation
#: (`data-addresses`, then its id, read as the server reads it) other than the one in it
#: (`data-thread`): the page was opened on it (from the Inbox, say) and the tab's state,
#: still the conversation shown before, has not caught up. It goes when
#: `data-thread` changes, or when the page's load is over (`data-loaded` true after having
#: not been), whatever the load brought (a notice that it cannot be shown, say); then the
#: first open decision's control (`data-autofocus`) takes the focus it could not take while
#: hidden. Moving back and forth in the history between two conversations asks again.
_OPENING = Template("""
useLayoutEffect(() => {
  const log = $ref.current;
  if (!log) return;
  const frame = log.parentElement;
  let loading = false;
  const asked = Number(sessionStorage.getItem('$arrive') || 0);
  sessionStorage.removeItem('$arrive');
  if (Date.now() - asked < $arrive_ms && document.activeElement === document.body) {
    log.focus({preventScroll: true});
  }
  const opened = () => {
    loading = false;
    if (!frame.dataset.opening) return;
    delete frame.dataset.opening;
    // A decision's control that mounted hidden could not take the focus: it takes it now,
    // unless the person has put it somewhere already (the log itself is nowhere yet).
    const first = frame.querySelector('[data-autofocus="true"]');
    const free = document.activeElement === document.body || document.activeElement === log;
    if (first && free) first.focus({preventScroll: true});
  };
  const ask = () => {
    const prefix = log.dataset.addresses;
    const path = window.location.pathname;
    if (!prefix || !path.startsWith(prefix)) return;
    let wanted = path.slice(prefix.length);
    try { wanted = decodeURIComponent(wanted); } catch (error) { /* kept as written */ }
    wanted = wanted.replace(/^[/]+|[/]+$$/g, '');
    if (wanted === (log.dataset.thread || '')) return;
    frame.dataset.opening = 'true';
    loading = log.dataset.loaded !== 'true';
  };
  const changes = new MutationObserver((records) => {
    for (const record of records) {
      if (record.attributeName === 'data-thread') opened();
      else if (log.dataset.loaded !== 'true') loading = true;
      else if (loading) opened();
    }
  });
  changes.observe(log, {attributes: true, attributeFilter: ['data-thread', 'data-loaded']});
  window.addEventListener('popstate', ask);
  ask();
  return () => {
    changes.disconnect();
    window.removeEventListener('popstate', ask);
  };
}, []);
""")


#: The sessionStorage key a link into a conversation sets (`FOCUS_LOG_SCRIPT`): the log that
#: mounts for it, within `_ARRIVE_MS`, takes the keyboard, which would otherwise fall to the
#: page's start as the page showing the link goes.
_ARRIVE_KEY = "chat_app_focus_log"
_ARRIVE_MS = 10_000
#: The keyboard goes to the log ($id: the log's id) now.
FOCUS_LOG_NOW_SCRIPT = Template("document.getElementById('$id')?.focus({preventScroll: true})")
#: A link's click into another conversation: the keyboard goes on to its log, on this page's
#: log at once, on the next page's once it mounts.
FOCUS_LOG_SCRIPT = Template(
    "sessionStorage.setItem('" + _ARRIVE_KEY + "', String(Date.now())); "
    + FOCUS_LOG_NOW_SCRIPT.template
)


class _FollowingBox(Box):
    """A box whose effects keep it scrolled to its end while the reader is there, and hide
    another conversation's lines while the one its address names loads."""

    def add_imports(self) -> ImportDict:
        return {"react": "useLayoutEffect"}

    def add_hooks(self) -> list[str | Var[Any]]:
        ref = self.get_ref()
        if ref is None:
            raise ValueError("a following log needs a fixed id: its effect finds it by its ref")
        return [
            _FOLLOW.substitute(ref=ref, near=NEAR_END_PX, jump=JUMP_ID),
            _OPENING.substitute(ref=ref, arrive=_ARRIVE_KEY, arrive_ms=_ARRIVE_MS),
        ]


def following_log(
    *children: rx.Component,
    log_id: str,
    thread: Prop[str],
    addresses: str,
    loaded: Prop[bool],
    sent_from: str,
    label: str,
    header: rx.Component | None = None,
    **style: Any,
) -> rx.Component:
    """`children` in a scrolling log (`log_id`, role log) that follows its end, and the
    "Newest" button that brings a reader who scrolled up back to it. `thread` names what is
    shown: when it changes, the log follows again (another conversation opens at its end).
    `addresses` is what the page's address starts with when it names a thread (its id
    after it): opened there, the log hides another thread's lines until that one comes or
    the page's load is over (`loaded`), and `header`, shown above the log, with them (it
    speaks of the conversation shown). Submitting the form that holds `sent_from` (a
    selector: the composer) follows again. `style` styles the log."""
    return rx.box(
        header if header is not None else rx.fragment(),
        _FollowingBox.create(
            *children,
            id=log_id,
            role="log",
            aria_label=label,
            custom_attrs={
                "data-thread": thread,
                "data-addresses": addresses,
                "data-loaded": rx.cond(loaded, "true", "false"),
                "data-sent-from": sent_from,
            },
            # Focusable, so that keys scroll it in every browser.
            tab_index=0,
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
            variant="soft",
            title="Go to the newest message",
            # Below the log, not over it: floating over the end of the log, it covered
            # whatever was there, a card's Reject on a phone among them. The log gives up
            # its height while the reader is scrolled up, and takes it back at the end.
            align_self="center",
            margin_y="0.4em",
            flex_shrink="0",
        ),
        style={
            # An id outranks Radix's button class, which sets display itself.
            f"& > #{JUMP_ID}": {"display": "none"},
            # The log itself stays visible, and so focusable.
            "&[data-opening='true'] > :not([role='log'])": {"visibility": "hidden"},
            "&[data-opening='true'] > [role='log'] > *": {"visibility": "hidden"},
            f"& > [data-following='false'] + #{JUMP_ID}": {"display": "inline-flex"},
        },
        display="flex",
        flex_direction="column",
        flex="1",
        # A flex item's height is at least its content's unless told otherwise; the log
        # inside is what scrolls.
        min_height="0",
        width="100%",
    )
