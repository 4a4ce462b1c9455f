"""The page's JavaScript that lives in Python strings parses as JavaScript.

Each script is given to node's own parser (as the body of an async function, which takes a
statement, an expression or a hook's body alike), with the values the app fills in. A slip in
one then fails here, named, in a second, rather than in whichever browser test happens to run
it, or in a person's page. The browser tests check what the scripts do.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from chat_app.ui import state
from chat_app.ui.components import (
    decisions,
    following,
    header,
    listing,
    page,
    posting,
    schema_form,
    settled,
)
from chat_app.ui.session import LOCAL_TIME_SCRIPT, LOCATION_SCRIPT

#: Reads `{name: source}` on stdin; prints `{name: "SyntaxError: ..."}` for each that does not
#: parse. `new AsyncFunction(source)` parses without running anything.
PARSE = """
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
let input = '';
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  const failed = {};
  for (const [name, source] of Object.entries(JSON.parse(input))) {
    try { new AsyncFunction(source); } catch (error) { failed[name] = String(error); }
  }
  process.stdout.write(JSON.stringify(failed));
});
"""


def _scripts() -> dict[str, str]:
    """Every script, filled in as the app fills it in."""
    ref = "ref_transcript"
    return {
        "page.ROOT_HAS_SCRIPT": page.ROOT_HAS_SCRIPT,
        "page.SKIP_LINK_SCRIPT": page.SKIP_LINK_SCRIPT,
        "listing.KEEP_PLACE_SCRIPT": listing.KEEP_PLACE_SCRIPT,
        "settled.WHOLE_ON_TAP_SCRIPT": settled.WHOLE_ON_TAP_SCRIPT,
        "schema_form.PROPOSED_SCRIPT": schema_form.PROPOSED_SCRIPT,
        "schema_form.DRAFT_SCRIPT": schema_form.DRAFT_SCRIPT,
        "decisions.CLOSE_ON_ESCAPE_SCRIPT": decisions.CLOSE_ON_ESCAPE_SCRIPT,
        "decisions.SENDING_SCRIPT": decisions.SENDING_SCRIPT,
        "decisions.MOVED_ON_SCRIPT": decisions.MOVED_ON_SCRIPT,
        "decisions.FOCUS_NEXT_DECISION_SCRIPT": decisions.FOCUS_NEXT_DECISION_SCRIPT,
        "decisions.TYPING_KEEPS_FOCUS_SCRIPT": decisions.TYPING_KEEPS_FOCUS_SCRIPT,
        "state.IN_VIEW": state.IN_VIEW,
        "state.STORE_NOTE": state.STORE_NOTE,
        "state.FOCUS_IN_FORM": state.FOCUS_IN_FORM % json.dumps(["approval_c1", "reject", "error"]),
        "state.browser_call": state.browser_call(LOCAL_TIME_SCRIPT, "call_1 'quoted' \"both\""),
        "session.LOCAL_TIME_SCRIPT": LOCAL_TIME_SCRIPT,
        "session.LOCATION_SCRIPT": LOCATION_SCRIPT,
        "following._FOLLOW": following._FOLLOW.substitute(
            ref=ref, near=following.NEAR_END_PX, jump=following.JUMP_ID
        ),
        "following._OPENING": following._OPENING.substitute(
            ref=ref, arrive=following._ARRIVE_KEY, arrive_ms=following._ARRIVE_MS
        ),
        "following.FOCUS_LOG_SCRIPT": following.FOCUS_LOG_SCRIPT.substitute(id="transcript"),
        "following.FOCUS_LOG_NOW_SCRIPT": following.FOCUS_LOG_NOW_SCRIPT.substitute(
            id="transcript"
        ),
        "header.MARK_SIGNED_OUT_SCRIPT": header.MARK_SIGNED_OUT_SCRIPT,
        "header.DEMO_SWITCH_SCRIPT": header.DEMO_SWITCH_SCRIPT,
        "header.go_sign_in_script": header.go_sign_in_script("/signin", "It's 'over' \"now\""),
        "posting.post_script": posting.post_script(
            "/api/signin", {"email": "email"}, {"x": "1"}, here_as="next", query={"next": "n"},
            then=header.MARK_SIGNED_OUT_SCRIPT,
        ),
        "posting.post_script(signed in)": posting.post_script(
            "/api/signin", {"email": "email"}, {}, then=header.mark_signed_in_script("/signin")
        ),
    }


def _unparsed(scripts: dict[str, str]) -> dict[str, str]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("`node` is not on PATH (Node 20+, as `make test` expects)", pytrace=False)
    done = subprocess.run(
        [node, "-e", PARSE],
        input=json.dumps(scripts),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    failed: dict[str, str] = json.loads(done.stdout)
    return failed


def test_every_script_the_page_runs_parses_as_javascript() -> None:
    scripts = _scripts()
    assert _unparsed(scripts) == {}


def test_a_script_that_does_not_parse_is_named_with_node_s_reason() -> None:
    broken = {"typo": page.ROOT_HAS_SCRIPT.replace("const split", "const split =", 1)}
    failed = _unparsed(broken)
    assert list(failed) == ["typo"]
    assert failed["typo"].startswith("SyntaxError")


def test_every_module_level_script_is_checked() -> None:
    """A new constant named like a script in the UI's modules is added to the list above."""
    ui = Path(state.__file__).parent
    named = {
        f"{path.stem}.{name}"
        for path in ui.rglob("*.py")
        for line in path.read_text().splitlines()
        if (name := line.partition(" = ")[0]).isidentifier()
        and name.isupper()
        and name.endswith("_SCRIPT")
    }
    assert named <= set(_scripts()), named - set(_scripts())
