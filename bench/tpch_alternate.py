#!/usr/bin/env python3
"""TPC-H with variants taking turns: per query, a warm-up run, then each
variant (e.g. fused and --no-fuse) in turn, --repeat times, on one machine,
so that every variant meets the same machine state (a first run's costs,
another process's caches); query time from --stats ("resident inputs to
answers in host memory"); every run's answer files compared byte for byte
with the warm-up's. No DuckDB: it runs where PyPI cannot be reached (the
GPU machine), on .tbl files made by tpchgen-cli (tools/tpch_data.sh, or the
tool run by hand). bench/tpch.py checks the answers against DuckDB.

    python3 bench/tpch_alternate.py --data DIR [--redfox PATH] [--queries 1,2,..]
        [--repeat 3] [--variants "fused=,unfused=--no-fuse"] [--backend gpu]
        [--timeout S] [--log DIR]

Prints a markdown table: per query each variant's times in ms in run order,
each other variant's best over the first's (>1: the first is faster), the
sums of the best runs and their ratio, and the device --stats names.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import rfbench  # bench/rfbench.py (this script's folder is on sys.path)
import tpch     # bench/tpch.py: the programs and their --input arguments


def answer_digest(outdir):
    """One digest of every answer file, by name: None when there is none."""
    names = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []
    if not names:
        return None
    h = hashlib.sha256()
    for n in names:
        h.update(n.encode() + b"\0")
        with open(os.path.join(outdir, n), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def run_once(a, q, variant, logpath):
    """(query s or None, device or None, answer digest, error or None)."""
    out = tempfile.mkdtemp(prefix="tpch-alt-")
    try:
        cmd = [a.redfox, "run", tpch.program(q)] + tpch.inputs_of(q, a.data) + \
              [f"--backend={a.backend}", "--output", out, "--stats"] + (variant.args if variant else [])
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout,
                               env=variant.environ() if variant else None)
        except subprocess.TimeoutExpired:
            return None, None, None, f"timed out after {a.timeout} s"
        if logpath:
            with open(logpath, "w", encoding="utf-8") as f:
                f.write("$ " + " ".join(cmd) + "\n" + p.stderr)
        m, d = tpch.STATS_TIMES.search(p.stderr), tpch.STATS_DEVICE.search(p.stderr)
        dev = d.group(2) if d else None
        if p.returncode != 0 or not m:
            first = next((ln for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[-200:])
            return None, dev, None, f"exit {p.returncode}: {first}"
        return float(m.group(2)), dev, answer_digest(out), None
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder of the 8 .tbl files")
    ap.add_argument("--redfox", default=None, help="redfox binary (default build-dev/redfox, else build/redfox)")
    ap.add_argument("--queries", default=",".join(map(str, range(1, 23))), help="query numbers (default all)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each variant per query (default 3)")
    ap.add_argument("--variants", default="fused=,unfused=--no-fuse",
                    help='NAME=ARGS,... (default "fused=,unfused=--no-fuse"; leading VAR=VALUE words set the '
                         "environment)")
    ap.add_argument("--backend", default="gpu", choices=["gpu", "cpu", "auto"])
    ap.add_argument("--timeout", type=int, default=600, help="seconds per run (default 600)")
    ap.add_argument("--log", default=None, help="folder for each run's --stats output")
    a = ap.parse_args()
    if a.redfox is None:
        dev = os.path.join(tpch.ROOT, "build-dev", "redfox")
        a.redfox = dev if os.access(dev, os.X_OK) else os.path.join(tpch.ROOT, "build", "redfox")
    a.redfox = os.path.abspath(a.redfox)
    if not os.access(a.redfox, os.X_OK):
        sys.exit(f"tpch-alternate: error: {a.redfox} is not an executable")
    if not os.path.isfile(os.path.join(a.data, "lineitem.tbl")):
        sys.exit(f"tpch-alternate: error: {a.data} holds no lineitem.tbl")
    try:
        variants = rfbench.parse_variants(a.variants)
    except ValueError as e:
        sys.exit(f"tpch-alternate: error: --variants: {e}")
    queries = tpch.parse_list(a.queries, 1, 22, "--queries")
    if a.log:
        os.makedirs(a.log, exist_ok=True)

    device, rows, failed = None, [], 0
    for q in queries:
        _, dev, want, err = run_once(a, q, None, os.path.join(a.log, f"q{q:02d}-warm.txt") if a.log else None)
        device = device or dev
        times = {v.name: [] for v in variants}
        notes = []
        if err:
            notes.append(f"warm-up: {err}")
        for r in range(max(1, a.repeat)):
            for v in variants:
                path = os.path.join(a.log, f"q{q:02d}-{v.name}-{r + 1}.txt") if a.log else None
                t, dev, got, err = run_once(a, q, v, path)
                device = device or dev
                if err:
                    notes.append(f"{v.name} run {r + 1}: {err}")
                elif want is not None and got != want:
                    notes.append(f"{v.name} run {r + 1}: answers differ from the warm-up's")
                times[v.name].append(t)
        failed += bool(notes)
        rows.append((q, times, notes))
        print(f"tpch-alternate: q{q:02d} " + "; ".join(
            f"{n} " + "/".join("-" if t is None else f"{t * 1e3:.1f}" for t in ts) for n, ts in times.items()) +
            (" (" + "; ".join(notes) + ")" if notes else ""), file=sys.stderr, flush=True)

    v0 = variants[0].name
    best = lambda ts: min((t for t in ts if t is not None), default=None)  # noqa: E731
    head = ["query"] + [f"{v.name} ms ({a.repeat} runs)" for v in variants] + \
           [f"{v.name}/{v0} (best)" for v in variants[1:]] + ["answers"]
    lines = [f"TPC-H, {os.path.basename(os.path.normpath(a.data))}, backend {a.backend} on {device or '?'}; "
             f"variants: " + "; ".join(f"{v.name} = {v.describe()}" for v in variants) +
             "; each query: a warm-up, then the variants in turn",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sums = {v.name: 0.0 for v in variants}
    complete = True
    for q, times, notes in rows:
        cells = [f"q{q:02d}"]
        for v in variants:
            cells.append("/".join("-" if t is None else f"{t * 1e3:.1f}" for t in times[v.name]))
            b = best(times[v.name])
            complete = complete and b is not None
            sums[v.name] += b or 0.0
        b0 = best(times[v0])
        for v in variants[1:]:
            bv = best(times[v.name])
            cells.append(f"{bv / b0:.2f}" if bv and b0 else "-")
        cells.append("; ".join(notes) if notes else "same")
        lines.append("| " + " | ".join(cells) + " |")
    cells = ["sum of best" + ("" if complete else " (incomplete)")] + [f"{sums[v.name] * 1e3:.1f}" for v in variants]
    cells += [f"**{sums[v.name] / sums[v0]:.3f}**" if sums[v0] else "-" for v in variants[1:]]
    cells.append(f"{len(rows) - failed}/{len(rows)} same")
    lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
