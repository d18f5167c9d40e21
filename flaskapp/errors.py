"""Domain errors: messages a person can act on, with the place (line, field) they concern."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import PermissionDenied

# A message starting with one of these reads on after the field's name.
_VERBS = frozenset(
    "is are was were may must has have had cannot can should does do needs "
    "contains lacks names".split()
)


@dataclass(frozen=True)
class Problem:
    """One problem found in input: where (file, line, field) and what is wrong."""

    message: str
    line: int | None = None
    field: str | None = None
    file: str | None = None

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field:
            where.append(f"field `{self.field}`")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    @property
    def sentence(self) -> str:
        """The problem as a plain sentence for a form, without the markup of
        `str()` (which the API and logs keep): "Password is too short." or, for a
        message that is a sentence of its own, the message; a line comes first."""
        message = self.message.strip().rstrip(".")
        if self.field and message[:1].islower():
            label = self.field.replace("_", " ").replace(".", " ").capitalize()
            verb = message.split(" ", 1)[0] in _VERBS
            message = f"{label} {message}" if verb else f"{label}: {message}"
        where = [self.file] if self.file else []
        if self.line is not None:
            where.append(f"line {self.line}")
        text = f"{', '.join(where)}: {message}" if where else message
        return f"{text[:1].upper()}{text[1:]}."

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "field": self.field,
            "message": self.message,
            "text": str(self),
        }


@dataclass
class DomainError(Exception):
    """A refused operation. Carries every problem found, not only the first."""

    message: str
    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        if not self.problems:
            return self.message
        shown = "; ".join(str(p) for p in self.problems[:5])
        more = f" (and {len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
        return f"{self.message}: {shown}{more}"

    def as_dict(self) -> dict:
        return {"detail": str(self), "problems": [p.as_dict() for p in self.problems]}


class ConflictError(DomainError):
    """A request that contradicts what is already stored (the API answers 409): e.g.
    a resubmit of a submitted assignment with other scores, which would otherwise be
    silently ignored. Amend the stored answer instead."""


class RatingRefused(PermissionDenied):
    """A removed rater's refusal: the message for people, `code` for clients (the API
    answers ``{"detail": message, "code": code}`` with a 403)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class TooManyRequests(Exception):
    """A refusal for now, not for ever: the user already has as much heavy work
    running as one person may (issue 34). A 429 with ``Retry-After`` (the API's
    handler, `flaskapp.api`; pages answer it with `flaskapp.throttling`)."""

    def __init__(self, message: str, retry_after: int = 10):
        super().__init__(message)
        self.retry_after = retry_after
