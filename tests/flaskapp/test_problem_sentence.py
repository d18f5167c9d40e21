"""`Problem.sentence`: a form's plain sentence, without the API's markup (issue 37,
defect 11: "field `password`: ..." on forms)."""

from flaskapp.errors import Problem


def test_a_verb_message_reads_on_after_the_field_name():
    problem = Problem("is empty: say why", field="reason")
    assert problem.sentence == "Reason is empty: say why."
    assert (
        "`" not in problem.sentence
        and str(problem) == "field `reason`: is empty: say why"
    )


def test_a_message_that_is_a_sentence_stays_as_it_is():
    problem = Problem("This password is too short.", field="password")
    assert problem.sentence == "This password is too short."


def test_a_noun_message_gets_a_colon_and_a_line_comes_first():
    problem = Problem("unknown domain 'Astrology'", line=3, field="domain")
    assert problem.sentence == "Line 3: Domain: unknown domain 'Astrology'."
    assert Problem("no such run").sentence == "No such run."
