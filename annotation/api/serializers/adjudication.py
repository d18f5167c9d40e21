"""Serializers of the adjudication API (`annotation.api.adjudication`)."""

from __future__ import annotations

from rest_framework import serializers

from annotation.models import Campaign


class AdjudicationRuleSerializer(serializers.Serializer):
    adjudication_range = serializers.IntegerField(
        help_text="Ordinal criteria: scores spanning at least this many points are "
        "disputed (0: never)"
    )
    adjudication_split = serializers.ChoiceField(
        choices=Campaign.SplitRule.choices,
        help_text="Categorical criteria: no_majority, any (labels differ) or off",
    )


class AdjudicationInputSerializer(serializers.Serializer):
    criterion = serializers.CharField(help_text="The criterion's key (or id)")
    score = serializers.JSONField(
        help_text='As a rater gives it: a point, a label, or null / "N/A"'
    )
    note = serializers.CharField(help_text="Why; required", allow_blank=True)


class AdjudicationOutputSerializer(serializers.Serializer):
    response_id = serializers.IntegerField()
    criterion = serializers.CharField()
    score = serializers.CharField(help_text='The settled value\'s label ("N/A")')
    note = serializers.CharField()
    by = serializers.CharField()
    at = serializers.DateTimeField()


class QueueCriterionSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    name = serializers.CharField()
    split = serializers.CharField(help_text="How the raters split; empty if no longer")
    settled = serializers.CharField(help_text="The settled label; empty if open")


class QueueRowSerializer(serializers.Serializer):
    response_id = serializers.IntegerField()
    instruction_id = serializers.IntegerField()
    model = serializers.CharField()
    open = serializers.BooleanField()
    criteria = QueueCriterionSerializer(many=True)


class AdjudicationQueueOutputSerializer(serializers.Serializer):
    campaign_id = serializers.IntegerField()
    rule = AdjudicationRuleSerializer()
    state = serializers.CharField()
    page = serializers.IntegerField()
    pages = serializers.IntegerField()
    open_responses = serializers.IntegerField()
    settled_responses = serializers.IntegerField()
    open_criteria = serializers.IntegerField()
    settled_criteria = serializers.IntegerField()
    results = QueueRowSerializer(many=True)


class RatingSerializer(serializers.Serializer):
    rater = serializers.CharField()
    score = serializers.CharField()
    rationale = serializers.CharField()
    excluded = serializers.BooleanField()


class ItemCriterionSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    name = serializers.CharField()
    scale = serializers.CharField()
    disputed = serializers.BooleanField()
    ratings = RatingSerializer(many=True)
    adjudication = AdjudicationOutputSerializer(allow_null=True)


class HistoryEventSerializer(serializers.Serializer):
    when = serializers.DateTimeField()
    who = serializers.CharField()
    kind = serializers.CharField(help_text="score, adjudication, exclude or pause")
    action = serializers.CharField()
    rater = serializers.CharField()
    response_id = serializers.IntegerField(allow_null=True)
    criterion = serializers.CharField()
    before = serializers.CharField()
    after = serializers.CharField()
    note = serializers.CharField()


class AdjudicationItemOutputSerializer(serializers.Serializer):
    campaign_id = serializers.IntegerField()
    response_id = serializers.IntegerField()
    instruction_id = serializers.IntegerField()
    model = serializers.CharField()
    criteria = ItemCriterionSerializer(many=True)
    critiques = serializers.ListField(child=serializers.DictField())
    history = HistoryEventSerializer(many=True)
    next_open = serializers.IntegerField(allow_null=True)
