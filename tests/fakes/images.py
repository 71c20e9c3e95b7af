"""Real images made by the tests, without an imaging library: what a phone's camera would
send, small."""

from __future__ import annotations

import struct


def jpeg(width: int, height: int) -> bytes:
    """A baseline grayscale JPEG of ``width`` x ``height`` mid-grey pixels (djpeg decodes
    it): one Huffman code each for "DC difference 0" and "end of block", so every 8x8 block
    is two bits of scan data."""
    one_code = bytes([1] + [0] * 15) + b"\x00"
    bits = "00" * (-(-width // 8) * -(-height // 8))
    bits += "1" * (-len(bits) % 8)
    scan = int(bits, 2).to_bytes(len(bits) // 8, "big")
    return b"".join(
        [
            b"\xff\xd8",
            _segment(0xE0, b"JFIF\x00\x01\x01\x00" + struct.pack(">HH", 1, 1) + b"\x00\x00"),
            _segment(0xDB, b"\x00" + bytes([1] * 64)),
            _segment(0xC0, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"),
            _segment(0xC4, b"\x00" + one_code),
            _segment(0xC4, b"\x10" + one_code),
            _segment(0xDA, b"\x01\x01\x00\x00\x3f\x00"),
            scan,
            b"\xff\xd9",
        ]
    )


def _segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body
