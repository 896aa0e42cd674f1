#!/usr/bin/env python3
"""Differential test driver: random programs, naive oracle vs. redfox.

    run.py --redfox PATH --count N --seed S [--jobs J] [--keep DIR]
    run.py --redfox PATH --program-seed X      # rerun one program
    run.py --redfox PATH --backend gpu --compare-backend cpu   # GPU vs oracle and vs CPU
    run.py --print X                           # just print program X

Program i of a run has seed S*100000 + i, printed with every failure, so a
failure reproduces with --program-seed. For each program: generate it
(gen.py), evaluate it with the oracle (oracle.py), run
`REDFOX run prog.lql --output DIR`, then check
  - valid program: exit 0, exactly one DIR/PRED.tsv per output predicate,
    rows equal to the oracle's as sorted lists of typed values, and written
    in typed order (by the predicate's @order where it has one) and cut to
    its @limit (lql.output_rows);
  - deliberately invalid program: exit 1, a `FILE:LINE:COL: error:` line on
    stderr (naming the broken line where there is exactly one), no files;
  - division by zero on purpose: exit 2, an error on stderr, no files;
  - a valid program whose arithmetic overflows (checked ints; the oracle
    finds it): exit 2, "integer overflow" on stderr, no files, or exit 0
    (the plan never evaluated the faulting expression);
  - a valid program where only some plan could meet an overflow (an
    expression over partial joins or before a filter: oracle.may_overflow):
    the oracle's answer, or that overflow error.
--lang biz runs the business-query programs instead (gen_biz.py, judged
by oracle_typed.py): valid ones are fault-free by construction except the
boundary cases, where the oracle decides exactly (exit 2 and the fault's
words on stderr, or the exact answer); their stdout (no --output) must
also show each output's rows exactly as its file has them.

--break-oracle checks that the suite can fail: it changes one written row
of the oracle's answer for every valid program with a non-empty output
(those report as expectation "broken"), so each of them must FAIL; a
healthy run ends with `broken 0 passed`.
Ends with `N passed, M failed`; exit status 1 if anything failed.
Standard library only.
"""

import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen      # noqa: E402
import gen_biz  # noqa: E402
import lql      # noqa: E402
import oracle   # noqa: E402
import oracle_typed  # noqa: E402
import typed    # noqa: E402

GENERATORS = {"classic": gen.generate, "biz": gen_biz.generate}
# What a run-time fault of each kind (typed.EvalError.kind) says on stderr.
FAULT_WORDS = {"div_zero": ["division by zero"], "int_overflow": ["integer overflow"],
               "dec_overflow": ["decimal overflow"], "date_range": ["date out of range"],
               "range": ["out of range"], "float_overflow": ["float64 overflow"],
               "substr": ["substr"]}

ERROR_RE = re.compile(r"^(.*?):(\d+):(\d+): error:", re.M)
MAX_DIFF_ROWS = 15


def program_seed(seed, i):
    return seed * 100000 + i


def write_program(program, folder):
    text, rule_lines, fact_lines = lql.to_text(program)
    path = os.path.join(folder, "prog.lql")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    for p in program.preds:
        if p.file_rows is not None:
            with open(os.path.join(folder, p.file_name), "w", encoding="utf-8") as f:
                f.write(lql.input_file_text(p))
    return path, text, rule_lines, fact_lines


def parse_output(path, pred):
    """Rows of one output file per design.md; raises ValueError. Floats must
    be written in their shortest round-trip form (typed.check_float_text),
    decimals with exactly their scale, dates as YYYY-MM-DD."""
    with open(path, "rb") as f:
        data = f.read().decode("utf-8", "surrogateescape")
    if data == "":
        return []
    if not data.endswith("\n"):
        raise ValueError("last line has no newline")
    rows = []
    for n, line in enumerate(data[:-1].split("\n"), 1):
        fields = line.split("\t")
        if len(fields) != pred.arity:
            raise ValueError("line %d: %d fields, expected %d: %r" % (n, len(fields), pred.arity, line))
        try:
            row = tuple(lql.parse_field(x, t) for x, t in zip(fields, pred.types))
            for x, t, v in zip(fields, pred.types, row):
                if t == "float64":
                    typed.check_float_text(x, v)
            rows.append(row)
        except ValueError as e:
            raise ValueError("line %d: %s" % (n, e))
    return rows


def check_stdout(redfox, path, outdir, program, extra):
    """Without --output, stdout shows each output as `# NAME (N tuples)` and
    then exactly the lines of its --output file (same order, same cut)."""
    proc = subprocess.run(redfox + ["run", path] + extra, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    if proc.returncode != 0:
        return ["without --output: exit status %s" % proc.returncode]
    sections, name = {}, None
    for line in proc.stdout.split(b"\n")[:-1]:
        m = re.match(rb"^# (\w+) \((\d+) tuples\)$", line)
        if m:
            name = m.group(1).decode()
            sections[name] = [int(m.group(2))]
        elif name is None:
            return ["stdout starts with %r, not a `# NAME (N tuples)` line" % line[:80]]
        else:
            sections[name].append(line)
    problems = []
    for p in program.preds:
        if not p.output:
            continue
        with open(os.path.join(outdir, p.name + ".tsv"), "rb") as f:
            lines = f.read().split(b"\n")[:-1]
        got = sections.get(p.name)
        if got is None:
            problems.append("stdout has no section for %s" % p.name)
        elif got[0] != len(lines) or got[1:] != lines:
            problems.append("stdout section of %s (%d tuples, %d lines) differs from %s.tsv (%d lines)" %
                            (p.name, got[0], len(got) - 1, p.name, len(lines)))
    return problems


def show_row(row):
    return "\t".join(repr(v) for v in row)


def check_one(args_tuple):
    """Runs one program; returns (seed, passed, report, expectation)."""
    redfox, seed, extra, keep = args_tuple[:4]
    compare = args_tuple[4] if len(args_tuple) > 4 else None
    lang = args_tuple[5] if len(args_tuple) > 5 else "classic"
    program = GENERATORS[lang](seed)
    work = tempfile.mkdtemp(prefix="rfdiff%d_" % seed)
    try:
        res = run_program(redfox, seed, program, work, extra)
        if compare:
            res = compare_backends(redfox, seed, work, extra, compare, res)
        return (seed,) + res
    except Exception:  # a harness bug must show up as a failure, with context
        import traceback
        return seed, False, "FAIL program seed %d: HARNESS ERROR\n%s" % (
            seed, traceback.format_exc()), "harness_error"
    finally:
        if keep:
            dest = os.path.join(keep, "seed%d" % seed)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(work, dest)
        shutil.rmtree(work, ignore_errors=True)


def run_outputs(redfox, path, outdir, extra):
    """Runs redfox into outdir; returns (rc, {file: bytes})."""
    os.makedirs(outdir, exist_ok=True)
    try:
        proc = subprocess.run(redfox + ["run", path, "--output", outdir] + extra,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout (60 s)"
    files = {}
    for f in sorted(os.listdir(outdir)):
        with open(os.path.join(outdir, f), "rb") as fh:
            files[f] = fh.read()
    return rc, files


def compare_backends(redfox, seed, work, extra, other, res):
    """--compare-backend: the same program on backend `other` must give the
    same exit status and byte-identical output files."""
    passed, report, expect = res
    path = os.path.join(work, "prog.lql")
    if not os.path.exists(path):
        cands = [f for f in os.listdir(work) if f.endswith(".lql")]
        path = os.path.join(work, cands[0])
    others = [e for e in extra if not e.startswith("--backend")] + ["--backend=" + other]
    rc1, f1 = run_outputs(redfox, path, os.path.join(work, "out_a"), extra)
    rc2, f2 = run_outputs(redfox, path, os.path.join(work, "out_" + other), others)
    if rc1 == rc2 and f1 == f2:
        return res
    msg = "FAIL program seed %d: backends differ (%s vs %s): exit %s vs %s; files %s vs %s" % (
        seed, " ".join(extra) or "default", other, rc1, rc2, sorted(f1), sorted(f2))
    for name in sorted(set(f1) | set(f2)):
        if f1.get(name) != f2.get(name):
            msg += "\n  %s differs" % name
    return False, (report + "\n" if not passed else "") + msg, expect


def perturbed(v):
    """A value that is surely not v (and of its Python type)."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, str):
        return v + "x"
    if isinstance(v, float) and v + 1.0 == v:
        return v * 2.0
    return v + 1


def break_answer(program, expected):
    """--break-oracle: changes the first written row of the first output
    with one (a wrong oracle answer the check must catch). True when it
    changed something."""
    for p in program.preds:
        if not p.output:
            continue
        written = lql.output_rows(p, expected[p.name])
        if written:
            row = written[0]
            expected[p.name] = (set(expected[p.name]) - {row}) | {row[:-1] + (perturbed(row[-1]),)}
            return True
    return False


def run_program(redfox, seed, program, work, extra):
    path, text, rule_lines, fact_lines = write_program(program, work)
    problems = []
    expected = None
    expect = program.expect
    fault = None
    if getattr(program, "lang", "classic") == "biz" and expect in ("ok", "oracle"):
        # Typed programs: the generator makes them fault-free, except the
        # boundary cases, where the oracle decides (exactly).
        try:
            expected = oracle.evaluate(program)
            expect = "ok"
        except typed.EvalError as e:
            if expect == "ok":
                problems.append("GENERATOR BUG: oracle hit a run-time fault (%s: %s) in a program "
                                "meant to be fault-free" % (e.kind, e))
            expect, fault = "runtime_error", e
        except (typed.TypeErr, oracle_typed.GenBug, oracle.NotStratified) as e:
            problems.append("GENERATOR/ORACLE BUG: %s: %s" % (type(e).__name__, e))
    elif expect == "ok" or expect == "runtime_error":
        try:
            expected = oracle.evaluate(program)
            if expect == "runtime_error":
                problems.append("GENERATOR/ORACLE BUG: expected a run-time error, oracle found none")
            elif oracle.may_overflow(program, expected):
                expect = "ok_or_overflow"
        except oracle.Overflow:
            if expect == "ok":
                expect = "overflow"
        except oracle.EvalError:
            if expect == "ok":
                problems.append("GENERATOR BUG: oracle hit a run-time error in a program meant to be valid")
        except oracle.NotStratified as e:
            problems.append("GENERATOR BUG: oracle says not stratified: %s" % e)
    if os.environ.get("RF_DIFF_BREAK_ORACLE") and expect == "ok" and \
            not problems and break_answer(program, expected):
        expect = "broken"
    outdir = os.path.join(work, "out")
    os.mkdir(outdir)
    cmd = redfox + ["run", path, "--output", outdir] + extra
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        rc, out, err = proc.returncode, proc.stdout.decode("utf-8", "replace"), \
            proc.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, out, err = "timeout (60 s)", "", ""
    files = sorted(os.listdir(outdir))

    overflowed = rc == 2 and "integer overflow" in err
    if expect == "ok_or_overflow" and not problems and overflowed:
        if files:
            problems.append("files left in --output dir: %s" % files)
    elif expect in ("ok", "ok_or_overflow", "broken") and not problems:
        if rc != 0:
            problems.append("exit status %s, expected 0" % rc)
        else:
            want_files = sorted(p.name + ".tsv" for p in program.preds if p.output)
            for f in files:
                if f not in want_files:
                    problems.append("unexpected file in --output dir: %s" % f)
            for p in program.preds:
                if not p.output:
                    continue
                fpath = os.path.join(outdir, p.name + ".tsv")
                if not os.path.exists(fpath):
                    problems.append("%s: no output file" % p.name)
                    continue
                try:
                    got = parse_output(fpath, p)
                except ValueError as e:
                    problems.append("%s.tsv: unparsable: %s" % (p.name, e))
                    continue
                want_written = lql.output_rows(p, expected[p.name])
                want = sorted(want_written, key=lql.sort_key)
                got_sorted = sorted(got, key=lql.sort_key)
                if got_sorted != want:
                    missing = sorted(set(want) - set(got))
                    surplus = sorted(set(got) - set(want))
                    dups = len(got) - len(set(got))
                    msg = ["%s: %d rows, expected %d" % (p.name, len(got), len(want))]
                    if dups:
                        msg.append("  %d duplicate rows" % dups)
                    for r in missing[:MAX_DIFF_ROWS]:
                        msg.append("  - " + show_row(r))
                    for r in surplus[:MAX_DIFF_ROWS]:
                        msg.append("  + " + show_row(r))
                    if len(missing) + len(surplus) > 2 * MAX_DIFF_ROWS:
                        msg.append("  ... (%d missing, %d extra in all)" % (len(missing), len(surplus)))
                    problems.append("\n".join(msg))
                elif got != want_written:
                    problems.append("%s.tsv: right rows but not in %s order" %
                                    (p.name, "@order's" if p.order else "typed sort"))
            if getattr(program, "lang", "classic") == "biz" and not problems:
                problems += check_stdout(redfox, path, outdir, program, extra)
    elif expect == "compile_error":
        if rc != 1:
            problems.append("exit status %s, expected 1 (invalid program: %s)" % (rc, program.error_kind))
        locs = [(int(m.group(2)), int(m.group(3))) for m in ERROR_RE.finditer(err)
                if m.group(1).endswith("prog.lql")]
        if not locs:
            problems.append("no `prog.lql:LINE:COL: error:` line on stderr (%s)" % program.error_kind)
        else:
            lines = set(rule_lines[i] for i in program.error_rules)
            lines |= set(fact_lines[k] for k in program.error_facts)
            nlines = text.count("\n")
            lines |= set(nlines - len(program.extra_lines) + 1 + i
                         for i in getattr(program, "error_extra", ()))
            if lines and not any(l in lines for l, _ in locs):
                problems.append("error names line(s) %s, expected one of %s (%s)" %
                                (sorted(set(l for l, _ in locs)), sorted(lines), program.error_kind))
        if files:
            problems.append("files left in --output dir: %s" % files)
    elif expect == "overflow" and not problems and rc != 0:
        # The oracle met an overflow; a plan may evaluate fewer expressions
        # (a filter first, an unused assignment dropped) and finish: exit 0
        # is accepted then (its answer is not checked).
        if rc != 2:
            problems.append("exit status %s, expected 2 (integer overflow)" % rc)
        if "integer overflow" not in err:
            problems.append("no `integer overflow` message on stderr")
        if files:
            problems.append("files left in --output dir: %s" % files)
    elif expect == "runtime_error" and not problems:
        what = "%s: %s" % (fault.kind, fault) if fault else "division by zero"
        if rc != 2:
            problems.append("exit status %s, expected 2 (%s)" % (rc, what))
        if "error" not in err:
            problems.append("no error message on stderr for the fault (%s)" % what)
        elif fault and not any(w in err for w in FAULT_WORDS[fault.kind]):
            problems.append("stderr does not say %s (%s)" % (" or ".join(FAULT_WORDS[fault.kind]), what))
        if files:
            problems.append("files left in --output dir: %s" % files)

    if not problems:
        return True, "", expect
    report = ["FAIL program seed %d (%s)" % (seed, expect),
              "---- prog.lql", text.rstrip("\n")]
    for p in program.preds:
        if p.file_rows is not None:
            report.append("---- %s" % p.file_name)
            report.append(lql.input_file_text(p).rstrip("\n"))
    report.append("---- redfox exit %s; stderr:" % rc)
    report.append(err.rstrip("\n")[-3000:])
    report.append("---- problems:")
    report.extend(problems)
    return False, "\n".join(report), expect


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redfox", help="the redfox binary (or a command line)")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--lang", choices=sorted(GENERATORS), default="classic",
                    help="classic: the core language (gen.py); biz: dates, decimals, strings, "
                         "if/&&/||, multi-aggregates, @order/@limit (gen_biz.py)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--program-seed", type=int, action="append", default=[],
                    help="run just this program seed (repeatable)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--extra-arg", action="append", default=[],
                    help="passed to `redfox run` (e.g. --extra-arg=--backend=cpu)")
    ap.add_argument("--backend", choices=["auto", "cpu", "gpu"],
                    help="run redfox with --backend=BACKEND")
    ap.add_argument("--compare-backend", choices=["cpu", "gpu"],
                    help="also run every program on this backend and require identical exit status and outputs")
    ap.add_argument("--keep", help="copy every program's folder (program, inputs, outputs) here")
    ap.add_argument("--print", type=int, metavar="SEED", help="print one program and exit")
    ap.add_argument("--max-reports", type=int, default=20, help="full reports shown (others: seed only)")
    ap.add_argument("--break-oracle", action="store_true",
                    help="test the test: change one row of the oracle's answer of every valid program "
                         "with output (expectation 'broken'): each of those must fail")
    a = ap.parse_args()
    if a.break_oracle:
        os.environ["RF_DIFF_BREAK_ORACLE"] = "1"   # for the worker processes
    if "gpu" in (a.backend, a.compare_backend) and a.jobs > 1:
        # processes sharing one device: each maps half the memory it finds
        # free into its pool at start (docs/design.md), and sixteen starting
        # together left later ones none to make their context with (an H200,
        # the twenty-second session: "GPU out of memory in cudaSetDevice")
        os.environ.setdefault("RF_CUDA_POOL_PRIME", "off")

    if a.print is not None:
        print(lql.to_text(GENERATORS[a.lang](a.print))[0], end="")
        return 0
    if not a.redfox:
        ap.error("--redfox is required")
    redfox = [a.redfox] if os.path.exists(a.redfox) else shlex.split(a.redfox)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    seeds = a.program_seed or [program_seed(a.seed, i) for i in range(a.count)]
    extra = list(a.extra_arg) + (["--backend=" + a.backend] if a.backend else [])
    jobs = [(redfox, s, extra, a.keep, a.compare_backend, a.lang) for s in seeds]
    passed, failed, reports = 0, [], 0
    by_kind = {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for seed, ok, report, expect in pool.map(check_one, jobs, chunksize=4):
            k = by_kind.setdefault(expect, [0, 0])
            if ok:
                passed += 1
                k[0] += 1
            else:
                failed.append(seed)
                k[1] += 1
                if reports < a.max_reports:
                    print(report, flush=True)
                    print(flush=True)
                    reports += 1
                else:
                    print("FAIL program seed %d (%s)" % (seed, expect), flush=True)
    print("by expectation: " + ", ".join("%s %d passed %d failed" % (k, v[0], v[1])
                                          for k, v in sorted(by_kind.items())))
    if failed:
        print("failing seeds: " + " ".join(map(str, failed[:200])))
        print("rerun one: %s --redfox %s --lang %s --program-seed %d" % (sys.argv[0], a.redfox, a.lang,
                                                                        failed[0]))
    print("%d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
