"""Log a researcher's exclusion decisions (`annotation.RaterExclusion`) as a change of
their campaign's inputs, so that a cached agreement result never outlives one."""

from django.db import migrations

from analysis.migrations._campaign_log import creator, dropper

TABLE = "annotation_raterexclusion"


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0001_inputchange"),
        ("annotation", "0017_rater_reliability"),
    ]

    operations = [migrations.RunPython(creator(TABLE), dropper(TABLE))]
