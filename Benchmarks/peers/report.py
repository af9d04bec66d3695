#!/usr/bin/env python3
"""The peers comparison's report from run.py's records (LABEL.jsonl): LABEL.md, the tables, and
LABEL.html, a self-contained page (tables and inline SVG charts, in the style of `nbus demo`'s
report). Every figure is the median over runs, with min-max beside it where runs differ.

Usage: report.py RESULTS.jsonl   (writes RESULTS.md and RESULTS.html beside it, prints their paths)
"""
import html
import json
import math
import os
import statistics
import sys

ORDER = ("nbus", "nats", "redis", "zmqraw", "relay")
TITLES = {"nbus": "NotificationBus (nbus broker)", "nats": "NATS (nats-server)", "redis": "Redis (redis-server)",
          "zmqraw": "bare ZeroMQ (zmq_proxy)", "relay": "bus clients through a bare TCP relay (the broker's floor)"}
# Short names for the charts' legends.
SHORT = {"nbus": "nbus broker", "nats": "NATS", "redis": "Redis", "zmqraw": "bare ZeroMQ", "relay": "TCP relay"}
# One colour per system, the same in every chart (the first four of nbus demo's palette).
COLORS = {"nbus": "#4e79a7", "nats": "#f28e2b", "redis": "#e15759", "zmqraw": "#8c8c8c", "relay": "#9c755f"}
# The processes of a stacked bar: colours no system uses.
SEGMENT_COLORS = ["#59a14f", "#76b7b2", "#b07aa1"]


def load(path):
    meta, recs = {}, []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            if rec.get("meta"):
                meta = rec
            else:
                recs.append(rec)
    return meta, recs


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values, fmt):
    """'median (min-max)', or the median alone when the runs agree or there is one."""
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    mid, lo, hi = statistics.median(values), min(values), max(values)
    if len(values) == 1 or fmt(lo) == fmt(hi):
        return fmt(mid)
    return f"{fmt(mid)} ({fmt(lo)}-{fmt(hi)})"


def count(v):
    return f"{v:,.0f}"


def two(v):
    return f"{v:.2f}"


def one(v):
    return f"{v:.1f}"


class Summary:
    """The figures per system and test, from the records without an error."""

    def __init__(self, meta, recs):
        self.meta, self.recs = meta, recs
        present = {r["system"] for r in recs}
        self.systems = [s for s in ORDER if s in present]
        self.errors = [r for r in recs if "error" in r]

    def ok(self, system, test):
        return [r for r in self.recs if r["system"] == system and r["test"] == test and "error" not in r]

    @staticmethod
    def expected(r):
        n = r["pub"].get("n", r["n"])
        if r["test"] == "fanout":
            return n * r["sub"].get("subscribers", 4)
        return n // 10 if r["test"] == "filtered" else n

    @staticmethod
    def lost(r):
        return Summary.expected(r) - r["sub"]["received"]

    @staticmethod
    def per_delivered_us(r, cpu_s):
        return 1e6 * cpu_s / max(1, r["sub"]["received"]) if cpu_s is not None else None

    def cost(self, system, test):
        """Per delivered notification: (pub, server, sub) CPU microseconds, medians."""
        rs = self.ok(system, test)
        return [median([self.per_delivered_us(r, r.get(k)) for r in rs]) for k in ("pub_cpu_s", "server_cpu_s", "sub_cpu_s")]

    def anon_mb(self, system, test, role):
        return median([r["anon_peak_kb"][role] / 1024 for r in self.ok(system, test) if "anon_peak_kb" in r])

    def rate(self, system, test):
        return median([r["sub"]["rate"] for r in self.ok(system, test)])

    def p(self, system, key):
        return median([r["ping"][key] for r in self.ok(system, "latency")])

    def ratio(self, value_of, system, other):
        a, b = value_of(system), value_of(other)
        return a / b if a and b else None


# ---- markdown ----------------------------------------------------------------------------------

def markdown(s):
    m = s.meta
    out = [f"# Peers comparison {m.get('label', '')}", ""]
    out.append(f"{m.get('date', '?')}, commit {m.get('commit', '?')}, {m.get('runs', '?')} run(s) of each test, "
               f"{count(m.get('n', 0))} notifications a test, {count(m.get('lat_n', 0))} round trips; "
               f"{m.get('cores', '?')} cores ({m.get('cpu', '?')}), load {m.get('loadavg', ['?'])[0]} at the start; "
               + ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v) + ".")
    out.append(f"Command: `{m.get('command', '?')}`. Figures: median over runs (min-max).")
    out.append("")
    if "nbus" in s.systems:
        heads = []
        for other in s.systems:
            if other == "nbus":
                continue
            parts = []
            for test, label in (("throughput", "1 -> 1"), ("filtered", "filtered"), ("fanout", "fan-out per subscriber")):
                r = s.ratio(lambda x: s.rate(x, test), "nbus", other)
                if r:
                    parts.append(f"{label} {r:.2f}x")
            r = s.ratio(lambda x: s.p(x, "p50_us"), "nbus", other)
            if r:
                parts.append(f"round trip p50 {r:.2f}x")
            if parts:
                heads.append(f"- nbus against {other}: " + ", ".join(parts))
        if heads:
            out += ["nbus's subscriber rate and round trip as a multiple of each peer's (same invocation):", ""] + heads + [""]
    for test, title in (("throughput", "1 publisher -> 1 subscriber, bench.a, 256 B"),
                        ("filtered", "filtered: the publisher cycles bench.0 .. bench.9, the subscriber takes bench.3 (1 in 10)"),
                        ("fanout", "fan-out: 1 publisher -> 4 subscribers, bench.a, 256 B (sub msg/s: the median subscriber's; "
                                   "CPU per delivered copy, sub: the four together; RssAnon sub: the largest)")):
        if not any(s.ok(x, test) for x in s.systems):
            continue
        out += [f"## {title}", "",
                "| system | runs | sub msg/s | pub msg/s | lost | CPU us per delivered: pub | server | sub | total "
                "| peak RssAnon MB: pub | server | sub |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for x in s.systems:
            rs = s.ok(x, test)
            if not rs:
                continue
            us = lambda key: spread([s.per_delivered_us(r, r.get(key)) for r in rs], two)
            total = spread([s.per_delivered_us(r, sum(r.get(k) or 0 for k in ("pub_cpu_s", "server_cpu_s", "sub_cpu_s")))
                            for r in rs], two)
            mb = lambda role: spread([r["anon_peak_kb"][role] / 1024 for r in rs], one)
            out.append(f"| {x} | {len(rs)} | {spread([r['sub']['rate'] for r in rs], count)} | "
                       f"{spread([r['pub']['rate'] for r in rs], count)} | {spread([s.lost(r) for r in rs], count)} | "
                       f"{us('pub_cpu_s')} | {us('server_cpu_s')} | {us('sub_cpu_s')} | {total} | "
                       f"{mb('pub')} | {mb('server')} | {mb('sub')} |")
        out.append("")
    if any(s.ok(x, "latency") for x in s.systems):
        out += ["## round trip, ping -> pong -> ping, 16 B (microseconds)", "",
                "| system | runs | p50 | p90 | p99 | p99.9 | max |", "|---|---|---|---|---|---|---|"]
        for x in s.systems:
            rs = s.ok(x, "latency")
            if rs:
                out.append(f"| {x} | {len(rs)} | " + " | ".join(spread([r["ping"][k] for r in rs], one)
                                                           for k in ("p50_us", "p90_us", "p99_us", "p999_us", "max_us")) + " |")
        out.append("")
    for r in s.errors:
        out.append(f"NOTE {r['system']} {r['test']} run {r.get('run')}: {r['error']}")
    for r in s.recs:
        if "error" not in r and r["test"] != "latency" and not r["sub"].get("end_marker"):
            out.append(f"NOTE {r['system']} {r['test']} run {r.get('run')}: the subscriber stopped without END "
                       f"(received {count(r['sub']['received'])})")
    return "\n".join(out).rstrip() + "\n"


# ---- SVG charts --------------------------------------------------------------------------------

W, H, LEFT, RIGHT, TOP = 640.0, 320.0, 70.0, 14.0, 48.0


def esc(text):
    return html.escape(str(text), quote=True)


def compact(v):
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def micros(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def nice_step(top):
    """A grid step of 1, 2 or 5 times a power of ten giving about four lines up to `top`."""
    if top <= 0:
        return 1.0
    raw = top / 4
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def bar_chart(title, unit, categories, series, values, colors, fmt=compact, segments=None):
    """Grouped bars: values[category][series] is a number, or with segments a list stacked
    bottom-up (one colour per segment). Mirrors BusBench's SVGBarChart."""
    stacked = bool(segments)
    legend = [(name, SEGMENT_COLORS[i % len(SEGMENT_COLORS)]) for i, name in enumerate(segments)] if stacked \
        else list(zip(series, colors))
    legend_h = 22.0
    label_size = 11.0
    bottom = legend_h + 12 + label_size + 3
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - bottom
    totals = [sum(v) if stacked else v for row in values for v in row if v is not None]
    step = nice_step(max(totals) if totals else 0.0)
    ticks = [step * i for i in range(int(max(totals, default=0.0) / step) + 2)]
    top_value = max(ticks[-1], max(totals, default=0.0) * 1.12)
    y = lambda v: TOP + plot_h * (1 - v / top_value)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W:.0f} {H:.0f}" preserveAspectRatio="xMidYMid meet" '
           f'role="img" aria-label="{esc(title)}" class="chart" font-family="Helvetica, Arial, sans-serif">',
           f'<rect x="0" y="0" width="{W:.0f}" height="{H:.0f}" fill="#ffffff"/>',
           f'<text x="12" y="20" font-size="15" font-weight="bold" fill="#222">{esc(title)}</text>',
           f'<text x="12" y="37" font-size="11" fill="#555">{esc(unit)}</text>']
    for tick in ticks:
        ty = y(tick)
        out.append(f'<line x1="{LEFT:.1f}" y1="{ty:.1f}" x2="{W - RIGHT:.1f}" y2="{ty:.1f}" stroke="#e3e3e3"/>')
        out.append(f'<text x="{LEFT - 6:.1f}" y="{ty + 4:.1f}" font-size="10" text-anchor="end" fill="#555">{esc(fmt(tick))}</text>')
    group_w = plot_w / max(1, len(categories))
    bar_w = min(60.0, (group_w - 16) / max(1, len(series)))
    for c, category in enumerate(categories):
        x0 = LEFT + group_w * c + (group_w - bar_w * len(series)) / 2
        for s_i in range(len(series)):
            v = values[c][s_i]
            if v is None:
                continue
            x = x0 + bar_w * s_i
            parts = v if stacked else [v]
            base = 0.0
            for g, part in enumerate(parts):
                fill = SEGMENT_COLORS[g % len(SEGMENT_COLORS)] if stacked else colors[s_i]
                out.append(f'<rect x="{x + 1:.1f}" y="{y(base + part):.1f}" width="{bar_w - 2:.1f}" '
                           f'height="{max(0.0, y(base) - y(base + part)):.1f}" fill="{fill}"/>')
                base += part
            out.append(f'<text class="value" x="{x + bar_w / 2:.1f}" y="{y(base) - 3:.1f}" font-size="10" '
                       f'text-anchor="middle" fill="#222">{esc(fmt(base))}</text>')
        out.append(f'<text x="{LEFT + group_w * (c + 0.5):.1f}" y="{TOP + plot_h + 15:.1f}" font-size="{label_size:.0f}" '
                   f'text-anchor="middle" fill="#333">{esc(category)}</text>')
    out.append(f'<line x1="{LEFT:.1f}" y1="{TOP + plot_h:.1f}" x2="{W - RIGHT:.1f}" y2="{TOP + plot_h:.1f}" stroke="#999"/>')
    x = LEFT
    ly = H - 10
    for name, color in legend:
        out.append(f'<rect x="{x + 4:.1f}" y="{ly - 9:.1f}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 22:.1f}" y="{ly:.1f}" font-size="11" fill="#333">{esc(name)}</text>')
        x += 30 + len(name) * 11 * 0.62
    out.append("</svg>")
    return "".join(out)


# ---- HTML --------------------------------------------------------------------------------------

STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; }
.sub { color: #555; margin-top: 0; }
.note { color: #555; font-size: 13px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 12px; }
.charts svg { border: 1px solid #ddd; background: #fff; width: 100%; height: auto; display: block; }
.verdict { background: #fff; border: 1px solid #ccc; border-left: 6px solid #1a7f37; padding: 8px 14px; margin-bottom: 16px; }
.verdict .headline { font-weight: bold; }
.verdict.flagged { border-left-color: #c62828; }
.verdict li { margin: 4px 0; }
.warning { background: #fff4e5; border: 1px solid #e0a040; padding: 8px 14px; font-weight: bold; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; overflow-wrap: anywhere; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; }
dl.glossary dt { font-weight: bold; margin-top: 6px; }
dl.glossary dd { margin-left: 18px; }
pre { background: #fff; border: 1px solid #ddd; padding: 8px; overflow-x: auto; }
"""

GLOSSARY = [
    ("sub msg/s", "the subscriber's rate: (received - 1) / (first -> last arrival). The publisher posts as fast as "
                  "its client allows; on two shared cores the rate follows the total CPU the three processes spend."),
    ("lost", "published (or, filtered, the tenth taken) minus received. Every system here runs lossless: NATS and "
             "Redis drop only a slow consumer (none was dropped if lost is 0); bare ZeroMQ's publisher uses "
             "ZMQ_XPUB_NODROP; NotificationBus's broker throttles publishers by default."),
    ("CPU us per delivered", "user + system CPU time of each process over the test, divided by the notifications "
                             "the subscriber received: where a rate is won or lost."),
    ("peak RssAnon", "each process's private resident memory (heap, queues; not the shared libraries VmHWM also "
                     "counts), sampled every 20 ms."),
    ("round trip", "ping posts 16 B on ping, the ponger answers on pong, ping waits for it (sequence checked); "
                   "1,000 warm-up round trips, percentiles by nearest rank."),
]


def table_html(headers, rows):
    out = ["<div class=\"scroll\"><table>", "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join((f"<th style=\"text-align:left\">{c}</th>" if i == 0 else f"<td class=\"n\">{esc(c)}</td>")
                                    for i, c in enumerate(row)) + "</tr>")
    return "\n".join(out) + "\n</table></div>\n"


def md_tables_to_html(md):
    """The markdown tables of markdown(), as HTML tables with headings (one source of figures)."""
    out, table = [], []
    for line in md.splitlines() + [""]:  # the blank line ends a last table
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set("".join(cells)) <= set("-"):
                table.append(cells)
            continue
        if table:
            rows = [[f"<span class=\"swatch\" style=\"background:{COLORS.get(r[0], '#999')}\"></span>{esc(TITLES.get(r[0], r[0]))}"]
                    + r[1:] for r in table[1:]]
            out.append(table_html(table[0], rows))
            table = []
        if line.startswith("## "):
            out.append(f"<h2>{esc(line[3:])}</h2>")
        elif line.startswith("- "):
            out.append(f"<li>{esc(line[2:])}</li>")
        elif line.startswith("NOTE "):
            out.append(f"<p class=\"warning\">{esc(line)}</p>")
    return "\n".join(out)


def page(s, md):
    m = s.meta
    systems = s.systems
    colors = [COLORS[x] for x in systems]
    charts = []
    tests = [t for t in ("throughput", "filtered", "fanout") if any(s.ok(x, t) for x in systems)]
    if tests:
        names = {"throughput": "1 -> 1", "filtered": "filtered (1 name of 10)", "fanout": "fan-out 1 -> 4, each"}
        charts.append(bar_chart("Subscriber rate", "notifications a second, median over runs (higher is better)",
                                [names[t] for t in tests], [SHORT[x] for x in systems],
                                [[s.rate(x, t) for x in systems] for t in tests], colors))
        charts.append(bar_chart("CPU per delivered notification, 1 -> 1",
                                "microseconds of CPU (user + system) per notification received, stacked by process",
                                [SHORT[x] for x in systems], [""], [[[v or 0 for v in s.cost(x, "throughput")] if s.ok(x, "throughput") else None]
                                                            for x in systems],
                                ["#999"], fmt=lambda v: f"{v:.3g}", segments=["publisher", "server", "subscriber"]))
        charts.append(bar_chart("Peak private memory, 1 -> 1", "peak RssAnon, MB, median over runs (lower is better)",
                                ["publisher", "server", "subscriber"], [SHORT[x] for x in systems],
                                [[s.anon_mb(x, "throughput", role) for x in systems] for role in ("pub", "server", "sub")],
                                colors, fmt=lambda v: f"{v:.3g}"))
    if any(s.ok(x, "latency") for x in systems):
        # One chart per percentile: a p99 a hundred times the p50 would flatten the p50 bars.
        for key, label in (("p50_us", "p50"), ("p99_us", "p99")):
            charts.append(bar_chart(f"Round trip {label}, 16 B", "microseconds, median over runs (lower is better)",
                                    [label], [SHORT[x] for x in systems], [[s.p(x, key) for x in systems]], colors,
                                    fmt=micros))
    context = [("date", m.get("date")), ("commit", m.get("commit")), ("command", m.get("command")),
               ("runs", m.get("runs")), ("notifications a test", count(m.get("n", 0))),
               ("round trips", count(m.get("lat_n", 0))), ("machine", f"{m.get('cores')} cores, {m.get('cpu')}, Linux {m.get('kernel')}"),
               ("load average at the start", " ".join(str(x) for x in m.get("loadavg", [])))]
    context += [(k, v) for k, v in m.get("versions", {}).items() if v]
    body = [f"<h1>NotificationBus against NATS, Redis and bare ZeroMQ</h1>",
            f"<p class=\"sub\">one workload, every system through its server on 127.0.0.1, interleaved runs<br>"
            f"measured {esc(m.get('date', '?'))}, commit {esc(m.get('commit', '?'))}</p>"]
    flagged = bool(s.errors) or any(s.lost(r) for r in s.recs if "error" not in r and r["test"] != "latency")
    heads = [l[2:] for l in md.splitlines() if l.startswith("- nbus against")]
    if heads:
        body.append(f"<div class=\"verdict{' flagged' if flagged else ''}\"><p class=\"headline\">nbus as a multiple of "
                    "each peer, same invocation (rate: higher is better; round trip: lower is better)</p><ul>"
                    + "".join(f"<li>{esc(h)}</li>" for h in heads) + "</ul></div>")
    body.append("<div class=\"charts\">\n" + "\n".join(charts) + "\n</div>")
    body.append(md_tables_to_html(md))
    body.append("<h2>Run</h2>" + table_html(["", ""], [[esc(k), str(v)] for k, v in context]))
    body.append("<h2>Glossary</h2><dl class=\"glossary\">" + "".join(f"<dt>{esc(t)}</dt><dd>{esc(d)}</dd>" for t, d in GLOSSARY)
                + "</dl>")
    body.append("<p class=\"note\">Made by Benchmarks/peers/run.py (make bench-peers); Benchmarks/peers/README.md says "
                "what each test does.</p>")
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>Peers comparison {esc(m.get('label', ''))}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def write(raw_path):
    """Writes RAW.md and RAW.html beside RAW.jsonl; returns their paths."""
    meta, recs = load(raw_path)
    s = Summary(meta, recs)
    md = markdown(s)
    stem = raw_path[:-len(".jsonl")] if raw_path.endswith(".jsonl") else raw_path
    with open(stem + ".md", "w") as f:
        f.write(md)
    with open(stem + ".html", "w") as f:
        f.write(page(s, md))
    return stem + ".md", stem + ".html"


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]):
        sys.exit(__doc__)
    for path in write(sys.argv[1]):
        print(path)
