#!/usr/bin/env python3
"""Writes crates/history/tests/fixtures/changepoint-reference.json: fixed synthetic series and
what MongoDB's E-divisive implementation (the `signal-processing-algorithms` package on PyPI,
github.com/mongodb/signal-processing-algorithms) finds in them, so that gatebench's own
implementation (crates/history/src/changepoint.rs) is checked against an independent one.

For every series the fixture holds the values (every repeat of every version, in version
order), the reference's statistic Q(tau) at every split (deterministic: compared value for
value), and the reference's change points at p = 0.05 (its permutation test is random; the
series have clear shifts so that any sound test finds the same ones).

    python3 -m venv /tmp/spa && /tmp/spa/bin/pip install signal-processing-algorithms
    /tmp/spa/bin/python scripts/changepoint-reference.py
"""
import json
import os
import sys

import numpy as np
from signal_processing_algorithms.determinism import deterministic_numpy_random
from signal_processing_algorithms.energy_statistics import energy_statistics as es

PVALUE = 0.05
PERMUTATIONS = 199


def steps(rng, versions, repeats, level, cv, shifts, lognormal=False):
    """`versions` x `repeats` values around `level`; `shifts` maps a version to the factor the
    level is multiplied by from there on."""
    out = []
    mean = level
    for v in range(versions):
        mean *= shifts.get(v, 1.0)
        for _ in range(repeats):
            if lognormal:
                out.append(float(mean * rng.lognormal(0.0, cv)))
            else:
                out.append(float(mean * (1.0 + cv * rng.standard_normal())))
    return out


def main():
    rng = np.random.default_rng(20261128)
    cases = [
        ("one repeat, one step up", 1, steps(rng, 60, 1, 100.0, 0.01, {30: 1.10})),
        ("one repeat, up then down", 1, steps(rng, 80, 1, 50.0, 0.01, {25: 1.08, 55: 0.85})),
        ("five repeats, 6% step", 5, steps(rng, 30, 5, 20000.0, 0.02, {18: 1.06})),
        ("five repeats, two steps", 5, steps(rng, 40, 5, 12.5, 0.015, {10: 1.10, 28: 0.93})),
        ("five repeats, last version regressed", 5, steps(rng, 25, 5, 9000.0, 0.01, {24: 0.90})),
        ("five repeats, skewed latency", 5, steps(rng, 30, 5, 4.0, 0.03, {12: 1.15}, lognormal=True)),
        ("three repeats, three steps", 3, steps(rng, 45, 3, 700.0, 0.01, {8: 1.07, 20: 1.07, 33: 0.90})),
    ]
    series = []
    for name, repeats, values in cases:
        arr = np.asarray(values, dtype=np.float64)
        stats = es._calculate_t_stats(es._get_distance_matrix(es._convert(arr)))
        with deterministic_numpy_random(1):
            cps = es.e_divisive(arr, pvalue=PVALUE, permutations=PERMUTATIONS)
        cps = sorted(int(c) for c in cps)
        off = [c for c in cps if c % repeats]
        if off:
            sys.exit(f"{name}: the reference split inside a version at {off}; pick clearer steps")
        series.append({
            "name": name,
            "repeats": repeats,
            "values": values,
            "statistics": [float(x) for x in stats],
            "change_points": cps,
        })
        print(f"{name}: {len(values)} values, change points {cps}")
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "..", "crates", "history", "tests", "fixtures",
                       "changepoint-reference.json")
    import importlib.metadata as md
    doc = {
        "generator": "scripts/changepoint-reference.py",
        "reference": f"signal-processing-algorithms {md.version('signal-processing-algorithms')}",
        "c_extension": es.C_EXTENSION_LOADED,
        "pvalue": PVALUE,
        "permutations": PERMUTATIONS,
        "series": series,
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
