"""HTML forms: parse and check what a person typed; the services do the rest."""

from __future__ import annotations

import json

from django import forms

from annotation import selectors as selectors
from annotation.models import DATASET_FORMAT_CHOICES, ImportJob, Rubric
from flaskapp import limits
from flaskapp.untrusted import JSONInputError, json_loads

FORMAT_HELP = {
    ImportJob.Format.FLASK: (
        "A FLASK evaluation set, one JSON object per line, in the current schema "
        "(idx, instruction, answer, task, skill, domain, difficulty) or the legacy one "
        "(question_id, text, answer, task, metrics, domain_labeled, difficulty_labeled)."
    ),
    ImportJob.Format.FLASK_OUTPUTS: (
        "Model outputs for an existing dataset: one or more JSONL files of "
        '{"question_id": ..., "text": ...}. The model name comes from the file name '
        "(gpt4.jsonl is gpt4), from the model name field below, or from a per-line "
        '"model" field.'
    ),
    ImportJob.Format.JSONL: (
        "Any JSON Lines file with instruction and optionally id, reference, response, "
        "model, task, domains, difficulty, skills, checklist, score_rubric (an "
        "instruction's own rubric), and human scores: a key named like a criterion "
        "of the rubric (or score.KEY, or a scores object) holds its score, with "
        "optional rater and rationale. Map other key names below "
        "(score.KEY=column for a score)."
    ),
    ImportJob.Format.CSV: (
        "A CSV file with a header row, with the same fields as generic JSONL (a "
        "column per criterion for human scores; an empty cell is not scored, N/A "
        "must be written). Map your column names to fields below (field=column, one "
        "per line)."
    ),
}


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several uploaded files under one name (the pattern from Django's docs)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        files = list(data) if isinstance(data, list | tuple) else [data]
        # No file at all is cleaned as one missing file: "This field is required."
        return [single(d, initial) for d in files or [None]]


class ImportForm(forms.Form):
    dataset_name = forms.CharField(
        max_length=200,
        help_text="An existing dataset receives the new rows; a new name creates one.",
    )
    # No default: a guessed format turned a generic file into one identical error
    # per line (issue 37), so the person says what the file is.
    format = forms.ChoiceField(
        choices=[("", "Choose the file's format"), *DATASET_FORMAT_CHOICES],
        error_messages={
            "required": "Choose the file's format: the list on the right says "
            "what each one expects."
        },
    )
    files = MultipleFileField(help_text="One or more files; several for model outputs.")
    mapping = forms.CharField(
        required=False,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "instruction=prompt", "class": "mono"}
        ),
        label="Field mapping",
        help_text="Generic JSONL/CSV only: field=column, one per line.",
    )
    model = forms.CharField(
        required=False,
        max_length=200,
        label="Model name",
        help_text="Model outputs only: the model's name when uploading one file.",
    )
    hard = forms.BooleanField(required=False, label="Mark as FLASK-Hard")
    strict = forms.BooleanField(
        required=False,
        label="Strict: refuse the file if it has warnings",
        help_text="Without it, warnings (e.g. an empty response) are listed and the "
        "rows imported.",
    )
    rubric = forms.ModelChoiceField(
        queryset=Rubric.objects.none(),
        required=False,
        empty_label="Built-in FLASK rubric",
        help_text="Only used when the import creates a new dataset.",
    )
    description = forms.CharField(
        required=False,
        max_length=limits.DESCRIPTION,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Only used when the import creates a new dataset.",
    )

    taxonomy = forms.CharField(
        required=False,
        max_length=100_000,
        widget=forms.Textarea(
            attrs={
                "rows": 3,
                "class": "mono",
                "placeholder": '{"domains": ["billing", "shipping"], '
                '"difficulty": {"1": "routine", "2": "tricky"}}',
            }
        ),
        label="Own taxonomy (JSON)",
        help_text="Generic JSONL/CSV, a new dataset: its own domains, difficulty "
        "levels with labels and facets; empty: FLASK's.",
    )
    split = forms.CharField(
        required=False,
        max_length=200,
        label="Split",
        help_text="A zipped Hugging Face dataset with several splits: the one to "
        "import.",
    )
    facets = forms.CharField(
        required=False,
        max_length=2000,
        label="Facet columns",
        help_text="Generic JSONL/CSV, a new dataset: categorical columns the "
        "dashboards slice by, comma-separated (values taken from the file).",
    )

    def __init__(self, *args, workspace=None, **kwargs):
        super().__init__(*args, **kwargs)
        # The built-in rubrics and the import's workspace's (None: built-in only).
        self.fields["rubric"].queryset = selectors.rubric_list(
            workspace=workspace
        ).filter(**({} if workspace is not None else {"workspace__isnull": True}))

    def clean_taxonomy(self):
        """The declaration as parsed JSON (None when empty); its content is the
        import's to check (`annotation.importers.taxonomy`)."""
        text = self.cleaned_data["taxonomy"].strip()
        if not text:
            return None
        try:
            return json_loads(text)
        except (JSONInputError, json.JSONDecodeError) as exc:
            raise forms.ValidationError(
                f"This is not valid JSON ({str(exc)[:120]})."
            ) from exc

    def clean_facets(self) -> list[str]:
        return [f.strip() for f in self.cleaned_data["facets"].split(",") if f.strip()]

    def import_options(self) -> dict:
        """The service's `options` from the cleaned data (only the fields given)."""
        data = self.cleaned_data
        options: dict = {}
        mapping = [
            line.strip() for line in data["mapping"].splitlines() if line.strip()
        ]
        if mapping:
            options["mapping"] = mapping
        if data["model"]:
            options["model"] = data["model"]
        if data["hard"]:
            options["hard"] = True
        if data["strict"]:
            options["strict"] = True
        if data["rubric"] is not None:
            options["rubric_id"] = data["rubric"].pk
        if data["description"]:
            options["description"] = data["description"]
        if data["taxonomy"] is not None:
            options["taxonomy"] = data["taxonomy"]
        if data["facets"]:
            options["facets"] = data["facets"]
        if data["split"].strip():
            options["split"] = data["split"].strip()
        return options


class RubricImportForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        required=False,
        initial="FLASK official",
        help_text="An existing name gets a new version; a new name starts at version 1. "
        "Empty: the name in the file (FLASK's file: FLASK official).",
    )
    file = forms.FileField(
        label="Rubric file",
        help_text="Our rubric file (YAML or JSON: any scale 2-11 points or a set of "
        "labels; see the README) or FLASK's skillset_description.json (a JSON array "
        "of {Skill, Criteria, Scoring}); recognised by content.",
    )


class TaxonomyForm(forms.Form):
    """The dataset page's edit of its taxonomy: the declaration as JSON (empty:
    FLASK's built-in); its content is `dataset_taxonomy_update`'s to check."""

    taxonomy = forms.CharField(
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 14, "class": "mono"}),
        label="Taxonomy (JSON)",
        help_text='{"domains": [{"key", "label"}, ...], "difficulty": {"1": label, '
        '...}, "facets": [{"name", "values"}, ...]}; empty: FLASK\'s.',
    )

    def clean_taxonomy(self):
        text = self.cleaned_data["taxonomy"].strip()
        if not text:
            return None
        try:
            return json_loads(text)
        except (JSONInputError, json.JSONDecodeError) as exc:
            raise forms.ValidationError(
                f"This is not valid JSON ({str(exc)[:120]})."
            ) from exc
