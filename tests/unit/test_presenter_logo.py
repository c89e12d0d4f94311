"""A presenter profile's logo is judged by its bytes: PNG or JPEG signature, size read from its header."""

from __future__ import annotations

import struct

import pytest

from console.core.errors import ValidationFailed
from console.presenter.profiles import LOGO_MAX_BYTES, check_logo
from tests import images


def test_png_and_jpeg_are_known_by_their_first_bytes_whatever_they_are_called():
    assert check_logo(images.png(64, 32)) == "image/png"
    assert check_logo(images.jpeg(300, 100)) == "image/jpeg"


def test_the_jpeg_size_is_found_past_other_segments_and_fill_bytes():
    comment = b"\xff\xfe" + struct.pack(">H", 7) + b"hello"
    progressive = b"\xff\xc2" + struct.pack(">HBHHB", 11, 8, 50, 3000, 1) + b"\x01\x11\x00"
    data = b"\xff\xd8" + comment + b"\xff\xff" + progressive + b"\xff\xd9"
    with pytest.raises(ValidationFailed, match="3000 by 50 pixels"):
        check_logo(data)
    # A Huffman table (C4) is not a frame header, and a scan before any frame means no size.
    table = b"\xff\xc4" + struct.pack(">H", 4) + b"\x00\x00"
    scan = b"\xff\xda" + struct.pack(">H", 2)
    with pytest.raises(ValidationFailed, match="cannot be read as one"):
        check_logo(b"\xff\xd8" + table + scan + b"\xff\xd9")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "choose a PNG or JPEG file"),
        (images.SVG, "must be a PNG or JPEG"),
        (b"<?xml version='1.0'?>" + images.SVG, "must be a PNG or JPEG"),
        (images.GIF, "must be a PNG or JPEG"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 30, "cannot be read as one"),
        (images.png(0, 10, pixels=False), "cannot be read as one"),
        (images.png(10, 2049, pixels=False), "10 by 2049 pixels"),
        (images.png() + b"\x00" * LOGO_MAX_BYTES, "larger than 256 KB, the most a logo may be"),
    ],
)
def test_anything_else_is_refused_with_the_reason(data, problem):
    with pytest.raises(ValidationFailed, match=problem) as refused:
        check_logo(data)
    assert refused.value.fields[0].name == "logo"
