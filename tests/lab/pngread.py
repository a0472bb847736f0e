"""Reading Chromium's screenshots of the report: a small PNG decoder and the verdict banner's rows."""

import struct
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / ".collections"))
from ansible_collections.gpulab.cluster.plugins.module_utils.report import COLOURS  # noqa: E402


def rgb(hex_colour):
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))


def png_rows(data):
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) into rows of pixel tuples."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _compression, _filter, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append([tuple(line[x * bpp : x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def banner_rows(rows, verdict):
    """The rows of the verdict banner in the top 400 px: some mostly the verdict's colour, and all of
    them one block of it at the banner's left padding (the reasons listed in it break rows up)."""
    colour, width = rgb(COLOURS[verdict]), len(rows[0])
    top = [y for y in range(0, 400) if rows[y].count(colour) > width // 2]
    assert top, f"no row in the top 400 px is mostly the {verdict} colour {colour}"
    x = rows[top[0]].index(colour) + 8  # inside the padding, clear of the rounded corners' curve
    block = [y for y in range(0, 400) if rows[y][x] == colour]
    assert block == list(range(block[0], block[-1] + 1)), "the banner is one block"
    return block
