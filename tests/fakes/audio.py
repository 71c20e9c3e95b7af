"""Audio files for tests, made here and read back, with no codec installed:

    wav(seconds, rate=16000)  a RIFF/WAVE file: 16-bit mono PCM, a 440 Hz tone
    ogg_opus(seconds)         an Ogg Opus file (RFC 7845), as Telegram sends voice notes:
                              20 ms CELT silence frames (RFC 6716: TOC 0xF8, then 0xFF 0xFE),
                              a page a second, the last page's granule position trimmed to
                              exactly ``seconds`` after the 312-sample pre-skip
    probe(data)               the container the bytes are (by their magic numbers: ogg, wav,
                              flac, mp3, webm, mp4) and, for Ogg Opus, Ogg Vorbis and WAV, how
                              long they play; ``NotAudio`` when they are no audio or are broken

The Ogg pages carry the CRC of RFC 3533, so real decoders (opusinfo, ffmpeg) accept them.
"""

from __future__ import annotations

import math
import struct
import wave
from array import array
from dataclasses import dataclass
from io import BytesIO

OPUS_RATE = 48_000  # Opus granule positions count 48 kHz samples whatever the input rate
PRE_SKIP = 312  # what libopus's encoder asks the decoder to drop
FRAME = 960  # samples of a 20 ms frame at 48 kHz
SILENCE = bytes([0xF8, 0xFF, 0xFE])  # one 20 ms CELT fullband mono frame of silence
FRAMES_PER_PAGE = 50
SERIAL = 0x636C6177
BOS, EOS = 0x02, 0x04
MAGIC = {b"OggS": "ogg", b"fLaC": "flac", b"ID3": "mp3", b"\x1a\x45\xdf\xa3": "webm"}


class NotAudio(ValueError):
    """The bytes are no audio container, or one that is cut short or broken."""


@dataclass(frozen=True)
class Probe:
    container: str  # ogg, wav, flac, mp3, webm or mp4
    seconds: float | None  # None: a container (or an Ogg codec) this module does not measure


def wav(seconds: float, rate: int = 16_000) -> bytes:
    samples = array(
        "h",
        (
            round(9830 * math.sin(2 * math.pi * 440 * n / rate))
            for n in range(round(seconds * rate))
        ),
    )
    out = BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes(samples.tobytes())
    return out.getvalue()


def ogg_opus(seconds: float) -> bytes:
    head = b"OpusHead" + struct.pack("<BBHIhB", 1, 1, PRE_SKIP, OPUS_RATE, 0, 0)
    vendor = b"clawmesh tests"
    tags = b"OpusTags" + struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", 0)
    played = round(seconds * OPUS_RATE)
    frames = -(-(PRE_SKIP + played) // FRAME)
    pages = [_page([head], 0, 0, BOS), _page([tags], 0, 1)]
    for first in range(0, frames, FRAMES_PER_PAGE):
        done = min(first + FRAMES_PER_PAGE, frames)
        last = done == frames
        granule = PRE_SKIP + played if last else done * FRAME  # the last page trims the end
        pages.append(_page([SILENCE] * (done - first), granule, len(pages), EOS if last else 0))
    return b"".join(pages)


def probe(data: bytes) -> Probe:
    container = _container(data)
    if container == "ogg":
        return Probe(container, _ogg_seconds(data))
    if container == "wav":
        return Probe(container, _wav_seconds(data))
    return Probe(container, None)


def _container(data: bytes) -> str:
    for magic, name in MAGIC.items():
        if data.startswith(magic):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data[4:8] == b"ftyp":
        return "mp4"
    if len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0:  # an MPEG audio frame sync
        return "mp3"
    raise NotAudio("no audio container")


def _ogg_seconds(data: bytes) -> float | None:
    """The last granule position over the rate of the first stream's codec (Opus: less its
    pre-skip), walking the pages by their segment tables."""
    offset, granule, first = 0, 0, b""
    while offset < len(data):
        header = data[offset : offset + 27]
        if len(header) < 27 or not header.startswith(b"OggS"):
            raise NotAudio(f"no Ogg page at byte {offset}")
        table = data[offset + 27 : offset + 27 + header[26]]
        start = offset + 27 + len(table)
        offset = start + sum(table)
        if len(table) < header[26] or offset > len(data):
            raise NotAudio("the last Ogg page is cut short")
        first = first or data[start:offset]
        position: int = struct.unpack_from("<q", header, 6)[0]
        granule = position if position != -1 else granule  # -1: no packet ends on this page
    if first.startswith(b"OpusHead"):
        pre_skip: int = struct.unpack_from("<H", first, 10)[0]
        return max(0, granule - pre_skip) / OPUS_RATE
    if first.startswith(b"\x01vorbis"):
        rate: int = struct.unpack_from("<I", first, 12)[0]
        return granule / rate
    return None


def _wav_seconds(data: bytes) -> float:
    offset, byte_rate = 12, 0  # after "RIFF", the size and "WAVE"
    while offset + 8 <= len(data):
        kind: bytes
        size: int
        kind, size = struct.unpack_from("<4sI", data, offset)
        if kind == b"fmt ":
            byte_rate = struct.unpack_from("<I", data, offset + 16)[0]
        elif kind == b"data" and byte_rate:
            return min(size, len(data) - offset - 8) / byte_rate
        offset += 8 + size + size % 2
    raise NotAudio("a WAVE file without its fmt and data chunks")


def _page(packets: list[bytes], granule: int, sequence: int, flags: int = 0) -> bytes:
    lacing = b"".join(bytes([255] * (len(p) // 255) + [len(p) % 255]) for p in packets)
    header = struct.pack("<4sBBqIIIB", b"OggS", 0, flags, granule, SERIAL, sequence, 0, len(lacing))
    page = header + lacing + b"".join(packets)
    return page[:22] + struct.pack("<I", _crc(page)) + page[26:]


def _crc(data: bytes) -> int:
    """CRC-32 of Ogg pages: polynomial 0x04C11DB7, not reflected, from 0, no final xor."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC_TABLE[(crc >> 24) ^ byte]
    return crc


def _crc_entry(index: int) -> int:
    crc = index << 24
    for _ in range(8):
        crc = ((crc << 1) ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1) & 0xFFFFFFFF
    return crc


_CRC_TABLE = tuple(_crc_entry(i) for i in range(256))
