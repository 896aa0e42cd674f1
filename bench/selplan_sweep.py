#!/usr/bin/env python3
"""Select planning sweep (docs/weaver.md s. 5, milestone 4): the plan the
planner chooses against every legal plan, over conjunctive filters of 2, 3
and 4 predicates with per-predicate selectivities.

    python3 bench/selplan_sweep.py [--redfox PATH] [--backend gpu|cpu]
        [--rows 1e8] [--preds 2,3,4] [--sel 0.1,0.3,0.5,0.7,0.9]
        [--points 0,8,4] [--seed 1] [--mode inproc|process] [--repeat N]
        [--splits 2,3] [--form chain|rule] [--data DIR] [--log DIR]
        [--jobs N] [--timeout S] [--generate-only]

Data: one table s(id, c0, c1, c2, c3) of ROWS rows, c_k uniform on
[0, 2^32) and independent (a generator in this script, standard library,
one process per core, written once as TSV under DIR/nROWS/, default
.data/selplan/, git-ignored). Predicate k is `c_k < round(sel_k * 2^32)`:
it keeps a fraction sel_k of the rows, independently of the others, as the
cost model assumes.

A point is a list of per-predicate selectivities. With k predicates the
program (form `chain`, the default) is a chain of k rules, one predicate
each, that Kernel Weaver fuses into one composed MAP: the select kernel
rf_select whose filter the planner plans (k conjuncts, none can fault).
Form `rule` writes the k predicates in one rule (a plain MAP; on the GPU
RF_CUDA_CODEGEN=1 makes it a generated kernel). Output: out(id).

Points: --points says how many per predicate count, drawn without
replacement (seeded) from all combinations of --sel; 0 means all (the
default for 2 predicates: 25 points; 8 and 4 for 3 and 4).

Per point, two ways to time every legal plan:
  inproc  (GPU, default there): one run with RF_WEAVE_SELPLAN_SWEEP=REPEAT:
          the GPU backend samples and chooses its plan, then runs every
          legal plan (rf_selplan_enumerate) over the same resident input,
          best of REPEAT by device events around the plan's kernels (and
          their count read-backs), checks that each keeps the chosen plan's
          rows, and prints them (`redfox: selplan sweep: ...`). No input
          reload per plan: the whole sweep fits in minutes at 10^8 rows.
  process (CPU, and the GPU if asked): one `redfox run PROG --input ...
          --count --stats` with the planner's choice, then one per legal
          plan with RF_WEAVE_SELPLAN forcing it (the plans `redfox explain
          --select-plans` lists), best of REPEAT each. Time: the select
          kernel's "be time" from --stats (GPU: device events around the
          whole kernel: the sample, the plan's kernels and, on a first
          run, loading its module). Answers (--count hashes) must agree.
--splits lists the predicate counts whose plans include `|` (row-id
kernels; default 2,3: with 4 predicates there are 648 plans with splits,
192 without, each compiled once per point). The chosen plan is timed
whatever it is.

The CPU backend evaluates a row at a time: it applies a forced plan's
order only (& and | run as &&) and plans nothing by itself, so its gaps
are noise; the run shows the script works (python3 bench/selplan_sweep.py
--backend cpu --rows 2e5).

Prints a markdown table: device, predicates, selectivities, the chosen
plan and its time, the best plan and its time, the gap (chosen over best,
%), the plans timed, the rows kept; then the worst and mean gap per
predicate count. Writes it, the programs and every run's output to --log.
"""
import argparse
import datetime
import itertools
import os
import random
import re
import subprocess
import sys
import tempfile
from array import array

import rfbench  # bench/rfbench.py (this script's folder is on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
R = 1 << 32
CHUNK = 1 << 20
NCOLS = 4

STATS_DEVICE = re.compile(r"^redfox: stats \(backend (\w+), (.*)\)$", re.M)
COUNT_LINE = re.compile(r"^# (\S+) \((\d+) tuples, hash ([0-9a-f]+)\)", re.M)
PLAN_NOTE = re.compile(r"^  gpu: select plan of (\S+): (\S+) \((.*)\)(?: x \d+ launches)?$", re.M)
SWEEP_LINE = re.compile(r"^redfox: selplan sweep: (\S+) (\S+) ([0-9.]+|-) (\d+|-)( chosen)?", re.M)


def log(msg):
    print(f"selplan-sweep: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------- generator

def gen_chunk(job):
    n, index = job
    lo, hi = index * CHUNK, min(n, (index + 1) * CHUNK)
    m = hi - lo
    rnd = random.Random(1000003 * 17 + index)
    cols = []
    for _ in range(NCOLS):
        a = array("I")
        a.frombytes(rnd.randbytes(4 * m))
        cols.append(a)
    text = "\n".join(map("{}\t{}\t{}\t{}\t{}".format, range(lo, hi), *cols))
    return (text + "\n").encode() if m else b""


def ensure_table(datadir, n, jobs):
    path = os.path.join(datadir, "s.tsv")
    if os.path.exists(path):
        return path
    os.makedirs(datadir, exist_ok=True)
    pieces = [(n, i) for i in range((n + CHUNK - 1) // CHUNK)]
    log(f"writing {path} ({n} rows, {len(pieces)} pieces, {jobs} processes)")
    rfbench.write_pieces(path, pieces, gen_chunk, jobs)
    return path


# ---------------------------------------------------------------- programs

def program(sels, form):
    """The program text for one point: predicate k is c_k < K_k."""
    k = len(sels)
    cols = ", ".join(f"c{i}" for i in range(NCOLS))
    typed = ", ".join(["int64(id)"] + [f"int64(c{i})" for i in range(NCOLS)])
    consts = [round(s * R) for s in sels]
    lines = [f"// select planning sweep: {k} predicates, selectivities {', '.join(f'{s:g}' for s in sels)}",
             f"s(id, {cols}) -> {typed}.",
             "out(id) -> int64(id).",
             '@input(s, "s.tsv").',
             "@output(out)."]
    if form == "rule":
        conds = ", ".join(f"c{i} < {consts[i]}" for i in range(k))
        lines.append(f"out(id) <- s(id, {cols}), {conds}.")
        return "\n".join(lines) + "\n"
    for i in range(1, k):
        lines.insert(2, f"p{i}(id, {cols}) -> {typed}.")
    prev = "s"
    for i in range(k):
        head = f"p{i + 1}(id, {cols})" if i + 1 < k else "out(id)"
        lines.append(f"{head} <- {prev}(id, {cols}), c{i} < {consts[i]}.")
        prev = f"p{i + 1}"
    return "\n".join(lines) + "\n"


def points(a, rng):
    out = []
    for k, npts in zip(a.preds, a.npoints):
        combos = list(itertools.product(a.sels, repeat=k))
        if npts <= 0 or npts >= len(combos):
            chosen = combos
        else:
            chosen = sorted(rng.sample(combos, npts))
        out += [list(c) for c in chosen]
    return out


# ------------------------------------------------------------------ redfox

def run(a, prog, table, env_extra, logf, extra=()):
    cmd = [a.redfox, "run", prog, "--input", f"s={table}", "--count", "--stats", f"--backend={a.backend}"] + \
        list(extra)
    env = dict(os.environ)
    for v in ("RF_WEAVE_SELPLAN", "RF_WEAVE_SELPLAN_SWEEP"):
        env.pop(v, None)
    if a.form == "rule" and a.backend == "gpu":
        env["RF_CUDA_CODEGEN"] = "1"
    env.update(env_extra)
    logf.write(f"$ {' '.join(f'{k}={v}' for k, v in env_extra.items())} {' '.join(cmd)}\n")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
    except subprocess.TimeoutExpired:
        logf.write(f"timed out after {a.timeout} s\n")
        return {"error": f"timeout {a.timeout} s"}
    logf.write(p.stdout + p.stderr + "\n")
    logf.flush()
    if p.returncode != 0:
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        return {"error": f"exit {p.returncode}: {last}"}
    d = STATS_DEVICE.search(p.stderr)
    kernels = [k for k in rfbench.kernel_lines(p.stderr) if k["op"] != "LOAD"]
    notes = {m.group(1): (m.group(2), m.group(3)) for m in PLAN_NOTE.finditer(p.stderr)}
    sweep = [(m.group(1), m.group(2), None if m.group(3) == "-" else float(m.group(3)) / 1e3,
              None if m.group(4) == "-" else int(m.group(4)), bool(m.group(5)))
             for m in SWEEP_LINE.finditer(p.stderr)]
    # The select kernel: the FUSED group (chain form) or the MAP (rule
    # form), the one whose plan the GPU noted when it did.
    sel = [k for k in kernels if k["op"] in ("FUSED", "MAP")]
    named = [k for k in sel if k["out"] in notes]
    kern = (named or sel or [None])[0]
    return {"device": f"{d.group(1)}: {d.group(2)}" if d else "?", "kern": kern["be"] if kern else None,
            "out": kern["out"] if kern else None, "notes": notes, "sweep": sweep,
            "answers": {m.group(1): (m.group(2), m.group(3)) for m in COUNT_LINE.finditer(p.stdout)}}


def best_of(a, prog, table, env, logf):
    best = None
    for _ in range(max(1, a.repeat)):
        r = run(a, prog, table, env, logf)
        if "error" in r:
            return r
        if best is None or (r["kern"] is not None and r["kern"] < best["kern"]):
            best = r
    return best


def legal_plans(a, prog):
    p = subprocess.run([a.redfox, "explain", "--select-plans", prog], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"selplan-sweep: error: explain --select-plans {prog}: {p.stderr.strip()}")
    plans = []
    for line in p.stdout.splitlines():
        if line and not line.startswith("#"):
            plans.append(line.split("\t")[2])
    return plans


def sweep_point(a, sels, table, logdir):
    k = len(sels)
    tag = f"p{k}-" + "-".join(f"{s:g}".replace(".", "") for s in sels)
    prog = os.path.join(logdir, tag + ".lql")
    with open(prog, "w", encoding="utf-8") as f:
        f.write(program(sels, a.form))
    res = {"k": k, "sels": sels}
    with open(os.path.join(logdir, tag + ".log"), "w", encoding="utf-8") as logf:
        if a.mode == "inproc":
            spec = f"{max(1, a.repeat)}" + ("" if k in a.splits else ":nosplit")
            r = run(a, prog, table, {"RF_WEAVE_SELPLAN_SWEEP": spec}, logf)
            if "error" in r:
                return dict(res, error=r["error"])
            timed = [(plan, t, rows, ch) for _, plan, t, rows, ch in r["sweep"] if t is not None]
            if not timed:
                return dict(res, error="no `selplan sweep` lines (is this the GPU backend with this branch?)")
            chosen = [x for x in timed if x[3]]
            best = min(timed, key=lambda x: x[1])
            note = next(iter(r["notes"].values()), ("?", ""))
            return dict(res, device=r["device"], chosen=chosen[0][0] if chosen else note[0],
                        chosen_s=chosen[0][1] if chosen else None, best=best[0], best_s=best[1],
                        nplans=len(timed), rows=chosen[0][2] if chosen else best[2], note=note[1], same="ok")
        plans = legal_plans(a, prog)
        c = best_of(a, prog, table, {}, logf)
        if "error" in c:
            return dict(res, error="chosen: " + c["error"])
        note = c["notes"].get(c["out"], next(iter(c["notes"].values()), None))
        chosen = note[0] if note else None
        timed, same = [], "ok"
        for plan in plans:
            if k not in a.splits and "|" in plan and plan != chosen:
                continue
            r = best_of(a, prog, table, {"RF_WEAVE_SELPLAN": plan}, logf)
            if "error" in r:
                return dict(res, error=f"plan {plan}: {r['error']}")
            if r["answers"] != c["answers"]:
                same = f"DIFFER ({plan})"
            timed.append((plan, r["kern"]))
        best = min(timed, key=lambda x: x[1])
        chosen_s = c["kern"]
        rows = next(iter(c["answers"].values()), ("?",))[0]
        return dict(res, device=c["device"], chosen=chosen or "(none: CPU plans nothing)", chosen_s=chosen_s,
                    best=best[0], best_s=best[1], nplans=len(timed), rows=rows,
                    note=note[1] if note else "", same=same)


def fmt_ms(x):
    return "-" if x is None else f"{x * 1e3:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", default=None, help="redfox binary (default build-dev/redfox, else build/redfox)")
    ap.add_argument("--backend", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--rows", type=float, default=1e8, help="rows of s (default 1e8; try 2e5 on a CPU)")
    ap.add_argument("--preds", default="2,3,4", help="predicate counts (default 2,3,4)")
    ap.add_argument("--sel", default="0.1,0.3,0.5,0.7,0.9", help="selectivities per predicate")
    ap.add_argument("--points", default="0,8,4",
                    help="points per predicate count, in --preds order; 0: all combinations (default 0,8,4)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the point sample (default 1)")
    ap.add_argument("--mode", default=None, choices=["inproc", "process"],
                    help="inproc (GPU default): all plans in one run; process (CPU default): a run per plan")
    ap.add_argument("--repeat", type=int, default=3, help="timings per plan, best kept (default 3)")
    ap.add_argument("--splits", default="2,3", help="predicate counts whose plans with | are timed (default 2,3)")
    ap.add_argument("--form", default="chain", choices=["chain", "rule"])
    ap.add_argument("--data", default=os.path.join(ROOT, ".data", "selplan"), help="data folder (default .data/selplan)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="generator processes (default: cores)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per redfox run (default 600)")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--log", default=None, help="folder for the table, the programs and each run's output")
    a = ap.parse_args()

    n = int(a.rows)
    if n < 1:
        sys.exit("selplan-sweep: error: --rows must be at least 1")
    try:
        a.preds = [int(x) for x in a.preds.split(",") if x.strip()]
        a.sels = [float(x) for x in a.sel.split(",") if x.strip()]
        a.npoints = [int(x) for x in a.points.split(",") if x.strip()]
        a.splits = {int(x) for x in a.splits.split(",") if x.strip()}
    except ValueError:
        sys.exit("selplan-sweep: error: --preds, --sel, --points and --splits take comma-separated numbers")
    if not a.preds or not all(2 <= k <= NCOLS for k in a.preds):
        sys.exit(f"selplan-sweep: error: --preds takes counts from 2 to {NCOLS}")
    if not a.sels or not all(0 < s <= 1 for s in a.sels):
        sys.exit("selplan-sweep: error: --sel takes fractions in (0, 1]")
    a.npoints += [0] * (len(a.preds) - len(a.npoints))
    if a.mode is None:
        a.mode = "inproc" if a.backend == "gpu" else "process"
    if a.mode == "inproc" and a.backend != "gpu":
        sys.exit("selplan-sweep: error: --mode inproc needs --backend gpu (the sweep runs inside the GPU backend)")
    table = ensure_table(os.path.join(a.data, f"n{n}"), n, max(1, a.jobs))
    if a.generate_only:
        log(f"data ready: {table} ({os.path.getsize(table) / 1e9:.2f} GB)")
        return 0
    if a.redfox is None:
        a.redfox = next((c for c in (os.path.join(ROOT, "build-dev", "redfox"), os.path.join(ROOT, "build", "redfox"))
                         if os.access(c, os.X_OK)), os.path.join(ROOT, "build", "redfox"))
    a.redfox = os.path.abspath(a.redfox)
    if not os.access(a.redfox, os.X_OK):
        sys.exit(f"selplan-sweep: error: {a.redfox} is not an executable (build first)")
    logdir = a.log or tempfile.mkdtemp(prefix="selplan-sweep-")
    os.makedirs(logdir, exist_ok=True)
    rows = []
    for sels in points(a, random.Random(a.seed)):
        r = sweep_point(a, sels, table, logdir)
        rows.append(r)
        if "error" in r:
            log(f"{sels}: {r['error']}")
        else:
            log(f"{sels}: chosen {r['chosen']} {fmt_ms(r['chosen_s'])} ms, best {r['best']} "
                f"{fmt_ms(r['best_s'])} ms of {r['nplans']} plans")
    device = next((r["device"] for r in rows if "device" in r), "?")
    head = ["device", "preds", "sel", "chosen plan", "chosen ms", "best plan", "best ms", "gap %", "plans", "rows out",
            "answers"]
    lines = [f"# Select planning sweep, {datetime.datetime.now():%Y-%m-%d %H:%M}, redfox {a.redfox}, "
             f"--backend={a.backend}, device {device}, {n} rows, form {a.form}, mode {a.mode}, best of "
             f"{max(1, a.repeat)}",
             "# ms: " + ("the plan's kernels by device events inside one run (RF_WEAVE_SELPLAN_SWEEP)"
                         if a.mode == "inproc" else
                         "the select kernel's --stats be time (chosen: with its sample; forced: no sample)"),
             f"# plans with | timed for {sorted(a.splits)} predicates; gap = chosen / best - 1",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    gaps = {}
    for r in rows:
        sel = " ".join(f"{s:g}" for s in r["sels"])
        if "error" in r:
            lines.append(f"| {device} | {r['k']} | {sel} | FAIL: {r['error']} |" + " |" * (len(head) - 4))
            continue
        gap = (r["chosen_s"] / r["best_s"] - 1) * 100 if r["chosen_s"] and r["best_s"] else None
        if gap is not None:
            gaps.setdefault(r["k"], []).append(gap)
        lines.append("| " + " | ".join([r["device"], str(r["k"]), sel, r["chosen"], fmt_ms(r["chosen_s"]), r["best"],
                                        fmt_ms(r["best_s"]), "-" if gap is None else f"{gap:.1f}",
                                        str(r["nplans"]), str(r["rows"]), r["same"]]) + " |")
    lines.append("")
    for k in sorted(gaps):
        g = gaps[k]
        lines.append(f"{k} predicates: {len(g)} points, gap worst {max(g):.1f}%, mean {sum(g) / len(g):.1f}%, "
                     f"within 10% at {sum(1 for x in g if x <= 10)} of {len(g)}")
    text = "\n".join(lines)
    print(text, flush=True)
    with open(os.path.join(logdir, "selplan-sweep.md"), "w", encoding="utf-8") as f:
        f.write(f"command: {' '.join(sys.argv)}\n\n{text}\n")
    log(f"logs in {logdir}")
    bad = any("error" in r or r.get("same", "ok") != "ok" for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
