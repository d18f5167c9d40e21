"""Probability-weighted scores, the pure part: where the parser read each score
(`parsing.score_spans`, both layouts) and the expected value and covered mass at
that token (`judging.logprobs.weigh_value`), on token lists shaped as OpenAI sends
them (tokens with leading spaces and quotes, values split over tokens)."""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest

from judging import logprobs, parsing
from judging.fake_logprobs import token_logprobs, tokens_of
from judging.llm import ChatRequest, JudgeClient

SKILLS = [("helpfulness", "Helpfulness"), ("correctness", "Correctness")]


def tok(token: str, p: float, alternatives: dict[str, float] | None = None) -> dict:
    alts = alternatives if alternatives is not None else {token: p}
    return {
        "token": token,
        "logprob": math.log(p),
        "bytes": list(token.encode()),
        "top_logprobs": [
            {"token": t, "logprob": math.log(q), "bytes": list(t.encode())}
            for t, q in alts.items()
        ],
    }


def certain(text: str) -> list[dict]:
    return [tok(t, 1.0) for t in tokens_of(text)]


def value_at(text: str, span: tuple[int, int]) -> str:
    return text[span[0] : span[1]]


def test_spans_of_structured_output_point_at_each_score():
    text = (
        '{"helpfulness": {"feedback": "It says \\"score\\": 1 here.", "score": 4},'
        ' "correctness": {"feedback": "ok", "score": "2"}}'
    )
    parsed = parsing.parse_pointwise(text, SKILLS)
    spans = parsing.score_spans(text, SKILLS, parsed.format)
    assert value_at(text, spans["helpfulness"]) == "4"
    assert value_at(text, spans["correctness"]) == "2"  # inside its quotes


def test_spans_of_the_text_layout_point_at_the_score_the_parser_reads():
    text = (
        "**Helpfulness**\nGood: 5 stars in a sense.\n\n"
        '{"helpfulness": 3, "correctness": 5}'
    )
    parsed = parsing.parse_pointwise(text, SKILLS)
    assert parsed.format == "json_object_in_text"
    spans = parsing.score_spans(text, SKILLS, parsed.format)
    assert value_at(text, spans["helpfulness"]) == "3"
    assert value_at(text, spans["correctness"]) == "5"


def test_spans_of_score_lines_take_the_last_line_as_the_parser_does():
    text = "Helpfulness: 2\nfeedback: fine\nHelpfulness: 4/5\ncorrectness = -1"
    scales = None
    parsed = parsing.parse_pointwise(text.replace("-1", "3"), SKILLS, scales)
    assert parsed.format == "lines"
    spans = parsing.score_spans(text, SKILLS, "lines")
    assert value_at(text, spans["helpfulness"]) == "4"
    assert value_at(text, spans["correctness"]) == "-1"


def test_expected_score_is_renormalised_over_the_scale_values_present():
    text = '{"helpfulness": 4}'
    tokens = [
        *certain('{"helpfulness":'),
        tok(" 4", 0.5, {" 4": 0.5, " 5": 0.2, " 6": 0.1, " N": 0.1, " 3": 0.1}),
        *certain("}"),
    ]
    span = parsing.score_spans(text, SKILLS, "json")["helpfulness"]
    w = logprobs.weigh_value(tokens, text, span, 4, (1, 2, 3, 4, 5))
    # 6 is off the scale and "N" is no value: left out, the rest renormalised.
    assert w.mass == pytest.approx(0.8)
    assert w.expected_score == pytest.approx((4 * 0.5 + 5 * 0.2 + 3 * 0.1) / 0.8)


def test_tokens_with_quotes_and_colons_are_read_as_values():
    text = '{"helpfulness":"2"}'
    tokens = [
        *certain('{"helpfulness'),
        tok('":"2', 0.7, {'":"2': 0.7, '":"3': 0.2, '":"x': 0.1}),
        *certain('"}'),
    ]
    span = parsing.score_spans(text, SKILLS, "json")["helpfulness"]
    assert span == (16, 17)
    w = logprobs.weigh_value(tokens, text, span, 2, (1, 2, 3, 4, 5))
    assert w.mass == pytest.approx(0.9)
    assert w.expected_score == pytest.approx((2 * 0.7 + 3 * 0.2) / 0.9)


def test_multi_digit_value_split_over_tokens_keeps_the_chosen_value():
    # "10" as "1" + "0": the chosen first token stands for 10, "9" for 9, "8" for 8.
    text = "overall: 10"
    tokens = [
        *certain("overall:"),
        tok(" 1", 0.6, {" 1": 0.6, " 9": 0.3, " 8": 0.1}),
        tok("0", 1.0),
    ]
    w = logprobs.weigh_value(tokens, text, (9, 11), 10, tuple(range(1, 11)))
    assert w.mass == pytest.approx(1.0)
    assert w.expected_score == pytest.approx(10 * 0.6 + 9 * 0.3 + 8 * 0.1)


def test_negative_value_split_over_tokens():
    # "-2" as "-" + "2" on a -2..2 scale; the alternatives "0" and "1" read alone.
    text = "helpfulness: -2"
    tokens = [
        *certain("helpfulness:"),
        tok(" -", 0.5, {" -": 0.5, " 0": 0.25, " 1": 0.15, " +": 0.1}),
        tok("2", 1.0),
    ]
    w = logprobs.weigh_value(tokens, text, (13, 15), -2, (-2, -1, 0, 1, 2))
    assert w.mass == pytest.approx(0.9)
    assert w.expected_score == pytest.approx((-2 * 0.5 + 0 + 1 * 0.15) / 0.9)


def test_chosen_token_missing_from_its_alternatives_is_counted():
    text = "x: 3"
    tokens = [*certain("x:"), tok(" 3", 0.6, {" 4": 0.3})]
    w = logprobs.weigh_value(tokens, text, (3, 4), 3, (1, 2, 3, 4, 5))
    assert w.mass == pytest.approx(0.9)
    assert w.expected_score == pytest.approx((3 * 0.6 + 4 * 0.3) / 0.9)


def test_offsets_count_bytes_so_non_ascii_text_before_the_score_is_fine():
    text = 'é… {"helpfulness": 2}'
    tokens = [
        *certain('é… {"helpfulness":'),
        tok(" 2", 0.5, {" 2": 0.5, " 1": 0.5}),
        *certain("}"),
    ]
    span = (text.index(" 2") + 1, text.index(" 2") + 2)
    w = logprobs.weigh_value(tokens, text, span, 2, (1, 2, 3, 4, 5))
    assert w.expected_score == pytest.approx(1.5)


def test_no_value_among_the_alternatives_or_tokens_too_short_give_none():
    text = "x: 3"
    only_words = [*certain("x:"), tok(" 3", 1.0, {" N": 0.9, " A": 0.1})]
    # The chosen token is added back: its value alone, mass its probability.
    w = logprobs.weigh_value(only_words, text, (3, 4), 3, (1, 2, 3, 4, 5))
    assert w.expected_score == 3 and w.mass == pytest.approx(1.0)
    assert logprobs.weigh_value(certain("x:"), text, (3, 4), 3, (1, 2, 3)) is None


def test_the_fake_servers_spread_gives_known_distributions():
    body = {"logprobs": True, "top_logprobs": 20}
    spread = {"0": 0.5, "+1": 0.2, "-1": 0.2, "other": 0.1}
    content = '{"helpfulness": 1}'
    tokens = token_logprobs(content, body, spread)["content"]
    assert "".join(t["token"] for t in tokens) == content
    w = logprobs.weigh_value(tokens, content, (16, 17), 1, (1, 2, 3, 4, 5))
    assert w.mass == pytest.approx(0.7)  # 0 is off the scale, "N" no value
    assert w.expected_score == pytest.approx((1 * 0.5 + 2 * 0.2) / 0.7)
    assert token_logprobs(content, {}, spread) is None  # not asked
    assert token_logprobs(content, body, None) is None  # an endpoint without them


@pytest.mark.parametrize("spread", [{"0": 0.75, "-1": 0.25}, None])
def test_the_client_asks_for_logprobs_and_hands_back_the_tokens(fake_server, spread):
    base = fake_server(latency_ms=0, logprobs_spread=spread)
    request = ChatRequest(
        messages=[{"role": "user", "content": "Skill key: helpfulness\nScore it."}],
        model="judge-model",
        temperature=0.0,
        max_tokens=256,
        logprobs=True,  # top_logprobs not given: the default
    )

    async def main():
        async with JudgeClient(base_url=base, api_key=None, timeout=5.0) as client:
            return await client.complete(request)

    result = asyncio.run(main())
    sent = httpx.get(base.removesuffix("/v1") + "/last_request").json()["body"]
    assert sent["logprobs"] is True
    assert sent["top_logprobs"] == logprobs.DEFAULT_TOP
    if spread is None:  # the endpoint returned none: not an error
        assert result.token_logprobs is None and result.text
        return
    assert "".join(t["token"] for t in result.token_logprobs) == result.text
    parsed = parsing.parse_pointwise(result.text, [("helpfulness", "Helpfulness")])
    span = parsing.score_spans(result.text, [("helpfulness", "")], parsed.format)
    chosen = parsed.scores["helpfulness"]
    w = logprobs.weigh_value(
        result.token_logprobs, result.text, span["helpfulness"], chosen, (1, 2, 3, 4, 5)
    )
    if chosen == 1:  # 0 is off the scale
        assert (w.expected_score, w.mass) == (1.0, pytest.approx(0.75))
    else:
        assert w.expected_score == pytest.approx(chosen - 0.25)
        assert w.mass == pytest.approx(1.0)


def test_a_request_without_the_option_sends_no_logprob_fields():
    assert logprobs.logprob_request_fields(logprobs=False, top_logprobs=9) == {}
    assert logprobs.logprob_request_fields(logprobs=True, top_logprobs=9) == {
        "logprobs": True,
        "top_logprobs": 9,
    }
