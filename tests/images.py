"""Image files built byte by byte for the presenter's logo upload: a real PNG, a JPEG header, odd files."""

from __future__ import annotations

import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(
    width: int = 8, height: int = 8, rgb: tuple[int, int, int] = (200, 20, 60), *, pixels: bool = True
) -> bytes:
    """A valid RGB PNG of one colour (`pixels=False`: the header claims the size, the data is empty)."""
    header = _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height)) if pixels else b""
    return b"\x89PNG\r\n\x1a\n" + header + _chunk(b"IDAT", zlib.compress(rows)) + _chunk(b"IEND", b"")


def jpeg(width: int = 16, height: int = 16) -> bytes:
    """SOI, a JFIF APP0 segment and a baseline frame header with the size (enough to be read as a JPEG)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="10" height="10"/></svg>'
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
