#!/usr/bin/env python3
"""Compares TPC-H answers: the reference qNN.tsv files (tools/tpch_reference.py)
with Red Fox's, in the same format (one row a line, tab-separated fields).

    python3 tests/tpch/compare.py EXPECTED_DIR ACTUAL_DIR [--queries 1,2,..]
                                  [--abs-tol 0.01] [--rel-tol 0]

For each query (default: every qNN.tsv in EXPECTED_DIR):
  - both files must have the same number of rows;
  - rows are compared in order, field by field: two fields that both read as
    numbers are equal when they differ by at most --abs-tol (default 0.01;
    with --rel-tol R also when by at most R times the larger magnitude),
    other fields must be equal as strings;
  - SQL leaves the order of rows equal on the ORDER BY keys open, so a run of
    consecutive expected rows whose ORDER BY key columns are equal (by the
    same field rule) is compared as a multiset with the same rows of the
    actual file; a query with no ORDER BY is one run;
  - with a LIMIT (Q2, Q3, Q10, Q18, Q21), when the expected answer fills the
    limit, its last run may be part of a larger tie group cut by the limit,
    and another engine may keep other members of it: that run is compared on
    its ORDER BY key columns only.
Prints a PASS/FAIL line per query (FAIL with the first difference), then
`N passed, M failed`; exits 1 if any failed, 64 on bad usage.
"""
import argparse
import decimal
import os
import re
import sys

# ORDER BY key columns of each query's output, as output column indices, in
# ORDER BY order (from the SQL of tpch_queries(); see queries/qNN.sql next to
# the reference answers). [] = no ORDER BY (one-row answers).
ORDER_KEYS = {
    1: [0, 1],        # l_returnflag, l_linestatus
    2: [0, 2, 1, 3],  # s_acctbal DESC, n_name, s_name, p_partkey
    3: [1, 2],        # revenue DESC, o_orderdate
    4: [0],           # o_orderpriority
    5: [1],           # revenue DESC
    6: [],
    7: [0, 1, 2],     # supp_nation, cust_nation, l_year
    8: [0],           # o_year
    9: [0, 1],        # nation, o_year DESC
    10: [2],          # revenue DESC
    11: [1],          # value DESC
    12: [0],          # l_shipmode
    13: [1, 0],       # custdist DESC, c_count DESC
    14: [],
    15: [0],          # s_suppkey
    16: [3, 0, 1, 2],  # supplier_cnt DESC, p_brand, p_type, p_size
    17: [],
    18: [4, 3],       # o_totalprice DESC, o_orderdate
    19: [],
    20: [0],          # s_name
    21: [1, 0],       # numwait DESC, s_name
    22: [0],          # cntrycode
}
LIMITS = {2: 100, 3: 10, 10: 20, 18: 100, 21: 100}

NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
MAX_GREEDY = 5000  # rows of one tie run matched pairwise at most


def as_number(s):
    if NUMBER.fullmatch(s):
        try:
            return decimal.Decimal(s)
        except decimal.InvalidOperation:
            return None
    return None


class Rules:
    def __init__(self, abs_tol=decimal.Decimal("0.01"), rel_tol=decimal.Decimal(0)):
        self.abs_tol = decimal.Decimal(abs_tol)
        self.rel_tol = decimal.Decimal(rel_tol)

    def field_eq(self, a, b):
        if a == b:
            return True
        x, y = as_number(a), as_number(b)
        if x is None or y is None:
            return False
        d = abs(x - y)
        return d <= self.abs_tol or d <= self.rel_tol * max(abs(x), abs(y))

    def row_eq(self, r, s, cols=None):
        if len(r) != len(s):
            return False
        idx = range(len(r)) if cols is None else cols
        return all(self.field_eq(r[i], s[i]) for i in idx)


def read_rows(path):
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.split("\t") for line in lines]


def show(row):
    return "\t".join(row) if row is not None else "(none)"


def sort_key(row):
    out = []
    for field in row:
        n = as_number(field)
        out.append((0, n, "") if n is not None else (1, decimal.Decimal(0), field))
    return out


def compare_run(rules, exp, act, start, cols):
    """None if exp and act (rows start.. of their files) are equal as multisets
    (on columns cols, or all), else a message."""
    for k, r in enumerate(act):
        if len(r) != len(exp[0]):
            return (f"row {start + 1 + k}: {len(r)} fields, expected {len(exp[0])}: "
                    f"got '{show(r)}'")
    if len(exp) == 1:
        if rules.row_eq(exp[0], act[0], cols):
            return None
        return field_diff(rules, exp[0], act[0], start, cols)
    proj = (lambda r: r) if cols is None else (lambda r: [r[i] for i in cols])
    es = sorted((proj(r) for r in exp), key=sort_key)
    as_ = sorted((proj(r) for r in act), key=sort_key)
    if all(rules.row_eq(e, a) for e, a in zip(es, as_)):
        return None
    # Sorting can pair rows differently when numbers differ within the
    # tolerance; match greedily before calling it a difference.
    where = f"rows {start + 1}..{start + len(exp)} (tied on the ORDER BY keys)"
    if len(exp) <= MAX_GREEDY:
        used = [False] * len(as_)
        for e in es:
            for k, a in enumerate(as_):
                if not used[k] and rules.row_eq(e, a):
                    used[k] = True
                    break
            else:
                return f"{where}: expected row '{show(e)}' not among the actual rows"
        return None
    for e, a in zip(es, as_):
        if not rules.row_eq(e, a):
            return f"{where}: sorted, expected '{show(e)}' got '{show(a)}'"
    return None


def field_diff(rules, e, a, start, cols):
    if len(e) != len(a):
        return (f"row {start + 1}: {len(a)} fields, expected {len(e)}: expected '{show(e)}' "
                f"got '{show(a)}'")
    for i in (range(len(e)) if cols is None else cols):
        if not rules.field_eq(e[i], a[i]):
            return (f"row {start + 1} field {i + 1}: expected '{e[i]}' got '{a[i]}' "
                    f"(row: expected '{show(e)}' got '{show(a)}')")
    return f"row {start + 1}: differs"


def compare_query(q, expected, actual, rules=None):
    """None when the answers of query q agree, else the first difference."""
    rules = rules or Rules()
    if len(expected) != len(actual):
        first = None
        for i in range(min(len(expected), len(actual))):
            if not rules.row_eq(expected[i], actual[i]):
                first = i
                break
        msg = f"{len(expected)} rows expected, {len(actual)} got"
        if first is not None:
            msg += f"; row {first + 1}: expected '{show(expected[first])}' got '{show(actual[first])}'"
        elif len(expected) > len(actual):
            msg += f"; first missing row {len(actual) + 1}: '{show(expected[len(actual)])}'"
        else:
            msg += f"; first extra row {len(expected) + 1}: '{show(actual[len(expected)])}'"
        return msg
    if not expected:
        return None
    keys = ORDER_KEYS.get(q, [])
    limit = LIMITS.get(q)
    i, n = 0, len(expected)
    while i < n:
        j = i + 1
        if not keys:
            j = n
        else:
            while j < n and rules.row_eq(expected[j - 1], expected[j], keys):
                j += 1
        cols = keys if (limit is not None and n == limit and j == n and j - i > 1) else None
        msg = compare_run(rules, expected[i:j], actual[i:j], i, cols)
        if msg:
            return msg
        i = j
    return None


def parse_queries(s):
    out = []
    for part in s.split(","):
        part = part.strip().lower().lstrip("q")
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) <= 22:
            raise ValueError(f"not a TPC-H query number: {part!r}")
        out.append(int(part))
    return sorted(set(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare TPC-H answers (qNN.tsv) with tolerance and ties.")
    ap.add_argument("expected_dir")
    ap.add_argument("actual_dir")
    ap.add_argument("--queries", help="comma-separated query numbers (default: every qNN.tsv in EXPECTED_DIR)")
    ap.add_argument("--abs-tol", default="0.01", help="absolute tolerance for numbers (default 0.01)")
    ap.add_argument("--rel-tol", default="0", help="relative tolerance for numbers (default 0)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 64 if e.code else 0
    try:
        rules = Rules(decimal.Decimal(args.abs_tol), decimal.Decimal(args.rel_tol))
        if args.queries:
            queries = parse_queries(args.queries)
        else:
            queries = sorted(int(m.group(1)) for f in os.listdir(args.expected_dir)
                             if (m := re.fullmatch(r"q(\d\d)\.tsv", f)) and 1 <= int(m.group(1)) <= 22)
    except (ValueError, decimal.InvalidOperation, OSError) as e:
        print(f"compare: error: {e}", file=sys.stderr)
        return 64
    if not queries:
        print(f"compare: error: no qNN.tsv in {args.expected_dir}", file=sys.stderr)
        return 64
    passed = failed = 0
    for q in queries:
        name = f"q{q:02d}.tsv"
        exp_path = os.path.join(args.expected_dir, name)
        act_path = os.path.join(args.actual_dir, name)
        msg = None
        if not os.path.isfile(exp_path):
            msg = f"missing {exp_path}"
        elif not os.path.isfile(act_path):
            msg = f"missing {act_path}"
        else:
            try:
                exp, act = read_rows(exp_path), read_rows(act_path)
            except (OSError, UnicodeDecodeError) as e:
                msg = f"cannot read: {e}"
            else:
                msg = compare_query(q, exp, act, rules)
        if msg is None:
            passed += 1
            print(f"q{q:02d} PASS ({len(exp)} rows)")
        else:
            failed += 1
            print(f"q{q:02d} FAIL: {msg}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
