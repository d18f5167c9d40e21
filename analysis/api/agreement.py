"""Agreement API: the dashboard's numbers for notebooks and scripts.

    GET /api/datasets/{id}/agreement/?campaign=1&run=4&run=5[&reference_run=6][&retest=1]
        [&slice=difficulty:3][&n_boot=1000][&seed=0]
    GET /api/datasets/{id}/agreement/sources/
    GET /api/datasets/{id}/agreement/slices/
    GET /api/datasets/{id}/agreement/disagreements/?campaign=1&run=4&skill=KEY[&slice=..][&limit=25]

Without `campaign` or `run`, the defaults of `agreement_defaults` (the dashboard's and
the command's too); the result's `defaults` says which were used. The endpoints about
one run (disagreements, probes) take the first default run, as the dashboard's
drill-down does. Researchers and
admins only (raters 403, anonymous 401). Bad parameters give 400 with the parameter
named in `problems[].field`. Responses are the JSON documented in
`analysis.selectors.agreement`. A large selection whose table is not in the cache
(`analysis.services.agreement`) answers 202 with its background job (`GET
/api/jobs/{id}/`, also in `Location`); the same GET answers 200 from the cache once
the job is done.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.api.jobs import job_dict
from analysis.models import Job
from analysis.selectors.agreement import (
    HUMAN_REFERENCES,
    JUDGE_SCORES,
    AgreementError,
    agreement_defaults,
    agreement_disagreements,
    agreement_slice_values,
    agreement_sources_for_user,
)
from analysis.selectors.budget import boot_budget_check
from analysis.selectors.classification import classification_for_agreement
from analysis.services.agreement import agreement_for_request
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.datasets import ProblemOutputSerializer
from flaskapp.api import query_data, refusal, validated
from flaskapp.bounds import DISAGREEMENT_LIMIT, ID, N_BOOT, SEED
from flaskapp.errors import DomainError, Problem
from flaskapp.throttling import HeavyApiMixin

REFUSED = OpenApiResponse(
    ProblemOutputSerializer, description="Bad input: each problem names its parameter."
)


class AgreementInputSerializer(serializers.Serializer):
    campaign = serializers.ListField(
        child=serializers.IntegerField(**ID.field_kwargs()), required=False
    )
    run = serializers.ListField(
        child=serializers.IntegerField(**ID.field_kwargs()), required=False
    )
    crun = serializers.ListField(
        child=serializers.IntegerField(**ID.field_kwargs()), required=False
    )
    reference_run = serializers.IntegerField(
        required=False, allow_null=True, **ID.field_kwargs()
    )
    retest = serializers.BooleanField(required=False, default=False)
    human_reference = serializers.ChoiceField(
        choices=HUMAN_REFERENCES, required=False, default="raters"
    )
    judge_score = serializers.ChoiceField(
        choices=JUDGE_SCORES, required=False, default="integer"
    )
    slice = serializers.RegexField(
        r"^(|[a-z]+(\.[A-Za-z0-9_][A-Za-z0-9_ .\-]{0,63})?:.*)$",
        required=False,
        allow_blank=True,
        default="",
    )
    n_boot = serializers.IntegerField(
        required=False, default=1000, **N_BOOT.field_kwargs()
    )
    seed = serializers.IntegerField(required=False, default=0, **SEED.field_kwargs())
    skill = serializers.CharField(required=False, allow_blank=True, default="")
    limit = serializers.IntegerField(
        required=False, default=25, **DISAGREEMENT_LIMIT.field_kwargs()
    )


def agreement_params(request) -> dict:
    """The agreement query (repeatable campaign/run/crun) validated, the slice split
    into ``slice_dim`` and ``slice_value``; a `DomainError` names each bad one."""
    out = validated(
        AgreementInputSerializer, query_data(request, ("campaign", "run", "crun"))
    )
    dim, _, value = out.pop("slice", "").partition(":")
    out["slice_dim"], out["slice_value"] = dim, value
    return out


def judge_score_kwargs(p: dict) -> dict:
    """`agreement_compute`'s ``judge_score`` from the query, given only when not
    the default (the default's cache keys and jobs stay as they were)."""
    score = p.get("judge_score", "integer")
    return {} if score == "integer" else {"judge_score": score}


def agreement_refusal(exc: AgreementError) -> DomainError:
    """`AgreementError` ("field: message") as the 400 naming its field."""
    return refusal(exc, "Agreement refused")


QUERY = [
    OpenApiParameter(
        "campaign",
        OpenApiTypes.INT,
        many=True,
        description="Campaign ids (default: every pointwise campaign)",
    ),
    OpenApiParameter(
        "run",
        OpenApiTypes.INT,
        many=True,
        description="Judge run ids (default: per judge, its latest finished run "
        "with scores)",
    ),
    OpenApiParameter("reference_run", OpenApiTypes.INT, description="Judge vs judge"),
    OpenApiParameter("retest", OpenApiTypes.BOOL, description="Sample 0 vs sample 1"),
    OpenApiParameter(
        "human_reference",
        OpenApiTypes.STR,
        enum=list(HUMAN_REFERENCES),
        description="raters (default), or adjudicated: a reviewer's settled value "
        "in place of the raters' scores where a dispute was adjudicated",
    ),
    OpenApiParameter(
        "judge_score",
        OpenApiTypes.STR,
        enum=list(JUDGE_SCORES),
        description="integer (default), or expected: the correlations on the "
        "judge's probability-weighted score (QWK and exact stay on its integer)",
    ),
    OpenApiParameter(
        "slice", OpenApiTypes.STR, description="DIM:VALUE (domain, difficulty, ...)"
    ),
    OpenApiParameter("n_boot", OpenApiTypes.INT, description="Bootstrap resamples"),
    OpenApiParameter("seed", OpenApiTypes.INT),
]


def agreement_budget_check(request, dataset, p: dict) -> None:
    """The bootstrap budget of one request (`analysis.selectors.budget`): a 400
    naming ``n_boot`` with the largest value allowed for this selection when it was
    asked for; the default shrinks to that value (the result's ``n_boot``)."""
    p["n_boot"] = boot_budget_check(
        dataset=dataset, n_boot=p["n_boot"],
        explicit=bool(request.query_params.get("n_boot", "").strip()),
        campaign_ids=p.get("campaign"),
        run_ids=p.get("run"), reference_run_id=p.get("reference_run"),
        retest=p.get("retest", False),
    )  # fmt: skip


class AgreementApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=QUERY,
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = agreement_params(request)
        agreement_budget_check(request, dataset, p)
        try:
            result = agreement_for_request(
                user=request.user,
                dataset=dataset,
                campaign_ids=p.get("campaign", []),
                run_ids=p.get("run", []),
                reference_run_id=p.get("reference_run"),
                retest=p["retest"],
                human_reference=p.get("human_reference", "raters"),
                slice_dim=p["slice_dim"],
                slice_value=p["slice_value"],
                n_boot=p["n_boot"],
                seed=p["seed"],
                **judge_score_kwargs(p),
            )
        except AgreementError as exc:
            raise agreement_refusal(exc) from exc
        if isinstance(result, Job):
            # A large table not in the cache: its job computes and caches it; the
            # same GET answers 200 from the cache once the job is done.
            body = job_dict(result)
            return Response(body, status=202, headers={"Location": body["status_url"]})
        # The categorical criteria's figures, when the rubric has any.
        categorical = classification_for_agreement(dataset=dataset, result=result)
        if categorical is not None:
            result = result.with_extra(categorical=categorical)
        return Response(result.to_dict())


class AgreementSourcesApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["agreement"], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        return Response(agreement_sources_for_user(user=request.user, dataset=dataset))


class AgreementSlicesApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["agreement"], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        return Response(agreement_slice_values(dataset=dataset))


def _one_run(dataset, p: dict) -> tuple[list[int], int]:
    """(campaign ids, run id) for an endpoint about one judge run: what was given,
    else the defaults (`agreement_defaults`: every pointwise campaign, and the first
    default run, as the dashboard's drill-down takes it). Refuses, naming `run`, more
    than one run, or none when there is no default."""
    runs = p.get("run", [])
    campaign_ids = p.get("campaign", [])
    if not runs or not campaign_ids:
        defaults = agreement_defaults(dataset=dataset)
        runs = runs or defaults.run_ids[:1]
        campaign_ids = campaign_ids or defaults.campaign_ids
    if len(runs) != 1:
        why = (
            "give one judge run, not several"
            if runs
            else "no finished judge run with scores on this dataset: give one"
        )
        raise DomainError("Bad parameters", [Problem(why, field="run")])
    return campaign_ids, runs[0]


class AgreementDisagreementsApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=[
            *QUERY[:2],
            QUERY[4],
            OpenApiParameter("skill", OpenApiTypes.STR, description="Skill key"),
            OpenApiParameter("limit", OpenApiTypes.INT, description="At most 500"),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = agreement_params(request)
        campaign_ids, run_id = _one_run(dataset, p)
        try:
            items = agreement_disagreements(
                dataset=dataset,
                campaign_ids=campaign_ids,
                run_id=run_id,
                skill_key=p["skill"],
                slice_dim=p["slice_dim"],
                slice_value=p["slice_value"],
                limit=p["limit"],
            )
        except AgreementError as exc:
            raise agreement_refusal(exc) from exc
        return Response({"items": items})


class MetaevalApi(HeavyApiMixin, APIView):
    """GET /api/datasets/{id}/metaeval/?run=..&crun=..&campaign=..&n_boot=..&seed=..
    &sections=JSON

    Pairwise runs (`run`, default: every non-probe pairwise run) against the human
    preferences, and classification runs (`crun`, default: every run with labels on
    a categorical criterion) against the human majority of the chosen `campaign`s
    (default: the agreement defaults) under ``classification`` (the shape of
    `GET /api/datasets/{id}/classification/`; null when the dataset has none). A
    dataset with classification runs and no pairwise run answers with ``runs: []``;
    one with neither is a 400 naming `run`."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=[
            QUERY[1],
            OpenApiParameter(
                "crun",
                OpenApiTypes.INT,
                many=True,
                description="Classification run ids (default: every run with labels "
                "on a categorical criterion)",
            ),
            QUERY[0],
            QUERY[5],
            QUERY[6],
            OpenApiParameter(
                "sections", OpenApiTypes.STR, description='JSON {"section": [subsets]}'
            ),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        from analysis.selectors.metaeval import (
            MetaevalError,
            metaeval_with_classification,
            parse_sections,
        )

        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = agreement_params(request)
        try:
            sections_text = request.query_params.get("sections", "")
            if sections_text and not sections_text.lstrip().startswith("{"):
                raise MetaevalError("sections: give JSON text, not a file name")
            result = metaeval_with_classification(
                dataset=dataset,
                run_ids=p.get("run", []),
                crun_ids=p.get("crun", []),
                campaign_ids=p.get("campaign", []),
                sections=parse_sections(sections_text),
                n_boot=p["n_boot"],
                seed=p["seed"],
            )
        except MetaevalError as exc:
            raise agreement_refusal(exc) from exc
        return Response(result)


class PointwiseProbesApi(HeavyApiMixin, APIView):
    """GET /api/datasets/{id}/probes/?campaign=..&run=ID: length, inflation, halo."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=[*QUERY[:2], QUERY[5], QUERY[6]],
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        from analysis.selectors.metaeval import pointwise_probes

        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = agreement_params(request)
        campaign_ids, run_id = _one_run(dataset, p)
        try:
            result = pointwise_probes(
                dataset=dataset,
                campaign_ids=campaign_ids,
                run_id=run_id,
                n_boot=p["n_boot"],
                seed=p["seed"],
            )
        except AgreementError as exc:
            raise agreement_refusal(exc) from exc
        return Response(result)
