"""Log adjudications (`annotation.Adjudication`) as a change of their campaign's
inputs, as 0002 does for exclusion decisions, so that a cached agreement result with
the adjudicated human reference never outlives one."""

from django.db import migrations

from analysis.migrations._campaign_log import creator, dropper

TABLE = "annotation_adjudication"


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0002_log_rater_exclusions"),
        ("annotation", "0018_adjudication_history"),
    ]

    operations = [migrations.RunPython(creator(TABLE), dropper(TABLE))]
