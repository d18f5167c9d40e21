"""Hugging Face datasets as import files: a directory saved with
`datasets.Dataset.save_to_disk` (or `DatasetDict.save_to_disk`), or the Parquet /
JSON Lines files a Hub dataset consists of (a directory of them, or one file, which
`base.read_rows` already reads).

Layouts recognised, in this order:

- ``dataset_dict.json`` (`DatasetDict.save_to_disk`): ``{"splits": [...]}`` and one
  directory per split; a split is chosen (`split`, else the only one).
- ``state.json`` (`Dataset.save_to_disk`): its ``_data_files`` are Arrow IPC stream
  files in the directory, read in that order.
- Otherwise the data files anywhere under the directory (``*.parquet``, ``*.jsonl``,
  ``*.json``, ``*.arrow``, any of them ``.gz``), in path order, as the Hub names
  them (``data/train-00000-of-00002.parquet``, ``test.jsonl``, ``train/0.parquet``):
  a file's split is its directory or the start of its name up to ``-``, ``_`` or
  ``.``; several splits need `split`.

Rows come out as dicts, like a JSON Lines row, so `--map` and every field check
apply unchanged. A row's number (``line`` in a problem) counts the chosen split's
rows from 1 across its files (row N is ``dataset[N - 1]``). Arrow files are read one
record batch at a time with pyarrow, an optional package (`flaskapp.optional.HUB`);
without it a directory of Arrow files is one problem saying how to install it.

An upload (the import page and API) is one file: a dataset directory comes zipped
(`unzip_directory`, what the export's ``format=hf`` download is).

Pure: files in, rows and `Problem`s out; `datasets` itself is never imported.
"""

from __future__ import annotations

import json
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from annotation.importers import base, formats
from flaskapp.errors import DomainError, Problem
from flaskapp.optional import HUB
from flaskapp.untrusted import json_problem, printable

DATA_SUFFIXES = (".parquet", ".jsonl", ".ndjson", ".json", ".arrow", ".csv")
ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"
ARROW_FILE_MAGIC = b"ARROW1"
MAX_FILES = 10_000
# JSON files of a dataset repository that describe it, not rows.
NOT_DATA = {"dataset_info.json", "dataset_infos.json", "state.json",
            "dataset_dict.json", "config.json"}  # fmt: skip
# The start of a Hub file name up to its shard number or extension: its split.
_SPLIT_OF_NAME = re.compile(r"[^-_.]+")


def _refuse(message: str, field_name: str = "file") -> DomainError:
    return DomainError(
        "the directory was not imported",
        [Problem(message, field=field_name)],
    )


@dataclass
class HubDirectory:
    """The data files of one split of a Hugging Face dataset directory, and how to
    read them as rows (`base.read_rows` calls :meth:`rows`)."""

    path: Path
    split: str | None
    files: list[Path] = field(default_factory=list)
    layout: str = "files"  # "save_to_disk" or "files"

    @property
    def size(self) -> int:
        """The bytes of its files (the import's size limit counts them)."""
        return sum(f.stat().st_size for f in self.files)

    def rows(
        self,
        *,
        file: str,
        fmt: str,
        problems: list[Problem],
        header_columns: Mapping[str, str] | None = None,
    ) -> Iterator[tuple[int, dict]]:
        """(row number, row) of every file of the split, in order; each file's own
        problems (a bad line, a damaged Arrow file) name that file."""
        number = 0
        for path in self.files:
            name = f"{file}/{path.relative_to(self.path)}"
            if _is_arrow(path):
                rows = _arrow_rows(path, name, problems, dict(header_columns or {}))
            else:
                csv = path.name.lower().removesuffix(".gz").endswith(".csv")
                rows = base.read_rows(
                    path,
                    file=name,
                    fmt="csv" if csv else "jsonl",
                    problems=problems,
                    header_columns=header_columns,
                )
            for _, row in rows:
                number += 1
                yield number, row


def _is_arrow(path: Path) -> bool:
    with path.open("rb") as stream:
        head = stream.read(8)
    return head.startswith(ARROW_STREAM_MAGIC) or head.startswith(ARROW_FILE_MAGIC)


def _arrow_rows(
    path: Path, file: str, problems: list[Problem], required: dict[str, str]
) -> Iterator[tuple[int, dict]]:
    """The rows of an Arrow IPC file (stream format, as `save_to_disk` writes it, or
    file format), one record batch at a time; cells as a JSON row would hold them
    (`formats.plain_value`)."""
    if not HUB.available():
        problems.append(Problem(HUB.missing(), file=file))
        return
    import pyarrow as pa

    try:
        with path.open("rb") as stream:
            head = stream.read(6)
            stream.seek(0)
            if head == ARROW_FILE_MAGIC:
                reader = pa.ipc.open_file(stream)
                batches = (
                    reader.get_batch(i) for i in range(reader.num_record_batches)
                )
            else:
                reader = pa.ipc.open_stream(stream)
                batches = iter(reader)
            names = reader.schema.names
            missing = [
                f"`{column}` (for field `{name}`)"
                for name, column in required.items()
                if column not in names
            ]
            if missing:
                problems.append(
                    Problem(
                        "the Arrow file has no column " + ", ".join(missing)
                        + "; its columns are: " + ", ".join(names),
                        file=file,
                    )
                )  # fmt: skip
                return
            number = 0
            for batch in batches:
                for row in batch.to_pylist():
                    number += 1
                    try:
                        plain = {k: formats.plain_value(v, k) for k, v in row.items()}
                    except ValueError as exc:
                        problems.append(Problem(str(exc), line=number, file=file))
                        continue
                    if problem := json_problem(plain):
                        problems.append(
                            Problem(problem.message, line=number,
                                    field=problem.field, file=file)
                        )  # fmt: skip
                        continue
                    yield number, plain
    except (pa.ArrowException, OSError) as exc:
        problems.append(
            Problem(f"is not a readable Arrow file ({str(exc)[:200]})", file=file)
        )


def _json_file(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _refuse(f"{path.name} is not valid JSON ({str(exc)[:100]})") from exc
    if not isinstance(value, dict):
        raise _refuse(f"{path.name} is not a JSON object")
    return value


def _inside(root: Path, name: object) -> Path:
    """The file `name` of a state.json, refused when it leaves `root`."""
    if not isinstance(name, str) or not name:
        raise _refuse("state.json names a data file that is not a file name")
    path = (root / name).resolve()
    if root.resolve() not in path.parents or not path.is_file():
        raise _refuse(f"state.json names {printable(name[:80])!r}, not a file in it")
    return path


def _saved(path: Path, split: str | None) -> HubDirectory:
    """A `Dataset.save_to_disk` directory's Arrow files (`split`: the split it is)."""
    state = _json_file(path / "state.json")
    files = state.get("_data_files")
    if not isinstance(files, list) or not files:
        raise _refuse("its state.json lists no `_data_files`")
    return HubDirectory(
        path=path,
        split=split,
        files=[_inside(path, f.get("filename") if isinstance(f, dict) else None)
               for f in files],
        layout="save_to_disk",
    )  # fmt: skip


def _split_of(relative: Path) -> str:
    parts = relative.parts
    if len(parts) > 1 and parts[-2] != "data":
        return parts[-2]
    match = _SPLIT_OF_NAME.match(relative.name)
    return match.group(0) if match else relative.name


def _data_files(path: Path) -> list[Path]:
    found = []
    for candidate in sorted(path.rglob("*")):
        relative = candidate.relative_to(path)
        if any(part.startswith(".") for part in relative.parts):
            continue  # .git, .cache, .huggingface
        name = candidate.name.lower().removesuffix(".gz")
        if (
            candidate.is_file()
            and name.endswith(DATA_SUFFIXES)
            and candidate.name not in NOT_DATA
        ):
            found.append(candidate)
            if len(found) > MAX_FILES:
                raise _refuse(f"it holds more than {MAX_FILES:,} data files")
    return found


def hub_directory(path: Path, split: str | None = None) -> HubDirectory:
    """The files of split `split` (None: the only one) of the Hugging Face dataset
    directory `path`, in reading order. Raises `DomainError` naming `split` when
    the directory has several splits and none (or another) is chosen, and `file`
    when it holds no data."""
    split = (split or "").strip() or None
    if (path / "dataset_dict.json").is_file():
        splits = _json_file(path / "dataset_dict.json").get("splits")
        if not isinstance(splits, list) or not all(isinstance(s, str) for s in splits):
            raise _refuse("its dataset_dict.json has no list of `splits`")
        if split is None and len(splits) == 1:
            split = splits[0]
        if split not in splits:
            raise _refuse(_choose(split, splits), "split")
        return _saved(path / split, split)
    if (path / "state.json").is_file():
        return _saved(path, split)
    files = _data_files(path)
    if not files:
        raise _refuse(
            "no state.json (Dataset.save_to_disk), dataset_dict.json "
            "(DatasetDict.save_to_disk) nor Parquet / JSON Lines / Arrow files in it"
        )
    by_split: dict[str, list[Path]] = {}
    for f in files:
        by_split.setdefault(_split_of(f.relative_to(path)), []).append(f)
    if split is None and len(by_split) == 1:
        split = next(iter(by_split))
    if split not in by_split:
        raise _refuse(_choose(split, list(by_split)), "split")
    return HubDirectory(path=path, split=split, files=by_split[split])


ZIP_MAGIC = b"PK\x03\x04"


def is_zip(data: base.FileData) -> bool:
    """Whether an uploaded file is a zip archive (of a dataset directory)."""
    if isinstance(data, bytes | bytearray):
        return bytes(data[:4]) == ZIP_MAGIC
    if isinstance(data, Path) and data.is_file():
        with data.open("rb") as stream:
            return stream.read(4) == ZIP_MAGIC
    return False


def unzip_directory(data: base.FileData, *, into: Path, file: str) -> Path:
    """Extract the zip `data` (a Hugging Face dataset directory, zipped: what the
    export API's ``format=hf`` downloads) into the empty directory `into`, and
    return the dataset's root: `into`, or the one folder everything is in.

    Untrusted: a member whose name is absolute or climbs out (``..``) is refused,
    links are not created, and the bytes written are counted as they are
    decompressed, within `IMPORT_MAX_DECOMPRESSED_BYTES` and, sooner,
    `IMPORT_MAX_DECOMPRESSION_RATIO` times the archive's size (a zip bomb is a
    problem naming the file, not a full disk). Raises `DomainError` naming `file`."""
    from django.conf import settings

    size = base.file_size(data)
    limit = min(
        settings.IMPORT_MAX_DECOMPRESSED_BYTES,
        max(size * settings.IMPORT_MAX_DECOMPRESSION_RATIO, formats.MIN_RATIO_LIMIT),
    )

    def refuse(message: str) -> DomainError:
        return DomainError("the file was not imported", [Problem(message, file=file)])

    written = 0
    try:
        with base.open_file_data(data) as stream, zipfile.ZipFile(stream) as archive:
            members = archive.infolist()
            if len(members) > MAX_FILES:
                raise refuse(f"the zip holds more than {MAX_FILES:,} files")
            for member in members:
                name = PurePosixPath(member.filename)
                if name.is_absolute() or ".." in name.parts or "\\" in member.filename:
                    raise refuse(
                        f"the zip's member {printable(member.filename[:80])!r} "
                        "leaves its folder"
                    )
                if member.is_dir() or stat.S_ISLNK(member.external_attr >> 16):
                    continue
                target = into.joinpath(*name.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, target.open("wb") as dst:
                    while chunk := src.read(1 << 16):
                        written += len(chunk)
                        if written > limit:
                            raise refuse(
                                f"the zip decompresses to more than {limit:,} bytes "
                                "(IMPORT_MAX_DECOMPRESSED_BYTES, "
                                "IMPORT_MAX_DECOMPRESSION_RATIO)"
                            )
                        dst.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise refuse(f"is not a readable zip file ({str(exc)[:120]})") from exc
    entries = [p for p in into.iterdir() if not p.name.startswith((".", "__MACOSX"))]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return into


def _choose(split: str | None, splits: list[str]) -> str:
    listed = ", ".join(splits)
    if split is None:
        return f"it holds the splits {listed}; choose one (--split)"
    return f"it has no split {printable(split[:60])!r}; its splits are: {listed}"
