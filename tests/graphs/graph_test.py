#!/usr/bin/env python3
"""Runs the example programs on the real graphs in the shared data folder
and checks the results:

    graph_test.py --redfox PATH --graphs DIR --test KIND:GRAPH [--expect N]

KIND is
  tc         programs/tc.lql; with --expect N the number of `path` rows
             must be N (the known sizes from the graphs' README); without,
             it is compared with SQLite's recursive closure;
  tc_eq      programs/tc_eq.lql (the join written as `y = y2`), as tc;
  triangles  programs/triangles.lql; the triangle rows and the count must
             equal SQLite's (an independent engine);
  sg         programs/same_generation.lql; rows equal to SQLite's
             recursive-CTE evaluation;
  cliques4   programs/four_cliques.lql; rows equal to SQLite's.
Exits 77 (CTest SKIP_RETURN_CODE) with `skipped: ...` when the graph file
is missing, 0 on success, 1 on a mismatch. Standard library only.
"""

import argparse
import os
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time

SKIP = 77
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PROGRAMS = {
    "tc": ("tc.lql", "path"),
    "tc_eq": ("tc_eq.lql", "path"),
    "triangles": ("triangles.lql", "triangle"),
    "sg": ("same_generation.lql", "sg"),
    "cliques4": ("four_cliques.lql", "clique4"),
}


def load_edges(path):
    edges = []
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            a, b = line.split("\t")[:2]
            edges.append((int(a), int(b)))
    return edges


def sqlite_answer(kind, edges):
    """The same query in SQL. `u` is the undirected edge set with the smaller
    endpoint first, as uedge in the programs."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE e(x INTEGER, y INTEGER)")
    db.executemany("INSERT INTO e VALUES (?, ?)", edges)
    db.execute("CREATE TABLE u AS SELECT DISTINCT min(x, y) AS x, max(x, y) AS y FROM e WHERE x <> y")
    db.execute("CREATE INDEX ux ON u(x, y)")
    db.execute("CREATE INDEX ex ON e(x, y)")
    if kind == "triangles":
        q = """SELECT a.x, a.y, b.y FROM u a JOIN u b ON b.x = a.y
               JOIN u c ON c.x = a.x AND c.y = b.y"""
    elif kind == "cliques4":
        q = """SELECT ab.x, ab.y, ac.y, ad.y FROM u ab
               JOIN u ac ON ac.x = ab.x AND ac.y > ab.y
               JOIN u ad ON ad.x = ab.x AND ad.y > ac.y
               JOIN u bc ON bc.x = ab.y AND bc.y = ac.y
               JOIN u bd ON bd.x = ab.y AND bd.y = ad.y
               JOIN u cd ON cd.x = ac.y AND cd.y = ad.y"""
    elif kind == "sg":
        # UNION (not UNION ALL): set semantics, so the recursion reaches the
        # least fixpoint and stops.
        q = """WITH RECURSIVE sg(x, y) AS (
                 SELECT e1.y, e2.y FROM e e1 JOIN e e2 ON e1.x = e2.x WHERE e1.y <> e2.y
                 UNION
                 SELECT ea.y, eb.y FROM sg JOIN e ea ON ea.x = sg.x JOIN e eb ON eb.x = sg.y)
               SELECT x, y FROM sg"""
    else:
        q = """WITH RECURSIVE path(x, y) AS (
                 SELECT x, y FROM e UNION SELECT path.x, e.y FROM path JOIN e ON e.x = path.y)
               SELECT x, y FROM path"""
    return sorted(set(db.execute(q).fetchall()))


def read_rows(path):
    with open(path) as f:
        return [tuple(int(v) for v in line.rstrip("\n").split("\t")) for line in f]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", required=True)
    ap.add_argument("--graphs", required=True, help="folder holding the graph files")
    ap.add_argument("--test", required=True, help="KIND:GRAPHFILE")
    ap.add_argument("--expect", type=int, help="known number of result rows")
    ap.add_argument("--extra-arg", action="append", default=[])
    ap.add_argument("--backend", choices=["auto", "cpu", "gpu"], help="run redfox with --backend=BACKEND")
    a = ap.parse_args()
    kind, graph = a.test.split(":", 1)
    gpath = os.path.join(a.graphs, graph)
    if not os.path.isfile(gpath):
        print("skipped: %s not found (shared graphs folder missing?)" % gpath)
        return SKIP
    prog, pred = PROGRAMS[kind]
    redfox = [a.redfox] if os.path.exists(a.redfox) else shlex.split(a.redfox)
    with tempfile.TemporaryDirectory(prefix="rfgraph_") as out:
        cmd = redfox + ["run", os.path.join(ROOT, "programs", prog), "--input", "edge=" + gpath,
                        "--output", out] + a.extra_arg + (
                            ["--backend=" + a.backend] if a.backend else [])
        t = time.time()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        elapsed = time.time() - t
        if p.returncode != 0:
            print("FAIL: %s exited %d\n%s" % (" ".join(cmd), p.returncode,
                                              p.stderr.decode("utf-8", "replace")[-3000:]))
            return 1
        rows = read_rows(os.path.join(out, pred + ".tsv"))
        counts = {}
        for cpred in ("ntriangles", "nclique4"):
            cpath = os.path.join(out, cpred + ".tsv")
            if os.path.exists(cpath):
                counts[cpred] = read_rows(cpath)
    print("redfox: %s on %s: %d %s rows in %.2f s" % (prog, graph, len(rows), pred, elapsed))
    if len(set(rows)) != len(rows):
        print("FAIL: duplicate rows in %s.tsv" % pred)
        return 1
    if rows != sorted(rows):
        print("FAIL: %s.tsv not sorted" % pred)
        return 1
    if a.expect is not None:
        if len(rows) != a.expect:
            print("FAIL: %d rows, known result is %d" % (len(rows), a.expect))
            return 1
        print("ok: %d rows as known" % len(rows))
        return 0
    t = time.time()
    want = sqlite_answer(kind, load_edges(gpath))
    print("sqlite: %d rows in %.2f s" % (len(want), time.time() - t))
    if rows != want:
        missing = sorted(set(want) - set(rows))[:10]
        extra = sorted(set(rows) - set(want))[:10]
        print("FAIL: rows differ from SQLite; missing e.g. %s; extra e.g. %s" % (missing, extra))
        return 1
    for cpred, crows in counts.items():
        if crows != [(len(want),)]:
            print("FAIL: %s = %s, expected %d" % (cpred, crows, len(want)))
            return 1
    print("ok: equal to SQLite")
    return 0


if __name__ == "__main__":
    sys.exit(main())
