"""The report's PNG charts have their text, drawn with the fonts the project ships.

``png_of`` skips the machine's fonts, so text pixels in its PNG can only come from
the shipped files; the same SVG rendered without them has no text at all (what a
machine without the charts' fonts produced before). The PNGs are decoded here with
zlib and numpy (8-bit RGBA, the five PNG row filters).
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import resvg_py

from analysis.charts.bars import rank_bars_chart
from analysis.charts.svg import Series
from analysis.exports.report import FONT_FAMILY, FONT_FILES, png_of


def decode_png(data: bytes) -> np.ndarray:
    """(height, width, 4) uint8 pixels of an 8-bit RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(
                ">IIBBBBB", body
            )
            assert (depth, colour, interlace) == (8, 6, 0)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, -1)
    stride = width * 4
    out = np.zeros((height, stride), np.int64)
    prev = np.zeros(stride, np.int64)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int64)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + prev) % 256
        elif kind == 1:  # Sub: a running sum per channel
            row = np.cumsum(line.reshape(-1, 4), axis=0).reshape(-1) % 256
        else:  # Average (3) and Paeth (4) depend on the left neighbour: byte by byte
            row = np.zeros(stride, np.int64)
            for x in range(stride):
                a = row[x - 4] if x >= 4 else 0
                b, c = prev[x], prev[x - 4] if x >= 4 else 0
                if kind == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                row[x] = (line[x] + pred) % 256
        out[y] = prev = row
    return out.reshape(height, width, 4).astype(np.uint8)


def dark_pixels(pixels: np.ndarray) -> int:
    """Pixels clearly darker than the white background (text, bars, axes)."""
    return int((pixels[..., :3].astype(int).sum(axis=-1) < 3 * 160).sum())


def chart_svg() -> str:
    return rank_bars_chart(
        title="Overall: model ranks",
        models=["alpha", "beta", "gamma"],
        series=[Series("Humans", [1.0, 2.0, 3.0], 0, ["mean 4.1", "mean 3.2", ""])],
    )


def without_text(svg: str) -> str:
    return re.sub(r"<text\b.*?</text>", "", svg, flags=re.S)


def test_the_shipped_fonts_are_files_with_their_licence():
    names = sorted(Path(f).name for f in FONT_FILES)
    assert names == ["DejaVuSans-Bold.ttf", "DejaVuSans.ttf"]
    licence = (Path(FONT_FILES[0]).parent / "LICENSE").read_text()
    assert "Bitstream Vera Fonts Copyright" in licence
    assert "Arev Fonts Copyright" in licence


def test_png_chart_has_text_pixels_in_its_title_area():
    svg = chart_svg()
    assert "<text" in svg and 'font-weight="600"' in svg  # a bold title
    with_text, bare = decode_png(png_of(svg)), decode_png(png_of(without_text(svg)))
    assert with_text.shape == bare.shape
    # The title is the top band (zoom 2: its 15 px font within the first 60 px).
    title = slice(0, 60)
    assert dark_pixels(bare[title]) == 0
    assert dark_pixels(with_text[title]) > 200
    assert dark_pixels(with_text) > dark_pixels(bare) + 500  # labels and notes too


def test_without_the_shipped_fonts_the_same_png_has_no_text():
    """The failure the fonts fix: resvg with no usable font draws no text."""
    svg = chart_svg()
    no_font = resvg_py.svg_to_bytes(
        svg_string=svg, background="#ffffff", zoom=2.0, skip_system_fonts=True
    )
    assert decode_png(bytes(no_font)).tolist() == (
        decode_png(png_of(without_text(svg))).tolist()
    )
    assert bytes(no_font) != png_of(svg)


@pytest.mark.parametrize("only", ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf"])
def test_both_shipped_faces_are_used(only):
    """Regular for labels, bold for the title: with one face alone the PNG differs."""
    svg = chart_svg()
    one = [f for f in FONT_FILES if Path(f).name == only]
    png = resvg_py.svg_to_bytes(
        svg_string=svg,
        background="#ffffff",
        zoom=2.0,
        skip_system_fonts=True,
        font_files=one,
        font_family=FONT_FAMILY,
        sans_serif_family=FONT_FAMILY,
    )
    assert bytes(png) != png_of(svg)


def test_png_is_byte_stable():
    svg = chart_svg()
    assert png_of(svg) == png_of(svg)
