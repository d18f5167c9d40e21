"""Judge task kinds as plug-ins (issue 33): how many kind lists and kind branches
the generic code holds, and how many files a new judge task kind has to touch.

    .venv/bin/python bench/kinds.py [ROOT]

ROOT is a checkout (default: this one). Pure AST, no Django: run it on an unchanged
main and on a branch to compare. Counted, in the Python of `judging/` (without
`judging/kinds/`, the migrations and the fake server, which stands in for a remote
model and must recognise the task from the prompt's text) and the training export
(`analysis/exports/training.py`):

  kind lists     a literal (list, tuple, set, dict keys, choices pairs, an argparse
                 `choices=`) of two or more judge task kinds, or a `Kind` choices
                 class of `JudgeRun` / `PromptTemplate`: each is one more place a new
                 kind must be added.
  kind branches  a comparison (`==`, `!=`, `in`, `not in`) against a kind:
                 `JudgeRun.Kind.X`, `PromptTemplate.Kind.X`, a kind's key as a string
                 compared with something named `kind`, or a `*_KINDS` list.
  template       `kind == "..."` in `templates/judging/` (counted apart).
  files          the files a new kind touches: its own module plus every file above
                 that holds a kind list or a kind branch (a lower bound: it does not
                 count templates, tests or migrations).
  toy kind       the files that name the toy sixth kind of
                 tests/judging/test_kind_plugins.py ("length_check"), which runs end to
                 end there: 1 when that module is all it needs.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

KIND_KEYS = {
    "pointwise",
    "pairwise",
    "classification",
    "critique",
    "metadata",
    "checklist",
    "imported",
    "derived",
}
CHOICE_OWNERS = {"JudgeRun", "PromptTemplate"}
EXCLUDED = ("judging/kinds/", "judging/migrations/")
EXCLUDED_FILES = {"judging/fake_replies.py", "judging/fake_server.py"}
EXTRA_FILES = ("analysis/exports/training.py",)
TOY_KEY = "length_check"
TEMPLATE_BRANCH = re.compile(r"""kind\s*(==|!=)\s*["'](\w+)["']""")


def is_kind_member(node: ast.AST) -> bool:
    """`JudgeRun.Kind.X` / `PromptTemplate.Kind.X` (a member: not `.values`)."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr.isupper()
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "Kind"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id in CHOICE_OWNERS
    )


def is_kind_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in KIND_KEYS


def is_kind_item(node: ast.AST) -> bool:
    """A kind, or a (kind, label) choices pair."""
    if is_kind_member(node) or is_kind_key(node):
        return True
    return (
        isinstance(node, ast.Tuple)
        and len(node.elts) == 2
        and (is_kind_member(node.elts[0]) or is_kind_key(node.elts[0]))
    )


def mentions_kind(node: ast.AST) -> bool:
    return "kind" in ast.unparse(node).lower()


def kind_lists(tree: ast.AST) -> list[int]:
    """Line numbers of the kind lists in `tree`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Kind":
            owner = [
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.ClassDef)
                and n.name in CHOICE_OWNERS
                and node in n.body
            ]
            if owner:
                lines.append(node.lineno)
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            if len(node.elts) >= 2 and all(is_kind_item(e) for e in node.elts):
                lines.append(node.lineno)
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
            if len(keys) >= 2 and all(is_kind_item(k) for k in keys):
                lines.append(node.lineno)
    return sorted(set(lines))


def kind_branches(tree: ast.AST) -> list[int]:
    """Line numbers of the comparisons against a kind in `tree`."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        if not all(
            isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops
        ):
            continue
        operands = [node.left, *node.comparators]
        for operand in operands:
            others = [o for o in operands if o is not operand]
            if is_kind_member(operand):
                hit = True
            elif isinstance(operand, ast.Tuple | ast.List | ast.Set) and operand.elts:
                hit = all(
                    is_kind_member(e) or is_kind_key(e) for e in operand.elts
                ) and (
                    any(is_kind_member(e) for e in operand.elts)
                    or any(mentions_kind(o) for o in others)
                )
            elif is_kind_key(operand):
                hit = any(mentions_kind(o) for o in others)
            elif isinstance(operand, ast.Name | ast.Attribute):
                name = operand.id if isinstance(operand, ast.Name) else operand.attr
                hit = name.endswith("_KINDS")
            else:
                hit = False
            if hit:
                lines.append(node.lineno)
                break
    return sorted(set(lines))


def scanned_files(root: Path) -> list[Path]:
    files = []
    for path in sorted((root / "judging").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(EXCLUDED) or rel in EXCLUDED_FILES:
            continue
        files.append(path)
    files += [root / rel for rel in EXTRA_FILES if (root / rel).exists()]
    return files


def survey(root: Path) -> dict:
    """Every kind list and kind branch under `root`, by file (relative path -> lines)."""
    lists: dict[str, list[int]] = {}
    branches: dict[str, list[int]] = {}
    for path in scanned_files(root):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), filename=rel)
        if found := kind_lists(tree):
            lists[rel] = found
        if found := kind_branches(tree):
            branches[rel] = found
    templates: dict[str, list[int]] = {}
    for path in sorted((root / "templates" / "judging").rglob("*.html")):
        rel = path.relative_to(root).as_posix()
        hits = [
            n
            for n, line in enumerate(path.read_text().splitlines(), 1)
            for m in TEMPLATE_BRANCH.finditer(line)
            if m.group(2) in KIND_KEYS
        ]
        if hits:
            templates[rel] = hits
    return {"lists": lists, "branches": branches, "templates": templates}


def toy_kind_files(root: Path) -> list[str]:
    """The files of the checkout (code, templates, tests) that name the toy kind."""
    found = []
    for pattern in ("*.py", "*.html", "*.json"):
        for path in root.rglob(pattern):
            rel = path.relative_to(root).as_posix()
            if rel.startswith((".venv/", "node_modules/")) or rel == "bench/kinds.py":
                continue
            if TOY_KEY in path.read_text(errors="ignore"):
                found.append(rel)
    return sorted(found)


def main(argv: list[str]) -> None:
    root = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parent.parent)
    found = survey(root)
    files = sorted(set(found["lists"]) | set(found["branches"]))
    n_lists = sum(len(v) for v in found["lists"].values())
    n_branches = sum(len(v) for v in found["branches"].values())
    n_templates = sum(len(v) for v in found["templates"].values())
    print(f"root: {root}")
    print(f"kind lists: {n_lists}")
    for rel, lines in found["lists"].items():
        print(f"  {rel}: lines {', '.join(map(str, lines))}")
    print(f"kind branches outside judging/kinds/: {n_branches}")
    for rel, lines in found["branches"].items():
        print(f"  {rel}: lines {', '.join(map(str, lines))}")
    print(f"template kind branches (templates/judging): {n_templates}")
    for rel, lines in found["templates"].items():
        print(f"  {rel}: lines {', '.join(map(str, lines))}")
    print(
        f"files a new judge task kind touches (its module + files above): "
        f"{1 + len(files)}"
    )
    toy = toy_kind_files(root)
    print(
        f"files naming the toy kind {TOY_KEY!r}: {len(toy)}"
        + (f" ({', '.join(toy)})" if toy else " (no toy kind in this checkout)")
    )


if __name__ == "__main__":
    main(sys.argv)
