"""The fake judge server: real HTTP, concurrent, seeded faults, replies that parse."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from annotation.builtin_rubric import BUILTIN_SKILLS
from judging import prompts
from judging.fake_server import FakeServerConfig, build_reply, fake_score
from judging.llm import ChatRequest, JudgeClient
from judging.parsing import (
    ParseError,
    parse_checklist,
    parse_metadata,
    parse_pairwise,
    parse_pointwise,
)
from tests.judging import FakeJudge

ROOT = Path(__file__).resolve().parent.parent.parent
SPECS = tuple(
    prompts.SkillSpec(key, name, criteria, anchors)
    for key, name, _ability, criteria, anchors in BUILTIN_SKILLS
)
SKILLS = SPECS[:3]
PAIRS = [(s.key, s.name) for s in SKILLS]


@pytest.fixture
def fake_judge_factory(fake_server):
    def start(**config) -> FakeJudge:
        config.setdefault("latency_ms", 0)
        return FakeJudge(fake_server(**config))

    return start


def _pointwise_body(
    response="It is 4.", output_mode="text", layout="flask", skills=SKILLS
) -> dict:
    inp = prompts.PointwiseInput("What is 2 + 2?", response, "4", skills, rubric=SPECS)
    if layout == "flame":
        messages = prompts.render_pointwise_flame(inp)
    else:
        messages = prompts.render_pointwise(
            inp,
            system_text=prompts.BUILTIN_POINTWISE_SYSTEM,
            user_text=prompts.BUILTIN_POINTWISE_USER,
            include_reference=True,
            output_mode=output_mode,
            cache_friendly=layout == "cache_friendly",
        )
    body = {"model": "m", "messages": messages, "max_tokens": 1024}
    if output_mode == "json_schema":
        body["response_format"] = prompts.pointwise_response_format(
            [s.key for s in skills]
        )
    return body


def _run(coro):
    return asyncio.run(coro)


async def _many(base_url: str, bodies: list[dict], **client_kwargs):
    client_kwargs.setdefault("timeout", 10.0)
    async with JudgeClient(base_url=base_url, api_key=None, **client_kwargs) as client:
        requests = [
            ChatRequest(b["messages"], "m", 0.0, 1024, b.get("response_format"))
            for b in bodies
        ]
        return await asyncio.gather(
            *(client.complete(r) for r in requests), return_exceptions=True
        )


def test_200_concurrent_requests_are_served_concurrently(fake_judge_factory):
    judge = fake_judge_factory(latency_ms=200)
    bodies = [_pointwise_body(response=f"Answer number {i}.") for i in range(200)]
    results = _run(_many(judge.base_url, bodies))
    assert all(r.text for r in results)
    # Concurrency is shown by the requests the server held at once, not by a wall
    # clock (the suite checks behaviour; a loaded machine stretches any timing).
    stats = judge.stats()
    assert stats["requests"] == 200 and stats["by_status"] == {"200": 200}
    assert stats["max_in_flight"] >= 50


@pytest.mark.parametrize(
    ("output_mode", "layout"),
    [("text", "flask"), ("json_schema", "flask"), ("text", "flame")],
)
def test_replies_parse_for_the_requested_skills(output_mode, layout):
    body = _pointwise_body(output_mode=output_mode, layout=layout)
    reply = build_reply(body, FakeServerConfig())
    parsed = parse_pointwise(reply, PAIRS)
    expected = {s.key: fake_score("It is 4.", s.key) for s in SKILLS}
    assert parsed.scores == expected
    assert all(parsed.rationales.values())
    if layout == "flame":  # FLAMe's layout asks for "field: value" lines
        assert parsed.format == "lines"
    else:
        assert parsed.format == (
            "json" if output_mode == "json_schema" else "json_object_in_text"
        )


@pytest.mark.parametrize("output_mode", ["text", "json_schema"])
@pytest.mark.parametrize("response", ["It is 4.", ""])
def test_the_cache_friendly_layout_is_scored_on_the_skills_it_lists(
    output_mode, response
):
    # The rubric shows all twelve skills; "Skills to score:" names the call's
    # (not the rubric's first three). An empty answer is scored as empty, never as
    # the whole prompt, so both layouts agree on it too.
    skills = (SPECS[7], SPECS[2], SPECS[10])
    pairs = [(s.key, s.name) for s in skills]
    new = _pointwise_body(response, output_mode, "cache_friendly", skills)
    old = _pointwise_body(response, output_mode, "flask", skills)
    assert prompts.prompt_hash(new["messages"]) != prompts.prompt_hash(old["messages"])
    scores = parse_pointwise(build_reply(new, FakeServerConfig()), pairs).scores
    assert scores == {s.key: fake_score(response, s.key) for s in skills}
    assert scores == parse_pointwise(build_reply(old, FakeServerConfig()), pairs).scores


@pytest.mark.parametrize("output_mode", ["text", "json_schema"])
def test_malformed_replies_are_rejected_by_the_parser(output_mode):
    body = _pointwise_body(output_mode=output_mode)
    with pytest.raises(ParseError, match="no score for"):
        parse_pointwise(build_reply(body, FakeServerConfig(), malformed=True), PAIRS)


def test_scores_are_deterministic_and_favour_longer_answers():
    body = _pointwise_body(response="Some answer.")
    assert build_reply(body, FakeServerConfig()) == build_reply(
        body, FakeServerConfig()
    )
    short = [fake_score(f"short {i}", "readability") for i in range(300)]
    long = [
        fake_score(f"long {i} " + "detail " * 300, "readability") for i in range(300)
    ]
    assert sum(long) / 300 > sum(short) / 300 + 0.5
    assert set(short) | set(long) <= {1, 2, 3, 4, 5}


def test_pairwise_metadata_and_checklist_replies_parse():
    config = FakeServerConfig()
    for allow_tie in (True, False):
        for layout in ("flask", "flame"):
            messages = prompts.render_pairwise(
                "q", "an answer", "another answer", allow_tie=allow_tie, layout=layout
            )
            reply = build_reply({"messages": messages}, config)
            assert parse_pairwise(reply, allow_tie=allow_tie)[0] in {"A", "B", "tie"}
    schema_body = {
        "messages": prompts.render_pairwise(
            "q", "a", "b", allow_tie=False, layout="flask"
        ),
        "response_format": prompts.pairwise_response_format(False),
    }
    assert parse_pairwise(build_reply(schema_body, config), allow_tie=False)[0] in {
        "A",
        "B",
    }

    domains = ["Humanities", "Natural Science", "Math"]
    keys = [s.key for s in SPECS]
    messages = prompts.render_metadata_annotation(
        "Prove it.", domains=domains, skills=list(SPECS)
    )
    meta = parse_metadata(
        build_reply({"messages": messages}, config), domains=domains, skill_keys=keys
    )
    assert len(meta["skills"]) == 3 and meta["domains"][0] in domains
    with pytest.raises(ParseError):
        parse_metadata(
            build_reply({"messages": messages}, config, malformed=True),
            domains=domains,
            skill_keys=keys,
        )

    messages = prompts.render_checklist("Sort a list.", None, list(SKILLS))
    items = parse_checklist(
        build_reply({"messages": messages}, config), skill_keys=keys
    )
    assert [i["skill"] for i in items] == [s.key for s in SKILLS]


def test_error_rates_are_roughly_respected_and_seeded(fake_judge_factory):
    judge = fake_judge_factory(rate_limit=0.2, server_error=0.1, malformed=0.1, seed=42)
    bodies = [_pointwise_body(output_mode="json_schema")] * 400
    _run(_many(judge.base_url, bodies, max_retries=0))
    first = judge.stats()
    by_status = first["by_status"]
    assert first["requests"] == 400
    assert 50 <= by_status["429"] <= 110  # expected 80
    assert 20 <= by_status["500"] <= 65  # expected 40
    assert 20 <= first["by_outcome"]["malformed"] <= 65  # expected 40
    judge.reset()
    _run(_many(judge.base_url, bodies, max_retries=0))
    # Same seed, same draws (the order of arrival does not change the counts).
    assert judge.stats()["by_outcome"] == first["by_outcome"]


def _http(url: str, data: bytes | None = None, headers: dict | None = None):
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers


def test_api_key_bad_requests_models_reset_and_config(fake_judge_factory):
    judge = fake_judge_factory(require_api_key="sk-good", retry_after=3)
    url = judge.base_url + "/chat/completions"
    body = json.dumps(_pointwise_body()).encode()
    json_headers = {"Content-Type": "application/json"}
    status, payload, _ = _http(
        url, body, {**json_headers, "Authorization": "Bearer sk-bad"}
    )
    assert status == 401 and "sk-bad" not in json.dumps(payload)
    good = {**json_headers, "Authorization": "Bearer sk-good"}
    assert _http(url, body, good)[0] == 200
    assert _http(url, b"{not json", good)[0] == 400
    assert _http(url, json.dumps({"model": "m"}).encode(), good)[0] == 400
    judge.script("rate_limit")
    status, _, headers = _http(url, body, good)
    assert status == 429 and headers["Retry-After"] == "3"
    status, models, _ = _http(judge.base_url + "/models")
    assert status == 200 and models["data"][0]["id"] == "fake-judge"

    judge.reset(server_error=1.0)
    assert judge.stats()["requests"] == 0
    assert _http(url, body, good)[0] == 500
    judge.call("POST", "/config", {"server_error": 0.0})
    assert _http(url, body, good)[0] == 200
    assert judge.stats()["by_status"] == {"500": 1, "200": 1}


def test_management_command_serves_and_prints_its_base_url():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "fake_judge_server",
            "--port",
            "0",
            "--latency-ms",
            "0",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:") and line.endswith("/v1"), (
            line + process.stderr.read()
        )
        status, models, _ = _http(line + "/models")
        assert status == 200 and models["object"] == "list"
    finally:
        process.terminate()
        process.wait(timeout=10)
