#!/usr/bin/env python3
"""CPU benchmark: Red Fox's CPU backend against DuckDB (a parallel, vectorised
CPU SQL engine with recursive CTEs), both measured in this run on this machine.

For each graph and query it prints the result size (both engines must agree,
or the row is marked MISMATCH), Red Fox's wall time (process start to answers
written, as a user sees it), DuckDB's time for the same query (data loaded
from the same TSV inside the timed region), and the ratio.

    python3 bench/cpu_bench.py [--graphs OL.cedge,cal.cedge] [--queries tc,triangles]
    python3 bench/cpu_bench.py --graphs OL.cedge --queries tc,tc_eq   # equality join

DuckDB is installed into bench/.venv with pip on first use (PyPI is the one
registry this machine reaches); without it the baseline column says n/a.
"""
import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAPHS = os.path.join(os.path.dirname(ROOT), "shared", "data", "graphs")
VENV = os.path.join(ROOT, "bench", ".venv")

# query -> (program, output predicate, DuckDB SQL over table edge(s, d))
QUERIES = {
    "tc": ("programs/tc.lql", "path", """
        WITH RECURSIVE path(s, d) AS (
            SELECT s, d FROM edge
            UNION
            SELECT p.s, e.d FROM path p JOIN edge e ON p.d = e.s)
        SELECT count(*) FROM path"""),
    # tc with the join written as an equality (y = y2); same SQL as tc
    "tc_eq": ("programs/tc_eq.lql", "path", """
        WITH RECURSIVE path(s, d) AS (
            SELECT s, d FROM edge
            UNION
            SELECT p.s, e.d FROM path p JOIN edge e ON p.d = e.s)
        SELECT count(*) FROM path"""),
    "triangles": ("programs/triangles.lql", "triangle", """
        WITH u AS (SELECT DISTINCT least(s, d) AS a, greatest(s, d) AS b FROM edge WHERE s <> d)
        SELECT count(*) FROM u e1 JOIN u e2 ON e1.b = e2.a JOIN u e3 ON e3.a = e1.a AND e3.b = e2.b"""),
    "sg": ("programs/same_generation.lql", "sg", """
        WITH RECURSIVE sg(x, y) AS (
            SELECT e1.d, e2.d FROM edge e1 JOIN edge e2 ON e1.s = e2.s WHERE e1.d <> e2.d
            UNION
            SELECT e1.d, e2.d FROM sg JOIN edge e1 ON e1.s = sg.x JOIN edge e2 ON e2.s = sg.y)
        SELECT count(*) FROM sg"""),
}


def duckdb_python():
    """A python with duckdb importable, or None."""
    try:
        import duckdb  # noqa: F401
        return sys.executable
    except ImportError:
        pass
    py = os.path.join(VENV, "bin", "python3")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([py, "-m", "pip", "install", "-q", "duckdb"], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ok = subprocess.run([py, "-c", "import duckdb"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode == 0 if os.path.exists(py) else False
    return py if ok else None


def run_duckdb(py, graph_file, sql, timeout):
    script = f"""
import duckdb, time
t0 = time.perf_counter()
con = duckdb.connect()
con.execute('SET enable_progress_bar = false')
con.execute("CREATE TABLE edge AS SELECT column0::INTEGER AS s, column1::INTEGER AS d FROM read_csv('{graph_file}', delim='\\t', header=false, columns={{'column0':'INTEGER','column1':'INTEGER'}})")
n = con.execute('''{sql}''').fetchone()[0]
print(n, time.perf_counter() - t0)
"""
    try:
        out = subprocess.run([py, "-c", script], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None
    if out.returncode != 0:
        return None, None
    n, t = out.stdout.split()[-2:]
    return int(n), float(t)


def run_redfox(program, pred, graph_file, timeout, extra):
    outdir = tempfile.mkdtemp(prefix="rfbench-")
    try:
        t0 = time.perf_counter()
        proc = subprocess.run([os.path.join(ROOT, "build", "redfox"), "run", os.path.join(ROOT, program),
                               "--input", "edge=" + graph_file, "--output", outdir] + extra,
                              capture_output=True, text=True, timeout=timeout)
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            return None, None, proc.stderr.strip().splitlines()[-1:] or ["failed"]
        with open(os.path.join(outdir, pred + ".tsv"), "rb") as f:
            n = sum(1 for _ in f)
        return n, elapsed, None
    except subprocess.TimeoutExpired:
        return None, None, ["timeout"]
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default="OL.cedge,cal.cedge,TG.cedge,p2p-Gnutella09,p2p-Gnutella04")
    ap.add_argument("--queries", default="tc,triangles")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if not os.path.isdir(GRAPHS):
        print(f"skipped: {GRAPHS} not found")
        return 0
    subprocess.run([os.path.join(ROOT, "redfox"), "--version"], check=True, stdout=subprocess.DEVNULL)
    py = duckdb_python()
    extra = ["--backend=cpu"] + (["--threads", str(args.threads)] if args.threads else [])
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"device: CPU {cpu}, {os.cpu_count()} cores; baseline: DuckDB "
          f"{'(not available)' if not py else ''}; date {time.strftime('%Y-%m-%d')}")
    print(f"{'query':10} {'graph':18} {'result':>12} {'redfox s':>9} {'duckdb s':>9} {'duckdb/redfox':>13}")
    for q in args.queries.split(","):
        program, pred, sql = QUERIES[q]
        for g in args.graphs.split(","):
            gf = os.path.join(GRAPHS, g + ".tsv")
            if not os.path.exists(gf):
                continue
            n, t, err = run_redfox(program, pred, gf, args.timeout, extra)
            dn, dt = run_duckdb(py, gf, sql, args.timeout) if py else (None, None)
            note = ""
            if err:
                note = " ".join(err)
            elif dn is not None and dn != n:
                note = f"MISMATCH (duckdb {dn})"
            ratio = f"{dt / t:13.2f}" if (t and dt) else f"{'n/a':>13}"
            print(f"{q:10} {g:18} {n if n is not None else '-':>12} "
                  f"{(f'{t:.3f}' if t else '-'):>9} {(f'{dt:.3f}' if dt else '-'):>9} {ratio} {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
