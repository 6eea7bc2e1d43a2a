#!/usr/bin/env python3
"""The Markdown table of a bench/hostile-clients.sh run, from its raw TSV: one row per attack
shape, one column per target, each cell what the target did and when (and the shape's count)."""

import sys

WHAT = {
    "idle-h2-preface": "h2c preface + SETTINGS, then silence",
    "stalled-h2-body": "h2 POST, 5 of 10 body bytes, then silence",
    "slow-reader-h1": "HTTP/1.1 GET of a large body, never read",
    "slow-reader-h2": "h2 GET of a large body, window never opened",
    "rapid-reset": "h2 HEADERS, 2 ms, RST_STREAM; up to 1000 times",
    "ping-flood": "h2 PINGs, ACKs never read; up to 100000",
    "trickled-head": "HTTP/1.1 head, one byte per 100 ms, never ending",
    "connection-flood": "connections at once, each with a request",
}
COUNT = {
    "rapid-reset": "resets",
    "ping-flood": "PINGs",
    "slow-reader-h2": "bytes",
    "trickled-head": "bytes",
}


def main():
    path = sys.argv[1]
    comments, rows = [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                comments.append(line[1:].strip())
            elif line and not line.startswith("shape\t"):
                rows.append(line.split("\t"))
    targets = []
    for r in rows:
        if r[1] not in targets:
            targets.append(r[1])
    shapes = []
    for r in rows:
        if r[0] not in shapes:
            shapes.append(r[0])
    cell = {}
    for shape, target, outcome, seconds, count, detail in (r + [""] * (6 - len(r)) for r in rows):
        text = outcome
        if not outcome.startswith("served"):
            text += " after %ss" % seconds if outcome != "none" else " in %ss" % seconds
        if shape in COUNT and count not in ("", "0"):
            text += ", %s %s" % (count, COUNT[shape])
        if detail:
            text += " (%s)" % detail
        cell[(shape, target)] = text
    print("From `%s`: %s." % (path.split("/")[-1], "; ".join(comments)))
    print()
    print("| shape | what the client does | " + " | ".join(targets) + " |")
    print("|---|---|" + "---|" * len(targets))
    for shape in shapes:
        print("| %s | %s | %s |" % (shape, WHAT.get(shape, ""), " | ".join(cell.get((shape, t), "—") for t in targets)))
    print()
    print("Outcomes: `closed` (FIN), `rst` (TCP reset, or RST_STREAM over HTTP/2, with its code), "
          "`goaway` (with its code; `+closed` when the close followed), `status N`, `none` (nothing "
          "happened within the cap), `served a/b` (requests answered within 1.5 s, before any idle timer could make room).")


if __name__ == "__main__":
    main()
