#!/usr/bin/env python3
"""Out-of-core runs against the PCIe floor (issue 10): each run once in
device memory and once under --device-memory LIMIT, the bytes the limited
run moved between host and device (its --stats "host<->device" line:
spills, reloads, parts' rows up and outputs down) over the pinned PCIe
bandwidth that rf_gpu_floors measures in the same invocation.

    python3 bench/ooc_bench.py --runs tc:p2p-Gnutella31:2G,sg:fe_body:1G
        [--graphs-dir DIR] [--build build] [--backend gpu] [--timeout S] [--log FILE]

A run is QUERY:GRAPH:LIMIT (QUERY tc, sg or triangles; LIMIT as
--device-memory takes it). Prints a markdown table: the in-memory and
out-of-core query seconds, MB up and down, the floor (MB up / h2d + MB down
/ d2h), out-of-core over floor (the issue's target: at most 3), the seconds
inside kernels run in parts and in the moves, the parts whose inputs were
uploaded while the part before ran and the MB that crossed straight from and
into pinned host tables (GPU), and whether both runs gave the same answer
(the hash --count prints).
"""
import argparse
import datetime
import os
import re
import subprocess
import sys

import rfbench  # bench/rfbench.py (this script's folder is on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = {"tc": "programs/tc.lql", "sg": "programs/same_generation.lql", "triangles": "programs/triangles.lql"}
QUERY_S = re.compile(r"^\s*load ([0-9.]+) s \(inputs read and resident\), query ([0-9.]+) s", re.M)
COUNT = re.compile(r"^# \S+ \((\d+) tuples, hash ([0-9a-f]+)\)$", re.M)
MOVES = re.compile(r"host<->device: ([\d.]+) MB to the device, ([\d.]+) MB back \(parts ([\d.]+) up, ([\d.]+) down\); "
                   r"([\d.]+) s in moves, ([\d.]+) s cutting parts, ([\d.]+) s in kernels run in parts")
PARTS = re.compile(r"out of core: (\d+) kernel runs in key-range parts, (\d+) parts")
AHEAD = re.compile(r"out of core: (\d+) parts' inputs uploaded while the part before ran")
PINNED = re.compile(r"of those, ([\d.]+) MB up and ([\d.]+) MB down straight from and into pinned host tables")


def run(a, query, graph, extra, log):
    cmd = [os.path.join(a.build, "redfox"), "run", os.path.join(ROOT, QUERIES[query]), "--input",
           "edge=" + os.path.join(a.graphs_dir, graph + ".tsv"), "--count", "--stats",
           "--backend=" + a.backend] + extra
    log.write("$ " + " ".join(cmd) + "\n")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        log.write("timed out\n")
        return None, "timed out after %g s" % a.timeout
    log.write(p.stdout + p.stderr + "\n")
    log.flush()
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return None, last
    return p.stdout + p.stderr, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", required=True, help="QUERY:GRAPH:LIMIT,...")
    ap.add_argument("--graphs-dir", default=None)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--log", default=None)
    a = ap.parse_args()
    a.graphs_dir = a.graphs_dir or next((d for d in (os.path.join(ROOT, ".data", "graphs"),
                                                     os.path.join(os.path.dirname(ROOT), "shared", "data", "graphs"))
                                         if os.path.isdir(d)), None)
    if not a.graphs_dir:
        print("skipped: no graphs folder")
        return 0
    runs = []
    for item in a.runs.split(","):
        bits = item.split(":")
        if len(bits) != 3 or bits[0] not in QUERIES:
            sys.exit("ooc_bench: error: bad run '%s': expected QUERY:GRAPH:LIMIT, QUERY one of %s" %
                     (item, ", ".join(QUERIES)))
        runs.append(bits)
    h2d = d2h = 0.0
    device = "CPU backend (no PCIe)"
    if a.backend != "cpu":
        floors, why = rfbench.gpu_floors(a.build, (2048, 16))
        if not floors:
            print("skipped: " + why)
            return 0
        device, d2h, h2d = floors["device"], floors["pcie_d2h_gbs"], floors["pcie_h2d_gbs"]
    log = open(a.log, "w") if a.log else open(os.devnull, "w")
    print("# Red Fox out-of-core benchmark, %s, device %s, backend %s" %
          (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), device, a.backend))
    if h2d:
        print("# PCIe floor: pinned host-to-device %.1f GB/s, device-to-host %.1f GB/s (rf_gpu_floors, this run)" %
              (h2d, d2h))
    print("| query | graph | limit | in memory s | out of core s | parts | MB up | MB down | floor s | ooc/floor "
          "| in parts s | moves s | cutting s | parts ahead | MB pinned up/down | same answer |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    sys.stdout.flush()
    for query, graph, limit in runs:
        base, err0 = run(a, query, graph, [], log)
        ooc, err1 = run(a, query, graph, ["--device-memory", limit], log)
        cells = [query, graph, limit]
        t0 = float(QUERY_S.search(base).group(2)) if base else None
        t1 = float(QUERY_S.search(ooc).group(2)) if ooc else None
        cells.append("%.3f" % t0 if t0 is not None else err0)
        cells.append("%.3f" % t1 if t1 is not None else err1)
        mv = MOVES.search(ooc) if ooc else None
        pt = PARTS.search(ooc) if ooc else None
        cells.append(pt.group(2) if pt else "0")
        if mv:
            up, down = float(mv.group(1)), float(mv.group(2))
            floor = (up / 1e3 / h2d + down / 1e3 / d2h) if h2d else 0.0
            cells += ["%.0f" % up, "%.0f" % down, "%.3f" % floor if floor else "-",
                      "%.2f" % (t1 / floor) if floor and t1 else "-", mv.group(7), mv.group(5), mv.group(6)]
        else:
            cells += ["0", "0", "-", "-", "-", "-", "-"]
        ah = AHEAD.search(ooc) if ooc else None
        pin = PINNED.search(ooc) if ooc else None
        cells.append(ah.group(1) if ah else "-")
        cells.append("%.0f / %.0f" % (float(pin.group(1)), float(pin.group(2))) if pin else "-")
        c0 = COUNT.search(base) if base else None
        c1 = COUNT.search(ooc) if ooc else None
        cells.append(("yes" if c0.groups() == c1.groups() else "NO") if c0 and c1 else "-")
        print("| " + " | ".join(cells) + " |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
