"""Draws a window of a Chrome trace (as `mx.profiler.dump` writes) as an SVG
timeline: one band per thread, spans nested by depth and coloured by
domain, labelled where they are wide enough. Used for the profile picture
in docs/profiler.md; needs nothing beyond Python.

Run: python scripts/trace_svg.py TRACE.json OUT.svg [--start-ms S] [--span-ms W] [--width PX]
(--start-ms counts from the first span in the trace.)
"""

import argparse
import html
import json

COLOURS = {
    "operator": "#4e79a7",
    "Custom Operator": "#f28e2b",
    "oxnet API": "#76b7b2",
}
OTHER = ["#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]
ROW = 18
LABEL_W = 150


def colour(domain, assigned):
    if domain in COLOURS:
        return COLOURS[domain]
    if domain not in assigned:
        assigned[domain] = OTHER[len(assigned) % len(OTHER)]
    return assigned[domain]


def depths(spans):
    """Nesting depth of each span of one thread (spans sorted by start)."""
    open_ends, out = [], []
    for s in spans:
        while open_ends and open_ends[-1] <= s["ts"]:
            open_ends.pop()
        out.append(len(open_ends))
        open_ends.append(s["ts"] + s["dur"])
    return out


def render(events, start_ms, span_ms, width):
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        raise SystemExit("trace_svg: the trace holds no spans")
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    t0 = min(s["ts"] for s in spans) + start_ms * 1000
    t1 = t0 + span_ms * 1000 if span_ms else max(s["ts"] + s["dur"] for s in spans)
    scale = (width - LABEL_W - 10) / (t1 - t0)
    assigned, body, y = {}, [], 30
    for tid in sorted({s["tid"] for s in spans}):
        mine = sorted((s for s in spans if s["tid"] == tid), key=lambda s: (s["ts"], -s["dur"]))
        level = depths(mine)
        shown = [(s, d) for s, d in zip(mine, level) if s["ts"] + s["dur"] >= t0 and s["ts"] <= t1]
        if not shown:
            continue
        rows = max(d for _, d in shown) + 1
        body.append(f'<text x="4" y="{y + 13}" class="t">{html.escape(names.get(tid, str(tid)))}</text>')
        for s, d in shown:
            x = LABEL_W + max(s["ts"] - t0, 0) * scale
            w = max((min(s["ts"] + s["dur"], t1) - max(s["ts"], t0)) * scale, 0.5)
            ry = y + d * ROW
            tip = f'{s["name"]} ({s["cat"]}) {s["dur"]:.1f} µs'
            body.append(f'<rect x="{x:.1f}" y="{ry}" width="{w:.1f}" height="{ROW - 2}" '
                        f'fill="{colour(s["cat"], assigned)}" stroke="#fff" stroke-width="0.6"><title>{html.escape(tip)}</title></rect>')
            if w > 7 * len(s["name"]):
                body.append(f'<text x="{x + 2:.1f}" y="{ry + 12}" class="s">{html.escape(s["name"])}</text>')
        y += rows * ROW + 12
    legend = dict(COLOURS, **assigned)
    lx = LABEL_W
    for domain, c in legend.items():
        body.append(f'<rect x="{lx}" y="{y}" width="12" height="12" fill="{c}"/>'
                    f'<text x="{lx + 16}" y="{y + 11}" class="t">{html.escape(domain)}</text>')
        lx += 30 + 7 * len(domain)
    ticks = []
    for k in range(6):
        t = k * (t1 - t0) / 5
        tx = LABEL_W + t * scale
        ticks.append(f'<line x1="{tx:.1f}" y1="22" x2="{tx:.1f}" y2="{y - 6}" stroke="#ddd"/>'
                     f'<text x="{tx:.1f}" y="16" class="t">{(t + start_ms * 1000) / 1000:.2f} ms</text>')
    height = y + 24
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">'
            '<style>.t{font-size:11px;fill:#333}.s{font-size:10px;fill:#fff}</style>'
            f'<rect width="{width}" height="{height}" fill="#fff"/>' + "".join(ticks) + "".join(body) + "</svg>\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("out")
    parser.add_argument("--start-ms", type=float, default=0.0)
    parser.add_argument("--span-ms", type=float, default=0.0, help="window length (default: to the end)")
    parser.add_argument("--width", type=int, default=1400)
    args = parser.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    with open(args.out, "w") as f:
        f.write(render(events, args.start_ms, args.span_ms, args.width))


if __name__ == "__main__":
    main()
