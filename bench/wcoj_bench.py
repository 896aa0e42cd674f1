#!/usr/bin/env python3
"""Worst-case-optimal joins against binary join plans (issue 9).

Triangle listing (programs/triangles.lql) and 4-clique listing
(programs/four_cliques.lql) on shared graphs and on synthetic ones made by
bench/graphgen.c (R-MAT/Kronecker and the thesis' uniform generator), with
--join=wcoj, --join=binary and --join=auto on each backend asked for. The
time is redfox's "query" time from --stats (resident inputs to answers in
host memory: the join itself, without reading the input file); the rate is
input edges (lines of the file) per second of it. Every variant of a row
must agree on the answer (--count's hash), or the row says MISMATCH.

    python3 bench/wcoj_bench.py --redfox build/redfox --graphgen build/tests/bench/rf_graphgen \\
        [--graphs CA-HepTh,loc-Brightkite] [--synthetic rmat:16:1000000,uniform:100000:1000000] \\
        [--queries triangles,four_cliques] [--backends cpu,gpu] [--timeout 600] [--markdown]

Columns: wcoj / binary / auto seconds per backend, wcoj's edges/s, the
binary plan's time over wcoj's (speed-up), auto over the better of the two
(1.00 = as fast as the better; the issue asks <= 1.10). Each variant runs
--repeat times (default 3) and the fastest counts; a timeout or failure
stops its repeats.
"""
import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAPHS = os.path.join(os.path.dirname(ROOT), "shared", "data", "graphs")
QUERIES = {"triangles": "programs/triangles.lql", "four_cliques": "programs/four_cliques.lql",
           "five_cliques": "programs/five_cliques.lql", "diamond": "programs/diamond.lql"}


def run_one(redfox, prog, graph, backend, join, timeout):
    cmd = [redfox, "run", os.path.join(ROOT, prog), "--input", "edge=" + graph, "--count", "--stats",
           "--backend=" + backend, "--join=" + join]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timeout", None
    wall = time.time() - t0
    if r.returncode != 0:
        return None, "exit %d" % r.returncode, r.stderr.strip().splitlines()[-1:] or [""]
    m = re.search(r"query ([0-9.]+) s", r.stderr)
    hashes = tuple(sorted(re.findall(r"^# (\S+) \((\d+) tuples, hash ([0-9a-f]+)\)", r.stdout, re.M)))
    return (float(m.group(1)) if m else wall), hashes, wall


def device_of(redfox, backend):
    if backend == "cpu":
        return "CPU %s, %d cores" % (platform.processor() or platform.machine(), os.cpu_count())
    r = subprocess.run([redfox, "run", os.path.join(ROOT, QUERIES["triangles"]), "--backend=gpu", "--count",
                        "--stats"], capture_output=True, text=True)
    m = re.search(r"backend gpu[^)]*\(([^)]*)\)|stats \(backend gpu, ([^)]*)\)", r.stderr)
    if m:
        return "GPU " + (m.group(1) or m.group(2))
    return "GPU (unavailable: %s)" % (r.stderr.strip().splitlines()[-1:] or ["?"])[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", default=os.path.join(ROOT, "build", "redfox"))
    ap.add_argument("--graphgen", default=os.path.join(ROOT, "build", "tests", "bench", "rf_graphgen"))
    ap.add_argument("--graphs", default="CA-HepTh,ego-Facebook,loc-Brightkite,wiki-Vote")
    ap.add_argument("--graph-dir", default=GRAPHS)
    ap.add_argument("--synthetic", default="",
                    help="comma list of rmat:SCALE:EDGES or uniform:VERTICES:EDGES (made once into --data)")
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "rf_wcoj_graphs"))
    ap.add_argument("--queries", default="triangles,four_cliques")
    ap.add_argument("--backends", default="cpu")
    ap.add_argument("--joins", default="wcoj,binary,auto")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each variant; the fastest counts")
    a = ap.parse_args()

    graphs = []
    for g in [x for x in a.graphs.split(",") if x]:
        path = g if os.path.exists(g) else os.path.join(a.graph_dir, g + ".tsv")
        graphs.append((os.path.basename(path).replace(".tsv", ""), path))
    os.makedirs(a.data, exist_ok=True)
    for spec in [x for x in a.synthetic.split(",") if x]:
        kind, size, edges = spec.split(":")
        path = os.path.join(a.data, "%s-%s-%s.tsv" % (kind, size, edges))
        if not os.path.exists(path):
            subprocess.run([a.graphgen, kind, size, edges, "1", "-o", path], check=True)
        graphs.append(("%s-%s-%s" % (kind, size, edges), path))

    backends = a.backends.split(",")
    joins = a.joins.split(",")
    print("# wcoj_bench %s, %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), platform.node()))
    for be in backends:
        print("# backend %s: %s" % (be, device_of(a.redfox, be)))
    cols = ["graph", "edges", "query", "backend"] + ["%s s" % j for j in joins] + \
        ["wcoj edges/s", "binary/wcoj", "auto/best", "answer"]
    sep = " | " if a.markdown else "  "
    print(sep.join(cols).strip())
    if a.markdown:
        print("|".join(["---"] * len(cols)))
    failed = False
    for name, path in graphs:
        with open(path) as fh:
            edges = sum(1 for line in fh if line.strip() and not line.startswith("#"))
        for q in a.queries.split(","):
            for be in backends:
                times, answers = {}, set()
                for j in joins:
                    t, h = None, None
                    for _ in range(a.repeat):
                        t1, h, _ = run_one(a.redfox, QUERIES[q], path, be, j, a.timeout)
                        if t1 is None:
                            t = None
                            break
                        t = t1 if t is None else min(t, t1)
                    times[j] = t if t is not None else h
                    if t is not None:
                        answers.add(h)
                answer = "MISMATCH" if len(answers) > 1 else \
                    ("%s rows" % dict((p, n) for p, n, _ in next(iter(answers))).get(
                        {"triangles": "triangle", "four_cliques": "clique4", "five_cliques": "clique5",
                         "diamond": "diamond"}[q], "?") if answers else "-")
                failed |= answer == "MISMATCH"

                def num(j):
                    return times.get(j) if isinstance(times.get(j), float) else None
                w, b, au = num("wcoj"), num("binary"), num("auto")
                row = [name, str(edges), q, be] + \
                    [("%.4f" % times[j]) if isinstance(times[j], float) else str(times[j]) for j in joins]
                row.append("%.3g" % (edges / w) if w else "-")
                row.append("%.2f" % (b / w) if w and b else "-")
                best = min([x for x in (w, b) if x] or [0])
                row.append("%.2f" % (au / best) if au and best else "-")
                row.append(answer)
                print(sep.join(row))
                sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
