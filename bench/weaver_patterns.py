#!/usr/bin/env python3
"""Kernel Weaver micro-benchmarks: the operator patterns of the thesis'
Figure 24 (bench/weaver/*.lql.in), fused against unfused against the
device's copy-bandwidth floor.

    python3 bench/weaver_patterns.py [--redfox PATH] [--backend gpu|cpu]
        [--rows 100000000] [--sel 0.1,0.5,0.9] [--patterns a,a1,b,c,d,e]
        [--repeat N] [--threads N] [--data DIR] [--log DIR] [--kernels]
        [--generate-only] [--jobs N] [--floors PATH] [--timeout S]
        [--redfox-args "ARGS for every run"]

Patterns (bench/weaver/README.md has the details and today's kernels):
  a   back-to-back SELECTs (three predicates, one operator each) + PROJECT
  a1  the same selection as one rule (the planner's own single MAP)
  b   a chain of two JOINs building a wide table
  c   the JOIN of three SELECTed tables
  d   two SELECTs sharing one input
  e   price * (1 - disc) * (1 + tax) over a SELECT, summed
SEL is the fraction of its input each operator keeps (per operator, as in
the thesis' Fig. 30): a's three SELECTs keep SEL each, b's JOINs each match
a fraction SEL of their probe rows, c's three SELECTs keep SEL each, d's two
SELECTs keep SEL of the input each, e's SELECT keeps SEL.

Data: uniform random values written once as TSV under DIR/nROWS/ (default
.data/weaver/, git-ignored) by a generator in this script (standard
library, one process per core), reused by later runs; --generate-only
stops after that. ROWS is the row count of every input table (10^8 for the
device, 10^5..10^6 to try it on a CPU). Sizes at 10^8 rows: about 21 GB of
TSV (b's two tables are written per selectivity).

Each point (pattern, SEL) runs `redfox run PROG --input ... --count --stats`
twice: fused (the default) and unfused (`--no-fuse`), --repeat times each,
the best kept. The time is the sum of the kernels' backend times that
--stats prints ("be time": device-event time on the GPU), LOAD excluded,
output (download, hashing) excluded. When this redfox has no --no-fuse
(`redfox run --help` does not list it: the Kernel Weaver is not built), the
plain run is the unfused variant: it alone is measured, the fused columns
stay empty and the table header says so.

The floor (GPU only): the bytes the pattern must move at least, read once
and written once (every input column the program uses, all rows, plus the
output rows at 8 bytes a column), over the device-to-device copy bandwidth
that rf_gpu_floors measures (bytes read + written). "% floor" is floor time
over kernel time (100% = copy bandwidth). Answers: fused and unfused must
give the same tuple counts and hashes (`--count`), else the row says DIFFER.

Prints a markdown table (and writes it, the instantiated programs and each
run's --stats output to --log DIR).
"""
import argparse
import datetime
import os
import random
import re
import subprocess
import sys
import tempfile
from array import array

import rfbench  # bench/rfbench.py (this script's folder is on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGDIR = os.path.join(ROOT, "bench", "weaver")
R = 1 << 32            # values are uniform on [0, R)
CHUNK = 1 << 20        # rows per generated piece (fixed: the data does not depend on the process count)

STATS_DEVICE = re.compile(r"^redfox: stats \(backend (\w+), (.*)\)$", re.M)
STATS_TIMES = re.compile(r"^\s*load ([0-9.]+) s \(inputs read and resident\), query ([0-9.]+) s", re.M)
PLACEHOLDER = re.compile(r"\$\{(\w+)\}")   # ${NAME} in bench/weaver/*.lql.in
COUNT_LINE = re.compile(r"^# (\S+) \((\d+) tuples, hash ([0-9a-f]+)\)", re.M)


def log(msg):
    print(f"weaver-patterns: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- patterns
# inputs: (predicate, data table ({S}: the selectivity's tag), columns the
# program reads); outputs: (predicate, arity); params(sel): the template's
# constants.

def _a_params(s):
    l1 = round((1 - s) * R)
    u2 = l1 + round(s * s * R)
    return {"L1": l1, "U2": u2, "L3": u2 - round(s ** 3 * R)}


def _e_params(s):
    k = round(s * 100000)            # cents; p is uniform on 0..99999 cents
    return {"K": f"{k // 100}.{k % 100:02d}"}


def _sel_name(s):
    """0.1 -> '0p1' (file names of programs, logs and b's tables)."""
    return f"{s:g}".replace(".", "p")


PATTERNS = {
    "a": {"file": "a_selects.lql.in", "what": "3 SELECTs (3 predicates) + PROJECT",
          "inputs": [("t", "t", 2)], "outputs": [("sel3", 2)], "params": _a_params},
    "a1": {"file": "a1_rule.lql.in", "what": "3 SELECTs as one rule (one MAP)",
           "inputs": [("t", "t", 2)], "outputs": [("sel", 2)], "params": _a_params},
    "b": {"file": "b_joins.lql.in", "what": "JOIN -> JOIN (wide table)",
          "inputs": [("t", "t", 2), ("b2", "b2_s{S}", 2), ("b3", "b3_s{S}", 2)], "outputs": [("r", 4)],
          "params": lambda s: {}},
    "c": {"file": "c_selected_joins.lql.in", "what": "JOIN of 3 SELECTed tables",
          "inputs": [("t", "t", 2), ("u", "u", 2), ("w", "w", 2)], "outputs": [("r", 4)],
          "params": lambda s: {"K": round(s * R)}},
    "d": {"file": "d_shared_input.lql.in", "what": "2 SELECTs sharing an input",
          "inputs": [("t", "t", 2)], "outputs": [("o1", 2), ("o2", 2)],
          "params": lambda s: {"K": round(s * R), "H": round((1 - s) * R)}},
    "e": {"file": "e_arith.lql.in", "what": "SELECT, total(p*(1-d)*(1+x))",
          "inputs": [("e", "e", 3)], "outputs": [("charge", 1)], "params": _e_params},
}

# table name -> (kind, seed); b2_sTAG/b3_sTAG carry their selectivity in the name.
TABLES = {"t": ("kv", 1), "u": ("kv", 2), "w": ("kv", 3), "e": ("money", 6)}


def table_spec(name):
    m = re.match(r"^(b2|b3)_s([0-9p.e+-]+)$", name)
    if m:
        return ("miss", 4 if m.group(1) == "b2" else 5, float(m.group(2).replace("p", ".")))
    kind, seed = TABLES[name]
    return (kind, seed, None)


# --------------------------------------------------------------- generator

_P_STR = None
_D_STR = None
_X_STR = None


def _money_tables():
    global _P_STR, _D_STR, _X_STR
    if _P_STR is None:
        _P_STR = [f"{c // 100}.{c % 100:02d}" for c in range(100000)]
        _D_STR = [f"0.{(v % 11):02d}" for v in range(65536)]   # 0.00 .. 0.10
        _X_STR = [f"0.{(v % 9):02d}" for v in range(65536)]    # 0.00 .. 0.08
    return _P_STR, _D_STR, _X_STR


def gen_chunk(job):
    """One piece of a table as TSV bytes: rows [lo, hi) of n."""
    kind, seed, sel, n, index = job
    lo, hi = index * CHUNK, min(n, (index + 1) * CHUNK)
    m = hi - lo
    rnd = random.Random(seed * 1000003 + index)
    u32 = array("I")
    assert u32.itemsize == 4
    u32.frombytes(rnd.randbytes(4 * m))
    if kind == "kv":            # (id, v): ids lo..hi-1, v uniform on [0, 2^32)
        text = "\n".join(map("{}\t{}".format, range(lo, hi), u32))
    elif kind == "miss":        # (key, v): key i with probability sel, else n + i (matches no id)
        coin = array("I")
        coin.frombytes(rnd.randbytes(4 * m))
        t = round(sel * R)
        keys = [i if c < t else n + i for i, c in zip(range(lo, hi), coin)]
        text = "\n".join(map("{}\t{}".format, keys, u32))
    elif kind == "money":       # (id, p, d, x): p 0.00..999.99, d 0.00..0.10, x 0.00..0.08
        ps, ds, xs = _money_tables()
        d16, x16 = array("H"), array("H")
        d16.frombytes(rnd.randbytes(2 * m))
        x16.frombytes(rnd.randbytes(2 * m))
        text = "\n".join(map("{}\t{}\t{}\t{}".format, range(lo, hi), [ps[v % 100000] for v in u32],
                             map(ds.__getitem__, d16), map(xs.__getitem__, x16)))
    else:
        raise ValueError(kind)
    return (text + "\n").encode() if m else b""


def ensure_table(datadir, name, n, jobs):
    path = os.path.join(datadir, name + ".tsv")
    if os.path.exists(path):
        return path
    kind, seed, sel = table_spec(name)
    os.makedirs(datadir, exist_ok=True)
    pieces = [(kind, seed, sel, n, i) for i in range((n + CHUNK - 1) // CHUNK)]
    log(f"writing {path} ({n} rows, {len(pieces)} pieces, {jobs} processes)")
    rfbench.write_pieces(path, pieces, gen_chunk, jobs)
    return path


# ------------------------------------------------------------------ redfox

def redfox_help(redfox):
    text = ""
    for cmd in ([redfox, "run", "--help"], [redfox, "--help"]):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            text += p.stdout + p.stderr
        except (OSError, subprocess.TimeoutExpired):
            pass
    return text


def find_floors(redfox, explicit):
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    d = os.path.dirname(redfox)
    cands = [os.path.join(d, "tests", "gpu", "rf_gpu_floors"), os.path.join(d, "bench", "rf_gpu_floors")]
    for b in sorted(os.listdir(ROOT)):
        if b.startswith("build"):
            cands += [os.path.join(ROOT, b, "tests", "gpu", "rf_gpu_floors"),
                      os.path.join(ROOT, b, "bench", "rf_gpu_floors")]
    return next((c for c in cands if os.access(c, os.X_OK)), None)


def measure_floor(path):
    """(copy GB/s, device) or (None, why)."""
    if not path:
        return None, "rf_gpu_floors not built (needs the CUDA backend)"
    try:
        p = subprocess.run([path, "1024", "16"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"rf_gpu_floors failed: {e}"
    if p.stdout.startswith("skipped"):
        return None, "no CUDA device"
    m, d = re.search(r"copy_gbs ([\d.]+)", p.stdout), re.search(r"device (.*)", p.stdout)
    if p.returncode != 0 or not m:
        return None, f"rf_gpu_floors: exit {p.returncode}: {(p.stderr or p.stdout).strip()[-200:]}"
    return float(m.group(1)), d.group(1) if d else "?"


def parse_run(err, out):
    kernels = rfbench.kernel_lines(err)
    d, t = STATS_DEVICE.search(err), STATS_TIMES.search(err)
    return {"kernels": kernels,
            "kern": sum(k["be"] for k in kernels if k["op"] != "LOAD"),
            "device": d.group(2) if d else None, "backend": d.group(1) if d else None,
            "load": float(t.group(1)) if t else None, "query": float(t.group(2)) if t else None,
            "outputs": {m.group(1): (int(m.group(2)), m.group(3)) for m in COUNT_LINE.finditer(out)}}


def run_point(a, prog, inputs, extra, logpath):
    """Best of --repeat runs (by kernel time): a parse_run dict or {'error': ...}."""
    cmd = [a.redfox, "run", prog] + sum((["--input", f"{p}={f}"] for p, f in inputs), []) + \
          ["--count", "--stats", f"--backend={a.backend}"] + (["--threads", str(a.threads)] if a.threads else []) + \
          a.extra + extra
    best = None
    with open(logpath, "w", encoding="utf-8") as lf:
        for i in range(max(1, a.repeat)):
            lf.write(f"$ {' '.join(cmd)}\n")
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                lf.write(f"timed out after {a.timeout} s\n")
                return {"error": f"timeout {a.timeout} s"}
            lf.write(p.stdout + p.stderr + "\n")
            lf.flush()
            if p.returncode != 0:
                last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
                return {"error": f"exit {p.returncode}: {last}"}
            r = parse_run(p.stderr, p.stdout)
            if not r["kernels"] or not r["outputs"]:
                return {"error": "no --stats kernel lines or --count lines in the output"}
            if best is None or r["kern"] < best["kern"]:
                best = r
    return best


def instantiate(pattern, sel, workdir):
    spec = PATTERNS[pattern]
    with open(os.path.join(PROGDIR, spec["file"]), encoding="utf-8") as f:
        text = f.read()
    params = {k: str(v) for k, v in spec["params"](sel).items()}
    missing = sorted(set(PLACEHOLDER.findall(text)) - set(params))
    if missing:
        sys.exit(f"weaver-patterns: error: {spec['file']}: no value for {', '.join(missing)}")
    text = PLACEHOLDER.sub(lambda m: params[m.group(1)], text)
    path = os.path.join(workdir, f"{pattern}-s{_sel_name(sel)}.lql")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def fmt_ms(x):
    return "-" if x is None else f"{x * 1e3:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", default=None, help="redfox binary (default build-dev/redfox, else build/redfox)")
    ap.add_argument("--backend", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--rows", type=float, default=1e8, help="rows of every input table (default 1e8)")
    ap.add_argument("--sel", default="0.1,0.5,0.9", help="selectivities per operator (default 0.1,0.5,0.9)")
    ap.add_argument("--patterns", default="a,a1,b,c,d,e", help="patterns to run (default a,a1,b,c,d,e)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per variant and point, best kept (default 1)")
    ap.add_argument("--threads", type=int, default=0, help="redfox --threads (default: redfox's, one per core)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="generator processes (default: cores)")
    ap.add_argument("--data", default=os.path.join(ROOT, ".data", "weaver"), help="data folder (default .data/weaver)")
    ap.add_argument("--floors", default=None, help="rf_gpu_floors binary (default: found next to redfox)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per redfox run (default 600)")
    ap.add_argument("--redfox-args", default="", help="extra arguments for every redfox run (both variants)")
    ap.add_argument("--generate-only", action="store_true", help="write the data and stop")
    ap.add_argument("--kernels", action="store_true",
                    help="also print each run's kernels (op, output, rows, ms); always in the log's table file")
    ap.add_argument("--log", default=None, help="folder for the table, the programs and each run's output")
    a = ap.parse_args()

    n = int(a.rows)
    if n < 1:
        sys.exit("weaver-patterns: error: --rows must be at least 1")
    try:
        sels = [float(x) for x in a.sel.split(",") if x.strip()]
    except ValueError:
        sels = []
    if not sels or not all(0 < s <= 1 for s in sels):
        sys.exit("weaver-patterns: error: --sel takes fractions in (0, 1], e.g. 0.1,0.5,0.9")
    patterns = [p.strip() for p in a.patterns.split(",") if p.strip()]
    bad = [p for p in patterns if p not in PATTERNS]
    if bad or not patterns:
        sys.exit(f"weaver-patterns: error: unknown pattern(s) {', '.join(bad) or '(none)'}; "
                 f"known: {', '.join(PATTERNS)}")
    a.extra = a.redfox_args.split()
    datadir = os.path.join(a.data, f"n{n}")

    # Data first (also what --generate-only does).
    need = []
    for p in patterns:
        for s in sels:
            for _, tab, _ in PATTERNS[p]["inputs"]:
                name = tab.format(S=_sel_name(s))
                if name not in need:
                    need.append(name)
    paths = {name: ensure_table(datadir, name, n, max(1, a.jobs)) for name in need}
    if a.generate_only:
        total = sum(os.path.getsize(p) for p in paths.values())
        log(f"data ready in {datadir}: {len(paths)} tables, {total / 1e9:.2f} GB")
        return 0

    if a.redfox is None:
        a.redfox = next((c for c in (os.path.join(ROOT, "build-dev", "redfox"), os.path.join(ROOT, "build", "redfox"))
                         if os.access(c, os.X_OK)), os.path.join(ROOT, "build", "redfox"))
    a.redfox = os.path.abspath(a.redfox)
    if not os.access(a.redfox, os.X_OK):
        sys.exit(f"weaver-patterns: error: {a.redfox} is not an executable (build first)")
    has_no_fuse = "--no-fuse" in redfox_help(a.redfox)
    variants = [("fused", []), ("unfused", ["--no-fuse"])] if has_no_fuse else [("unfused", [])]

    copy_gbs, floor_note = None, "CPU backend: no GPU copy floor"
    if a.backend == "gpu":
        copy_gbs, floor_note = measure_floor(find_floors(a.redfox, a.floors))
        if floor_note == "no CUDA device":
            print("skipped: no CUDA device on this machine (--backend cpu runs the patterns on the CPU backend)")
            return 0
        if copy_gbs is not None:
            floor_note = f"device-to-device copy {copy_gbs:.0f} GB/s (read + write) on {floor_note}"

    logdir = a.log or tempfile.mkdtemp(prefix="weaver-patterns-")
    os.makedirs(logdir, exist_ok=True)
    rows_out = []
    kern_lines = []
    for p in patterns:
        spec = PATTERNS[p]
        for s in sels:
            prog = instantiate(p, s, logdir)
            inputs = [(pred, paths[tab.format(S=_sel_name(s))]) for pred, tab, _ in spec["inputs"]]
            res = {}
            for vname, vargs in variants:
                r = run_point(a, prog, inputs, vargs,
                              os.path.join(logdir, f"{p}-s{_sel_name(s)}-{vname}.log"))
                res[vname] = r
                log(f"{p} sel {s:g} {vname}: " + (r["error"] if "error" in r else
                                                  f"kernels {r['kern'] * 1e3:.3f} ms, query {r['query']:.3f} s"))
                if "error" not in r:
                    kern_lines.append(f"{p} sel {s:g} {vname}: " + ", ".join(
                        f"{k['op']} {k['out']} {k['rows']} rows {k['be'] * 1e3:.3f}"
                        for k in r["kernels"] if k["op"] != "LOAD"))
            ok = [r for r in res.values() if "error" not in r]
            outs = ok[0]["outputs"] if ok else {}
            out_rows = sum(outs.get(pred, (0, ""))[0] for pred, _ in spec["outputs"]) if ok else None
            if len(ok) < len(res):
                same = "FAIL: " + "; ".join(f"{v} {r['error']}" for v, r in res.items() if "error" in r)
            elif len(ok) > 1:
                same = "ok" if all(r["outputs"] == outs for r in ok) else "DIFFER"
            else:
                same = "-"
            floor_bytes = sum(8 * cols * n for _, _, cols in spec["inputs"]) + \
                sum(8 * ar * outs.get(pred, (0, ""))[0] for pred, ar in spec["outputs"])
            floor_s = floor_bytes / (copy_gbs * 1e9) if copy_gbs and ok else None
            fused = res.get("fused", {}).get("kern") if "fused" in res else None
            unfused = res["unfused"].get("kern")

            def pct(t):
                return f"{100.0 * floor_s / t:.1f}" if floor_s and t else "-"
            dev = f"{ok[0]['backend']}: {ok[0]['device']}" if ok else "?"
            rows_out.append([dev, p, f"{s:g}", str(n), "-" if out_rows is None else str(out_rows),
                             fmt_ms(fused), fmt_ms(unfused),
                             f"{unfused / fused:.2f}x" if fused and unfused else "-",
                             f"{floor_bytes / 1e6:.0f}" if ok else "-", fmt_ms(floor_s), pct(fused), pct(unfused),
                             same])

    head = ["device", "pattern", "sel", "rows", "out rows", "fused ms", "unfused ms", "unfused/fused",
            "floor MB", "floor ms", "fused % floor", "unfused % floor", "answers"]
    lines = [f"# Kernel Weaver patterns (thesis Fig. 24), {datetime.datetime.now():%Y-%m-%d %H:%M}, "
             f"redfox {a.redfox}, --backend={a.backend}, {n} rows per input table, sel = fraction each operator keeps",
             f"# floor: {floor_note}",
             "# ms: sum of the kernels' --stats backend times (GPU: device events), LOAD and output excluded; "
             f"best of {max(1, a.repeat)}"]
    if not has_no_fuse:
        lines.append("# NOTE: this redfox has no --no-fuse (`redfox run --help` does not list it: Kernel Weaver "
                     "not built); only the unfused variant (a plain run) was measured, fused columns are empty")
    for vname, _ in variants:
        lines.append(f"# {vname}: redfox run ... {' '.join(a.extra + dict(variants)[vname]) or '(no extra arguments)'}")
    for pn in patterns:
        lines.append(f"# {pn}: {PATTERNS[pn]['what']} (bench/weaver/{PATTERNS[pn]['file']})")
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows_out]
    text = "\n".join(lines)
    ktext = "Kernels of each run kept (op, output, rows out, backend ms; LOAD left out):\n" + "\n".join(kern_lines)
    print(text + ("\n\n" + ktext if a.kernels else ""), flush=True)
    with open(os.path.join(logdir, "weaver-patterns.md"), "w", encoding="utf-8") as f:
        f.write(f"command: {' '.join(sys.argv)}\n\n{text}\n\n{ktext}\n")
    log(f"logs in {logdir}")
    return 1 if any(r[-1] not in ("ok", "-") for r in rows_out) else 0


if __name__ == "__main__":
    sys.exit(main())
