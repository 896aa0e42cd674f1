#!/usr/bin/env python3
"""End-to-end golden tests for redfox.

    run_golden.py --redfox PATH [NAME...] [--bless]

Cases live in cases/ (run with the working directory there, program given as
`NAME.lql`), plus the example programs in ../../programs/ whose expected
stdout is in programs/NAME.out.

A case NAME.lql comes with one of
  NAME.out   success: exit 0 and stdout exactly equal to this file
             (`redfox run NAME.lql [ARGS]`, no --output);
  NAME.err   failure spec, one `key: value` per line:
               exit: 1                 expected exit status
               at: 5:15|5:16           stderr has `NAME.lql:5:15: error:` (any
                                       alternative); the first error line must
                                       be one of them
               match: REGEX            stderr matches REGEX (re.search)
               words: a|b              stderr contains a or b (case-insensitive);
                                       several words: lines must all hold
             The run gets `--output DIR`, which must still be empty after it.
  NAME.args  optional: extra arguments, shell-split; {here} = cases folder.
  NAME.stderr optional (written by --bless once the compiler's wording is
             settled): stderr must equal it exactly, in addition to NAME.err.
--bless writes NAME.stderr for every passing error case that has none.
Ends with `N passed, M failed`; exit 1 if anything failed.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
PROGRAMS = os.path.normpath(os.path.join(HERE, "..", "..", "programs"))
EXPECTED_PROGRAMS = os.path.join(HERE, "programs")
ERROR_LINE = re.compile(r"^(.*?):(\d+):(\d+): error:", re.M)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def parse_spec(text):
    spec = {"exit": None, "at": None, "match": [], "words": []}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "exit":
            spec["exit"] = int(value)
        elif key == "at":
            spec["at"] = [v.strip() for v in value.split("|")]
        elif key == "match":
            spec["match"].append(value)
        elif key == "words":
            spec["words"].append([w.strip().lower() for w in value.split("|")])
        else:
            raise ValueError("unknown key %r" % key)
    if spec["exit"] is None:
        raise ValueError("no exit: line")
    return spec


def run(redfox, args, cwd):
    try:
        p = subprocess.run(redfox + args, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        err = p.stderr.decode("utf-8", "replace")
        # --backend=gpu/auto announce the device first; not part of the expectation.
        err = re.sub(r"\Aredfox: using GPU: [^\n]*\n", "", err)
        return p.returncode, p.stdout.decode("utf-8", "replace"), err
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def diff(want, got):
    import difflib
    return "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        "expected", "actual", n=2))[:4000]


def check_success(redfox, cwd, prog, extra, want):
    rc, out, err = run(redfox, ["run", prog] + extra, cwd)
    problems = []
    if rc != 0:
        problems.append("exit status %s, expected 0; stderr:\n%s" % (rc, err[-2000:]))
    elif out != want:
        problems.append("stdout differs:\n" + diff(want, out))
    return problems


def check_error(redfox, name, extra, spec, exact, bless):
    problems = []
    with tempfile.TemporaryDirectory(prefix="rfgold_") as outdir:
        rc, out, err = run(redfox, ["run", name + ".lql", "--output", outdir] + extra, CASES)
        left = os.listdir(outdir)
    if rc != spec["exit"]:
        problems.append("exit status %s, expected %s" % (rc, spec["exit"]))
    if left:
        problems.append("files left in --output dir: %s" % left)
    if spec["at"]:
        locs = ["%s:%s" % (m.group(2), m.group(3)) for m in ERROR_LINE.finditer(err)
                if m.group(1) == name + ".lql"]
        if not locs:
            problems.append("no `%s.lql:LINE:COL: error:` line on stderr" % name)
        elif locs[0] not in spec["at"]:
            problems.append("first error at %s, expected %s" % (locs[0], " or ".join(spec["at"])))
    for rx in spec["match"]:
        if not re.search(rx, err, re.M):
            problems.append("stderr does not match /%s/" % rx)
    for alts in spec["words"]:
        if not any(w in err.lower() for w in alts):
            problems.append("stderr lacks %s" % " or ".join(repr(w) for w in alts))
    if exact is not None and err != exact:
        problems.append("stderr differs from %s.stderr:\n%s" % (name, diff(exact, err)))
    if problems:
        problems.append("stderr was:\n" + err[-2000:])
    elif bless and exact is None:
        with open(os.path.join(CASES, name + ".stderr"), "w", encoding="utf-8") as f:
            f.write(err)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", required=True)
    ap.add_argument("--bless", action="store_true")
    ap.add_argument("--backend", choices=["auto", "cpu", "gpu"],
                    help="run every case with --backend=BACKEND (same expected outputs)")
    ap.add_argument("--extra-arg", action="append", default=[],
                    help="add this argument to every run (e.g. --no-fuse: same expected outputs)")
    ap.add_argument("names", nargs="*", help="run only these cases")
    a = ap.parse_args()
    redfox = [os.path.abspath(a.redfox)] if os.path.exists(a.redfox) else shlex.split(a.redfox)
    backend = (["--backend=" + a.backend] if a.backend else []) + a.extra_arg

    cases = []
    for f in sorted(os.listdir(CASES)):
        if f.endswith(".lql"):
            cases.append(("case", f[:-4]))
    for f in sorted(os.listdir(EXPECTED_PROGRAMS)):
        if f.endswith(".out"):
            cases.append(("program", f[:-4]))
    if a.names:
        cases = [c for c in cases if c[1] in a.names]

    passed, failed = 0, []
    for kind, name in cases:
        try:
            if kind == "program":
                problems = check_success(redfox, PROGRAMS, name + ".lql", backend,
                                         read(os.path.join(EXPECTED_PROGRAMS, name + ".out")))
                label = "programs/" + name
            else:
                label = name
                base = os.path.join(CASES, name)
                extra = []
                if os.path.exists(base + ".args"):
                    extra = shlex.split(read(base + ".args").replace("{here}", CASES))
                extra = extra + backend
                if os.path.exists(base + ".out"):
                    problems = check_success(redfox, CASES, name + ".lql", extra, read(base + ".out"))
                elif os.path.exists(base + ".err"):
                    exact = read(base + ".stderr") if os.path.exists(base + ".stderr") else None
                    problems = check_error(redfox, name, extra, parse_spec(read(base + ".err")),
                                           exact, a.bless)
                else:
                    problems = ["no %s.out or %s.err" % (name, name)]
        except Exception as e:  # noqa: BLE001 -- a broken case is a failure
            problems = ["harness error: %r" % e]
        if problems:
            failed.append(label)
            print("FAIL %s\n  %s" % (label, "\n  ".join("\n  ".join(p.splitlines()) for p in problems)))
        else:
            passed += 1
            print("ok   %s" % label)
    print("%d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
