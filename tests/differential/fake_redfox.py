#!/usr/bin/env python3
"""A stand-in for redfox that tests the differential harness end to end
before the compiler works: `fake_redfox.py run prog.lql [--output DIR]`.

It does not parse LogiQL: it reads the seed from the program's first line
(`// differential program, seed S`), rebuilds the program with gen.py and
answers with the oracle, writing files exactly as design.md specifies (temp
name, then rename). Environment knobs to prove the harness catches bugs:
  RF_FAKE_BUG=drop      drop the last row of every non-empty output
  RF_FAKE_BUG=unsorted  write rows in reverse order
  RF_FAKE_BUG=leak      leave a file behind on errors
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen      # noqa: E402
import gen_biz  # noqa: E402
import lql      # noqa: E402
import oracle   # noqa: E402


def main(argv):
    if len(argv) < 2 or argv[0] != "run":
        print("usage: fake_redfox.py run PROG [--output DIR]", file=sys.stderr)
        return 64
    prog_path = argv[1]
    outdir = argv[argv.index("--output") + 1] if "--output" in argv else None
    bug = os.environ.get("RF_FAKE_BUG", "")
    with open(prog_path, encoding="utf-8") as f:
        first = f.readline()
    m = re.search(r"seed (\d+)", first)
    program = (gen_biz if "(biz)" in first else gen).generate(int(m.group(1)))
    if program.expect == "compile_error":
        if bug == "leak" and outdir:
            open(os.path.join(outdir, "junk.tsv"), "w").close()
        text, rule_lines, fact_lines = lql.to_text(program)
        if getattr(program, "error_extra", None):
            line = text.count("\n") - len(program.extra_lines) + 1 + program.error_extra[0]
        else:
            line = rule_lines[program.error_rules[0]] if program.error_rules else \
                fact_lines[program.error_facts[0]]
        print("%s:%d:1: error: %s" % (prog_path, line, program.error_kind), file=sys.stderr)
        return 1
    try:
        rels = oracle.evaluate(program)
    except oracle.typed.EvalError as e:
        print("redfox: error: %s" % e, file=sys.stderr)
        return 2
    for p in program.preds:
        if not p.output:
            continue
        rows = lql.output_rows(p, rels[p.name])
        if bug == "drop" and rows:
            rows = rows[:-1]
        if bug == "unsorted":
            rows.reverse()
        lines = ["\t".join(lql.format_value(v, t) for v, t in zip(r, p.types)) + "\n" for r in rows]
        if outdir is None:   # stdout: `# NAME (N tuples)`, then the rows
            out = sys.stdout.buffer
            out.write(("# %s (%d tuples)\n" % (p.name, len(rows))).encode())
            out.write("".join(lines).encode("utf-8", "surrogateescape"))
            continue
        tmp = os.path.join(outdir, ".%s.tsv.tmp" % p.name)
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write("".join(lines))
        os.rename(tmp, os.path.join(outdir, p.name + ".tsv"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
