"""The one upload page: every import kind from the browser (issue 35).

One URL, three steps, each a POST naming its `step`:

1. ``sniff``: the file (a plain file input; `static/js/upload.js` adds the drop zone)
   is staged and sniffed; the page shows the guess (kind, format, the columns read and
   the proposed field mapping), every part of it changeable.
2. ``check``: the chosen kind checks the file and writes nothing. A dataset goes to its
   import job's page (the preview, per-line problems and the confirm button of every
   dataset import); another kind shows what a confirm would create, or each problem
   with its line and field.
3. ``confirm``: the import, all or nothing, then its page (the rubric, the gold items,
   the run, the dataset).

With htmx each step answers the `#upload-step` fragment (a redirect as HX-Redirect).
Researchers and admins only (`roles.require_researcher`): a rater is refused with a
403 naming the role, and never sees a link to this page.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from annotation import selectors
from annotation.importers import sniff
from annotation.services.uploads import (
    EXISTING_DATASET,
    NEW_DATASET,
    NO_DATASET,
    REGISTRY,
    UploadRequest,
    upload_discard,
    upload_sniff,
    upload_stage,
    upload_staged,
)
from flaskapp import roles
from flaskapp.errors import DomainError, Problem
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from flaskapp.optional import PARQUET
from flaskapp.workspaces import RESEARCHER, current_workspace, require_workspace_role

TEMPLATE = "annotation/upload_new.html"
FRAGMENT = "upload-step"


class UploadFileForm(forms.Form):
    file = forms.FileField(label="File")


class UploadChoiceForm(forms.Form):
    """The guess as the person leaves it: kind, format, mapping and the kind's target."""

    token = forms.CharField(widget=forms.HiddenInput, max_length=32)
    kind = forms.ChoiceField(label="Import kind")
    format = forms.ChoiceField(label="Format")
    mapping = forms.CharField(
        required=False,
        label="Field mapping",
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
        help_text="field=column, one per line (dataset rows, preferences and judge "
        "scores; the FLASK formats, gold items and rubrics read fixed names).",
    )
    dataset_name = forms.CharField(
        required=False,
        max_length=200,
        label="Dataset",
        help_text="Datasets and preference sets: an existing dataset receives the "
        "rows, a new name creates one. Gold items and judge results: an existing "
        "dataset.",
    )
    rubric = forms.ModelChoiceField(
        queryset=None,
        required=False,
        empty_label="Built-in FLASK rubric",
        label="Rubric of a new dataset",
    )
    rubric_name = forms.CharField(
        required=False,
        max_length=100,
        label="Rubric name",
        help_text="Rubric files: an existing name gets a new version; empty: the name "
        "in the file.",
    )
    model = forms.CharField(
        required=False,
        max_length=200,
        label="Model name",
        help_text="FLASK model outputs and review files: the model, when the file "
        "name does not say it.",
    )
    strict = forms.BooleanField(
        required=False, label="Strict: refuse the file if it has warnings"
    )

    def __init__(self, *args, user, workspace, **kwargs):
        """`workspace`: the one the upload goes into (the request's current one)."""
        super().__init__(*args, **kwargs)
        self.user = user
        self.workspace = workspace
        self.fields["kind"].choices = [(k.key, k.label) for k in REGISTRY.values()]
        self.fields["format"].choices = list(sniff.FORMAT_LABELS.items())
        self.fields["rubric"].queryset = selectors.rubric_list(
            user=user, workspace=workspace
        )

    def clean(self):
        data = super().clean()
        kind = REGISTRY.get(data.get("kind", ""))
        if kind is None:
            return data
        fmt = data.get("format")
        allowed = kind.formats
        if fmt and fmt not in allowed:
            self.add_error("format", f"{kind.label} reads one of: {', '.join(allowed)}")
        mapping = [
            line.strip()
            for line in (data.get("mapping") or "").splitlines()
            if line.strip()
        ]
        if mapping and not (kind.takes_mapping and fmt in ("jsonl", "csv")):
            self.add_error(
                "mapping", "this kind and format read fixed names: leave it empty"
            )
        data["mapping_lines"] = mapping
        name = (data.get("dataset_name") or "").strip()
        data["dataset"] = None
        if kind.dataset != NO_DATASET:
            if not name:
                self.add_error("dataset_name", "name the dataset")
            else:
                data["dataset"] = (
                    selectors.dataset_list_for_user(
                        user=self.user, workspace=self.workspace
                    )
                    .filter(name=name)
                    .first()
                )
                if data["dataset"] is None and kind.dataset == EXISTING_DATASET:
                    self.add_error(
                        "dataset_name",
                        f"no dataset named “{name}”; {kind.label.lower()} go into "
                        "an existing dataset",
                    )
        return data

    def upload_request(self, *, file: str, data: bytes) -> UploadRequest:
        clean = self.cleaned_data
        return UploadRequest(
            user=self.user,
            workspace=self.workspace,
            file=file,
            data=data,
            kind=clean["kind"],
            fmt=clean["format"],
            mapping=clean["mapping_lines"],
            dataset_name=(clean.get("dataset_name") or "").strip(),
            dataset=clean["dataset"],
            rubric_id=clean["rubric"].pk if clean.get("rubric") else None,
            rubric_name=(clean.get("rubric_name") or "").strip(),
            model=(clean.get("model") or "").strip(),
            strict=bool(clean.get("strict")),
        )


def _initial(guess: sniff.UploadGuess, token: str, dataset: str) -> dict:
    initial = {"token": token, "dataset_name": dataset}
    if guess.kind:
        initial["kind"] = guess.kind
        initial["format"] = guess.fmt
    else:
        initial["format"] = "csv" if guess.container.endswith("csv") else "jsonl"
        if guess.candidates:
            initial["kind"] = guess.candidates[0]
    initial["mapping"] = "\n".join(guess.mapping_lines())
    return initial


def _page(request, context: dict, status: int = 200) -> HttpResponse:
    context.setdefault("step", "choose")
    context.setdefault("file_form", UploadFileForm())
    context.setdefault("problems", [])
    context["kinds"] = list(REGISTRY.values())
    # Each format with the kinds that read it: upload.js offers a kind's own formats.
    context["format_options"] = [
        (value, label, " ".join(k.key for k in REGISTRY.values() if value in k.formats))
        for value, label in sniff.FORMAT_LABELS.items()
    ]
    context["parquet"] = PARQUET.available()
    context["dataset_names"] = list(
        selectors.dataset_list_for_user(
            user=request.user, workspace=current_workspace(request)
        ).values_list("name", flat=True)[:500]
    )
    context["dataset_modes"] = {
        "new": NEW_DATASET,
        "existing": EXISTING_DATASET,
        "none": NO_DATASET,
    }
    return render_page_or_fragment(request, TEMPLATE, FRAGMENT, context, status=status)


def _go(request, url: str) -> HttpResponse:
    if wants_fragment(request):
        return HttpResponseClientRedirect(url)
    return redirect(url)


def _problems_of(exc: DomainError) -> list[Problem]:
    return list(exc.problems) or [Problem(exc.message)]


def _refused(exc: DomainError) -> dict:
    return {"problems": _problems_of(exc), "refusal": exc.message}


@login_required
@require_http_methods(["GET", "POST"])
def upload_new(request: HttpRequest) -> HttpResponse:  # noqa: C901 - the page's three steps, each a guarded branch naming its refusal
    """The upload page (see the module): GET the empty page; POST one step. Into
    the current workspace, for its researchers."""
    roles.require_researcher(request.user)
    workspace = current_workspace(request)
    if workspace is None:
        raise PermissionDenied("This needs the researcher role in a workspace.")
    require_workspace_role(request.user, workspace.pk, RESEARCHER)
    if request.method == "GET":
        return _page(request, {"dataset": request.GET.get("dataset", "")})
    step = request.POST.get("step", "")
    if step == "sniff":
        file_form = UploadFileForm(request.POST, request.FILES)
        if not file_form.is_valid():
            return _page(request, {"file_form": file_form}, status=400)
        upload = file_form.cleaned_data["file"]
        try:
            token = upload_stage(
                user=request.user, name=upload.name, size=upload.size, read=upload.read
            )
        except DomainError as exc:
            return _page(request, _refused(exc), status=400)
        guess = upload_sniff(user=request.user, token=token)
        form = UploadChoiceForm(
            initial=_initial(guess, token, request.POST.get("dataset", "")),
            user=request.user,
            workspace=workspace,
        )
        context = {"step": "guess", "guess": guess, "form": form, "file": upload.name}
        return _page(request, context)
    if step not in ("check", "confirm"):
        return _page(
            request,
            {"problems": [Problem("choose a file first", field="step")]},
            status=400,
        )
    form = UploadChoiceForm(request.POST, user=request.user, workspace=workspace)
    token = request.POST.get("token", "")
    try:
        name, data = upload_staged(user=request.user, token=token)
    except DomainError as exc:
        return _page(request, _refused(exc), status=400)
    guess = upload_sniff(user=request.user, token=token)
    context = {"step": "guess", "guess": guess, "form": form, "file": name}
    if not form.is_valid():
        return _page(request, context, status=400)
    upload_request = form.upload_request(file=name, data=data)
    kind = REGISTRY[upload_request.kind]
    try:
        if step == "check":
            outcome = kind.check(upload_request)
        else:
            outcome = kind.confirm(upload_request)
    except DomainError as exc:
        context.update(_refused(exc))
        return _page(request, context, status=400)
    if step == "confirm" or outcome.redirect:
        upload_discard(user=request.user, token=token)
        if step == "confirm":
            messages.success(request, "Imported: " + "; ".join(outcome.summary) + ".")
        return _go(request, outcome.redirect)
    context.update(step="checked", kind=kind, outcome=outcome)
    return _page(request, context)
