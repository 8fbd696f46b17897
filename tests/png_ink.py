"""Checks that a screenshot of the timeline is not blank.

Decodes the PNG with the standard library only (zlib, struct), then requires that a fair
share of pixels differ from the white background, and that the two colors the lesson
depends on are on screen: the grey-blue fill of a committed transaction and the amber of
the lock-wait hatching. Exits 1 with the counts when the picture falls short.
"""
import struct
import sys
import zlib
from collections import Counter
from itertools import accumulate


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"FAIL: {path} is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace != 0:
        raise SystemExit(f"FAIL: unexpected PNG format (depth {depth}, color type {color}, interlace {interlace})")
    raw = zlib.decompress(idat)
    stride = width * channels
    # Bytewise addition mod 256 of two rows at once, as big integers: the low 7 bits of each
    # byte added (no carry leaves a byte), the top bit by exclusive or.
    low7 = int.from_bytes(b"\x7f" * stride, "big")
    top = int.from_bytes(b"\x80" * stride, "big")
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 2:  # Up
            a, b = int.from_bytes(line, "big"), int.from_bytes(prev, "big")
            line = bytearray((((a & low7) + (b & low7)) ^ ((a ^ b) & top)).to_bytes(stride, "big"))
            kind = 0
        elif kind == 1:  # Sub: each channel a running sum along the row
            for c in range(channels):
                line[c::channels] = bytes(v & 0xFF for v in accumulate(line[c::channels]))
            kind = 0
        for i in range(stride if kind else 0):
            left = line[i - channels] if i >= channels else 0
            up = prev[i]
            corner = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(line)
        prev = line
    return width, height, channels, rows


def near(pixel, rgb, tolerance=24):
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, rgb))


def main():
    width, height, channels, rows = decode(sys.argv[1])
    total = width * height
    # A screenshot has few distinct colors: count each one's pixels, then judge the colors.
    colors = Counter()
    for line in rows:
        colors.update(zip(line[0::channels], line[1::channels], line[2::channels]))
    ink = committed = waiting = 0
    for pixel, n in colors.items():
        if min(pixel) < 235:
            ink += n
        if near(pixel, (0xB0, 0xBE, 0xC5), 6):
            committed += n
        if near(pixel, (0xFF, 0xA0, 0x00)):
            waiting += n
    share = ink / total
    print(f"{width}x{height}: {ink} non-background pixels ({share:.1%}), "
          f"{committed} committed-bar pixels, {waiting} lock-wait pixels")
    failures = []
    if share < 0.03:
        failures.append("the screenshot is (nearly) blank")
    if committed < 500:
        failures.append("no committed transaction bar is visible")
    if waiting < 200:
        failures.append("no lock wait is visible")
    if failures:
        print("FAIL: " + "; ".join(failures))
        sys.exit(1)
    print("PASS: the timeline is drawn")


if __name__ == "__main__":
    main()
