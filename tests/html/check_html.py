#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks optadvisor's HTML reports.

Default: runs the binary for a few scenarios (datacenter GPU latency, consumer GPU throughput, Apple
memory, phone, training, estimate) and checks that each page is well-formed (balanced tags, unique
ids), that every inline SVG parses as XML and holds the expected elements (a roof per data type of
the hardware profile, the bandwidth slope, ridge points, prefill and decode points before and after,
arrows, the memory bars in GB and GiB, one playbook row per recommendation of `advise --json`), that
nothing external is referenced (no scripts, stylesheets, fonts, images or @import), and that the
output is the same bytes on every run.

--render: renders an advisor page with a headless Chromium to PNG and checks the image is not
blank, then renders it again with only the roofline section shown (the chart drawn 1000 px wide)
and checks the chart's ink spans it with the prefill and decode points in their colours, and with
only the playbook shown and checks there is a line of text per recommendation. Exits 77 (ctest's
SKIP_RETURN_CODE) and says why when no Chromium is installed.
"""
import argparse
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SVG_NS = "{http://www.w3.org/2000/svg}"
SKIP = 77

# name, advisor arguments, profile id, goal
SCENARIOS = [
    ("datacenter-latency", ["--hw", "h100", "--goal", "latency", "--model", "llama-3.1-70b"], "h100-sxm"),
    ("consumer-throughput", ["--hw", "rtx4090", "--goal", "throughput", "--model", "llama-3.1-8b"], "rtx4090"),
    ("apple-memory", ["--hw", "m4-max-40c", "--goal", "memory", "--model", "llama-3.1-70b"], "m4-max-40c"),
    ("phone-latency", ["--hw", "a18-pro", "--goal", "latency"], "a18-pro"),
]

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
FETCHING_TAGS = {"script", "link", "img", "iframe", "source", "video", "audio", "embed", "object", "image", "use", "track", "input", "frame"}


class Problems(list):
    def check(self, ok, message):
        if not ok:
            self.append(message)
        return ok


class Structure(HTMLParser):
    """Tag balance, ids and every attribute, in document order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.errors = []
        self.ids = []
        self.tags = []  # (tag, attrs dict)
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "style":
            self._in_style = True
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.append(a["id"])

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False
        if tag in VOID:
            return
        if not self.stack:
            self.errors.append(f"</{tag}> at {self.getpos()} closes nothing")
            return
        top, pos = self.stack.pop()
        if top != tag:
            self.errors.append(f"</{tag}> at {self.getpos()} closes <{top}> opened at {pos}")

    def handle_data(self, data):
        if self._in_style:
            self.style += data


def run(exe, args, env_home):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1", "HOME": env_home, "LC_ALL": "C",
           "XDG_DATA_HOME": os.path.join(env_home, "xdg-data"), "XDG_CONFIG_HOME": os.path.join(env_home, "xdg-config")}
    return subprocess.run([exe] + args, capture_output=True, env=env, cwd=ROOT, timeout=120)


def profile(hw_id):
    for path in glob.glob(os.path.join(ROOT, "data", "hardware", "*", hw_id + ".json")):
        with open(path) as f:
            return json.load(f)
    raise SystemExit(f"no profile {hw_id} under data/hardware")


def classes(el):
    return set(el.get("class", "").split())


def check_self_contained(html, parser, p):
    """Nothing on the page makes the browser fetch anything."""
    for tag, attrs in parser.tags:
        p.check(tag != "script", "a <script> element")
        p.check(not (tag == "link"), f"a <link> element: {attrs}")
        if tag in FETCHING_TAGS:
            for key in ("src", "href", "srcset", "data", "poster", "xlink:href"):
                value = attrs.get(key) or ""
                p.check(not re.match(r"\s*(https?:)?//", value), f"<{tag} {key}={value!r}> fetches an external resource")
                p.check(not value.strip().lower().startswith("javascript:"), f"<{tag} {key}={value!r}>")
        if tag == "a":
            href = attrs.get("href", "")
            p.check(re.match(r"https?://|#", href) is not None, f"<a href={href!r}>: links are web pages or anchors only")
        for key, value in attrs.items():
            p.check(not key.startswith("on"), f"<{tag} {key}=...>: an event handler")
            if value and "url(" in value:
                p.check(re.search(r"url\(\s*['\"]?(?!#)", value) is None, f"<{tag} {key}={value!r}> references a non-local url()")
    p.check("@import" not in parser.style, "@import in the stylesheet")
    p.check(re.search(r"url\(\s*['\"]?(?!#)", parser.style) is None, "url() in the stylesheet")
    p.check("@font-face" not in parser.style, "@font-face in the stylesheet")


def parse_svgs(html, p):
    svgs = []
    for m in re.finditer(r"<svg\b.*?</svg>", html, re.S):
        try:
            svgs.append(ET.fromstring(m.group(0)))
        except ET.ParseError as e:
            p.append(f"an <svg> does not parse as XML: {e}")
    return svgs


def find_svg(svgs, cls):
    for s in svgs:
        if cls in classes(s):
            return s
    return None


def check_roofline(svg, hw, p, expect_after):
    p.check(svg.tag == SVG_NS + "svg", f"root element {svg.tag}")
    roofs = [e for e in svg.iter(SVG_NS + "line") if "roof" in classes(e)]
    dtypes = set()
    for r in roofs:
        dtypes.update(d.strip() for d in r.get("data-dtype", "").split(","))
    want = {k for k, v in hw["compute"].get("flops_per_s", {}).items() if v and v > 0}
    p.check(want <= dtypes, f"roofs {sorted(dtypes)} lack data types of the profile {sorted(want - dtypes)}")
    p.check(len(roofs) >= 1, "no compute roof")
    p.check(len([e for e in svg.iter(SVG_NS + "line") if "bandwidth-slope" in classes(e)]) == 1, "not exactly one bandwidth slope")
    ridges = [e for e in svg.iter(SVG_NS + "circle") if "ridge" in classes(e)]
    p.check(len(ridges) == len(roofs), f"{len(ridges)} ridge points for {len(roofs)} roofs")
    # The ridge points of the profile's roofs are peak / bandwidth.
    bw = hw["memory"]["bandwidth_bytes_per_s"]
    for c in ridges:
        title = c.find(SVG_NS + "title")
        m = re.search(r"ridge point: ([0-9.e+]+) FLOP/byte", title.text if title is not None else "")
        if not p.check(m is not None, "a ridge point without its value"):
            continue
        label = title.text.split(" ridge point")[0]
        peaks = [hw["compute"]["flops_per_s"][d.strip()] for d in label.split(",") if d.strip() in hw["compute"].get("flops_per_s", {})]
        if peaks:
            want_ridge = peaks[0] / bw
            got = float(m.group(1))
            p.check(abs(got - want_ridge) <= max(0.51, want_ridge * 0.006), f"ridge of {label}: {got}, expected {want_ridge:.3g}")
    points = [g for g in svg.iter(SVG_NS + "g") if "point" in classes(g)]
    seen = {(g.get("data-phase"), g.get("data-series")) for g in points}
    for phase in ("prefill", "decode"):
        p.check((phase, "before") in seen, f"no {phase} point as given")
    if expect_after:
        p.check(any(s in ("plan", "recommendation") for _, s in seen), "no point after the advice")
        p.check(any("arrow" in classes(e) for e in svg.iter(SVG_NS + "line")), "no arrow from before to after")
    else:
        p.check(not any(s in ("plan", "recommendation") for _, s in seen), "points after advice that moved nothing")
    legend = [g for g in svg.iter(SVG_NS + "g") if "legend-entry" in classes(g)]
    kinds = {g.get("data-kind") for g in legend}
    p.check({"prefill", "decode", "before", "roof"} <= kinds, f"legend has {sorted(kinds)}")
    ticks = [t for t in svg.iter(SVG_NS + "text") if "tick" in classes(t)]
    p.check(sum("x" in classes(t) for t in ticks) >= 3 and sum("y" in classes(t) for t in ticks) >= 3, "fewer than 3 labelled ticks on an axis")
    p.check(any("FLOP/s" in (t.text or "") for t in ticks), "y ticks are not in FLOP/s")


def check_memory(svg, p, bars):
    got = [g for g in svg.iter(SVG_NS + "g") if "bar" in classes(g)]
    p.check(len(got) == bars, f"{len(got)} memory bars, expected {bars}")
    p.check(len([r for r in svg.iter(SVG_NS + "rect") if "segment" in classes(r)]) >= bars, "memory bars without parts")
    p.check(len([e for e in svg.iter(SVG_NS + "line") if "capacity" in classes(e)]) == bars, "no capacity line on every bar")
    totals = [t.text or "" for t in svg.iter(SVG_NS + "text") if "bar-total" in classes(t)]
    for t in totals:
        p.check(re.search(r"[0-9.]+ [GM]B \([0-9.]+ [GM]iB\)", t) is not None, f"bar total {t!r} lacks GB and GiB")


def check_page(html, p, label):
    parser = Structure()
    parser.feed(html)
    parser.close()
    p.check(html.startswith("<!DOCTYPE html>"), "no <!DOCTYPE html>")
    p.check('<meta charset="utf-8">' in html, "no charset")
    for e in parser.errors:
        p.append(e)
    p.check(not parser.stack, f"unclosed tags: {[t for t, _ in parser.stack]}")
    dupes = sorted({i for i in parser.ids if parser.ids.count(i) > 1})
    p.check(not dupes, f"duplicate ids {dupes}")
    check_self_contained(html, parser, p)
    return parser


def check_advice(exe, name, args, hw_id, home):
    p = Problems()
    report = run(exe, ["report"] + args, home)
    p.check(report.returncode == 0, f"report exit {report.returncode}: {report.stderr.decode()}")
    html = report.stdout.decode("utf-8")
    parser = check_page(html, p, name)
    svgs = parse_svgs(html, p)
    roofline = find_svg(svgs, "roofline")
    memory = find_svg(svgs, "memory-bars")
    advice = json.loads(run(exe, ["advise"] + args + ["--json"], home).stdout)
    plan = advice["plan"]["steps"]
    # The page says so when the advice moves neither phase (a memory goal can change memory only).
    moved = bool(plan) and 'class="unmoved"' not in html
    if p.check(roofline is not None, "no roofline chart"):
        check_roofline(roofline, profile(hw_id), p, expect_after=moved)
    if p.check(memory is not None, "no memory bar chart"):
        check_memory(memory, p, 2 if plan else 1)
    rows = [a for t, a in parser.tags if t == "tr" and a.get("class") == "rec"]
    p.check(len(rows) == len(advice["recommendations"]), f"{len(rows)} playbook rows, advise --json has {len(advice['recommendations'])}")
    p.check([r.get("data-rule") for r in rows] == [r["id"] for r in advice["recommendations"]], "playbook rows out of rank order")
    p.check(len([a for t, a in parser.tags if t == "tr" and a.get("class") == "plan-step"]) == (len(plan) + 1 if plan else 0), "stacked plan rows")
    for section in ("diagnosis", "roofline", "memory", "playbook", "assumptions"):
        p.check(f'<section id="{section}">' in html, f"no {section} section")
    p.check("GiB" in html and "GB" in html, "GB and GiB not both labelled")
    versions = run(exe, ["--version"], home).stdout.decode().split()
    p.check(len(versions) >= 4 and versions[1] in html and versions[3].rstrip(")") in html, "program or data version missing from the header")
    # Deterministic, and --out writes the same bytes as stdout.
    again = run(exe, ["report"] + args, home).stdout.decode("utf-8")
    p.check(again == html, "two runs differ")
    out = os.path.join(home, name + ".html")
    written = run(exe, ["report"] + args + ["--out", out], home)
    p.check(written.returncode == 0 and written.stdout == b"", "report --out printed on stdout or failed")
    p.check(written.stderr.decode().count("\n") == 1 and out in written.stderr.decode(), f"report --out should say where it wrote: {written.stderr!r}")
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            p.check(f.read() == html, "--out file differs from stdout")
    # The advisor itself renders the same page.
    main = run(exe, args + ["--format", "html"], home).stdout.decode("utf-8")
    p.check(main == html, "optadvisor --hw ... --format html differs from report")
    return p


def check_training(exe, home):
    p = Problems()
    args = ["report", "--hw", "h100", "--goal", "training", "--model", "llama-3.1-8b"]
    r = run(exe, args, home)
    p.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr.decode()}")
    html = r.stdout.decode("utf-8")
    check_page(html, p, "training")
    svgs = parse_svgs(html, p)
    p.check(find_svg(svgs, "roofline") is None, "a roofline for a training step")
    memory = find_svg(svgs, "memory-bars")
    if p.check(memory is not None, "no memory bars"):
        check_memory(memory, p, len([g for g in memory.iter(SVG_NS + "g") if "bar" in classes(g)]))
    return p


def check_estimate(exe, home):
    p = Problems()
    r = run(exe, ["estimate", "--hw", "rtx5090", "--model", "llama-3.1-8b", "--format", "html"], home)
    p.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr.decode()}")
    html = r.stdout.decode("utf-8")
    check_page(html, p, "estimate")
    svgs = parse_svgs(html, p)
    roofline = find_svg(svgs, "roofline")
    if p.check(roofline is not None, "no roofline chart"):
        check_roofline(roofline, profile("rtx5090"), p, expect_after=False)
    memory = find_svg(svgs, "memory-bars")
    if p.check(memory is not None, "no memory bars"):
        check_memory(memory, p, 1)
    return p


# --- rendering ---------------------------------------------------------------------------------

def read_png(path):
    """(width, height, bytes per pixel, rows) of an 8-bit, non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    if depth != 8 or interlace != 0 or colour not in (0, 2, 4, 6):
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if kind == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif kind == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 255
        elif kind == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif kind == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def find_browser():
    return next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable") if shutil.which(b)), None)


def screenshot(browser, page, shot, home, width, height):
    """Renders `page` headless to a width x height PNG; an error message, or None."""
    # --no-sandbox: CI runs the tests as root, where Chromium's sandbox refuses to start.
    # --disable-dev-shm-usage: containers often have a 64 MB /dev/shm.
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars", "--no-first-run",
           "--disable-extensions", f"--user-data-dir={os.path.join(home, 'chromium')}", f"--screenshot={shot}",
           f"--window-size={width},{height}", "file://" + page]
    if os.path.exists(shot):
        os.remove(shot)
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=180)
    except subprocess.TimeoutExpired:
        return "the browser did not finish within 180 s"
    if not os.path.exists(shot):
        return f"{browser} wrote no screenshot (exit {proc.returncode}):\n{proc.stderr.decode(errors='replace')[-2000:]}"
    return None


PREFILL_RGB = (0x1d, 0x4e, 0xd8)
DECODE_RGB = (0xc2, 0x41, 0x0c)


def pixels(path):
    """Every other pixel of every other row as (x, y, (r, g, b)), and the image size."""
    width, height, bpp, rows = read_png(path)
    out = []
    for y in range(0, height, 2):
        row = rows[y]
        for x in range(0, width * bpp, bpp * 2):
            out.append((x // bpp, y, tuple(row[x:x + 3]) if bpp >= 3 else (row[x],) * 3))
    return width, height, out


def near(px, rgb):
    return sum(abs(a - b) for a, b in zip(px, rgb)) < 30


def isolate(html, section, css=""):
    """The page with only `section` shown, at the top-left, on white: what is then drawn is that section's."""
    style = (f"<style>main > :not(#{section}) {{ display: none !important; }} main {{ padding: 0 !important; margin: 0 !important; }}"
             f" body {{ margin: 0 !important; background: #fff !important; }} {css}</style>")
    return html.replace("</head>", style + "\n</head>", 1)


def ink_bands(px, width):
    """Horizontal bands (runs of sampled rows) holding dark pixels: lines of text and rules."""
    dark_rows = sorted({y for x, y, p in px if max(p) < 128})
    bands, last = 0, None
    for y in dark_rows:
        if last is None or y - last > 2:
            bands += 1
        last = y
    return bands


def render(exe, home):
    browser = find_browser()
    if browser is None:
        print("SKIPPED: no headless Chromium installed (looked for chromium, chromium-browser, google-chrome on PATH)")
        return SKIP
    args = ["--hw", "h100", "--goal", "latency", "--model", "llama-3.1-70b"]
    page = os.path.join(home, "report.html")
    shot = os.path.join(home, "report.png")
    r = run(exe, ["report"] + args + ["--out", page], home)
    if r.returncode != 0:
        print(f"FAIL: report exit {r.returncode}: {r.stderr.decode()}")
        return 1
    problems = Problems()
    # The whole page.
    error = screenshot(browser, page, shot, home, 1200, 1600)
    if error:
        print("FAIL: " + error)
        return 1
    width, height, px = pixels(shot)
    colours = {p for _, _, p in px}
    share = sum(min(p) < 245 for _, _, p in px) / len(px)
    prefill = sum(near(p, PREFILL_RGB) for _, _, p in px)
    decode = sum(near(p, DECODE_RGB) for _, _, p in px)
    print(f"page {width}x{height}: {len(colours)} distinct colours, {share:.1%} non-white, "
          f"{prefill} prefill-blue and {decode} decode-orange samples")
    problems.check((width, height) == (1200, 1600), f"screenshot is {width}x{height}, asked for 1200x1600")
    problems.check(len(colours) >= 50, f"only {len(colours)} colours: blank or broken page")
    problems.check(0.02 <= share <= 0.6, f"{share:.1%} of the page is not white")
    problems.check(prefill > 0 and decode > 0, "the chart's prefill and decode colours are not on the page")

    with open(page, encoding="utf-8") as f:
        html = f.read()
    # The roofline chart alone, drawn 1000 px wide: its ink must span the chart, with the
    # prefill and decode points and the roofs in their colours.
    chart = os.path.join(home, "roofline.html")
    with open(chart, "w", encoding="utf-8") as f:
        f.write(isolate(html, "roofline", "#roofline > :not(figure) { display: none !important; } figure { margin: 0 !important; }"
                                          " #roofline svg.roofline { width: 1000px !important; max-width: none !important; height: auto !important; }"
                                          " #roofline figcaption { display: none !important; }"))
    error = screenshot(browser, chart, shot, home, 1000, 1000)
    if not problems.check(error is None, f"roofline: {error}"):
        return report_problems(problems)
    _, _, px = pixels(shot)
    ink = [(x, y) for x, y, p in px if min(p) < 200]
    prefill = sum(near(p, PREFILL_RGB) for _, _, p in px)
    decode = sum(near(p, DECODE_RGB) for _, _, p in px)
    if problems.check(ink, "roofline: nothing drawn"):
        xs, ys = [x for x, _ in ink], [y for _, y in ink]
        span_x, span_y = max(xs) - min(xs), max(ys) - min(ys)
        print(f"roofline alone: ink over {span_x}x{span_y} px, {len(ink)} ink samples, {prefill} prefill-blue, {decode} decode-orange")
        problems.check(span_x >= 800, f"roofline: ink spans {span_x} px of the 1000 px chart")
        problems.check(span_y >= 300, f"roofline: ink spans {span_y} px high")
        problems.check(prefill >= 5 and decode >= 5, f"roofline: {prefill} prefill and {decode} decode samples: the points are not drawn")
    # The playbook alone: a band of text per recommendation (plus the header row).
    recs = json.loads(run(exe, ["advise"] + args + ["--json"], home).stdout)["recommendations"]
    book = os.path.join(home, "playbook.html")
    with open(book, "w", encoding="utf-8") as f:
        f.write(isolate(html, "playbook"))
    error = screenshot(browser, book, shot, home, 1200, 3000)
    if not problems.check(error is None, f"playbook: {error}"):
        return report_problems(problems)
    _, _, px = pixels(shot)
    bands = ink_bands(px, 1200)
    dark = sum(max(p) < 128 for _, _, p in px)
    print(f"playbook alone: {bands} bands of text, {dark} dark samples, {len(recs)} recommendations")
    problems.check(len(recs) >= 1, "advise --json has no recommendation to show")
    problems.check(bands >= len(recs) + 1, f"playbook: {bands} lines of text for {len(recs)} rows and the header")
    return report_problems(problems)


def report_problems(problems):
    for m in problems:
        print("FAIL: " + m)
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--render", action="store_true", help="render with a headless Chromium (exit 77 when none)")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="optadvisor-html-")
    try:
        if args.render:
            return render(args.exe, home)
        failures = 0
        checks = [(name, lambda a=a, hw=hw, n=name: check_advice(args.exe, n, a, hw, home)) for name, a, hw in SCENARIOS]
        checks += [("training", lambda: check_training(args.exe, home)), ("estimate", lambda: check_estimate(args.exe, home))]
        for name, check in checks:
            problems = check()
            print(f"[{'ok' if not problems else 'FAIL'}] {name}")
            for m in problems:
                print("    " + m)
            failures += bool(problems)
        print(f"{failures} failure(s)")
        return 1 if failures else 0
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
