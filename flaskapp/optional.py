"""Features that need a package `make run` does not install, and the one check each
makes before it is used.

`requirements.txt` is the runtime `make run` installs, kept under 500 MB (issue 33).
Parquet is the one feature left out of it: pyarrow alone is 174 MB installed, about
30% of the environment, for one file format among three. It is listed in
`requirements-parquet.txt`, which the Dockerfile, `requirements-dev.txt` (so `make
test` and CI) and anyone who runs `pip install -r requirements-parquet.txt` install.
Without it, a Parquet upload is refused with a problem that names the file and says
how to enable it, and `format=parquet` is refused naming `format`; nothing else
changes. CSV and JSON Lines cover the same data.

Code that needs an optional package imports it inside the function that uses it,
after asking :meth:`OptionalPackage.available` here (tests/flaskapp/
test_requirements.py allows such a package only when it is listed in its
requirements file and the module's feature is one of :data:`PACKAGES`).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class OptionalPackage:
    """A distribution (`module` is what the code imports) that `feature` needs and
    `requirements` installs."""

    module: str
    feature: str
    requirements: str

    def available(self) -> bool:
        """True when `module` can be imported in this environment (looked up each
        time: cheap, and an install takes effect without a restart of the check)."""
        return importlib.util.find_spec(self.module) is not None

    def missing(self) -> str:
        """The sentence a user reads when the package is not installed."""
        return (
            f"{self.feature} need the optional package {self.module}, which this "
            f"server does not have (its administrator can install it with "
            f"`pip install -r {self.requirements}`); use CSV or JSON Lines instead"
        )


PARQUET = OptionalPackage(
    module="pyarrow", feature="Parquet files", requirements="requirements-parquet.txt"
)

# Hugging Face dataset directories (`Dataset.save_to_disk`'s Arrow files, read and
# written by annotation.importers.hub and analysis.exports.hub): pyarrow too.
HUB = OptionalPackage(
    module="pyarrow",
    feature="Hugging Face dataset directories",
    requirements="requirements-parquet.txt",
)

PACKAGES = (PARQUET, HUB)
