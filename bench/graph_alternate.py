#!/usr/bin/env python3
"""Graph queries with variants taking turns: per graph and query, a warm-up
run, then each variant (e.g. fused and --no-fuse) in turn, --repeat times,
so that every variant meets the same machine state; query time from
--stats ("resident inputs to answers in host memory"); every run's answer
compared with the warm-up's by the hash --count prints. For queries of a
few tens of milliseconds, whose single runs move 10-15% between runs
(bench/gpu_bench.py --variants runs each variant once).

    python3 bench/graph_alternate.py --graphs-dir DIR --graphs A,B [--queries tc,sg]
        [--redfox PATH] [--repeat 5] [--variants "fused=,unfused=--no-fuse"]
        [--backend gpu] [--timeout S]

Prints a markdown table: per graph and query each variant's best and median
in ms, each other variant's best and median over the first's (>1: the
first is faster), and whether every run's answer was the warm-up's.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

import rfbench  # bench/rfbench.py (this script's folder is on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = {"tc": "programs/tc.lql", "sg": "programs/same_generation.lql", "triangles": "programs/triangles.lql",
           "four_cliques": "programs/four_cliques.lql"}
STATS_TIMES = re.compile(r"^\s*load ([0-9.]+) s \(inputs read and resident\), query ([0-9.]+) s", re.M)
STATS_DEVICE = re.compile(r"^redfox: stats \(backend (\w+), (.*)\)$", re.M)
COUNT_LINE = re.compile(r"^# \S+ \((\d+) tuples, hash ([0-9a-f]+)\)$", re.M)


def run_once(a, graph, query, variant):
    """(query s or None, device or None, answer (rows, hash) or None, error or None)."""
    cmd = [a.redfox, "run", os.path.join(ROOT, QUERIES[query]), "--input",
           "edge=" + os.path.join(a.graphs_dir, graph + ".tsv"), "--count", "--stats",
           f"--backend={a.backend}"] + (variant.args if variant else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout,
                           env=variant.environ() if variant else None)
    except subprocess.TimeoutExpired:
        return None, None, None, f"timed out after {a.timeout} s"
    m, d = STATS_TIMES.search(p.stderr), STATS_DEVICE.search(p.stderr)
    dev = d.group(2) if d else None
    if p.returncode != 0 or not m:
        first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[-200:])
        return None, dev, None, f"exit {p.returncode}: {first}"
    return float(m.group(2)), dev, tuple(COUNT_LINE.findall(p.stdout)), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs-dir", required=True, help="folder of the graphs' .tsv files")
    ap.add_argument("--graphs", required=True, help="comma-separated graph names (file names without .tsv)")
    ap.add_argument("--queries", default="tc,sg", help="comma-separated, of " + ", ".join(QUERIES))
    ap.add_argument("--redfox", default=None, help="redfox binary (default build-dev/redfox, else build/redfox)")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each variant (default 5)")
    ap.add_argument("--variants", default="fused=,unfused=--no-fuse",
                    help='NAME=ARGS,... (default "fused=,unfused=--no-fuse"; leading VAR=VALUE words set the '
                         "environment)")
    ap.add_argument("--backend", default="gpu", choices=["gpu", "cpu", "auto"])
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run (default 300)")
    a = ap.parse_args()
    if a.redfox is None:
        dev = os.path.join(ROOT, "build-dev", "redfox")
        a.redfox = dev if os.access(dev, os.X_OK) else os.path.join(ROOT, "build", "redfox")
    if not os.access(a.redfox, os.X_OK):
        sys.exit(f"graph-alternate: error: {a.redfox} is not an executable")
    queries = [q for q in a.queries.split(",") if q]
    bad = [q for q in queries if q not in QUERIES]
    if bad:
        sys.exit(f"graph-alternate: error: --queries: unknown {', '.join(bad)} (known: {', '.join(QUERIES)})")
    graphs = [g for g in a.graphs.split(",") if g]
    missing = [g for g in graphs if not os.path.isfile(os.path.join(a.graphs_dir, g + ".tsv"))]
    if missing:
        sys.exit(f"graph-alternate: error: no {', '.join(g + '.tsv' for g in missing)} in {a.graphs_dir}")
    try:
        variants = rfbench.parse_variants(a.variants)
    except ValueError as e:
        sys.exit(f"graph-alternate: error: --variants: {e}")

    device, rows, failed = None, [], 0
    for g in graphs:
        for q in queries:
            _, dev, want, err = run_once(a, g, q, None)
            device = device or dev
            times = {v.name: [] for v in variants}
            notes = [f"warm-up: {err}"] if err else []
            for r in range(max(1, a.repeat)):
                for v in variants:
                    t, dev, got, err = run_once(a, g, q, v)
                    device = device or dev
                    if err:
                        notes.append(f"{v.name} run {r + 1}: {err}")
                    elif want is not None and got != want:
                        notes.append(f"{v.name} run {r + 1}: answer differs from the warm-up's")
                    elif t is not None:
                        times[v.name].append(t)
            failed += bool(notes)
            rows.append((g, q, times, notes))
            print(f"graph-alternate: {q} {g} " + "; ".join(
                f"{n} " + "/".join(f"{t * 1e3:.1f}" for t in ts) for n, ts in times.items()) +
                (" (" + "; ".join(notes) + ")" if notes else ""), file=sys.stderr, flush=True)

    v0 = variants[0].name
    head = ["query", "graph"] + [f"{v.name} ms best/median ({a.repeat} runs)" for v in variants] + \
           [f"{v.name}/{v0} best, median" for v in variants[1:]] + ["answers"]
    lines = [f"backend {a.backend} on {device or '?'}; variants: " +
             "; ".join(f"{v.name} = {v.describe()}" for v in variants) +
             "; each graph and query: a warm-up, then the variants in turn",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g, q, times, notes in rows:
        cells = [q, g]
        stat = {n: (min(ts), statistics.median(ts)) if ts else None for n, ts in times.items()}
        for v in variants:
            s = stat[v.name]
            cells.append(f"{s[0] * 1e3:.1f} / {s[1] * 1e3:.1f}" if s else "-")
        for v in variants[1:]:
            s, s0 = stat[v.name], stat[v0]
            cells.append(f"{s[0] / s0[0]:.2f}, {s[1] / s0[1]:.2f}" if s and s0 else "-")
        cells.append("; ".join(notes) if notes else "same")
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
