"""report_page.py: reads what headless Chromium made of the audit log report
(tools/report/page.js): the DOM after its scripts ran, and a screenshot (PNG, decoded here
with the standard library only). Imported by the report tests' inline Python."""
import html
import re
import struct
import zlib


def rows(dom):
    """The table's rendered rows, in order: [(name, self, total, kind, note)]."""
    out = []
    for m in re.finditer(r'<div class="row[^"]*" data-name="([^"]*)" data-rank="(\d+)"[^>]*>(.*?)</div>', dom, re.S):
        cells = m.group(3)
        num = lambda c: (re.search(r'class="n %s">(\d+)<' % c, cells) or [None, None])[1]
        kind = re.search(r'class="k k\d">([^<]*)<', cells)
        note = re.search(r'class="pm">([^<]*)<', cells)
        out.append((html.unescape(m.group(1)), num("self"), num("total"), kind and kind.group(1),
                    note and html.unescape(note.group(1))))
    return out


def frames(dom):
    """The flame graph's frames: [(name, count, kind, left, width, top)] in px."""
    out = []
    for m in re.finditer(r'<div class="fr ([^"]*)" data-name="([^"]*)" data-count="(\d+)"[^>]*'
                         r'style="left: ([\d.]+)px; width: ([\d.]+)px; top: (\d+)px;', dom):
        out.append((html.unescape(m.group(2)), int(m.group(3)), m.group(1), float(m.group(4)),
                    float(m.group(5)), int(m.group(6))))
    return out


def png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "PNG type %d/%d" % (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, out = zlib.decompress(idat), w * bpp, None, []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x] if prev else 0
            c = prev[x - bpp] if prev and x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        out.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
    return w, h, out


def runs(img, colour, tol=6):
    """Per screen row, the horizontal runs of pixels of colour: {y: [(x0, length)]}."""
    w, h, px = img
    near = lambda p: all(abs(p[i] - colour[i]) <= tol for i in range(3))
    out = {}
    for y in range(h):
        x, line = 0, px[y]
        while x < w:
            if near(line[x]):
                x0 = x
                while x < w and near(line[x]):
                    x += 1
                out.setdefault(y, []).append((x0, x - x0))
            x += 1
    return out
