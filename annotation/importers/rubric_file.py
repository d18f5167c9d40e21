"""Our rubric file: any scale or label set, in JSON or YAML (pure parsing, no database).

    name: HelpSteer attributes
    description: Five attributes scored 0-4.
    groups: [{key: quality, name: Quality}]       # optional: one group "all"
    criteria:
      - key: helpfulness                          # a slug, unique in the rubric
        name: Helpfulness
        group: quality                            # one of `groups`
        kind: ordinal                             # ordinal (default) | categorical
        scale: {min: 0, max: 4}                   # 2-11 integer points
        anchors: {0: "Not helpful.", 4: "Perfectly helpful."}   # both ends at least
        allow_na: false                           # default true
        description: How useful the response is.
      - key: consistent
        name: Consistent with the source
        kind: categorical
        labels: [{key: "yes", name: "Yes"}, {key: "no", name: "No"}]   # 2-10

Every problem is collected with its line and field (a dotted path such as
`criteria[1].scale.min`, indices from 0). YAML gives each key its own line; JSON gives
the line of the object that holds it. A key given twice in any mapping is a problem,
never "last one wins". `parse_rubric_file` returns `RubricData` only when there is no
problem.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

import yaml

from flaskapp import limits
from flaskapp.errors import Problem
from flaskapp.limits import too_long
from flaskapp.untrusted import (
    LONG_INTEGER,
    MAX_JSON_DEPTH,
    int_text_problem,
    json_problem_line,
    text_problem,
)

SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")
MAX_KEY_LENGTH = 64
MAX_NAME_LENGTH = 100
MAX_NODES = 20_000  # far above any rubric; stops YAML alias bombs
MIN_POINTS, MAX_POINTS = 2, 11
MIN_LABELS, MAX_LABELS = 2, 10
DEFAULT_GROUP = {"key": "all", "name": "All criteria"}

TOP_FIELDS = {"name", "description", "groups", "criteria"}
GROUP_FIELDS = {"key", "name"}
CRITERION_FIELDS = {
    "key",
    "name",
    "group",
    "kind",
    "scale",
    "anchors",
    "labels",
    "allow_na",
    "description",
}
SCALE_FIELDS = {"min", "max"}
LABEL_FIELDS = {"key", "name", "description"}
KINDS = ("ordinal", "categorical")
# Mappings and lists may carry only their plain tags (scalars: the safe loader's).
TAGS = {
    yaml.MappingNode: "tag:yaml.org,2002:map",
    yaml.SequenceNode: "tag:yaml.org,2002:seq",
}


class Mapping(dict):
    """A mapping read from the file, with the line of each key (1-based)."""

    line: int | None = None
    key_lines: dict

    def line_of(self, key) -> int | None:
        return self.key_lines.get(key, self.line)


class Sequence(list):
    """A list read from the file, with its line."""

    line: int | None = None


@dataclass
class RubricData:
    """A valid rubric file: what `rubric_import` stores."""

    name: str
    description: str
    groups: list[dict]
    criteria: list[dict] = field(default_factory=list)


class _FileError(Exception):
    def __init__(self, problem: Problem):
        self.problem = problem


# --- Reading: JSON and YAML into Mapping / Sequence / scalars -----------------------------


def _read_json(text: str, file: str, problems: list[Problem]) -> Any:
    """JSON with the line of every object and duplicate keys reported."""
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    depth = [0]

    def parse_object(s_and_end, strict, scan_once, object_hook, pairs_hook, memo):
        start = s_and_end[1]
        depth[0] += 1
        if depth[0] > MAX_JSON_DEPTH:
            raise _FileError(
                Problem(
                    f"is nested more than {MAX_JSON_DEPTH} levels deep",
                    line=bisect_right(newlines, start) + 1,
                    file=file,
                )
            )
        try:
            pairs, end = json.decoder.JSONObject(
                s_and_end, strict, scan_once, None, lambda p: p, memo
            )
        finally:
            depth[0] -= 1
        mapping = Mapping()
        mapping.line = bisect_right(newlines, start - 1) + 1
        mapping.key_lines = {}
        for key, value in pairs:
            if key in mapping:
                problems.append(
                    Problem(
                        f"the key {key!r} appears twice in this object",
                        line=mapping.line,
                        field=key,
                        file=file,
                    )
                )
            mapping[key] = value
        return mapping, end

    def parse_array(s_and_end, scan_once):
        start = s_and_end[1]
        values, end = json.decoder.JSONArray(s_and_end, scan_once)
        sequence = Sequence(values)
        sequence.line = bisect_right(newlines, start - 1) + 1
        return sequence, end

    decoder = json.JSONDecoder()
    decoder.parse_object = parse_object
    decoder.parse_array = parse_array
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    try:
        return decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise _FileError(
            Problem(f"invalid JSON ({exc.msg})", line=exc.lineno, file=file)
        ) from exc
    except RecursionError as exc:
        raise _FileError(
            Problem(
                f"is nested more than {MAX_JSON_DEPTH} levels deep",
                line=json_problem_line(text),
                file=file,
            )
        ) from exc
    except ValueError as exc:  # not a syntax error: a number past int()'s limit
        raise _FileError(
            Problem(LONG_INTEGER, line=json_problem_line(text), file=file)
        ) from exc


# The events of libyaml's parser when PyYAML has it (50x faster), else PyYAML's own.
_EventLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_size_check(text: str, file: str) -> None:
    """Refuse YAML nested deeper than `MAX_JSON_DEPTH` or with more than `MAX_NODES`
    values, from its parser's events, before a node tree is built: composing the tree
    recurses once per level (a `RecursionError` on ``[[[[...``) and takes seconds for
    a few hundred thousand values. Syntax errors are left to the reader that follows,
    which reports them in its own words."""
    loader = _EventLoader(text)
    depth = nodes = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                continue
            elif not isinstance(event, yaml.NodeEvent):
                continue
            nodes += 1
            if depth > MAX_JSON_DEPTH or nodes > MAX_NODES:
                raise _FileError(
                    Problem(
                        "is too large or nested too deep",
                        line=event.start_mark.line + 1,
                        file=file,
                    )
                )
    except yaml.MarkedYAMLError as exc:
        # libyaml stops at 1,000 levels ("exceeded maximum nesting depth") where
        # PyYAML's own reader would recurse; other syntax errors are the reader's.
        if "nesting depth" in str(exc.problem) and exc.problem_mark is not None:
            raise _FileError(
                Problem(
                    "is too large or nested too deep",
                    line=exc.problem_mark.line + 1,
                    file=file,
                )
            ) from exc
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def _yaml_scalar(loader, node, file: str) -> Any:
    """A scalar node's value; one its constructor cannot build (an integer past
    `int()`'s digit limit, a date like 2024-13-45) is a problem with its line."""
    try:
        return loader.construct_object(node)
    except ValueError as exc:
        too_long = node.tag.endswith(":int") and int_text_problem(
            node.value.replace("_", "")
        )
        message = too_long or f"cannot be read as {node.tag.rsplit(':', 1)[-1]}"
        raise _FileError(
            Problem(message, line=node.start_mark.line + 1, file=file)
        ) from exc


def _read_yaml(text: str, file: str, problems: list[Problem]) -> Any:
    """YAML (one document, safe tags only) with the line of every key and item."""
    _yaml_size_check(text, file)
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # reads ahead: may raise on a bad character
        root = loader.get_single_node()
        if root is None:
            return None
        count = [0]

        def convert(node, depth: int):
            count[0] += 1
            line = node.start_mark.line + 1
            if count[0] > MAX_NODES or depth > MAX_JSON_DEPTH:
                raise _FileError(
                    Problem("is too large or nested too deep", line=line, file=file)
                )
            expected = TAGS.get(type(node))
            if expected is not None and node.tag != expected:
                raise _FileError(
                    Problem(
                        f"the YAML tag {node.tag!r} is not allowed",
                        line=line,
                        file=file,
                    )
                )
            if isinstance(node, yaml.MappingNode):
                loader.flatten_mapping(node)
                mapping = Mapping()
                mapping.line = line
                mapping.key_lines = {}
                for key_node, value_node in node.value:
                    key = convert(key_node, depth + 1)
                    key_line = key_node.start_mark.line + 1
                    if not isinstance(key, str | int) or isinstance(key, bool):
                        problems.append(
                            Problem(
                                f"a key must be text, not {key!r}",
                                line=key_line,
                                file=file,
                            )
                        )
                        continue
                    if key in mapping:
                        problems.append(
                            Problem(
                                f"the key {key!r} appears twice in this mapping",
                                line=key_line,
                                field=str(key),
                                file=file,
                            )
                        )
                    mapping[key] = convert(value_node, depth + 1)
                    mapping.key_lines.setdefault(key, key_line)
                return mapping
            if isinstance(node, yaml.SequenceNode):
                sequence = Sequence(convert(item, depth + 1) for item in node.value)
                sequence.line = line
                return sequence
            return _yaml_scalar(loader, node, file)

        return convert(root, 0)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise _FileError(
            Problem(
                f"invalid YAML ({exc.problem or exc.context})",
                line=mark.line + 1 if mark else None,
                file=file,
            )
        ) from exc
    except yaml.YAMLError as exc:
        raise _FileError(Problem(f"invalid YAML ({exc})", file=file)) from exc
    finally:
        if loader is not None:
            loader.dispose()


# --- Checking ----------------------------------------------------------------------------


class _Checker:
    def __init__(self, file: str, problems: list[Problem]):
        self.file = file
        self.problems = problems

    def fail(self, message: str, line: int | None, path: str) -> None:
        self.problems.append(Problem(message, line=line, field=path, file=self.file))

    def mapping(self, value, line, path: str, allowed: set[str]) -> Mapping | None:
        if not isinstance(value, Mapping):
            message = "is missing" if value is None else "must be a mapping (an object)"
            self.fail(message, line, path or "(file)")
            return None
        for key in value:
            if key not in allowed:
                self.fail(
                    f"unknown field {key!r} (known: {', '.join(sorted(allowed))})",
                    value.line_of(key),
                    f"{path}.{key}" if path else str(key),
                )
        return value

    def text(
        self,
        parent: Mapping,
        key: str,
        path: str,
        *,
        required: bool,
        max_length: int | None = None,
    ) -> str:
        where = f"{path}.{key}" if path else key
        value = parent.get(key)
        if value is None:
            if required:
                self.fail("is missing", parent.line_of(key), where)
            return ""
        if not isinstance(value, str):
            hint = " (quote it)" if isinstance(value, bool | int | float) else ""
            self.fail(f"must be text, not {value!r}{hint}", parent.line_of(key), where)
            return ""
        value = value.strip()
        bad = text_problem(value)
        if bad:
            self.fail(bad, parent.line_of(key), where)
            return ""
        if required and not value:
            self.fail("is empty", parent.line_of(key), where)
        if max_length is not None and (why := too_long(value, max_length)):
            self.fail(why, parent.line_of(key), where)
        return value

    def slug(self, parent: Mapping, key: str, path: str) -> str:
        value = self.text(parent, key, path, required=True)
        if value and (not SLUG.match(value) or len(value) > MAX_KEY_LENGTH):
            self.fail(
                f"{value!r} is not a slug (letters, digits, - and _, at most "
                f"{MAX_KEY_LENGTH})",
                parent.line_of(key),
                f"{path}.{key}",
            )
            return ""
        return value

    def items(self, parent: Mapping, key: str, path: str) -> list | None:
        value = parent.get(key)
        if not isinstance(value, Sequence):
            self.fail(
                "is missing" if value is None else "must be a list",
                parent.line_of(key),
                f"{path}.{key}" if path else key,
            )
            return None
        return value

    def unique(self, entries: list[tuple[str, int | None, str]], what: str) -> None:
        """(key, line, path) in file order: the second and later uses are problems."""
        seen: set[str] = set()
        for key, line, path in entries:
            if key and key in seen:
                self.fail(f"{what} {key!r} is used twice", line, path)
            seen.add(key)


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _groups(check: _Checker, top: Mapping) -> tuple[list[dict], bool]:
    if "groups" not in top:
        return [dict(DEFAULT_GROUP)], False
    items = check.items(top, "groups", "")
    groups: list[dict] = []
    keys = []
    for index, item in enumerate(items or []):
        path = f"groups[{index}]"
        line = getattr(item, "line", items.line)
        group = check.mapping(item, line, path, GROUP_FIELDS)
        if group is None:
            continue
        key = check.slug(group, "key", path)
        name = check.text(group, "name", path, required=False, max_length=100)
        keys.append((key, group.line_of("key"), f"{path}.key"))
        groups.append({"key": key, "name": name or key})
    if items is not None and not items:
        check.fail("needs at least one group", top.line_of("groups"), "groups")
    check.unique(keys, "group")
    return groups, True


def _ordinal(check: _Checker, item: Mapping, path: str, out: dict) -> None:  # noqa: C901 - the ordinal criterion's fields, each refused with its own message
    for name in ("labels",):
        if name in item:
            check.fail(
                "is only for a categorical criterion",
                item.line_of(name),
                f"{path}.{name}",
            )
    scale = check.mapping(
        item.get("scale"), item.line_of("scale"), f"{path}.scale", SCALE_FIELDS
    )
    low = high = None
    if scale is not None:
        low, high = scale.get("min"), scale.get("max")
        for name, value in (("min", low), ("max", high)):
            if not _integer(value):
                check.fail(
                    "must be a whole number",
                    scale.line_of(name),
                    f"{path}.scale.{name}",
                )
        if _integer(low) and _integer(high):
            points = high - low + 1
            if low >= high:
                check.fail(
                    f"min ({low}) must be below max ({high}): a scale has at least "
                    f"{MIN_POINTS} points",
                    scale.line,
                    f"{path}.scale",
                )
            elif points > MAX_POINTS:
                check.fail(
                    f"has {points} points; the limit is {MAX_POINTS}",
                    scale.line,
                    f"{path}.scale",
                )
            elif abs(low) > 1000 or abs(high) > 1000:
                check.fail("points must be between -1000 and 1000", scale.line, path)
            else:
                out["scale_min"], out["scale_max"] = low, high
    anchors = item.get("anchors")
    where = f"{path}.anchors"
    if not isinstance(anchors, Mapping):
        check.fail(
            "is missing" if anchors is None else "must be a mapping of point: text",
            item.line_of("anchors"),
            where,
        )
        return
    if "scale_min" not in out:
        return
    texts: dict[int, str] = {}
    for key in anchors:
        line = anchors.line_of(key)
        point = key if _integer(key) else None
        if isinstance(key, str) and re.fullmatch(r"-?\d+", key.strip()):
            if too_long := int_text_problem(key):
                check.fail(f"a point {too_long}", line, where)
                continue
            point = int(key)
        if point is None or not low <= point <= high:
            check.fail(f"{key!r} is not a point of the scale {low}-{high}", line, where)
            continue
        if point in texts:
            check.fail(f"point {point} has two anchors", line, where)
            continue
        value = check.text(
            anchors, key, where, required=True, max_length=limits.RUBRIC_TEXT
        )
        if value:
            texts[point] = value
    for end in (low, high):
        if end not in texts:
            check.fail(
                f"needs an anchor for point {end} (both ends of the scale)",
                anchors.line,
                where,
            )
    out["scale_anchors"] = {str(p): texts[p] for p in sorted(texts)}


def _categorical(check: _Checker, item: Mapping, path: str, out: dict) -> None:
    for name in ("scale", "anchors"):
        if name in item:
            check.fail(
                "is only for an ordinal criterion", item.line_of(name), f"{path}.{name}"
            )
    out["scale_min"] = out["scale_max"] = None
    items = check.items(item, "labels", path)
    if items is None:
        return
    if not MIN_LABELS <= len(items) <= MAX_LABELS:
        check.fail(
            f"has {len(items)} label{'' if len(items) == 1 else 's'}; give "
            f"{MIN_LABELS} to {MAX_LABELS}",
            item.line_of("labels"),
            f"{path}.labels",
        )
    labels, keys = [], []
    for index, entry in enumerate(items):
        where = f"{path}.labels[{index}]"
        label = check.mapping(
            entry, getattr(entry, "line", items.line), where, LABEL_FIELDS
        )
        if label is None:
            continue
        key = check.slug(label, "key", where)
        name = check.text(label, "name", where, required=False, max_length=100)
        description = check.text(
            label, "description", where, required=False, max_length=limits.RUBRIC_TEXT
        )
        keys.append((key, label.line_of("key"), f"{where}.key"))
        labels.append({"key": key, "name": name or key, "description": description})
    check.unique(keys, "label")
    out["labels"] = labels


def _criterion(
    check: _Checker, item, index: int, line, group_keys: set[str], explicit: bool
) -> dict | None:
    path = f"criteria[{index}]"
    item = check.mapping(item, line, path, CRITERION_FIELDS)
    if item is None:
        return None
    out: dict = {
        "key": check.slug(item, "key", path),
        "name": check.text(item, "name", path, required=True, max_length=100),
        "criteria": check.text(
            item, "description", path, required=False, max_length=limits.RUBRIC_TEXT
        ),
        "position": index,
        "scale_anchors": {},
        "labels": [],
    }
    group = item.get("group")
    if group is None and not explicit:
        out["group"] = DEFAULT_GROUP["key"]
    else:
        out["group"] = check.text(item, "group", path, required=True)
        if out["group"] and out["group"] not in group_keys:
            check.fail(
                f"{out['group']!r} is not one of the groups "
                f"({', '.join(sorted(group_keys)) or 'none'})",
                item.line_of("group"),
                f"{path}.group",
            )
    kind = item.get("kind", "ordinal")
    if kind not in KINDS:
        check.fail(
            f"{kind!r} is not a kind; use ordinal or categorical",
            item.line_of("kind"),
            f"{path}.kind",
        )
        return None
    out["kind"] = kind
    allow_na = item.get("allow_na", True)
    if not isinstance(allow_na, bool):
        check.fail(
            "must be true or false", item.line_of("allow_na"), f"{path}.allow_na"
        )
    out["allow_na"] = allow_na is not False
    (_ordinal if kind == "ordinal" else _categorical)(check, item, path, out)
    out["line"] = item.line_of("key")
    return out


def _check(top, file: str, problems: list[Problem]) -> RubricData | None:
    check = _Checker(file, problems)
    top = check.mapping(top, getattr(top, "line", 1), "", TOP_FIELDS)
    if top is None:
        return None
    name = check.text(top, "name", "", required=False, max_length=MAX_NAME_LENGTH)
    description = check.text(
        top, "description", "", required=False, max_length=limits.DESCRIPTION
    )
    groups, explicit = _groups(check, top)
    group_keys = {g["key"] for g in groups if g["key"]}
    items = check.items(top, "criteria", "")
    criteria = []
    if items is not None and not items:
        check.fail("needs at least one criterion", top.line_of("criteria"), "criteria")
    for index, item in enumerate(items or []):
        line = getattr(item, "line", items.line)
        criterion = _criterion(check, item, index, line, group_keys, explicit)
        if criterion is not None:
            criteria.append(criterion)
    check.unique(
        [(c["key"], c["line"], f"criteria[{c['position']}].key") for c in criteria],
        "criterion",
    )
    for criterion in criteria:
        del criterion["line"]
    return RubricData(name, description, groups, criteria)


def looks_like_rubric_file(text: str) -> bool:
    """Our format (a mapping) rather than FLASK's `skillset_description.json` (an
    array of skills)."""
    return not text.lstrip().startswith("[")


def parse_rubric_file(
    data: bytes, *, file: str
) -> tuple[RubricData | None, list[Problem]]:
    """Parse our rubric file (JSON if it starts with `{`, else YAML).

    Returns (rubric, []) or (None, every problem found).
    """
    problems: list[Problem] = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None, [Problem("not valid UTF-8", file=file)]
    reader = _read_json if text.lstrip().startswith("{") else _read_yaml
    try:
        top = reader(text, file, problems)
    except _FileError as exc:
        return None, [*problems, exc.problem]
    if top is None:
        return None, [Problem("the file is empty", file=file)]
    rubric = _check(top, file, problems)
    if problems:
        return None, problems
    return rubric, []
