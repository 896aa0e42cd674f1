#!/usr/bin/env python3
"""Worst-case-optimal joins against binary join plans (issue 9).

Triangle listing (programs/triangles.lql) and 4-clique listing
(programs/four_cliques.lql), or counting (queries triangles_count,
four_cliques_count: the same programs with only the count as output) on shared graphs and on synthetic ones made by
bench/graphgen.c (R-MAT/Kronecker and the thesis' uniform generator), with
--join=wcoj, --join=binary and --join=auto on each backend asked for. The
time is redfox's "query" time from --stats (resident inputs to answers in
host memory: the join itself, without reading the input file); the rate is
input edges (lines of the file) per second of it. Every variant of a row
must agree on the answer (--count's hash), or the row says MISMATCH.

    python3 bench/wcoj_bench.py --redfox build/redfox --graphgen build/tests/bench/rf_graphgen \\
        [--graphs CA-HepTh,loc-Brightkite] [--synthetic rmat:16:1000000,uniform:100000:1000000] \\
        [--queries triangles,four_cliques] [--backends cpu,gpu] [--timeout 600] [--markdown]
        [--baseline OTHER/redfox]

Columns: wcoj / binary / auto seconds per backend, wcoj's edges/s, the
binary plan's time over wcoj's (speed-up), auto over the better of the two
(1.00 = as fast as the better; the issue asks <= 1.10). Each variant runs
--repeat times (default 3) and the fastest counts; a timeout or failure
stops its repeats. The variants of a row take turns (one run of each per
repeat), so that a machine shared with other work slows them alike.
--baseline adds --join=auto of another redfox build (the version before a
change) as the columns "base auto s" and "base/best".
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
# The listed relation of each query; QUERY_count is the same program with
# only its count as output (the listing is made on the device but never
# brought to the host: counting, where the listing measures the transfer of
# the answer too).
LISTED = {"triangles": "triangle", "four_cliques": "clique4", "five_cliques": "clique5", "diamond": "diamond"}


def program_of(q, data):
    """The program file of query q: QUERY, or QUERY_count made into data."""
    if not q.endswith("_count"):
        return os.path.join(ROOT, QUERIES[q])
    base = q[:-len("_count")]
    with open(os.path.join(ROOT, QUERIES[base])) as fh:
        text = fh.read()
    listing = "@output(%s)." % LISTED[base]
    if listing not in text:
        sys.exit("wcoj_bench: %s has no %s to drop" % (QUERIES[base], listing))
    path = os.path.join(data, "%s.lql" % q)
    with open(path, "w") as fh:
        fh.write(text.replace(listing, "// (counting only: the listing is not output)"))
    return path


def run_one(redfox, prog, graph, backend, join, timeout):
    cmd = [redfox, "run", prog, "--input", "edge=" + graph, "--count", "--stats",
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
    ap.add_argument("--baseline", default="", help="another redfox whose --join=auto is compared too")
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
    variants = [(a.redfox, j, "%s s" % j) for j in joins]
    if a.baseline:
        variants.append((a.baseline, "auto", "base auto s"))
    cols = ["graph", "edges", "query", "backend"] + [v[2] for v in variants] + \
        ["wcoj edges/s", "binary/wcoj", "auto/best"] + (["base/best"] if a.baseline else []) + ["answer"]
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
                times, answers, stopped = {}, set(), set()
                for _ in range(a.repeat):
                    for redfox, j, col in variants:   # in turns: one run of each
                        if col in stopped:
                            continue
                        t1, h, _ = run_one(redfox, program_of(q, a.data), path, be, j, a.timeout)
                        if t1 is None:
                            times[col] = h
                            stopped.add(col)
                            continue
                        times[col] = t1 if col not in times else min(times[col], t1)
                        answers.add(h)
                answer = "MISMATCH" if len(answers) > 1 else \
                    ("%s %s" % (dict((p, n) for p, n, _ in next(iter(answers))).get(LISTED[q], "?"), "rows")
                     if answers and not q.endswith("_count") else
                     "hash %s" % next(iter(answers))[0][2] if answers else "-")
                failed |= answer == "MISMATCH"

                def num(col):
                    return times.get(col) if isinstance(times.get(col), float) else None
                w, b, au, base = num("wcoj s"), num("binary s"), num("auto s"), num("base auto s")
                row = [name, str(edges), q, be] + \
                    [("%.4f" % times[c]) if isinstance(times.get(c), float) else str(times.get(c, "-"))
                     for _, _, c in variants]
                row.append("%.3g" % (edges / w) if w else "-")
                row.append("%.2f" % (b / w) if w and b else "-")
                best = min([x for x in (w, b) if x] or [0])
                row.append("%.2f" % (au / best) if au and best else "-")
                if a.baseline:
                    row.append("%.2f" % (base / best) if base and best else "-")
                row.append(answer)
                print(sep.join(row))
                sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
