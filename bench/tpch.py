#!/usr/bin/env python3
"""TPC-H benchmark: the 22 queries of programs/tpch/ on Red Fox's GPU and CPU
backends against DuckDB, on the same host, in the same run.

    bench/tpch.py [--sf 1,10] [--backends gpu,cpu] [--cpu-max-sf 1]
                  [--queries 1,3,..] [--threads N] [--repeat N]
                  [--redfox PATH] [--log DIR]
                  [--variants "fused=,unfused=--no-fuse"] [--breakdown]

For each scale factor:
  1. the data (tools/tpch_data.sh: tpchgen-cli, dbgen's .tbl files), made
     once under .data/tpch/sfSF/;
  2. DuckDB (tools/tpch_reference.py): the tables loaded into memory, every
     query run once (its answer is the reference) and then --repeat times,
     the best time reported (hot, --threads threads, default all cores);
  3. Red Fox, per backend and query: `redfox run programs/tpch/qNN.lql
     --input TABLE=...tbl ... --output DIR --stats`, --repeat times (best
     kept). Each run loads its inputs from the files; the report splits
     `load` (files to relations resident on the backend) from `query`
     (resident relations to the answers in host memory), as --stats prints
     them. GPU kernels are compiled (NVRTC) and cached on a first pass over
     all queries at SF 0.01, so no run pays for compilation;
  4. every answer checked against DuckDB's (tests/tpch/compare.py's rules):
     a column `ok` per backend.
Prints one table per scale factor: per query the DuckDB time, each backend's
load and query times and DuckDB's time divided by the backend's query time
(>1: Red Fox is faster), then the sums. With --log DIR, the table and each
run's --stats output are written there too.

Backends: the GPU runs where one is present (else its columns say why not);
the CPU backend only up to --cpu-max-sf (default 1), since at SF 10 it takes
tens of minutes.

--variants NAME=ARGS,...: run every query once per variant, a named set of
extra `redfox run` arguments (bench/rfbench.py: leading VAR=VALUE words are
environment settings), e.g. "fused=,unfused=--no-fuse" for the Kernel
Weaver (docs/weaver.md). The table then has a query time column per variant
(load: the first variant's), DuckDB's time over the first variant's, and a
ratio column per other variant: its time over the first's (>1: the first is
faster), also for the sums. Every variant's answers are checked. Without
--variants: one variant, no extra arguments, the table as before.

--breakdown: after each table, per backend and variant, each query's time
split by the --stats kernel lines (bench/rfbench.py `breakdown`): sort
(and the part of it in SORTs that only order a join's probe side or only
feed an AGG, from `redfox explain --ir`), join, map, agg, set-ops (UNION,
DIFF), fused (Kernel Weaver groups), other kernels, output (download, typed
order), rest (interpreter, freeing variables), the kernels' device time,
and load; with sums and each part's share of the summed query time
(docs/weaver.md milestone 0).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]
TABLE_DECL = re.compile(r"^(" + "|".join(TABLES) + r")\(", re.M)
STATS_DEVICE = re.compile(r"^redfox: stats \(backend (\w+), (.*)\)$", re.M)
STATS_TIMES = re.compile(r"^\s*load ([0-9.]+) s \(inputs read and resident\), query ([0-9.]+) s", re.M)

sys.path.insert(0, os.path.join(ROOT, "tests", "tpch"))
import compare  # noqa: E402  (tests/tpch/compare.py)
import rfbench  # noqa: E402  (bench/rfbench.py)


def log(msg):
    print(f"tpch-bench: {msg}", file=sys.stderr, flush=True)


def parse_list(s, lo, hi, what):
    try:
        vals = sorted({int(x.strip().lower().lstrip("q")) for x in s.split(",") if x.strip()})
    except ValueError:
        vals = []
    if not vals or not all(lo <= v <= hi for v in vals):
        sys.exit(f"tpch-bench: error: {what} must be numbers {lo}..{hi}")
    return vals


def sf_name(sf):
    return f"{sf:g}"


def program(q):
    return os.path.join(ROOT, "programs", "tpch", f"q{q:02d}.lql")


def inputs_of(q, data):
    with open(program(q), encoding="utf-8") as f:
        tables = sorted(set(TABLE_DECL.findall(f.read())))
    args = []
    for t in tables:
        args += ["--input", f"{t}={os.path.join(data, t + '.tbl')}"]
    return args


def ensure_data(sf):
    subprocess.run([os.path.join(ROOT, "tools", "tpch_data.sh"), sf_name(sf)], check=True)
    return os.path.join(ROOT, ".data", "tpch", f"sf{sf_name(sf)}")


def run_duckdb(sf, data, queries, threads, repeat, logdir):
    """Reference answers and DuckDB's hot times: {q: seconds}, ref dir."""
    ref = os.path.join(ROOT, ".data", "tpch", f"ref-sf{sf_name(sf)}")
    timing = os.path.join(tempfile.mkdtemp(prefix="tpch-duckdb-"), "times.tsv")
    cmd = [sys.executable, os.path.join(ROOT, "tools", "tpch_reference.py"), "--data", data, "--out", ref,
           "--queries", ",".join(map(str, queries)), "--timing", timing, "--repeat", str(repeat)]
    if threads:
        cmd += ["--threads", str(threads)]
    log(f"DuckDB at SF {sf_name(sf)} ({threads or 'all'} threads)")
    subprocess.run(cmd, check=True)
    times, header = {}, ""
    with open(timing, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                header = line[1:].strip()
                continue
            name, secs = line.split("\t")
            times[int(name[1:])] = float(secs)
    if logdir:
        shutil.copy(timing, os.path.join(logdir, f"duckdb-sf{sf_name(sf)}.tsv"))
    shutil.rmtree(os.path.dirname(timing), ignore_errors=True)
    return times, ref, header


def run_redfox(redfox, backend, q, data, outdir, timeout, variant=None):
    """One run: (load s, query s, device, error or None, stats text)."""
    cmd = [redfox, "run", program(q)] + inputs_of(q, data) + [f"--backend={backend}", "--output", outdir,
                                                             "--stats"] + (variant.args if variant else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=variant.environ() if variant else None)
    except subprocess.TimeoutExpired:
        return None, None, None, f"timed out after {timeout} s", ""
    err = p.stderr
    m, d = STATS_TIMES.search(err), STATS_DEVICE.search(err)
    if p.returncode != 0 or not m:
        first = next((ln for ln in err.splitlines() if "error" in ln), err.strip()[-200:])
        return None, None, d.group(2) if d else None, f"exit {p.returncode}: {first}", err
    return float(m.group(1)), float(m.group(2)), d.group(2) if d else None, None, err


def bench_backend(redfox, backend, sf, data, ref, queries, repeat, timeout, logdir, variant, stats_of=None):
    """{q: (load, query, ok, note)} and the device string; stats_of[q] gets
    the --stats text of the run kept (the fastest)."""
    res, device = {}, None
    tag = f"{backend}-{variant.name}" if variant.name else backend
    for q in queries:
        best, note, ok = None, None, False
        outdir = tempfile.mkdtemp(prefix=f"tpch-{backend}-")
        for i in range(max(1, repeat)):
            load, query, dev, error, stats = run_redfox(redfox, backend, q, data, outdir, timeout, variant)
            device = device or dev
            if logdir and i == 0:
                with open(os.path.join(logdir, f"{tag}-sf{sf_name(sf)}-q{q:02d}.stats"), "w",
                          encoding="utf-8") as f:
                    f.write(stats)
            if error:
                note = error
                break
            if best is None or query < best[1]:
                best = (load, query)
                if stats_of is not None:
                    stats_of[q] = stats
        if best:
            got = os.path.join(outdir, f"q{q:02d}.tsv")
            if os.path.exists(got):
                note = compare.compare_query(q, compare.read_rows(os.path.join(ref, f"q{q:02d}.tsv")),
                                             compare.read_rows(got))
            else:
                note = f"no output file q{q:02d}.tsv"
            ok = note is None
        shutil.rmtree(outdir, ignore_errors=True)
        res[q] = (best[0] if best else None, best[1] if best else None, ok, note)
        log(f"{tag} SF {sf_name(sf)} q{q:02d}: " +
            (f"load {best[0]:.3f} s, query {best[1]:.3f} s, {'ok' if ok else 'WRONG: ' + str(note)}"
             if best else f"FAILED: {note}"))
    return res, device


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def table(sf, queries, duck, duck_header, results, devices, variants):
    """results[backend][variant name][q] = (load, query, ok, note)."""
    backends = list(results)
    named = not (len(variants) == 1 and not variants[0].name)
    v0 = variants[0].name
    head = ["query", "duckdb s"]
    for b in backends:
        if named:
            head += ([f"{b} load s"] + [f"{b} {v.name} s" for v in variants] + [f"duckdb/{b} {v0}"] +
                     [f"{b} {v.name}/{v0}" for v in variants[1:]] + [f"{b} ok"])
        else:
            head += [f"{b} load s", f"{b} query s", f"duckdb/{b}", f"{b} ok"]
    lines = [f"TPC-H SF {sf_name(sf)}: " + "; ".join(f"{b} on {devices.get(b) or '?'}" for b in backends)
             + f"; {duck_header}"]
    if named:
        lines.append("variants (extra redfox run arguments): " +
                     "; ".join(f"{v.name} = {v.describe()}" for v in variants) +
                     f"; ratios: a variant's time over {v0}'s (>1: {v0} is faster)")
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    duck_sum = sum(duck.get(q, 0.0) for q in queries)
    sums = {}   # (b, variant) -> [query sum, load sum, complete]

    def get(b, v, q):
        return results[b].get(v, {}).get(q, (None, None, False, "not run"))

    def ok_mark(b, q):
        bad = [(v.name, get(b, v.name, q)) for v in variants if not get(b, v.name, q)[2]]
        if not bad:
            return "ok"
        words = ["WRONG" if r[1] is not None else "FAIL" for _, r in bad]
        if not named:
            return words[0]
        return ", ".join(f"{w} {n}" for w, (n, _) in zip(words, bad))

    for q in queries:
        row = [f"q{q:02d}", fmt(duck.get(q))]
        for b in backends:
            for v in variants:
                load, query, _, _ = get(b, v.name, q)
                acc = sums.setdefault((b, v.name), [0.0, 0.0, True])
                if query is None:
                    acc[2] = False
                else:
                    acc[0] += query
                    acc[1] += load
            load0, query0, _, _ = get(b, v0, q)
            ratio = duck[q] / query0 if query0 and q in duck else None
            if named:
                row += [fmt(load0)] + [fmt(get(b, v.name, q)[1]) for v in variants]
                row.append(fmt(ratio, 2) + "x" if ratio else "-")
                for v in variants[1:]:
                    qv = get(b, v.name, q)[1]
                    row.append(fmt(qv / query0, 2) + "x" if qv is not None and query0 else "-")
            else:
                row += [fmt(load0), fmt(query0), fmt(ratio, 2) + "x" if ratio else "-"]
            row.append(ok_mark(b, q))
        lines.append("| " + " | ".join(row) + " |")
    row = ["sum", fmt(duck_sum)]
    for b in backends:
        q_sum, l_sum, complete = sums.get((b, v0), [0.0, 0.0, False])
        l_sum = l_sum if q_sum else None
        mark = "" if complete else " (incomplete)"
        ratio = duck_sum / q_sum if q_sum else None
        n_ok = sum(1 for q in queries if ok_mark(b, q) == "ok")
        if named:
            row += [fmt(l_sum)]
            for v in variants:
                qs, _, comp = sums.get((b, v.name), [0.0, 0.0, False])
                row.append(fmt(qs if qs else None) + ("" if comp else " (incomplete)"))
            row.append(fmt(ratio, 2) + "x" if ratio else "-")
            for v in variants[1:]:
                # over the queries both variants finished
                both = [q for q in queries if get(b, v0, q)[1] is not None and get(b, v.name, q)[1] is not None]
                s0 = sum(get(b, v0, q)[1] for q in both)
                sv = sum(get(b, v.name, q)[1] for q in both)
                part = "" if len(both) == len(queries) else f" ({len(both)} queries)"
                row.append(fmt(sv / s0, 2) + "x" + part if s0 > 0 else "-")
        else:
            row += [fmt(l_sum), fmt(q_sum if q_sum else None) + mark, fmt(ratio, 2) + "x" if ratio else "-"]
        row.append(f"{n_ok}/{len(queries)}")
    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def breakdown_tables(redfox, sf, queries, stats, devices, variants):
    """--breakdown: one table per backend and variant (bench/rfbench.py)."""
    roles = {}
    for q in queries:
        p = subprocess.run([redfox, "explain", "--ir", program(q)], capture_output=True, text=True)
        roles[q] = rfbench.sort_roles(p.stdout) if p.returncode == 0 else None
    out = []
    for b in stats:
        for v in variants:
            per_q = stats[b].get(v.name, {})
            rows = [(f"q{q:02d}", rfbench.breakdown(per_q[q], roles[q]) if q in per_q else None) for q in queries]
            title = (f"Breakdown, TPC-H SF {sf_name(sf)}, {b} on {devices.get(b) or '?'}" +
                     (f", variant {v.name} ({v.describe()})" if v.name else "") +
                     ": kernel wall times by op (LOAD left out), output = download and typed order, "
                     "rest = outside kernels and output (interpreter, freeing); 'sort: probe' / 'sort: ->agg' "
                     "are the parts of sort in SORTs whose only reader is a JOIN's first input / an AGG; "
                     "device = the kernels' backend time")
            out.append(rfbench.breakdown_table(title, rows))
    return "\n\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", default="1,10", help="scale factors (default 1,10)")
    ap.add_argument("--backends", default="gpu,cpu", help="Red Fox backends (default gpu,cpu)")
    ap.add_argument("--cpu-max-sf", type=float, default=1.0, help="largest SF the CPU backend runs (default 1)")
    ap.add_argument("--queries", default=",".join(map(str, range(1, 23))), help="query numbers (default all)")
    ap.add_argument("--threads", type=int, default=0, help="DuckDB threads (default: all cores)")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per query, best kept (default 1)")
    ap.add_argument("--duckdb-repeat", type=int, default=3, help="DuckDB hot runs per query (default 3)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per Red Fox run (default 600)")
    ap.add_argument("--redfox", default=os.path.join(ROOT, "build", "redfox"), help="redfox binary")
    ap.add_argument("--log", help="folder for the table and each run's --stats output")
    ap.add_argument("--variants", default=None,
                    help='named sets of extra redfox arguments, NAME=ARGS,..., e.g. "fused=,unfused=--no-fuse" '
                         "(default: one variant without extra arguments)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also print each query's time split by kernel op (sort, join, map, ...), output and rest")
    args = ap.parse_args()
    try:
        variants = rfbench.parse_variants(args.variants)
    except ValueError as e:
        sys.exit(f"tpch-bench: error: --variants: {e}")

    try:
        sfs = sorted({float(x) for x in args.sf.split(",") if x.strip()})
    except ValueError:
        sfs = []
    if not sfs or min(sfs) <= 0:
        sys.exit("tpch-bench: error: --sf takes positive scale factors, e.g. 1,10")
    queries = parse_list(args.queries, 1, 22, "--queries")
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not backends or any(b not in ("gpu", "cpu") for b in backends):
        sys.exit("tpch-bench: error: --backends takes gpu and/or cpu")
    redfox = os.path.abspath(args.redfox)
    if not os.access(redfox, os.X_OK):
        sys.exit(f"tpch-bench: error: {redfox} is not an executable (build first: ./redfox --version)")
    if args.log:
        os.makedirs(args.log, exist_ok=True)

    if "gpu" in backends:
        # Compile and cache every GPU kernel first (small data), so that no
        # timed run includes NVRTC. Also tells whether a GPU is there.
        data = ensure_data(0.01)
        out = tempfile.mkdtemp(prefix="tpch-warm-")
        t0 = time.time()
        _, _, dev, error, _ = run_redfox(redfox, "gpu", 1, data, out, args.timeout, variants[0])
        if error:
            log(f"no GPU run possible ({error}); GPU columns stay empty")
            backends.remove("gpu")
        else:
            for v in variants:
                for q in queries:
                    run_redfox(redfox, "gpu", q, data, out, args.timeout, v)
            log(f"GPU kernels compiled and cached on {dev} in {time.time() - t0:.1f} s")
        shutil.rmtree(out, ignore_errors=True)

    tables = []
    for sf in sfs:
        data = ensure_data(sf)
        duck, ref, duck_header = run_duckdb(sf, data, queries, args.threads, args.duckdb_repeat, args.log)
        results, devices, stats = {}, {}, {}
        for b in backends:
            if b == "cpu" and sf > args.cpu_max_sf:
                continue
            results[b], stats[b] = {}, {}
            for v in variants:
                stats[b][v.name] = {}
                results[b][v.name], dev = bench_backend(redfox, b, sf, data, ref, queries, args.repeat,
                                                        args.timeout, args.log, v, stats[b][v.name])
                devices[b] = devices.get(b) or dev
        text = table(sf, queries, duck, duck_header, results, devices, variants)
        if args.breakdown:
            text += "\n\n" + breakdown_tables(redfox, sf, queries, stats, devices, variants)
        print(text + "\n", flush=True)
        tables.append(text)
    if args.log:
        with open(os.path.join(args.log, "tpch-bench.md"), "w", encoding="utf-8") as f:
            f.write(f"command: {' '.join(sys.argv)}\ndate: {time.strftime('%Y-%m-%d %H:%M:%S')}\n\n"
                    + "\n\n".join(tables) + "\n")


if __name__ == "__main__":
    main()
