#!/usr/bin/env python3
# trace-view.py — lesson 2: a FIB_TRACE file as a timeline you can put in a README (SVG or HTML).
#
#   trace-view.py TRACE.json -o timeline.svg [--fibers N] [--from US] [--until US]
#                 [--start-at NAME] [--managers 1,2] [--title T]
#
# One row per fiber (its id and name), coloured by state: running, ready (in the
# ready queue) or parked (blocked; its wait site and waker on hover, as SVG
# <title> elements). A layer's spans (the Waiter's polls) are drawn as a band
# on their fiber's row, a wake as a tick, and a time axis in microseconds runs
# along the top. --managers keeps the fibers of those managers (1 is the
# process's first), --fibers the first N rows, --from/--until a window of
# time (microseconds since the trace began; with --start-at, since the first
# event named or classed NAME: spawn, wake, parked, poll, ..., which does not
# move with the program's start-up). -o out.html wraps the SVG in a page.
# Python 3 standard library only.
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

COLOURS = {"running": "#2e7d32", "ready": "#f9c74f", "parked": "#cfd8dc"}
SPAN_COLOUR = "#1565c0"
WAKE_COLOUR = "#c62828"
LABEL_WIDTH, PLOT_WIDTH, ROW, TOP = 190, 760, 16, 64


def load(path):
    with open(path) as file:
        data = json.load(file)
    return data["traceEvents"] if isinstance(data, dict) else data


def rows_of(events):
    """The tracks, (pid, tid) -> label, in manager then fiber order."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    managers = sorted({pid for pid, _ in names})
    rows = []
    for key in sorted(names):
        label = names[key] if len(managers) == 1 else f"m{key[0]} {names[key]}"
        rows.append((key, label))
    return rows


def nice_step(span):
    """A tick step of 1, 2 or 5 times a power of ten giving about 8 ticks."""
    raw = span / 8 if span > 0 else 1
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def tip(event):
    """What hovering over a slice shows."""
    args = event.get("args", {})
    text = f'{event["name"]}: {event["dur"]:.1f} us from {event["ts"]:.1f} us'
    for key, value in args.items():
        text += f"\n{key}: {value}"
    return text


class Plot:
    def __init__(self, start, end):
        self.start, self.end = start, end
        self.scale = PLOT_WIDTH / (end - start) if end > start else 1.0

    def x(self, ts):
        return LABEL_WIDTH + (min(max(ts, self.start), self.end) - self.start) * self.scale


def coalesce(slices, plot):
    """Adjacent slices of one colour that touch on screen become one rectangle
    (a tooltip then lists how many), and one too thin to see widens the one
    before it: keeps a long trace's SVG small."""
    merged = []
    for event in sorted(slices, key=lambda e: e["ts"]):
        x0, x1 = plot.x(event["ts"]), plot.x(event["ts"] + event["dur"])
        if x1 - x0 < 0.25 and merged and x0 - merged[-1]["x1"] < 0.3:  # too thin to see
            merged[-1]["x1"] = max(merged[-1]["x1"], x1)
            merged[-1]["count"] += 1
            continue
        if merged and merged[-1]["cat"] == event["cat"] and x0 - merged[-1]["x1"] < 0.3 \
                and merged[-1]["x1"] - merged[-1]["x0"] < 2 and x1 - x0 < 2:
            merged[-1]["x1"] = x1
            merged[-1]["count"] += 1
            continue
        merged.append({"cat": event["cat"], "x0": x0, "x1": x1, "count": 1, "event": event})
    return merged


def render(events, title, fibers, window_from, window_until, start_at, managers):
    rows = [row for row in rows_of(events) if not managers or row[0][0] in managers]
    rows = rows[:fibers] if fibers else rows
    wanted = {key for key, _ in rows}
    timed = [e for e in events if e.get("ph") in ("X", "i") and (e["pid"], e["tid"]) in wanted]
    last = max((e["ts"] + e.get("dur", 0) for e in timed), default=1.0)
    anchors = [e["ts"] for e in timed if start_at in (e.get("name"), e.get("cat"))]
    offset = min(anchors, default=0.0) if start_at else 0.0
    start = offset + window_from if window_from is not None else offset
    end = min(offset + window_until, last) if window_until is not None else last
    plot = Plot(start, end)
    visible = [e for e in timed if e["ts"] <= end and e["ts"] + e.get("dur", 0) >= start]
    height = TOP + ROW * len(rows) + 24
    width = LABEL_WIDTH + PLOT_WIDTH + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="8" y="16" font-size="14" font-weight="bold">{escape(title)}</text>']
    out += legend()
    out += axis(plot, height)
    row_of = {key: index for index, (key, _) in enumerate(rows)}
    for index, (_, label) in enumerate(rows):
        y = TOP + index * ROW
        out.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + ROW - 4}" text-anchor="end">{escape(label)}</text>')
    by_row = {}
    for event in visible:
        by_row.setdefault(row_of[(event["pid"], event["tid"])], []).append(event)
    for index, row_events in sorted(by_row.items()):
        out += draw_row(index, row_events, plot)
    out.append("</svg>")
    return "\n".join(out)


def draw_row(index, row_events, plot):
    y = TOP + index * ROW
    out = []
    states = [e for e in row_events if e["ph"] == "X" and e.get("cat") in COLOURS]
    for piece in coalesce(states, plot):
        hover = tip(piece["event"]) if piece["count"] == 1 else f'{piece["count"]} {piece["cat"]} slices'
        out.append(f'<rect x="{piece["x0"]:.2f}" y="{y + 2}" width="{max(piece["x1"] - piece["x0"], 0.4):.2f}" '
                   f'height="{ROW - 4}" fill="{COLOURS[piece["cat"]]}"><title>{escape(hover)}</title></rect>')
    spans = [e for e in row_events if e["ph"] == "X" and e.get("cat") == "span"]
    for piece in coalesce(spans, plot):
        hover = tip(piece["event"]) if piece["count"] == 1 else f'{piece["count"]} spans'
        out.append(f'<rect x="{piece["x0"]:.2f}" y="{y + ROW / 2 - 2:.1f}" '
                   f'width="{max(piece["x1"] - piece["x0"], 0.8):.2f}" height="4" fill="{SPAN_COLOUR}">'
                   f'<title>{escape(hover)}</title></rect>')
    wakes = [e for e in row_events if e["ph"] == "i" and e["name"] == "wake"]
    last_x = -10.0
    for event in sorted(wakes, key=lambda e: e["ts"]):
        x = plot.x(event["ts"])
        if x - last_x < 1.5:
            continue
        last_x = x
        out.append(f'<path d="M{x:.2f},{y + 1} l-3,-4 h6 z" fill="{WAKE_COLOUR}">'
                   f'<title>{escape("woken by " + event["args"].get("by", "?"))} at {event["ts"]:.1f} us'
                   f'</title></path>')
    return out


def legend():
    out, x = [], LABEL_WIDTH
    items = [(COLOURS["running"], "running"), (COLOURS["ready"], "ready (queued)"),
             (COLOURS["parked"], "parked (hover: wait site, waker)"), (SPAN_COLOUR, "poll / span"),
             (WAKE_COLOUR, "wake")]
    for colour, text in items:
        out.append(f'<rect x="{x}" y="24" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{x + 14}" y="33">{escape(text)}</text>')
        x += 14 + 5.6 * len(text) + 16
    return out


def axis(plot, height):
    step = nice_step(plot.end - plot.start)
    out = [f'<line x1="{LABEL_WIDTH}" y1="{TOP - 2}" x2="{LABEL_WIDTH + PLOT_WIDTH}" y2="{TOP - 2}" stroke="#444"/>']
    tick = math.ceil(plot.start / step) * step
    while tick <= plot.end + 1e-9:
        x = plot.x(tick)
        out.append(f'<line x1="{x:.2f}" y1="{TOP - 6}" x2="{x:.2f}" y2="{height - 20}" stroke="#eee"/>')
        out.append(f'<text x="{x:.2f}" y="{TOP - 9}" text-anchor="middle" fill="#444">{tick:g}</text>')
        tick += step
    out.append(f'<text x="{LABEL_WIDTH + PLOT_WIDTH}" y="{height - 6}" text-anchor="end" fill="#444">'
               'microseconds since the trace began</text>')
    return out


def main(argv):
    parser = argparse.ArgumentParser(description="Render a FIB_TRACE file as an SVG or HTML timeline.")
    parser.add_argument("trace")
    parser.add_argument("-o", "--output", required=True, help="out.svg or out.html")
    parser.add_argument("--fibers", type=int, help="show only the first N rows")
    parser.add_argument("--from", dest="window_from", type=float, help="window start, microseconds")
    parser.add_argument("--until", dest="window_until", type=float, help="window end, microseconds")
    parser.add_argument("--start-at", metavar="NAME",
                        help="--from and --until count from the first event named or classed NAME")
    parser.add_argument("--managers", help="comma-separated manager numbers to show")
    parser.add_argument("--title", default="fiber timeline")
    args = parser.parse_args(argv)
    svg = render(load(args.trace), args.title, args.fibers, args.window_from, args.window_until,
                 args.start_at, {int(n) for n in args.managers.split(",")} if args.managers else None)
    if args.output.endswith(".html"):
        svg = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{escape(args.title)}</title>"
               f"</head><body>\n{svg}\n</body></html>")
    with open(args.output, "w") as file:
        file.write(svg + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
