#!/usr/bin/env python3
"""Where a recursive query's iterations spend their time, from a trace.

    ./redfox run programs/tc.lql --input edge=GRAPH --count --profile tc.json
    python3 bench/iter_profile.py tc.json [--top 8] [--every N]

Reads the Chrome trace `redfox run --profile` writes (docs/observability.md)
and prints, for every loop: its iterations; the wall time of an iteration
(first, median, last, total); how much of it the kernels account for on the
device (GPU stream track) or the interpreter's kernel slices (CPU), the rest
being the host's fixed costs (launch, synchronisation, allocation, the
interpreter); a least-squares split of the iteration time into a fixed part
and a part per delta row and per row of the relation so far (the sum of the
deltas before it), which says whether an iteration costs what its delta
costs or what the full relation costs; and the kernels that take the most
time summed over the iterations, with their time per call.

Only the trace is read: the numbers are those of the run that wrote it.
"""
import argparse
import json
import statistics
import sys


def load_events(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X"], events


def track_names(events):
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e.get("tid")] = e.get("args", {}).get("name", "")
    return names


def solve_least_squares(rows, ys):
    """Normal equations for y = a + b*x1 + c*x2 (3x3, Gaussian elimination)."""
    n = 3
    ata = [[0.0] * n for _ in range(n)]
    aty = [0.0] * n
    for r, y in zip(rows, ys):
        for i in range(n):
            aty[i] += r[i] * y
            for j in range(n):
                ata[i][j] += r[i] * r[j]
    m = [ata[i] + [aty[i]] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda i: abs(m[i][col]))
        if abs(m[pivot][col]) < 1e-30:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for i in range(n):
            if i != col:
                f = m[i][col] / m[col][col]
                for j in range(col, n + 1):
                    m[i][j] -= f * m[col][j]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit_nonnegative(rows, ys):
    """The least-squares fit with no negative coefficient: every subset of
    the two row terms (with the fixed part) is fitted and the best fit
    whose coefficients are all >= 0 kept (the terms are nearly collinear
    on some loops, where the full fit trades a negative fixed part against
    them)."""
    best, best_err = None, None
    for use_delta in (True, False):
        for use_sofar in (True, False):
            cols = [0] + ([1] if use_delta else []) + ([2] if use_sofar else [])
            sub = [[r[c] for c in cols] + [0.0] * (3 - len(cols)) for r in rows]
            sol = solve_least_squares(sub, ys) if len(cols) == 3 else solve_subset(sub, ys, len(cols))
            if sol is None or min(sol[:len(cols)]) < 0:
                continue
            coef = [0.0, 0.0, 0.0]
            for c, v in zip(cols, sol):
                coef[c] = v
            err = sum((y - (coef[0] + coef[1] * r[1] + coef[2] * r[2])) ** 2 for r, y in zip(rows, ys))
            if best_err is None or err < best_err:
                best, best_err = coef, err
    return best


def solve_subset(rows, ys, k):
    """Least squares over the first k columns of rows (k = 1 or 2)."""
    if k == 1:
        return [sum(ys) / len(ys)]
    sxx = sum(r[1] * r[1] for r in rows)
    sx = sum(r[1] for r in rows)
    n = float(len(rows))
    sy = sum(ys)
    sxy = sum(r[1] * y for r, y in zip(rows, ys))
    det = n * sxx - sx * sx
    if abs(det) < 1e-30:
        return None
    a = (sy * sxx - sx * sxy) / det
    b = (n * sxy - sx * sy) / det
    return [a, b]


def fmt_ms(us):
    return "%.3f" % (us / 1000.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=8, help="kernels listed per loop")
    ap.add_argument("--every", type=int, default=0,
                    help="also print every N-th iteration's row (0: none)")
    args = ap.parse_args()

    slices, events = load_events(args.trace)
    names = track_names(events)
    main_tids = {t for t, n in names.items() if n.startswith("CPU: main")}
    gpu_tids = {t for t, n in names.items() if n.startswith("GPU")}
    main_slices = sorted((e for e in slices if e.get("tid") in main_tids),
                         key=lambda e: (e["ts"], -e.get("dur", 0)))
    gpu_slices = [e for e in slices if e.get("tid") in gpu_tids]

    loops = [e for e in main_slices if e["name"].startswith("loop ")]
    if not loops:
        print("no loop in this trace")
        return 0
    run = next((e for e in main_slices if e["name"] == "run"), None)
    if run:
        print("run: %s ms" % fmt_ms(run["dur"]))
    for loop in loops:
        lo, hi = loop["ts"], loop["ts"] + loop["dur"]
        label = loop["name"][len("loop "):]
        iters = [e for e in main_slices
                 if lo <= e["ts"] <= hi and e["name"].startswith(label + " iteration ")]
        iters.sort(key=lambda e: e["ts"])
        if not iters:
            continue
        kernels = [e for e in main_slices if lo <= e["ts"] <= hi and "iteration" in e.get("args", {})
                   and "block" in e.get("args", {})]
        device = [e for e in gpu_slices if lo <= e["ts"] <= hi + 1]
        per_iter_kernel = {}
        for e in kernels:
            it = e["args"]["iteration"]
            per_iter_kernel[it] = per_iter_kernel.get(it, 0.0) + e["dur"]
        per_iter_device = {}
        for e in device:
            it = e.get("args", {}).get("iteration")
            if it is not None:
                per_iter_device[it] = per_iter_device.get(it, 0.0) + e["dur"]
        walls = [e["dur"] for e in iters]
        total = sum(walls)
        print("\nloop %s: %d iterations, %s ms in iterations (%s ms loop slice)"
              % (label, len(iters), fmt_ms(total), fmt_ms(loop["dur"])))
        print("  iteration wall ms: first %s, median %s, last %s, max %s"
              % (fmt_ms(walls[0]), fmt_ms(statistics.median(walls)), fmt_ms(walls[-1]), fmt_ms(max(walls))))
        kern_total = sum(per_iter_kernel.values())
        dev_total = sum(per_iter_device.values())
        print("  kernel slices (host view) %s ms = %.1f%%; device time %s ms = %.1f%%; "
              "host rest (wall - %s) %s ms, %.1f us per iteration"
              % (fmt_ms(kern_total), 100.0 * kern_total / max(total, 1e-9),
                 fmt_ms(dev_total), 100.0 * dev_total / max(total, 1e-9),
                 "device" if device else "kernels",
                 fmt_ms(total - dev_total) if device else fmt_ms(total - kern_total),
                 ((total - dev_total) if device else (total - kern_total)) / len(iters)))
        # Fixed part vs delta vs relation so far.
        rows, ys = [], []
        so_far = 0.0
        deltas = []
        for e in iters:
            d = float(e.get("args", {}).get("delta_rows", 0))
            rows.append((1.0, d, so_far))
            ys.append(float(e["dur"]))
            deltas.append(d)
            so_far += d
        fit = fit_nonnegative(rows, ys) if len(iters) >= 3 else None
        if fit:
            a, b, c = fit
            print("  fit: iteration us = %.1f + %.4f us x delta rows + %.6f us x rows so far"
                  % (a, b, c))
            print("       (fixed %.1f%% of the total; delta %.1f%%; rows-so-far %.1f%%)"
                  % (100.0 * a * len(iters) / max(total, 1e-9),
                     100.0 * b * sum(deltas) / max(total, 1e-9),
                     100.0 * c * sum(r[2] for r in rows) / max(total, 1e-9)))
        print("  delta rows: first %d, median %d, last %d; relation at the end %d"
              % (deltas[0], statistics.median(deltas), deltas[-1], so_far))
        by_kernel = {}
        src = device if device else kernels
        for e in src:
            k = e["name"]
            t, n = by_kernel.get(k, (0.0, 0))
            by_kernel[k] = (t + e["dur"], n + 1)
        print("  top kernels (%s time):" % ("device" if device else "host"))
        for k, (t, n) in sorted(by_kernel.items(), key=lambda kv: -kv[1][0])[:args.top]:
            print("    %-40s %10s ms %7d calls %9.1f us/call" % (k[:40], fmt_ms(t), n, t / n))
        if args.every > 0:
            print("  iteration  delta_rows  wall_ms  device_ms")
            for i, e in enumerate(iters):
                if i % args.every == 0 or i == len(iters) - 1:
                    it = e["args"].get("iteration")
                    print("  %9s %11d %8s %10s" % (it, deltas[i], fmt_ms(e["dur"]),
                                                    fmt_ms(per_iter_device.get(it, 0.0))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
