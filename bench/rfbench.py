"""Helpers shared by the bench scripts (standard library only): named variants
of redfox arguments, the per-kernel lines of `redfox run --stats`, and
generated data written in parallel pieces (write_pieces).

Variants (--variants of bench/tpch.py and bench/gpu_bench.py):
    "fused=,unfused=--no-fuse"
is two named sets of extra `redfox run` arguments: `fused` adds none,
`unfused` adds --no-fuse. Variants are separated by commas; each is
NAME=ARGS, ARGS split like a shell would (shlex). Leading ARGS of the form
VAR=VALUE (upper-case VAR) are set in the environment of that variant's
runs instead, e.g. "plain=,forced=RF_WEAVE_FORCE=all". The first variant is
the one the others are compared with.
"""
import multiprocessing
import os
import re
import shlex

KERNEL_LINE = re.compile(r"^\s+(\d+)\s+(\w+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+"
                         r"([\d.]+)\s+([\d.]+)$")
OUTPUT_LINE = re.compile(r"^\s+output ([\d.]+) s \(writing ([\d.]+) s\)", re.M)
TIMES_LINE = re.compile(r"^\s*load ([0-9.]+) s \(inputs read and resident\), query ([0-9.]+) s", re.M)
ENV_ARG = re.compile(r"^[A-Z_][A-Z0-9_]*=")


class Variant:
    def __init__(self, name, args, env):
        self.name, self.args, self.env = name, args, env

    def environ(self):
        """The environment for a run of this variant (None: inherit)."""
        if not self.env:
            return None
        e = dict(os.environ)
        e.update(self.env)
        return e

    def describe(self):
        parts = [f"{k}={v}" for k, v in self.env.items()] + self.args
        return " ".join(shlex.quote(p) for p in parts) or "(no extra arguments)"


def parse_variants(spec):
    """[Variant]; raises ValueError with a message. spec None or empty: one
    unnamed variant without extra arguments (the scripts' old behaviour)."""
    if spec is None or not spec.strip():
        return [Variant("", [], {})]
    out = []
    for item in spec.split(","):
        if not item.strip():
            continue
        name, eq, rest = item.partition("=")
        name = name.strip()
        if not eq or not re.match(r"^[A-Za-z0-9_.+-]+$", name):
            raise ValueError(f"bad variant '{item.strip()}': expected NAME=ARGS, e.g. unfused=--no-fuse")
        if any(v.name == name for v in out):
            raise ValueError(f"variant '{name}' named twice")
        words = shlex.split(rest)
        env = {}
        while words and ENV_ARG.match(words[0]):
            k, _, v = words.pop(0).partition("=")
            env[k] = v
        out.append(Variant(name, words, env))
    if not out:
        raise ValueError("--variants names no variant")
    return out


def kernel_lines(err):
    """The per-kernel lines of --stats: dicts with block, op, out, calls,
    wall (time(s)), in0, in1, rows (out), be (backend time), mb."""
    ks = []
    for line in err.splitlines():
        m = KERNEL_LINE.match(line)
        if m:
            ks.append({"block": int(m.group(1)), "op": m.group(2), "out": m.group(3), "calls": int(m.group(4)),
                       "wall": float(m.group(5)), "in0": int(m.group(6)), "in1": int(m.group(7)),
                       "rows": int(m.group(8)), "be": float(m.group(9)), "mb": float(m.group(10))})
    return ks


# ------------------------------------------------- kernel time breakdown

CATEGORIES = ["sort", "join", "map", "agg", "set-ops", "fused", "other"]
OP_CATEGORY = {"SORT": "sort", "JOIN": "join", "ANTIJOIN": "join", "MAP": "map", "AGG": "agg",
               "UNION": "set-ops", "DIFF": "set-ops", "FUSED": "fused"}
IR_KERNEL = re.compile(r"^  (\S+) := ([A-Z_]+)(?:\[[^\]]*\])?((?:[ ]+[^\s,]+,?){0,2})\s+partition=")
IR_BLOCK = re.compile(r"^block (\d+)")


def sort_roles(ir_text):
    """From `redfox explain --ir`: {(block, sort output var): role} for every
    SORT, role 'probe' when its output is read by exactly one kernel, a JOIN
    of the same block, as its first input (the join's probe side: docs/weaver.md
    s. 4.1 elides such sorts), 'agg' when that one reader is an AGG (the
    REDUCE gather of s. 5 replaces SORT -> AGG), else 'other'."""
    kernels = []          # (block, out, op, ins)
    block = -1
    for line in ir_text.splitlines():
        m = IR_BLOCK.match(line)
        if m:
            block = int(m.group(1))
            continue
        m = IR_KERNEL.match(line)
        if m and block >= 0:
            ins = [x.strip(",") for x in m.group(3).split()]
            kernels.append((block, m.group(1), m.group(2), ins))
    readers = {}
    for b, out, op, ins in kernels:
        for v in set(ins):
            readers.setdefault(v, []).append((b, op, ins))
    roles = {}
    for b, out, op, ins in kernels:
        if op != "SORT":
            continue
        rs = readers.get(out, [])
        role = "other"
        if len(rs) == 1 and rs[0][0] == b:
            rb, rop, rins = rs[0]
            if rop == "JOIN" and rins and rins[0] == out and (len(rins) < 2 or rins[1] != out):
                role = "probe"
            elif rop == "AGG":
                role = "agg"
        roles[(b, out)] = role
    return roles


def _role(roles, k):
    r = roles.get((k["block"], k["out"]))
    if r is None and len(k["out"]) == 22:      # --stats truncates names to 22 characters
        r = next((v for (b, o), v in roles.items() if b == k["block"] and o.startswith(k["out"])), None)
    return r or "other"


def breakdown(err, roles=None):
    """Split one run's query time (resident inputs to answers in host memory)
    by the --stats kernel lines. Times are the kernels' wall times (time(s)),
    so the parts add up to the query time:
      sort, join, map, agg, set-ops, fused, other: kernels by op (LOAD left
        out: it is the load time); other = COPY, CLEAR, CHECK_KEYS;
      sort.probe, sort.agg: the part of `sort` in SORTs that only order a
        join's probe side / only feed an AGG (sort_roles; needs roles);
      output: answers downloaded and put in typed order (the output time less
        writing or hashing);
      rest: the query time not in a kernel or the output (the interpreter,
        freeing variables);
      device: the kernels' backend time (GPU: device events) summed.
    Returns a dict of seconds, or None when the --stats lines are missing."""
    t, o = TIMES_LINE.search(err), OUTPUT_LINE.search(err)
    ks = kernel_lines(err)
    if not t or not o or not ks:
        return None
    d = {c: 0.0 for c in CATEGORIES + ["sort.probe", "sort.agg"]}
    d["device"] = 0.0
    for k in ks:
        if k["op"] == "LOAD":
            continue
        cat = OP_CATEGORY.get(k["op"], "other")
        d[cat] += k["wall"]
        d["device"] += k["be"]
        if cat == "sort" and roles:
            role = _role(roles, k)
            if role in ("probe", "agg"):
                d["sort." + role] += k["wall"]
    d["load"], d["query"] = float(t.group(1)), float(t.group(2))
    d["output"] = max(0.0, float(o.group(1)) - float(o.group(2)))
    d["rest"] = d["query"] - sum(d[c] for c in CATEGORIES) - d["output"]
    return d


BREAKDOWN_COLS = [("query", "query"), ("sort", "sort"), ("sort.probe", "sort: probe"), ("sort.agg", "sort: ->agg"),
                  ("join", "join"), ("map", "map"), ("agg", "agg"), ("set-ops", "set-ops"), ("fused", "fused"),
                  ("other", "other"), ("output", "output"), ("rest", "rest"), ("device", "device")]


def breakdown_table(title, rows):
    """rows: [(label, breakdown dict or None)] -> markdown (ms), a sum row and
    each column's share of the summed query time."""
    head = ["query"] + [h + " ms" for _, h in BREAKDOWN_COLS] + ["load s"]
    lines = [title, "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    tot = {k: 0.0 for k, _ in BREAKDOWN_COLS}
    tot["load"] = 0.0
    n = 0
    for label, d in rows:
        if d is None:
            lines.append(f"| {label} |" + " - |" * (len(head) - 1))
            continue
        n += 1
        for k in tot:
            tot[k] += d[k]
        lines.append("| " + " | ".join([label] + [f"{d[k] * 1e3:.2f}" for k, _ in BREAKDOWN_COLS] +
                                       [f"{d['load']:.3f}"]) + " |")
    if n:
        lines.append("| " + " | ".join([f"sum ({n})"] + [f"{tot[k] * 1e3:.2f}" for k, _ in BREAKDOWN_COLS] +
                                       [f"{tot['load']:.3f}"]) + " |")
        q = tot["query"]
        lines.append("| " + " | ".join(["share of query"] +
                                       [f"{100 * tot[k] / q:.1f}%" if q > 0 else "-" for k, _ in BREAKDOWN_COLS] +
                                       ["-"]) + " |")
    return "\n".join(lines)


def write_pieces(path, pieces, make_piece, jobs):
    """Writes make_piece(p) for each p of pieces, in order, into path: on
    `jobs` forked processes when there is more than one piece, through a
    temporary file renamed at the end (an interrupted run leaves no partial
    table behind)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        if jobs > 1 and len(pieces) > 1:
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                for b in pool.imap(make_piece, pieces):
                    f.write(b)
        else:
            for p in pieces:
                f.write(make_piece(p))
    os.replace(tmp, path)


def gpu_floors(build, args=()):
    """The device's floors from BUILD/tests/gpu/rf_gpu_floors (extra args:
    copy MiB, sort M keys): (dict or None, why not). The dict has device,
    copy_gbs, sort_keys_per_s, pcie_d2h_gbs, pcie_h2d_gbs (0.0 where the
    tool did not print one)."""
    import subprocess
    path = os.path.join(build, "tests", "gpu", "rf_gpu_floors")
    if not os.path.exists(path):
        return None, "%s not built (needs the CUDA backend)" % path
    out = subprocess.run([path] + [str(x) for x in args], stdout=subprocess.PIPE, text=True).stdout
    if out.startswith("skipped"):
        return None, "no CUDA device on this machine"
    m = re.search(r"device (.*)", out)
    floors = {"device": m.group(1) if m else "?"}
    for key in ("copy_gbs", "sort_keys_per_s", "pcie_d2h_gbs", "pcie_h2d_gbs"):
        m = re.search(key + r" ([\d.e+]+)", out)
        floors[key] = float(m.group(1)) if m else 0.0
    return floors, None
