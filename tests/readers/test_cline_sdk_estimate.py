"""The Cline SDK's own estimate of a message (replay.readers.cline_sdk_estimate), worked out by hand from the
writer's rule (cline/cline 21cb8d2525: estimateTokens, createTokenEstimator, MessageBuilder.buildForApi). On the
writer's own fixture (sdk/packages/core/fixtures/session/session.messages.json, 32 messages) the estimates add up
to 21,919, the ``tokensBefore`` its agentic.compaction.json records."""

from __future__ import annotations

from replay.readers.cline_sdk_estimate import js_length, message_estimate, stored_estimate, truncate_middle


def test_compact_json_characters_over_three_rounded_up() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "abcd"}]}
    assert message_estimate(message) == 19  # {"role":"user","content":[{"type":"text","text":"abcd"}]}: 57
    assert message_estimate({**message, "ts": 1_786_000_000_000}) == 26  # ,"ts":1786000000000 adds 19
    assert message_estimate({**message, "ts": None}) == 19  # JSON.stringify leaves out what is undefined


def test_escapes_and_utf16_units_count() -> None:
    assert js_length("a\U0001f600") == 3  # an emoji is two UTF-16 code units
    assert message_estimate({"role": "user", "content": [{"type": "text", "text": "abc"}]}) == 19  # 56 characters
    assert message_estimate({"role": "user", "content": [{"type": "text", "text": "\n\n\n"}]}) == 20  # 59


def test_tool_results_cut_to_8000_characters_as_sent() -> None:
    text = "".join(f"{n:09d}\n" for n in range(2_000))  # 20,000 characters, 2,000 newlines
    cut = truncate_middle(text)
    # truncateMiddleByChars: a tentative marker for 12,000 removed gives 3,983 kept at each end, so 12,034 go
    assert cut == text[:3_983] + "\n\n...[truncated 12034 chars]...\n\n" + text[-3_983:]
    assert len(cut) == 7_999
    result = {"type": "tool_result", "tool_use_id": "t1", "content": text}
    sent = message_estimate({"role": "user", "content": [result]})
    assert sent == message_estimate({"role": "user", "content": [{**result, "content": cut}]})
    assert 2_900 < sent < 3_000  # about 8,900 JSON characters (newlines escaped), not the whole result's 22,000
    both = {**result, "content": [{"type": "text", "text": text}, {"query": "ls", "result": text}]}
    assert abs(message_estimate({"role": "user", "content": [both]}) - 2 * sent) < 40  # each string cut


def test_sent_and_stored_estimates_differ_by_the_cuts() -> None:
    """The trigger counts a message as sent, the cut and ``tokensBefore`` as stored; an attached file is cut at
    50,000 characters."""
    text = "x" * 20_000
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}]}
    assert stored_estimate(result) == 6_694  # the whole string and 82 characters of JSON around it: 20,082 / 3
    assert message_estimate(result) == 2_695  # cut to 7,999, its marker's four newlines escaped: 8,085 / 3
    attached = {"role": "user", "content": [{"type": "file", "path": "a.ts", "content": "y" * 60_000}]}
    assert (stored_estimate(attached), message_estimate(attached)) == (20_024, 16_691)  # 60,072 and 50,073 / 3
