"""The import parsers and their toolkit: pure functions from bytes to records and problems
(no database)."""

from __future__ import annotations

import json

import pytest

from annotation.builtin_rubric import BUILTIN_SKILLS
from annotation.importers.base import (
    NA_WORDS,
    is_na,
    parse_field_map,
    parse_score,
    read_rows,
    skill_lookup_for,
)
from annotation.importers.flask import (
    model_name_from_file,
    parse_eval_set,
    parse_outputs,
    parse_rubric,
)
from annotation.importers.generic import derived_id, parse_generic, parse_mapping
from annotation.importers.preferences import (
    parse_original_verdict,
    parse_presented_verdict,
)
from flaskapp.errors import Problem

LOOKUP = skill_lookup_for([(key, name) for key, name, *_ in BUILTIN_SKILLS])


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def current(**fields) -> dict:
    """A valid line of the current FLASK schema, with `fields` replaced."""
    row = {
        "idx": 1,
        "instruction": "What is 2 + 2?",
        "answer": "4",
        "task": "gsm8k",
        "skill": ["Logical Correctness", "Conciseness", "Readability"],
        "domain": ["Math"],
        "difficulty": "simple lifestyle knowledge",
    }
    row.update(fields)
    return row


def parse_one(**fields):
    return parse_eval_set(
        jsonl(current(**fields)), file="eval.jsonl", skill_lookup=LOOKUP
    )


def problem_texts(result) -> list[str]:
    return [str(p) for p in result.problems]


# --- Schemas ---------------------------------------------------------------------------


def test_current_schema_is_read_field_by_field():
    result = parse_one(domain=["Math", "Coding"], difficulty="major level knowledge")

    assert result.problems == []
    [record] = result.instructions
    assert record.external_id == "1"
    assert record.text == "What is 2 + 2?"
    assert record.reference_answer == "4"
    assert record.source_task == "gsm8k"
    assert record.skills == ["logical_correctness", "conciseness", "readability"]
    assert record.domains == ["math", "coding"]
    assert record.difficulty == 4
    assert record.metadata == {}


def test_legacy_schema_gives_the_same_record_and_keeps_extra_fields_as_metadata():
    legacy = {
        "question_id": 1,
        "text": "What is 2 + 2?",
        "answer": "4",
        "task": "gsm8k",
        "metrics": ["Logical Correctness", "Conciseness", "Readability"],
        "domain_labeled": ["Math"],
        "difficulty_labeled": "simple lifestyle knowledge",
        "num_skills": 3,
        "metric_explanation": "Because ... [4, 9, 10]",
    }
    new = parse_one().instructions[0]

    result = parse_eval_set(jsonl(legacy), file="v1.jsonl", skill_lookup=LOOKUP)

    assert result.problems == []
    [old] = result.instructions
    assert old.content() == new.content()
    assert old.metadata == {
        "num_skills": 3,
        "metric_explanation": "Because ... [4, 9, 10]",
    }


def test_both_schemas_may_be_mixed_line_by_line():
    data = jsonl(
        current(idx=1),
        {"question_id": 2, "text": "Name a colour.", "metrics": ["Comprehension"]},
    )

    result = parse_eval_set(data, file="mixed.jsonl", skill_lookup=LOOKUP)

    assert result.problems == []
    assert [r.external_id for r in result.instructions] == ["1", "2"]
    assert result.instructions[1].skills == ["comprehension"]


# --- Difficulty and domain -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "level"),
    [
        ("simple lifestyle knowledge", 1),
        ("advanced lifestyle knowledge", 2),
        ("formal education knowledge", 3),
        ("Major Level Knowledge", 4),
        ("expert_level_knowledge", 5),
        (3, 3),
        ("2", 2),
        (5.0, 5),
    ],
)
def test_difficulty_names_and_numbers_become_levels_1_to_5(value, level):
    result = parse_one(difficulty=value)

    assert result.problems == []
    assert result.instructions[0].difficulty == level


@pytest.mark.parametrize("sentinel", ["-1", -1, -1.0, None])
def test_difficulty_sentinel_means_unknown_not_an_error(sentinel):
    result = parse_one(difficulty=sentinel)

    assert result.problems == []
    assert result.instructions[0].difficulty is None


@pytest.mark.parametrize("value", [0, 6, "7", "0", "-2", 99])
def test_difficulty_out_of_range_is_refused_naming_line_and_field(value):
    result = parse_one(difficulty=value)

    assert result.instructions == []
    [text] = problem_texts(result)
    assert text.startswith("eval.jsonl, line 1, field `difficulty`: difficulty ")
    assert "out of range 1-5" in text


def test_unknown_difficulty_name_lists_the_allowed_names():
    [text] = problem_texts(parse_one(difficulty="very hard"))

    assert "field `difficulty`: unknown difficulty 'very hard'" in text
    assert "expert level knowledge = 5" in text


@pytest.mark.parametrize(
    ("value", "domains"),
    [
        (["-1"], []),
        ("-1", []),
        (-1, []),
        ([-1], []),
        (["Health", "-1"], ["health"]),
        (["Social Sciences"], ["social_science"]),
        (["social science", "NATURAL_SCIENCE"], ["social_science", "natural_science"]),
    ],
)
def test_domain_sentinels_are_dropped_and_aliases_accepted(value, domains):
    result = parse_one(domain=value)

    assert result.problems == []
    assert result.instructions[0].domains == domains


def test_unknown_domain_and_too_many_domains_are_refused():
    unknown = problem_texts(parse_one(domain=["Astrology"]))
    too_many = problem_texts(parse_one(domain=["Math", "Coding", "History"]))

    assert "field `domain`: unknown domain 'Astrology'" in unknown[0]
    assert "field `domain`: has 3 domains; an instruction has at most 2" in too_many[0]


# --- Skills ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        "Logical Correctness",
        "logical_correctness",
        "LOGICAL CORRECTNESS",
        "logical-correctness",
        "  Logical   Correctness ",
    ],
)
def test_skill_names_match_after_normalising_case_underscores_and_spaces(spelling):
    result = parse_one(skill=[spelling])

    assert result.problems == []
    assert result.instructions[0].skills == ["logical_correctness"]


@pytest.mark.parametrize(
    "partial", ["Logical", "Correctness", "Factual", "Logic Correctness"]
)
def test_skill_names_never_match_by_substring(partial):
    result = parse_one(skill=[partial])

    assert result.instructions == []
    assert problem_texts(result) == [
        f"eval.jsonl, line 1, field `skill`: unknown skill {partial!r}; "
        "it is not in the dataset's rubric"
    ]


def test_skill_listed_twice_is_refused():
    [text] = problem_texts(parse_one(skill=["Factuality", "factuality"]))

    assert "field `skill`: skill 'factuality' is listed twice" in text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            '{"Factuality": 1}',
            "must be a list of strings, got a string holding an object",
        ),
        ({"Factuality": 1}, "must be a list of strings, got object"),
        ([["Factuality"]], "must be a list of strings, found array"),
        ("[Factuality", "looks like a JSON list but does not parse"),
    ],
)
def test_skill_of_the_wrong_type_is_refused(value, message):
    [text] = problem_texts(parse_one(skill=value))

    assert text == f"eval.jsonl, line 1, field `skill`: {message}"


def test_skill_list_written_as_a_python_literal_is_read():
    # pandas writes list cells as Python reprs: "['a', 'b']".
    result = parse_one(skill="['Comprehension', 'Factuality']")

    assert result.problems == []
    assert result.instructions[0].skills == ["comprehension", "factuality"]


# --- Checklists ------------------------------------------------------------------------


def test_checklist_of_questions_and_of_skill_questions_is_parsed():
    result = parse_one(
        checklist=[
            "Does the answer state 4?",
            {"skill": "logical_correctness", "question": " Is the sum right? "},
        ]
    )

    assert result.problems == []
    assert result.instructions[0].checklist == [
        {"skill": None, "question": "Does the answer state 4?"},
        {"skill": "logical_correctness", "question": "Is the sum right?"},
    ]


def test_checklist_problems_name_the_field():
    unknown = problem_texts(parse_one(checklist=[{"skill": "Logic", "question": "Q?"}]))
    bad_entry = problem_texts(parse_one(checklist=[{"skill": "factuality"}]))
    not_a_list = problem_texts(parse_one(checklist=7))

    assert unknown == [
        "eval.jsonl, line 1, field `checklist`: checklist names unknown skill 'Logic'"
    ]
    assert (
        "field `checklist`: each checklist entry must be a question string"
        in bad_entry[0]
    )
    assert "field `checklist`: must be a list of questions, got number" in not_a_list[0]


# --- Lines, types and files ------------------------------------------------------------


def test_every_bad_line_is_reported_and_good_lines_still_parsed():
    data = (
        jsonl(current(idx=1))
        + b'{"idx": 2, "instruction": \n'
        + jsonl(current(idx=3, instruction=42), current(idx=4, answer=None))
    )

    result = parse_eval_set(data, file="eval.jsonl", skill_lookup=LOOKUP)

    assert [r.external_id for r in result.instructions] == ["1", "4"]
    assert problem_texts(result) == [
        "eval.jsonl, line 2: invalid JSON (Expecting value at column 27)",
        "eval.jsonl, line 3, field `instruction`: must be a string, got number",
    ]


def test_an_unterminated_string_says_where_it_starts_without_a_doubled_word():
    data = jsonl(current(idx=1)) + b'{"idx": 2, "instruction": "no end\n'

    result = parse_eval_set(data, file="eval.jsonl", skill_lookup=LOOKUP)

    assert problem_texts(result) == [
        "eval.jsonl, line 2: invalid JSON (Unterminated string starting at column 27)"
    ]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"idx": 1}, "line 1, field `instruction`: is missing"),
        ({"idx": 1, "instruction": "  "}, "line 1, field `instruction`: is empty"),
        ({"instruction": "Hi"}, "line 1, field `idx`: is missing or empty"),
        (
            {"idx": [1], "instruction": "Hi"},
            "field `idx`: must be an integer, got array",
        ),
        (
            {"idx": 1, "instruction": "a\u0000b"},
            "field `instruction`: contains a NUL character",
        ),
        (
            {"idx": "1" * 201, "instruction": "Hi"},
            "field `idx`: is 201 characters long",
        ),
        (
            {"idx": 1, "instruction": "Hi", "extra": float("nan")},
            "line 1: an extra field holds NaN",
        ),
    ],
)
def test_missing_or_malformed_fields_are_named(row, expected):
    result = parse_eval_set(jsonl(row), file="eval.jsonl", skill_lookup=LOOKUP)

    assert result.instructions == []
    assert any(expected in text for text in problem_texts(result)), problem_texts(
        result
    )


def test_duplicate_id_in_one_file_names_both_lines():
    data = jsonl(current(idx=7), current(idx=8), current(idx=7, instruction="Other"))

    result = parse_eval_set(data, file="eval.jsonl", skill_lookup=LOOKUP)

    assert problem_texts(result) == [
        "eval.jsonl, line 3: duplicate instruction id '7' (first seen on line 1)"
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "eval.jsonl: the file is empty"),
        (b"\n  \n", "eval.jsonl: the file is empty"),
        (
            b'[{"idx": 1}]\n',  # a JSON array: its row 1 has no instruction
            "eval.jsonl, line 1, field `instruction`: is missing",
        ),
        (b'"just a string"\n', "eval.jsonl, line 1: expected a JSON object, got str"),
    ],
)
def test_file_level_problems(data, expected):
    result = parse_eval_set(data, file="eval.jsonl", skill_lookup=LOOKUP)

    assert result.instructions == []
    assert problem_texts(result)[0].startswith(expected)


def test_non_utf8_bytes_name_the_line():
    data = jsonl(current(idx=1)) + b'{"idx": 2, "instruction": "caf\xe9"}\n'

    result = parse_eval_set(data, file="eval.jsonl", skill_lookup=LOOKUP)

    assert problem_texts(result) == [
        "eval.jsonl, line 2: not valid UTF-8 (byte 0xe9 at column 31); save the file as UTF-8"
    ]


def test_utf8_byte_order_mark_is_ignored():
    result = parse_eval_set(
        b"\xef\xbb\xbf" + jsonl(current()), file="e.jsonl", skill_lookup=LOOKUP
    )

    assert result.problems == []
    assert len(result.instructions) == 1


def test_hard_flag_marks_every_instruction():
    result = parse_eval_set(
        jsonl(current(idx=1), current(idx=2)),
        file="h.jsonl",
        skill_lookup=LOOKUP,
        hard=True,
    )

    assert [r.is_hard for r in result.instructions] == [True, True]


# --- Model outputs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "model"),
    [
        ("gpt4_review.jsonl", "gpt4"),
        ("outputs/gpt4.jsonl", "gpt4"),
        ("/data/model_output/outputs/llama2_chat_70b.jsonl", "llama2_chat_70b"),
        ("tulu_7b_review.jsonl", "tulu_7b"),
        ("claude.csv", "claude"),
    ],
)
def test_model_name_comes_from_the_file_name(file, model):
    assert model_name_from_file(file) == model


def test_outputs_are_read_with_the_model_from_the_file_name_and_extra_fields_kept():
    data = jsonl(
        {"question_id": 1, "text": "Four."},
        {"question_id": 2, "text": "", "model_id": "x"},
        {"idx": 3, "output": "Blue."},
    )

    result = parse_outputs(data, file="gpt4_review.jsonl")

    assert result.problems == []
    got = [
        (r.instruction_external_id, r.model_name, r.text, r.metadata)
        for r in result.responses
    ]
    assert got == [
        ("1", "gpt4", "Four.", {}),
        ("2", "gpt4", "", {"model_id": "x"}),  # empty outputs exist in the release
        ("3", "gpt4", "Blue.", {}),
    ]


def test_outputs_model_name_option_wins_over_the_file_name():
    result = parse_outputs(
        jsonl({"question_id": 1, "text": "x"}), file="a.jsonl", model_name="m1"
    )

    assert result.responses[0].model_name == "m1"


def test_outputs_refuse_null_or_missing_text_and_duplicate_ids():
    data = jsonl(
        {"question_id": 1, "text": None},
        {"question_id": 2},
        {"question_id": 3, "text": "a"},
        {"question_id": 3, "text": "b"},
    )

    result = parse_outputs(data, file="gpt4.jsonl")

    assert problem_texts(result) == [
        "gpt4.jsonl, line 1, field `text`: is missing",
        "gpt4.jsonl, line 2, field `text`: is missing",
        "gpt4.jsonl, line 4: duplicate response for question id '3' (first seen on line 3)",
    ]


# --- Rubric file -----------------------------------------------------------------------


def rubric_json(skills=BUILTIN_SKILLS) -> bytes:
    return json.dumps(
        [
            {
                "Skill": name,
                "Criteria": criteria,
                "Scoring": {str(i + 1): anchor for i, anchor in enumerate(anchors)},
            }
            for _, name, _, criteria, anchors in skills
        ]
    ).encode()


def test_rubric_file_gives_keys_abilities_and_anchors_in_file_order():
    skills, problems = parse_rubric(rubric_json(), file="skillset_description.json")

    assert problems == []
    assert [s["key"] for s in skills] == [key for key, *_ in BUILTIN_SKILLS]
    assert {s["key"]: s["ability"] for s in skills} == {
        k: a for k, _, a, *_ in BUILTIN_SKILLS
    }
    assert skills[0]["anchor_5"] == BUILTIN_SKILLS[0][4][4]


def test_rubric_file_problems_are_named():
    items = json.loads(rubric_json(BUILTIN_SKILLS[:2]))
    items[0]["Skill"] = "Logic"
    del items[1]["Scoring"]["5"]

    _, problems = parse_rubric(json.dumps(items).encode(), file="r.json")

    assert [str(p) for p in problems] == [
        "r.json, field `Skill`: skill #1: unknown skill 'Logic'",
        "r.json, field `Scoring`: skill #2: needs anchors for scores 1-5",
    ]


# --- Generic JSONL and CSV -------------------------------------------------------------


def test_generic_csv_with_a_mapping_groups_responses_under_one_instruction():
    data = (
        b"prompt,gold,system,output,skills\n"
        b"Name a colour.,Blue,m1,Red,Comprehension|Conciseness\n"
        b"Name a colour.,Blue,m2,Green,Comprehension|Conciseness\n"
        b'"Say ""hi"".",,m1,hi,"[""Readability""]"\n'
    )
    mapping = parse_mapping(
        ["instruction=prompt", "reference=gold", "model=system", "response=output"]
    )

    result = parse_generic(
        data, file="d.csv", fmt="csv", skill_lookup=LOOKUP, mapping=mapping
    )

    assert result.problems == []
    assert [(r.text, r.reference_answer, r.skills) for r in result.instructions] == [
        ("Name a colour.", "Blue", ["comprehension", "conciseness"]),
        ('Say "hi".', "", ["readability"]),
    ]
    assert [
        (r.instruction_external_id, r.model_name, r.text) for r in result.responses
    ] == [
        (derived_id("Name a colour."), "m1", "Red"),
        (derived_id("Name a colour."), "m2", "Green"),
        (derived_id('Say "hi".'), "m1", "hi"),
    ]


def test_generic_derived_id_depends_only_on_the_text():
    assert derived_id("Name a colour.") == derived_id("Name a colour.")
    assert derived_id("Name a colour.") != derived_id("Name a colour!")
    assert derived_id("x").startswith("sha1-")


def test_generic_csv_missing_column_names_it_and_lists_the_header():
    data = b"question,answer\nWhy?,Because.\n"

    result = parse_generic(
        data,
        file="d.csv",
        fmt="csv",
        skill_lookup=LOOKUP,
        mapping={"instruction": "prompt"},
    )

    assert problem_texts(result) == [
        "d.csv, line 1: the CSV header has no column `prompt` (for field `instruction`); "
        "its columns are: question, answer"
    ]


def test_generic_jsonl_response_needs_a_model_unless_a_default_is_given():
    data = jsonl({"instruction": "Hi?", "response": "Hello."})

    without = parse_generic(data, file="d.jsonl", fmt="jsonl", skill_lookup=LOOKUP)
    with_default = parse_generic(
        data, file="d.jsonl", fmt="jsonl", skill_lookup=LOOKUP, default_model="m9"
    )

    assert problem_texts(without) == [
        "d.jsonl, line 1, field `model`: is missing; a row with a response must name its model"
    ]
    assert [(r.model_name, r.text) for r in with_default.responses] == [
        ("m9", "Hello.")
    ]


def test_generic_same_id_with_different_text_is_refused():
    data = jsonl({"id": "a", "instruction": "One"}, {"id": "a", "instruction": "Two"})

    result = parse_generic(data, file="d.jsonl", fmt="jsonl", skill_lookup=LOOKUP)

    assert problem_texts(result) == [
        "d.jsonl, line 2: instruction 'a' was given on line 1 with different text or metadata"
    ]


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["instruction"], "expected FIELD=COLUMN"),
        (["prompt=instruction"], "unknown field 'prompt'"),
        (["instruction="], "the column name is empty"),
    ],
)
def test_bad_mapping_is_refused(pairs, message):
    with pytest.raises(ValueError, match=message):
        parse_mapping(pairs)


# --- The toolkit: one reader, one --map parser, one set of N/A words -------------------


def read(data: bytes, fmt: str, **kwargs) -> tuple[list, list[str]]:
    problems: list = []
    rows = list(read_rows(data, file="f", fmt=fmt, problems=problems, **kwargs))
    return rows, [str(p) for p in problems]


def test_csv_rows_keep_the_file_line_numbers_across_a_bom_blank_lines_and_crlf():
    data = b'\xef\xbb\xbfid,text\r\n1,one\r\n\r\n2,"two\r\nlines"\r\n3,\r\n'

    rows, problems = read(data, "csv")

    assert problems == []
    # The header's first column is `id`, not "\ufeffid"; a row spanning two lines is
    # numbered by the line it ends on; an empty cell is None.
    assert rows == [
        (2, {"id": "1", "text": "one"}),
        (5, {"id": "2", "text": "two\r\nlines"}),
        (6, {"id": "3", "text": None}),
    ]


def test_jsonl_rows_keep_the_file_line_numbers_and_skip_only_the_bad_lines():
    data = b'\xef\xbb\xbf{"a": 1}\n\n  \n{"a": \n[1]\n{"a": 2}\n'

    rows, problems = read(data, "jsonl")

    assert rows == [(1, {"a": 1}), (6, {"a": 2})]
    assert problems == [
        "f, line 4: invalid JSON (Expecting value at column 7)",
        "f, line 5: expected a JSON object, got list",
    ]


def test_csv_header_must_have_the_columns_asked_for_naming_field_and_column():
    rows, problems = read(
        b"question,answer\nWhy?,Because.\n",
        "csv",
        header_columns={"instruction": "prompt", "reference": "answer"},
    )

    assert rows == []
    assert problems == [
        "f, line 1: the CSV header has no column `prompt` (for field `instruction`); "
        "its columns are: question, answer"
    ]


def test_csv_row_with_more_cells_than_the_header_is_reported_and_skipped():
    rows, problems = read(b"a,b\n1,2\n1,2,3\n4,5\n", "csv")

    assert rows == [(2, {"a": "1", "b": "2"}), (4, {"a": "4", "b": "5"})]
    assert problems == [
        "f, line 3: has more cells than the header's 2 columns (3 cells)"
    ]


def test_csv_that_is_not_utf8_ends_at_that_line_and_names_it():
    # Streamed: the rows before it are read (the import is refused on the problem).
    rows, problems = read(b"a,b\n1,2\n\xff,3\n4,5\n", "csv")

    assert rows == [(2, {"a": "1", "b": "2"})]
    assert problems == [
        "f, line 3: not valid UTF-8 (byte 0xff at column 1); save the file as UTF-8"
    ]


def test_csv_read_is_not_stopped_by_problems_of_an_earlier_file():
    problems = [Problem("a problem of another file", file="other.csv")]

    rows = list(read_rows(b"a\n1\n", file="f", fmt="csv", problems=problems))

    assert rows == [(2, {"a": "1"})]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("data", [b"", b" \n\r\n"])
def test_an_empty_file_is_reported_in_both_formats(fmt, data):
    assert read(data, fmt) == ([], ["f: the file is empty"])


def test_field_map_reads_lists_and_objects_and_strips_names():
    fields = ("prompt", "label")

    assert parse_field_map([" prompt = question ", "label=vote"], fields) == {
        "prompt": "question",
        "label": "vote",
    }
    assert parse_field_map({" prompt": "question "}, fields) == {"prompt": "question"}
    assert parse_field_map(None, fields) == {}


@pytest.mark.parametrize(
    ("pairs", "distinct", "message"),
    [
        (["prompt"], False, "--map 'prompt': expected FIELD=COLUMN"),
        (
            ["colour=x"],
            False,
            "--map colour=x: unknown field 'colour'; fields are prompt, label",
        ),
        ({"label": " "}, False, "--map label=: the column name is empty"),
        (
            ["prompt=label"],
            True,
            "--map: two fields would be read from the same column 'label'",
        ),
    ],
)
def test_field_map_errors_name_the_option_and_the_spec(pairs, distinct, message):
    with pytest.raises(ValueError) as caught:
        parse_field_map(pairs, ("prompt", "label"), distinct_columns=distinct)

    assert str(caught.value) == message


def test_field_map_allows_a_shared_column_unless_asked_not_to():
    assert parse_field_map(["prompt=label"], ("prompt", "label")) == {"prompt": "label"}


NA_SPELLINGS = [
    "N/A",
    "n/a",
    "NA",
    "n.a.",
    "N.A",
    "None",
    "NULL",
    "not applicable",
    "Not-Applicable",
    "not_applicable",
    "notapplicable",
    " **N/A** ",
    '"n/a"',
]


@pytest.mark.parametrize("word", NA_SPELLINGS)
def test_na_words_are_recognised_in_any_spelling(word):
    assert is_na(word)


@pytest.mark.parametrize("value", ["", "no", "nan", "n", "4", "tie", "-1", None, 0])
def test_other_values_are_not_na(value):
    assert not is_na(value)


@pytest.mark.parametrize("word", sorted(NA_WORDS))
def test_every_annotation_importer_reads_every_na_word_alike(word):
    assert parse_score(word) == (True, None, "")
    assert parse_presented_verdict(word, "one-based") == ("", "")
    assert parse_original_verdict(word, "one-based") == ("", "")
    result = parse_one(difficulty=word, domain=["Math", word])
    assert result.problems == []
    assert (result.instructions[0].difficulty, result.instructions[0].domains) == (
        None,
        ["math"],
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (4, (True, 4)),
        ("5", (True, 5)),
        (" 3.0 ", (True, 3)),
        ("'2'", (True, 2)),
        ("N/A", (True, None)),
        ("na", (True, None)),
        ("none", (True, None)),
        (None, (True, None)),
        (7, (False, None)),
        (0, (False, None)),
        (3.5, (False, None)),
        ("seven", (False, None)),
        ("", (False, None)),
        (True, (False, None)),
    ],
)
def test_parse_score_accepts_numbers_numeric_strings_and_na(value, expected):
    ok, score, _ = parse_score(value)
    assert (ok, score) == expected


def test_parse_score_refuses_an_empty_csv_cell_asking_for_na():
    assert parse_score(None, csv_cell=True) == (
        False,
        None,
        "is empty; write a score 1-5 or N/A",
    )


# --- The real release (skipped when absent) --------------------------------------------


def test_real_eval_set_parses_with_sentinels_as_unknown(flask_data):
    data = (flask_data / "evaluation_set" / "flask_evaluation.jsonl").read_bytes()

    result = parse_eval_set(data, file="flask_evaluation.jsonl", skill_lookup=LOOKUP)

    assert result.problems == []
    assert len(result.instructions) == 1740
    assert sum(r.difficulty is None for r in result.instructions) == 2
    raw = [json.loads(line) for line in data.decode().splitlines()]
    with_sentinel = {str(r["idx"]) for r in raw if "-1" in r["domain"]}
    assert len(with_sentinel) == 11
    for record in result.instructions:
        if record.external_id in with_sentinel:
            assert "-1" not in record.domains and len(record.domains) <= 1
    # Every instance has its 3 skills, except idx 1417, which the release gives 2.
    assert sorted(len(r.skills) for r in result.instructions)[:2] == [2, 3]
