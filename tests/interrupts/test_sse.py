"""SSE framing: what we write, and the tolerant reading `@tanstack/ai-client` does."""

import pytest

from chat_app.interrupts import SSEDecodeError, SSEDecoder, encode_sse_event


def decode(text: str, chunk: int = 7) -> list[dict[str, object]]:
    decoder = SSEDecoder()
    events = [e for i in range(0, len(text), chunk) for e in decoder.feed(text[i : i + chunk])]
    decoder.close()
    return events


def test_events_are_data_lines_with_javascript_json() -> None:
    frame = encode_sse_event({"type": "X", "n": 1.0, "s": "é\u2028"})
    assert frame == 'data: {"type":"X","n":1,"s":"é\u2028"}\n\n'


def test_decoder_reassembles_events_split_across_chunks() -> None:
    text = encode_sse_event({"type": "A", "runId": "r"}) + encode_sse_event({"type": "B"})
    assert decode(text, chunk=3) == [{"type": "A", "runId": "r"}, {"type": "B"}]


def test_decoder_accepts_bare_json_comments_event_retry_and_crlf() -> None:
    text = (
        ': keep-alive\r\nevent: message\r\nretry: 10\r\n{"type":"A"}\r\ndata:{"type":"B"}\r\n\r\n'
    )
    assert decode(text) == [{"type": "A"}, {"type": "B"}]


def test_id_lines_are_remembered() -> None:
    decoder = SSEDecoder()
    list(decoder.feed('id: 42\ndata: {"type":"A"}\n\n'))
    assert decoder.last_event_id == "42"


def test_done_sentinel_becomes_a_finished_run_with_the_last_ids() -> None:
    text = 'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\ndata: [DONE]\n\n'
    events = decode(text)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert (events[-1]["threadId"], events[-1]["runId"]) == ("t", "r")
    assert events[-1]["metadata"] == {"tanstack": {"finishReason": "stop"}}


def test_a_stream_cut_mid_line_is_an_error() -> None:
    decoder = SSEDecoder()
    list(decoder.feed('data: {"type":"A"'))
    with pytest.raises(SSEDecodeError, match="middle of a line"):
        decoder.close()


@pytest.mark.parametrize(
    ("line", "message"), [("data: {nope", "not JSON"), ("data: [1]", "JSON object")]
)
def test_bad_data_lines_name_the_problem(line: str, message: str) -> None:
    with pytest.raises(SSEDecodeError, match=message):
        list(SSEDecoder().feed(line + "\n"))
