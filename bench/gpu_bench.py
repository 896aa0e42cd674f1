#!/usr/bin/env python3
"""GPU benchmark: Red Fox's GPU backend against its CPU backend on the same
host, over the shared graphs, with the device's floors.

    python3 bench/gpu_bench.py [--build DIR] [--graphs-dir DIR] [--graphs A,B]
                               [--queries tc,sg,triangles] [--threads 16]
                               [--timeout S] [--no-cpu] [--count-only] [--log F]
                               [--variants "fused=,unfused=--no-fuse"]

First it measures the device's copy bandwidth (device-to-device memcpy,
bytes read + written), its radix-sort rate (64-bit keys through the
library's sort) and its pinned PCIe download bandwidth with rf_gpu_floors.
Then for every graph and query it runs
`redfox run --stats` on --backend=gpu and on --backend=cpu --threads N and
prints: result size, loop iterations, GPU time, CPU time, ratio, peak device
memory, tuples/s, and the floors: bytes the kernels move / copy bandwidth,
tuples sorted / sort rate, and how far the GPU's kernel time is from them;
the download of the answers against answer bytes / PCIe bandwidth. Last,
the three largest runs (by result size) that both backends finished.
--count-only runs `redfox run --count` (no TSV files; the backends'
answers are compared by the hash it prints; where the GPU can hash an
answer in place it is not downloaded at all, and `download s` is 0).

Times are "facts loaded to answers in host memory": from before reading the
input file to the result rows downloaded and in typed order in host memory,
without writing the TSV file or process start / CUDA context creation
(reported apart: `write` and `wall`). Without a CUDA device it skips.

--variants NAME=ARGS,...: every run is made once per variant, a named set
of extra `redfox run` arguments (bench/rfbench.py; leading VAR=VALUE words
set the environment), e.g. "fused=,unfused=--no-fuse" for the Kernel
Weaver. The main table then has a `variant` column (the CPU backend runs
each variant too, unless --no-cpu), and a second table compares the
variants per query and graph: GPU s, kern s and CPU s of each, the ratio of
each other variant's to the first's (>1: the first is faster) and whether
all variants' GPU answers are the same (hashes).
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile

import rfbench  # bench/rfbench.py (this script's folder is on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = {"tc": ("programs/tc.lql", "path"), "sg": ("programs/same_generation.lql", "sg"),
           "triangles": ("programs/triangles.lql", "triangle")}


def count_lines(path):
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 24)
            if not b:
                return n
            n += b.count(b"\n")


def parse_stats(err):
    """Numbers from `redfox run --stats` stderr."""
    s = {"kernels": [], "iterations": 0}
    for line in err.splitlines():
        m = re.match(r"\s+(\d+)\s+(\w+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$",
                     line)
        if m:
            s["kernels"].append({"op": m.group(2), "calls": int(m.group(4)), "wall": float(m.group(5)),
                                 "in0": int(m.group(6)), "in1": int(m.group(7)), "out": int(m.group(8)),
                                 "be": float(m.group(9)), "mb": float(m.group(10))})
        m = re.search(r"loop .*: (\d+) iterations", line)
        if m:
            s["iterations"] += int(m.group(1))
        m = re.search(r"output ([\d.]+) s \(writing ([\d.]+) s\); answers in host memory after ([\d.]+) s", line)
        if m:
            s["write"], s["answers"] = float(m.group(2)), float(m.group(3))
        m = re.search(r"total ([\d.]+) s, peak memory ([\d.]+) MiB", line)
        if m:
            s["total"], s["peak_mib"] = float(m.group(1)), float(m.group(2))
        m = re.search(r"gpu: context ([\d.]+) s; PCIe upload ([\d.]+) MB in ([\d.]+) s .*download ([\d.]+) MB in ([\d.]+) s",
                      line)
        if m:
            s["ctx"], s["up_s"], s["down_mb"], s["down_s"] = (float(m.group(1)), float(m.group(3)),
                                                             float(m.group(4)), float(m.group(5)))
        m = re.search(r"NVRTC \w+: (\d+) compiled \(([\d.]+) s\)", line)
        if m:
            s["nvrtc_s"] = float(m.group(2))
    return s


def run(rf, prog, pred, gpath, backend, threads, timeout, log, count_only=False, variant=None):
    with tempfile.TemporaryDirectory(prefix="rfbench_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as out:
        cmd = [rf, "run", os.path.join(ROOT, prog), "--input", "edge=" + gpath,
               "--stats", "--backend=" + backend] + (["--count"] if count_only else ["--output", out])
        if backend == "cpu":
            cmd += ["--threads", str(threads)]
        if variant:
            cmd += variant.args
        import time
        t = time.time()
        shown = " ".join(["%s=%s" % kv for kv in (variant.env.items() if variant else [])] + cmd)
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                               env=variant.environ() if variant else None)
        except subprocess.TimeoutExpired:
            log.write("TIMEOUT %s\n" % shown)
            return None
        wall = time.time() - t
        err = p.stderr.decode("utf-8", "replace")
        log.write("$ %s\n%s\n" % (shown, err))
        log.flush()
        if p.returncode != 0:
            return {"error": err.strip().splitlines()[-1] if err.strip() else "exit %d" % p.returncode}
        s = parse_stats(err)
        s["wall"] = wall
        if count_only:
            m = re.search(r"^# %s \((\d+) tuples, hash ([0-9a-f]+)\)" % re.escape(pred), p.stdout.decode(), re.M)
            s["rows"] = int(m.group(1)) if m else -1
            s["sha1"] = m.group(2) if m else "?"
            return s
        s["rows"] = count_lines(os.path.join(out, pred + ".tsv"))
        with open(os.path.join(out, pred + ".tsv"), "rb") as f:
            import hashlib
            h = hashlib.sha1()
            for b in iter(lambda: f.read(1 << 24), b""):
                h.update(b)
            s["sha1"] = h.hexdigest()
        return s


def print_variants(variants, per_variant):
    """The variants side by side: GPU s, kern s and CPU s per variant, each
    other variant's over the first's, and whether the GPU answers agree."""
    v0 = variants[0].name
    hdr = ["query", "graph", "result"]
    for what in ("GPU s", "kern s", "CPU s"):
        hdr += ["%s %s" % (v.name, what) for v in variants]
        hdr += ["%s %s/%s" % (what.split()[0], v.name, v0) for v in variants[1:]]
    hdr.append("answers")
    print()
    print("# variants compared: GPU s as above; kern s: sum of device-event kernel times; ratios: a variant's "
          "over %s's (>1: %s is faster); answers: the GPU runs' hashes of every variant equal" % (v0, v0))
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for q, g, by_v in per_variant:
        rows = next((gs["rows"] for gs, _ in by_v.values() if gs), None)
        row = [q, g, "%d" % rows if rows is not None else "-"]
        for key, where, f in (("answers", 0, "%.4f"), ("kern", 0, "%.4f"), ("answers", 1, "%.3f")):
            vals = [by_v.get(v.name, (None, None))[where] for v in variants]
            vals = [x.get(key) if x else None for x in vals]
            row += [f % x if x is not None else "-" for x in vals]
            row += ["%.2f" % (x / vals[0]) if x is not None and vals[0] else "-" for x in vals[1:]]
        hashes = [by_v.get(v.name, (None, None))[0] for v in variants]
        if any(h is None for h in hashes):
            row.append("FAIL")
        else:
            row.append("same" if len({h["sha1"] for h in hashes}) == 1 else "DIFFER")
        print("| " + " | ".join(row) + " |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build-dev"))
    ap.add_argument("--graphs-dir", default=None)
    ap.add_argument("--graphs", default=None, help="comma-separated names (default: every .tsv)")
    ap.add_argument("--queries", default="tc,sg,triangles")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--timeout", type=int, default=120, help="seconds per run")
    ap.add_argument("--no-cpu", action="store_true", help="GPU only")
    ap.add_argument("--log", default=None, help="full --stats output here")
    ap.add_argument("--count-only", action="store_true",
                    help="run with redfox --count: no TSV written (wall then excludes writing); GPU and CPU "
                         "answers compared by the hash --count prints instead of by the SHA-1 of their files")
    ap.add_argument("--variants", default=None,
                    help='named sets of extra redfox arguments, NAME=ARGS,..., e.g. "fused=,unfused=--no-fuse" '
                         "(default: one variant without extra arguments)")
    a = ap.parse_args()
    try:
        variants = rfbench.parse_variants(a.variants)
    except ValueError as e:
        sys.exit("gpu_bench: error: --variants: %s" % e)
    named = bool(variants[0].name)
    rf = os.path.join(a.build, "redfox")
    gdir = a.graphs_dir or next((d for d in (os.path.join(ROOT, ".data", "graphs"),
                                             os.path.join(os.path.dirname(ROOT), "shared", "data", "graphs"))
                                 if os.path.isdir(d)), None)
    if not gdir:
        print("skipped: no graphs folder")
        return 0
    floors, why = rfbench.gpu_floors(a.build)
    if not floors:
        print("skipped: " + why)
        return 0
    device, copy_gbs = floors["device"], floors["copy_gbs"]
    sort_rate, d2h_gbs = floors["sort_keys_per_s"], floors["pcie_d2h_gbs"]
    print("# Red Fox GPU benchmark, %s, device %s, CPU backend --threads %d on %d host cores" % (
        datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), device, a.threads, os.cpu_count()))
    print("# floors: device-to-device copy %.0f GB/s (read + write); radix sort %.2f G keys/s (64-bit keys); "
          "pinned PCIe download %.1f GB/s" % (copy_gbs, sort_rate / 1e9, d2h_gbs))
    graphs = a.graphs.split(",") if a.graphs else sorted(f[:-4] for f in os.listdir(gdir) if f.endswith(".tsv"))
    log = open(a.log, "w") if a.log else open(os.devnull, "w")
    hdr = ("query", "graph") + (("variant",) if named else ()) + (
        "result", "iter", "GPU s", "CPU s", "CPU/GPU", "GPU wall", "CPU wall", "write s",
        "peak MiB", "tuples/s", "kern s", "bw floor", "sort floor", "kern/floor", "download s", "dl floor")
    if named:
        print("# variants (extra redfox run arguments): " + "; ".join("%s = %s" % (v.name, v.describe())
                                                                     for v in variants))
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    done = []  # (result rows, query, graph, GPU s, CPU s) of runs that both backends finished
    per_variant = []  # (query, graph, {variant name: (GPU stats or None, CPU stats or None)})
    for q in a.queries.split(","):
        prog, pred = QUERIES[q]
        for g in graphs:
            gpath = os.path.join(gdir, g + ".tsv")
            if not os.path.exists(gpath):
                continue
            with open(gpath, "rb") as f:  # page cache warm for both backends alike
                f.read()
            by_v = {}
            per_variant.append((q, g, by_v))
            for v in variants:
                lead = (q, g) + ((v.name,) if named else ())
                gs = run(rf, prog, pred, gpath, "gpu", a.threads, a.timeout, log, a.count_only, v)
                if not gs or "error" in gs:
                    # No comparison to make: the CPU run is skipped (it would
                    # only spend the timeout on a result the GPU could not hold).
                    print("| %s | GPU %s |" % (" | ".join(lead), "timeout" if not gs else gs["error"]), flush=True)
                    by_v[v.name] = (None, None)
                    continue
                cs = None if a.no_cpu else run(rf, prog, pred, gpath, "cpu", a.threads, a.timeout, log,
                                               a.count_only, v)
                by_v[v.name] = (gs, cs if cs and "error" not in cs else None)
                kern = sum(k["be"] for k in gs["kernels"])
                gs["kern"] = kern
                moved = sum(k["mb"] for k in gs["kernels"]) * 1e6
                sorted_rows = sum(k["in0"] for k in gs["kernels"] if k["op"] == "SORT")
                bw_floor = moved / (copy_gbs * 1e9)
                sort_floor = sorted_rows / sort_rate
                floor = max(bw_floor, sort_floor)
                cpu_s = cs["answers"] if cs and "answers" in cs else None
                same = "" if not cs or "sha1" not in cs else ("" if cs["sha1"] == gs["sha1"] else " MISMATCH")
                row = lead + (
                    "%d%s" % (gs["rows"], same), str(gs["iterations"]), "%.4f" % gs["answers"],
                    "%.3f" % cpu_s if cpu_s is not None else ("timeout" if not cs and not a.no_cpu else "n/a"),
                    "%.1f" % (cpu_s / gs["answers"]) if cpu_s and gs["answers"] > 0 else "n/a",
                    "%.2f" % gs["wall"], "%.2f" % cs["wall"] if cs and "wall" in cs else "n/a",
                    "%.2f" % gs.get("write", 0), "%.0f" % gs.get("peak_mib", 0),
                    "%.3g" % (gs["rows"] / gs["answers"]) if gs["answers"] > 0 else "n/a",
                    "%.4f" % kern, "%.4f" % bw_floor, "%.4f" % sort_floor,
                    "%.1f" % (kern / floor) if floor > 0 else "n/a",
                    "%.4f" % gs.get("down_s", 0),
                    "%.4f" % (gs.get("down_mb", 0) * 1e6 / (d2h_gbs * 1e9)) if d2h_gbs > 0 else "n/a")
                print("| " + " | ".join(row) + " |", flush=True)
                if cpu_s and gs["answers"] > 0 and not same and v is variants[0]:
                    done.append((gs["rows"], q, g, gs["answers"], cpu_s))
    print("# GPU s / CPU s: facts loaded to answers in host memory (no TSV writing, no process start);"
          " wall: whole process%s; kern s: sum of device-event kernel times;"
          " bw floor: bytes the kernels read+write / copy bandwidth; sort floor: tuples into SORT / sort rate;"
          " download s: answers device to host memory; dl floor: their bytes / pinned PCIe bandwidth"
          % (" (--count: no TSV written; answers compared by --count's hash)" if a.count_only
             else " incl. writing the TSV to /dev/shm (answers compared by SHA-1)"))
    if len(variants) > 1:
        print_variants(variants, per_variant)
    if done:
        print("# the three largest runs (by result size) that both backends finished%s:"
              % (" (variant %s)" % variants[0].name if named else ""))
        for rows, q, g, gt, ct in sorted(done, reverse=True)[:3]:
            print("#   %s %s: %d tuples, GPU %.4f s, CPU %.3f s, CPU/GPU %.1f" % (q, g, rows, gt, ct, ct / gt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
