#!/usr/bin/env python3
"""The figures of docs/benchmarks.md, docs/proxy.md, docs/hosts.md, docs/seeds.md, docs/history.md, docs/streams.md,
docs/metrics.md, docs/conformance.md and README.md,
printed from bench/results/.

Every table of measured figures in those documents sits between two marker comments:

    <!-- figures:begin table proxy-vs-peers-2026-11-21T080007 proxy -->
    …generated lines…
    <!-- figures:end -->

The words after `figures:begin` say what goes there; NAME is a results file's stem under
bench/results/ (NAME.md, the summary a bench script wrote from its raw NAME.tsv):

    table NAME [SECTION]   the Markdown table and the bullet lines under it (paired ratios and
                           the like; a capacity search's "Answers:" line; an exporter-cost
                           summary's every bullet and its "**Result:" line) from NAME.md, from its `### SECTION…` part when given (the
                           rest of the words: the start of the heading); then
                           a line citing NAME.tsv and NAME.md with the time it was measured
    paired NAME [SECTION]  only the bullet lines (the paired per-run ratios)
    soak NAME              the checks of a bench/soak.sh summary (NAME.md), and its citation
    settings NAME…         proxy-vs-peers runs of gatebench and nginx in different settings
                           (ORIGIN, GEN, METHOD, NGINX_KEEPALIVE): one row per run, the paired
                           req/s ratio and CPU per request, from each NAME.tsv
    excerpt DIR ROWS       README.md's summary excerpt: the opening line and the first ROWS
                           rows of the measurement table of one real run's summary.md, kept
                           under bench/results/DIR/ (copied from a `gatebench run` results
                           directory)

Usage:

    bench/figures.py           rewrite the generated blocks in place
    bench/figures.py --check   exit 1, saying where, when a block differs from what the data
                               gives, a block names a file that is missing, the tables of a cited
                               summary differ from what bench/lib.sh prints from its raw .tsv
                               today (a soak summary: what soak_summary.py prints again from
                               its committed run; a hosts summary: what hosts_summary.py prints
                               from its committed run; a multi-generator summary: what
                               multi_generator_summary.py prints from its .tsv and
                               directory; a seed 000 steadiness summary: what
                               steadiness_summary.py prints from its .tsv; a history scale
                               summary: what history_scale_summary.py prints from its .tsv; a live
                               merge summary: what live_merge_summary.py prints from its .tsv; a proxy
                               profile: what proxy_profile_summary.py prints from its directory;
                               a Prometheus check: what prometheus_check.py prints from its
                               directory), or the prose cites a bench/results file (by path or as
                               `…THHMMSS`) that does not exist

Only the Python standard library and bash (for bench/lib.sh's summarizers); run from anywhere
(paths are relative to the repository).
"""

import csv
import difflib
import io
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
DOCS = ["docs/benchmarks.md", "docs/proxy.md", "docs/hosts.md", "docs/seeds.md", "docs/history.md", "docs/streams.md",
        "docs/metrics.md", "docs/conformance.md", "README.md"]

BEGIN = re.compile(r"^<!-- figures:begin (.+?) -->$")
END = "<!-- figures:end -->"


class FigureError(Exception):
    """A block that cannot be generated (its file or section is missing)."""


def read_result(name):
    path = os.path.join(RESULTS, name + ".md")
    if not os.path.isfile(path):
        raise FigureError(f"bench/results/{name}.md is missing")
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def section(lines, name, title):
    """The lines of the `### TITLE…` part (up to the next heading or the legend), or all."""
    if title is None:
        return lines
    out, inside = [], False
    for line in lines:
        if line.startswith("### "):
            inside = line[4:].startswith(title)
            continue
        if inside:
            out.append(line)
    if not out:
        raise FigureError(f"bench/results/{name}.md has no section '### {title}…'")
    return out


def measured_at(lines):
    """The first timestamp in a summary's opening lines (the bench scripts put it in the title
    or first on the line after it)."""
    for line in lines[:6]:
        m = re.search(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z)", line)
        if m:
            return m.group(1)
    return None


def citation(name, lines):
    at = measured_at(lines)
    tsv = os.path.isfile(os.path.join(RESULTS, name + ".tsv"))
    raw = f"raw runs `bench/results/{name}.tsv`, " if tsv else ""
    when = f"measured {at}; " if at else ""
    return f"Printed by `bench/figures.py` from `bench/results/{name}.md` ({when}{raw}written by the bench script)."


def table_lines(part):
    return [line for line in part if line.startswith("|")]


def bullet_lines(part):
    return [line for line in part if line.startswith("- ")]


def gen_table(args):
    if not args:
        raise FigureError("table takes NAME [SECTION]")
    name, title = args[0], (" ".join(args[1:]) or None)
    lines = read_result(name)
    part = section(lines, name, title)
    table = table_lines(part)
    if not table:
        raise FigureError(f"bench/results/{name}.md has no table{' in ' + title if title else ''}")
    out = table[:]
    # An exporter-cost summary's bullets (paired ratios, scrapes, the profile, the pairs) and its
    # verdict all belong with its table.
    whole = title or name.startswith("metrics-cost-")
    bullets = bullet_lines(part) if whole else [b for b in bullet_lines(part) if "paired" in b]
    if bullets:
        out += [""] + bullets
    if name.startswith("metrics-cost-"):
        out += [""] + [line for line in part if line.startswith("**Result:")]
    # The capacity searches' summary says under its table how far the answers agree.
    answers = [line for line in part if line.startswith("Answers:")]
    if answers:
        out += [""] + answers
    return out + ["", citation(name, lines)]


def gen_paired(args):
    if not args:
        raise FigureError("paired takes NAME [SECTION]")
    name, title = args[0], (" ".join(args[1:]) or None)
    lines = read_result(name)
    bullets = [b for b in bullet_lines(section(lines, name, title)) if "paired" in b]
    if not bullets:
        raise FigureError(f"bench/results/{name}.md has no paired ratios{' in ' + title if title else ''}")
    return bullets + ["", citation(name, lines)]


def gen_soak(args):
    if len(args) != 1:
        raise FigureError("soak takes NAME")
    name = args[0]
    lines = read_result(name)
    body, started = [], False
    for line in lines:
        if line.startswith("## "):
            started = True
            line = "#" + line  # one level down: the soak section is a `##` of its own
        if started:
            body.append(line)
    if not body:
        raise FigureError(f"bench/results/{name}.md has no checks")
    while body and not body[-1].strip():
        body.pop()
    head = lines[2] if len(lines) > 2 else ""
    return [head, ""] + body + ["", citation(name, lines)]


def gen_excerpt(args):
    if len(args) != 2 or not args[1].isdigit():
        raise FigureError("excerpt takes DIR ROWS")
    name, rows = args[0], int(args[1])
    path = os.path.join(RESULTS, name, "summary.md")
    if not os.path.isfile(path):
        raise FigureError(f"bench/results/{name}/summary.md is missing")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    opening = next((l for l in lines if re.match(r"^\d+ cells:", l)), None)
    table = []
    for line in lines:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break  # the measurement table is the first one
    if opening is None or len(table) < 3:
        raise FigureError(f"bench/results/{name}/summary.md has no opening line or table")
    body = table[2:]
    more = ["..."] if len(body) > rows else []
    return [
        f"From `bench/results/{name}/summary.md`, one run of the default suite on this "
        f"project's 2-core machines. {opening}",
        "",
        "```",
    ] + table[:2] + body[:rows] + more + ["```"]


def gen_ab(args):
    """Two builds of gatebench, each measured by the same bench script in alternating runs:
    bench/results/NAME.tsv lists `label  commit  result` (a results file per run); the table
    sets gatebench's ratios to the peer side by side, per build and section."""
    if len(args) != 1:
        raise FigureError("ab takes NAME (a TSV of label, commit, result)")
    name = args[0]
    path = os.path.join(RESULTS, name + ".tsv")
    if not os.path.isfile(path):
        raise FigureError(f"bench/results/{name}.tsv is missing")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    if not rows or rows[0] != ["label", "commit", "result"]:
        raise FigureError(f"bench/results/{name}.tsv must start with label, commit, result")
    out = ["| build | commit | run | section | req/s ÷ peer | CPU per req ÷ peer |",
           "|---|---|---|---|---:|---:|"]
    for label, commit, result in rows[1:]:
        lines = read_result(result)
        title, header = "", None
        for line in lines:
            if line.startswith("### "):
                title = line[4:].split(":")[0].strip()
            elif line.startswith("| tool |"):
                header = [c.strip() for c in line.strip("|").split("|")]
            elif line.startswith("| gatebench |") and header:
                cells = [c.strip() for c in line.strip("|").split("|")]
                col = dict(zip(header, cells))
                rps = next(v for k, v in col.items() if k.startswith("req/s ÷"))
                cpu = next(v for k, v in col.items() if k.startswith("CPU per req ÷"))
                out.append(f"| {label} | `{commit}` | `{result}` | {title or 'HTTP/1.1'} | {rps} | {cpu} |")
    return out + ["", f"Printed by `bench/figures.py` from `bench/results/{name}.tsv` and the results files it lists (written by the bench scripts)."]


def gen_settings(args):
    """proxy-vs-peers runs of gatebench and nginx in different settings (ORIGIN, GEN, METHOD,
    NGINX_KEEPALIVE), one row per run: gatebench's req/s and CPU per request against nginx's,
    from the raw per-run rows of each NAME.tsv (the setting from its origin/gen/method columns
    and its summary's `Setting:` line)."""
    if not args:
        raise FigureError("settings takes NAME...")
    out = ["| origin | generator | method | nginx keepalive | gatebench req/s ÷ nginx, paired per run: median (range) "
           "| proxy CPU-s per 100k req: gatebench / nginx (medians) | CPU per request ÷ nginx | other load on the proxy core (median) | runs |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for name in args:
        lines = read_result(name)
        keep = next((m.group(1) for l in lines for m in [re.search(r"NGINX_KEEPALIVE=(\d+)", l)] if m), None)
        tsv = os.path.join(RESULTS, name + ".tsv")
        if not os.path.isfile(tsv):
            raise FigureError(f"bench/results/{name}.tsv (the raw runs) is missing")
        with open(tsv, encoding="utf-8", newline="") as f:
            rows = [r for r in csv.DictReader(f, delimiter="\t") if r.get("ok") == "1" and r.get("mode") == "proxy"]
        if not rows or "origin" not in rows[0] or keep is None:
            raise FigureError(f"bench/results/{name} has no setting (origin, gen, method columns; a Setting: line)")
        by_run = {}
        for r in rows:
            by_run.setdefault(r["run"], {})[r["tool"]] = r
        pairs = [float(b["gatebench"]["rps"]) / float(b["nginx"]["rps"]) for b in by_run.values()
                 if "gatebench" in b and "nginx" in b]
        med = lambda tool, col: statistics.median(float(r[col]) for r in rows if r["tool"] == tool)
        if not pairs:
            raise FigureError(f"bench/results/{name}.tsv has no gatebench/nginx pair")
        cg, cn = med("gatebench", "proxy_cpu_per_100k"), med("nginx", "proxy_cpu_per_100k")
        other = statistics.median(float(r["proxy_core_other"]) for r in rows)
        r0 = rows[0]
        out.append(f"| {r0['origin']} | {r0['gen']} | {r0['method']} | {keep} "
                   f"| {statistics.median(pairs):.3f} ({min(pairs):.3f}–{max(pairs):.3f}) "
                   f"| {cg:.3f} / {cn:.3f} | {cg / cn:.3f} | {other:.2f} | {len(pairs)} (`…{name[-7:]}`) |")
    return out + ["", "Printed by `bench/figures.py` from the raw runs of each session (its `.tsv` under "
                      "`bench/results/`, named in the last column by its time; written by `bench/proxy-vs-peers.sh`)."]


GENERATORS = {"table": gen_table, "paired": gen_paired, "soak": gen_soak, "excerpt": gen_excerpt, "ab": gen_ab,
              "settings": gen_settings}

# How each bench script turns its raw runs into its summary's tables: the lib.sh function and
# its baselines, run per `mode` when the TSV has that column (as the scripts do).
SUMMARIZERS = {
    "loadgen-vs-peers": ("gb_summarize", ["wrk"]),
    "https-vs-wrk": ("gb_summarize", ["wrk"]),
    "h2-vs-h2load": ("gb_summarize", ["h2load"]),
    "proxy-vs-peers": ("gb_proxy_summarize", ["nginx", "haproxy"]),
    "metrics-cost": ("gb_summarize", ["gatebench"]),
}


def derived_tables(name):
    """The table lines bench/lib.sh prints from NAME.tsv, or None when there is no summarizer
    for this kind of file."""
    kind = re.sub(r"-\d{4}-\d{2}-\d{2}T\d{6}$", "", name)
    if kind not in SUMMARIZERS:
        return None
    func, baselines = SUMMARIZERS[kind]
    tsv = os.path.join(RESULTS, name + ".tsv")
    if not os.path.isfile(tsv):
        raise FigureError(f"bench/results/{name}.tsv (the raw runs) is missing")
    with open(tsv, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    subsets = []
    if rows and rows[0][0] == "mode":
        modes = []
        for r in rows[1:]:
            if r and r[0] not in modes:
                modes.append(r[0])
        for m in modes:
            subsets.append([rows[0][1:]] + [r[1:] for r in rows[1:] if r and r[0] == m])
    else:
        subsets.append(rows)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, sub in enumerate(subsets):
            path = os.path.join(tmp, f"{k}.tsv")
            with open(path, "w", encoding="utf-8", newline="") as f:
                csv.writer(f, delimiter="\t", lineterminator="\n").writerows(sub)
            lib = os.path.join(ROOT, "bench", "lib.sh")
            res = subprocess.run(
                ["bash", "-c", f'source "$0"; {func} "$1" {" ".join(baselines)}', lib, path],
                capture_output=True, text=True, check=False)
            if res.returncode != 0:
                raise FigureError(f"{func} on bench/results/{name}.tsv failed: {res.stderr.strip()}")
            out += [line for line in res.stdout.splitlines() if line.startswith("|")]
    return out


def soak_again(name):
    """The checks of a soak summary as bench/soak_summary.py prints them again from the
    committed run (bench/results/NAME/ and NAME.tsv)."""
    run = os.path.join(RESULTS, name)
    if not os.path.isfile(os.path.join(run, "params.tsv")):
        raise FigureError(f"bench/results/{name}/params.tsv (the run's parameters) is missing")
    res = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "soak_summary.py"), "again", run],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise FigureError(f"soak_summary.py again bench/results/{name} failed: {res.stderr.strip()}")
    return res.stdout.splitlines()


def check_tables_against_raw(name, problems, where):
    """The summary's tables must be what lib.sh (or soak_summary.py) prints from the raw runs
    today."""
    if name.startswith("soak-"):
        lines = read_result(name)
        first = next((k for k, line in enumerate(lines) if line.startswith("## ")), len(lines))
        written, derived = lines[first:], soak_again(name)
        if written != derived:
            diff = "\n".join(difflib.unified_diff(written, derived, f"bench/results/{name}.md",
                                                   f"from bench/results/{name}/", lineterm="", n=0))
            problems.append(f"{where}: bench/results/{name}.md differs from its raw data:\n{diff}")
        return
    if name.startswith("hosts-"):
        # bench/hosts.sh: the summary is what hosts_summary.py prints from the committed run.
        run = os.path.join(RESULTS, name)
        res = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "hosts_summary.py"), run],
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise FigureError(f"hosts_summary.py bench/results/{name} failed: {res.stderr.strip()}")
        if res.stdout.splitlines() != read_result(name):
            problems.append(f"{where}: bench/results/{name}.md differs from what "
                            f"bench/hosts_summary.py prints from bench/results/{name}/")
        return
    if name.startswith("multi-generator-"):
        # bench/multi-generator.sh: the summary is what multi_generator_summary.py prints from
        # the committed run (NAME.tsv and NAME/).
        res = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "multi_generator_summary.py"),
                              os.path.join(RESULTS, name)], capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise FigureError(f"multi_generator_summary.py bench/results/{name} failed: {res.stderr.strip()}")
        if res.stdout.splitlines() != read_result(name):
            problems.append(f"{where}: bench/results/{name}.md differs from what "
                            f"bench/multi_generator_summary.py prints from bench/results/{name}.tsv and {name}/")
        return
    if name.startswith("proxy-profile-"):
        # bench/proxy-profile.sh: the summary is what proxy_profile_summary.py prints from the
        # committed run directory (NAME/).
        res = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "proxy_profile_summary.py"),
                              os.path.join(RESULTS, name)], capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise FigureError(f"proxy_profile_summary.py bench/results/{name} failed: {res.stderr.strip()}")
        if res.stdout.splitlines() != read_result(name):
            problems.append(f"{where}: bench/results/{name}.md differs from what "
                            f"bench/proxy_profile_summary.py prints from bench/results/{name}/")
        return
    if name.startswith("prometheus-check-"):
        # bench/prometheus-check.sh: the summary and the comparisons are what
        # prometheus_check.py prints from the committed run directory (the record and
        # Prometheus's saved answers).
        script = os.path.join(ROOT, "bench", "prometheus_check.py")
        for mode, ext in (("summary", ".md"), ("tsv", ".tsv")):
            res = subprocess.run([sys.executable, script, mode, os.path.join(RESULTS, name)],
                                 capture_output=True, text=True, check=False)
            if res.returncode != 0:
                raise FigureError(f"prometheus_check.py {mode} bench/results/{name} failed: {res.stderr.strip()}")
            path = os.path.join(RESULTS, name + ext)
            if not os.path.isfile(path):
                raise FigureError(f"bench/results/{name}{ext} is missing")
            with open(path, encoding="utf-8") as f:
                written = f.read().splitlines()
            if res.stdout.splitlines() != written:
                problems.append(f"{where}: bench/results/{name}{ext} differs from what "
                                f"bench/prometheus_check.py {mode} prints from bench/results/{name}/")
        return
    if name.startswith("seed-000-steadiness-"):
        # bench/seed-000-steadiness.sh: the summary is what steadiness_summary.py prints from
        # the committed raw rows (NAME.tsv).
        tsv = os.path.join(RESULTS, name + ".tsv")
        if not os.path.isfile(tsv):
            raise FigureError(f"bench/results/{name}.tsv (the raw rows) is missing")
        res = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "steadiness_summary.py"), tsv],
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise FigureError(f"steadiness_summary.py bench/results/{name}.tsv failed: {res.stderr.strip()}")
        if res.stdout.splitlines() != read_result(name):
            problems.append(f"{where}: bench/results/{name}.md differs from what "
                            f"bench/steadiness_summary.py prints from bench/results/{name}.tsv")
        return
    summarizers = {
        # bench/history-scale.sh, bench/live-merge.sh, bench/upstream-efficiency.sh and
        # bench/gateways-under-change.sh: the summary is what their summarizer prints from the
        # committed raw rows (NAME.tsv).
        "history-scale-": "history_scale_summary.py",
        "live-merge-": "live_merge_summary.py",
        "upstream-efficiency-": "upstream_efficiency_summary.py",
        "gateways-under-change-": "gateways_under_change_summary.py",
        "grpc-vs-ghz-": "grpc_vs_ghz_summary.py",
    }
    script = next((v for k, v in summarizers.items() if name.startswith(k)), None)
    if script:
        tsv = os.path.join(RESULTS, name + ".tsv")
        if not os.path.isfile(tsv):
            raise FigureError(f"bench/results/{name}.tsv (the raw rows) is missing")
        res = subprocess.run([sys.executable, os.path.join(ROOT, "bench", script), tsv],
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise FigureError(f"{script} bench/results/{name}.tsv failed: {res.stderr.strip()}")
        if res.stdout.splitlines() != read_result(name):
            problems.append(f"{where}: bench/results/{name}.md differs from what "
                            f"bench/{script} prints from bench/results/{name}.tsv")
        return
    derived = derived_tables(name)
    if derived is None:
        return
    written = [line for line in read_result(name) if line.startswith("|")]
    if derived != written:
        diff = "\n".join(difflib.unified_diff(written, derived, f"bench/results/{name}.md",
                                               f"from bench/results/{name}.tsv", lineterm="", n=0))
        problems.append(f"{where}: the tables of bench/results/{name}.md differ from its raw runs:\n{diff}")


def generate(spec):
    words = spec.split()
    kind, args = words[0], words[1:]
    if kind not in GENERATORS:
        raise FigureError(f"unknown block kind '{kind}' (one of {', '.join(GENERATORS)})")
    return GENERATORS[kind](args)


def process(doc, text):
    """(new text, problems) for one document."""
    lines = text.split("\n")
    out, problems, i = [], [], 0
    checked = set()
    while i < len(lines):
        line = lines[i]
        m = BEGIN.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j] != END:
            if BEGIN.match(lines[j]):
                break
            j += 1
        if j >= len(lines) or lines[j] != END:
            problems.append(f"{doc}:{start + 1}: block '{m.group(1)}' has no {END}")
            out.append(line)
            i += 1
            continue
        old = lines[start + 1:j]
        try:
            new = generate(m.group(1))
            name = m.group(1).split()[1]
            if m.group(1).split()[0] != "excerpt" and name not in checked:
                checked.add(name)
                check_tables_against_raw(name, problems, f"{doc}:{start + 1}")
        except FigureError as e:
            problems.append(f"{doc}:{start + 1}: {m.group(1)}: {e}")
            new = old
        if new != old:
            diff = "\n".join(difflib.unified_diff(old, new, "in the document", "from the data", lineterm="", n=0))
            problems.append(f"{doc}:{start + 1}: block '{m.group(1)}' differs from the data:\n{diff}")
        out.append(line)
        out.extend(new)
        out.append(END)
        i = j + 1
    return "\n".join(out), problems


def cited_files(doc, text):
    """Problems with bench/results citations in the prose: a path that does not exist, or a
    short `…THHMMSS` that matches no results file."""
    problems = []
    names = set(os.listdir(RESULTS)) if os.path.isdir(RESULTS) else set()
    for n, line in enumerate(text.split("\n"), 1):
        # `bench/results/NAME.{tsv,md}` cites NAME.tsv and NAME.md.
        for m in re.finditer(r"bench/results/([A-Za-z0-9._-]*[A-Za-z0-9_-])(\.\{([a-z,]+)\})?", line):
            paths = [m.group(1)] if not m.group(3) else [f"{m.group(1)}.{e}" for e in m.group(3).split(",")]
            for p in paths:
                if not os.path.exists(os.path.join(RESULTS, p)):
                    problems.append(f"{doc}:{n}: cites bench/results/{p}, which is missing")
        for m in re.finditer(r"…(T\d{6})", line):
            if not any(m.group(1) in f for f in names):
                problems.append(f"{doc}:{n}: cites a results file '…{m.group(1)}' that bench/results/ does not have")
    return problems


def main(argv):
    check = "--check" in argv[1:]
    unknown = [a for a in argv[1:] if a != "--check"]
    if unknown:
        print(f"usage: {argv[0]} [--check]", file=sys.stderr)
        return 2
    problems = []
    for doc in DOCS:
        path = os.path.join(ROOT, doc)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new, p = process(doc, text)
        problems += cited_files(doc, new)
        if check:
            problems += p
        else:
            problems += [x for x in p if "differs from the data" not in x]
            if new != text:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print(f"updated {doc}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"figures: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    if check:
        print("figures: every generated block matches bench/results/, every cited file exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
