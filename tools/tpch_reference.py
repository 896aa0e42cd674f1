#!/usr/bin/env python3
"""Reference answers for the 22 TPC-H queries, computed by DuckDB over the
same dbgen-format .tbl files Red Fox reads.

    python3 tools/tpch_reference.py --data DIR --out DIR2 [--queries 1,3,..]
                                    [--db FILE] [--threads N]

DIR holds the 8 tables as .tbl files (tools/tpch_data.sh makes them). They
are loaded into DuckDB (in memory unless --db names a database file, which
lets DuckDB page tables to disk at large scale factors) with the standard
TPC-H schema: keys and sizes INTEGER, money and quantities DECIMAL(15,2),
dates DATE, text CHAR(n)/VARCHAR(n) (DuckDB stores both as VARCHAR, unpadded,
as the .tbl files hold them).

The SQL of query N is what DuckDB's tpch extension returns from
tpch_queries() (the TPC-H validation parameters; Q11's FRACTION is 0.0001 at
every scale factor). The extension comes from the PyPI wheel
duckdb-extension-tpch, whose file is loaded with LOAD 'path' (no network);
its dbgen is not used.

Writes, in DIR2:
  qNN.tsv          the answer in Red Fox's output format: one row a line,
                   fields separated by a tab, no header, rows in the order of
                   the query's ORDER BY; ints in decimal, DECIMAL(p,s) with
                   exactly s digits after the point, DOUBLE in Python's
                   shortest round-trip form (repr), DATE as YYYY-MM-DD,
                   strings raw with tab, newline and backslash written as
                   \\t, \\n, \\\\.
  queries/qNN.sql  the SQL text that was run
                   A row that is NULL in every field (an aggregate without
                   GROUP BY over no rows, e.g. Q17 at SF 0.01) is left out:
                   Red Fox has no NULL, and an aggregate over nothing
                   derives no fact. Any other NULL is an error.
  columns.tsv      query, column index, column name, DuckDB type (one line
                   per output column)

Checks, where DIR was made by tools/tpch_data.sh at SF 0.01, 0.1 or 1, the
answers against those the tpch extension ships for that SF (tpch_answers())
with the rules of tests/tpch/compare.py, and exits 1 on a difference
(--no-check skips this). Those answers were computed by DuckDB on the data of
DuckDB's own dbgen, which draws the random text columns (addresses and
comments) differently from the TPC kit's dbgen (and tpchgen-cli) while every
other column is the same; so the check leaves out the address and comment
columns (Q2, Q10, Q15, Q20) and Q13, whose counts depend on o_comment.
(Q16 depends on s_comment too, but only on the 'Customer ... Complaints'
rows, which both generators place alike: it agrees at all three SFs.)

Runs itself in the venv of tools/tpch_env.sh (creating it if needed).
"""
import argparse
import decimal
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.environ.get("RF_TPCH_VENV", os.path.join(ROOT, ".venv-tpch"))
DUCKDB_VERSION = "1.5.5"

# The TPC-H schema (specification clause 1.4.1), table -> [(column, type)].
SCHEMA = {
    "region": [("r_regionkey", "INTEGER"), ("r_name", "CHAR(25)"), ("r_comment", "VARCHAR(152)")],
    "nation": [("n_nationkey", "INTEGER"), ("n_name", "CHAR(25)"), ("n_regionkey", "INTEGER"),
               ("n_comment", "VARCHAR(152)")],
    "supplier": [("s_suppkey", "INTEGER"), ("s_name", "CHAR(25)"), ("s_address", "VARCHAR(40)"),
                 ("s_nationkey", "INTEGER"), ("s_phone", "CHAR(15)"), ("s_acctbal", "DECIMAL(15,2)"),
                 ("s_comment", "VARCHAR(101)")],
    "customer": [("c_custkey", "INTEGER"), ("c_name", "VARCHAR(25)"), ("c_address", "VARCHAR(40)"),
                 ("c_nationkey", "INTEGER"), ("c_phone", "CHAR(15)"), ("c_acctbal", "DECIMAL(15,2)"),
                 ("c_mktsegment", "CHAR(10)"), ("c_comment", "VARCHAR(117)")],
    "part": [("p_partkey", "INTEGER"), ("p_name", "VARCHAR(55)"), ("p_mfgr", "CHAR(25)"),
             ("p_brand", "CHAR(10)"), ("p_type", "VARCHAR(25)"), ("p_size", "INTEGER"),
             ("p_container", "CHAR(10)"), ("p_retailprice", "DECIMAL(15,2)"),
             ("p_comment", "VARCHAR(23)")],
    "partsupp": [("ps_partkey", "INTEGER"), ("ps_suppkey", "INTEGER"), ("ps_availqty", "INTEGER"),
                 ("ps_supplycost", "DECIMAL(15,2)"), ("ps_comment", "VARCHAR(199)")],
    "orders": [("o_orderkey", "INTEGER"), ("o_custkey", "INTEGER"), ("o_orderstatus", "CHAR(1)"),
               ("o_totalprice", "DECIMAL(15,2)"), ("o_orderdate", "DATE"),
               ("o_orderpriority", "CHAR(15)"), ("o_clerk", "CHAR(15)"),
               ("o_shippriority", "INTEGER"), ("o_comment", "VARCHAR(79)")],
    "lineitem": [("l_orderkey", "INTEGER"), ("l_partkey", "INTEGER"), ("l_suppkey", "INTEGER"),
                 ("l_linenumber", "INTEGER"), ("l_quantity", "DECIMAL(15,2)"),
                 ("l_extendedprice", "DECIMAL(15,2)"), ("l_discount", "DECIMAL(15,2)"),
                 ("l_tax", "DECIMAL(15,2)"), ("l_returnflag", "CHAR(1)"), ("l_linestatus", "CHAR(1)"),
                 ("l_shipdate", "DATE"), ("l_commitdate", "DATE"), ("l_receiptdate", "DATE"),
                 ("l_shipinstruct", "CHAR(25)"), ("l_shipmode", "CHAR(10)"),
                 ("l_comment", "VARCHAR(44)")],
}


def ensure_venv():
    """Re-executes this script with the venv's python unless already there."""
    py = os.path.join(VENV, "bin", "python3")
    here = os.path.realpath(sys.prefix) == os.path.realpath(VENV)
    if here:
        return
    subprocess.run([os.path.join(ROOT, "tools", "tpch_env.sh")], check=True)
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def load_tpch_extension(con, duckdb):
    import duckdb_extension_tpch
    pkg = os.path.dirname(duckdb_extension_tpch.__file__)
    path = os.path.join(pkg, "extensions", "v" + duckdb.__version__, "tpch.duckdb_extension")
    if not os.path.isfile(path):
        sys.exit(f"tpch_reference: error: no tpch extension for duckdb {duckdb.__version__} at {path}")
    con.execute(f"LOAD '{sql_str(path)}'")
    return path


def load_tables(con, data_dir):
    counts = {}
    for table, cols in SCHEMA.items():
        path = os.path.join(data_dir, table + ".tbl")
        if not os.path.isfile(path):
            sys.exit(f"tpch_reference: error: {path} not found (make it with tools/tpch_data.sh)")
        ddl = ", ".join(f"{c} {t} NOT NULL" for c, t in cols)
        con.execute(f"CREATE TABLE {table} ({ddl})")
        # One more column than the table has: every .tbl line ends with '|'.
        csv_cols = {f"c{i}": ("VARCHAR" if t.startswith(("CHAR", "VARCHAR")) else t)
                    for i, (_, t) in enumerate(cols)}
        csv_cols[f"c{len(cols)}"] = "VARCHAR"
        spec = "{" + ", ".join(f"'{k}': '{v}'" for k, v in csv_cols.items()) + "}"
        select = ", ".join(f"c{i}" for i in range(len(cols)))
        con.execute(f"""INSERT INTO {table} SELECT {select} FROM read_csv('{sql_str(path)}',
            delim='|', header=false, quote='', escape='', auto_detect=false,
            columns={spec}, dateformat='%Y-%m-%d')""")
        counts[table] = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return counts


def sql_str(s):
    return s.replace("'", "''")


def escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def formatter(type_name):
    """A function formatting one value of the DuckDB type named type_name."""
    m = re.fullmatch(r"DECIMAL\((\d+),(\d+)\)", type_name)
    if m:
        quantum = decimal.Decimal(1).scaleb(-int(m.group(2)))
        ctx = decimal.Context(prec=80)
        return lambda v: format(v.quantize(quantum, context=ctx), "f")
    if type_name in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
                     "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"):
        return str
    if type_name in ("DOUBLE", "FLOAT"):
        return repr
    if type_name == "DATE":
        return lambda v: v.isoformat()
    if type_name == "VARCHAR":
        return escape
    raise SystemExit(f"tpch_reference: error: no output format for DuckDB type {type_name}")


def run_query(con, sql):
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    types = [str(d[1]) for d in cur.description]
    fmts = [formatter(t) for t in types]
    lines = []
    dropped = 0
    for row in cur.fetchall():
        if all(v is None for v in row):
            # An aggregate without GROUP BY over no rows (Q17 at SF 0.01:
            # sum() of nothing is NULL). Red Fox has no NULL: an aggregate
            # over nothing derives no fact, so the answer has no row.
            dropped += 1
            continue
        if any(v is None for v in row):
            raise SystemExit(f"tpch_reference: error: NULL in an answer row {row}")
        lines.append("\t".join(f(v) for f, v in zip(fmts, row)) + "\n")
    return names, types, lines, dropped


def write_file(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="folder with the 8 .tbl files")
    ap.add_argument("--out", required=True, help="folder for qNN.tsv, queries/, columns.tsv")
    ap.add_argument("--queries", help="comma-separated query numbers (default all 22)")
    ap.add_argument("--db", help="DuckDB database file to use instead of memory (removed first)")
    ap.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    ap.add_argument("--timing", help="also time each query: re-run it --repeat times (the first run "
                    "above warmed it up) and write 'qNN<TAB>best seconds' lines to this file")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query for --timing (default 3)")
    ap.add_argument("--no-check", action="store_true",
                    help="do not compare with the extension's stored answers")
    args = ap.parse_args()
    ensure_venv()
    import duckdb
    if duckdb.__version__ != DUCKDB_VERSION:
        sys.exit(f"tpch_reference: error: duckdb {duckdb.__version__}, want {DUCKDB_VERSION}")

    wanted = list(range(1, 23))
    if args.queries:
        try:
            wanted = sorted({int(q.strip().lower().lstrip("q")) for q in args.queries.split(",")
                             if q.strip()})
        except ValueError:
            wanted = [0]
        if not wanted or not all(1 <= q <= 22 for q in wanted):
            sys.exit("tpch_reference: error: query numbers are 1..22")

    if args.db:
        for suffix in ("", ".wal"):
            if os.path.exists(args.db + suffix):
                os.remove(args.db + suffix)
    con = duckdb.connect(args.db or ":memory:")
    con.execute("SET enable_progress_bar = false")
    if args.threads:
        con.execute(f"SET threads = {args.threads}")
    ext = load_tpch_extension(con, duckdb)
    queries = dict(con.execute("SELECT query_nr, query FROM tpch_queries()").fetchall())
    if sorted(queries) != list(range(1, 23)):
        sys.exit(f"tpch_reference: error: tpch_queries() returned queries {sorted(queries)}")
    print(f"tpch_reference: duckdb {duckdb.__version__}, tpch extension {ext}", file=sys.stderr)

    t0 = time.perf_counter()
    counts = load_tables(con, args.data)
    t_load = time.perf_counter() - t0
    print("tpch_reference: loaded " + ", ".join(f"{t} {n}" for t, n in counts.items())
          + f" in {t_load:.2f} s", file=sys.stderr)

    os.makedirs(os.path.join(args.out, "queries"), exist_ok=True)
    columns = []
    t_queries = 0.0
    for q in wanted:
        sql = queries[q]
        write_file(os.path.join(args.out, "queries", f"q{q:02d}.sql"), sql.rstrip() + "\n")
        t1 = time.perf_counter()
        names, types, lines, dropped = run_query(con, sql)
        dt = time.perf_counter() - t1
        t_queries += dt
        write_file(os.path.join(args.out, f"q{q:02d}.tsv"), "".join(lines))
        columns += [f"q{q:02d}\t{i}\t{n}\t{t}\n" for i, (n, t) in enumerate(zip(names, types))]
        note = f"\t({dropped} all-NULL row dropped)" if dropped else ""
        print(f"q{q:02d}\t{len(lines)} rows\t{dt:.3f} s\t" + ", ".join(types) + note,
              file=sys.stderr)
    if len(wanted) == 22:
        write_file(os.path.join(args.out, "columns.tsv"), "".join(columns))
    if args.timing:
        # Hot runs, as a benchmark reports them: data in memory, the query
        # already run once; the best of --repeat runs.
        times = []
        for q in wanted:
            best = None
            for _ in range(max(1, args.repeat)):
                t1 = time.perf_counter()
                con.execute(queries[q]).fetchall()
                dt = time.perf_counter() - t1
                best = dt if best is None else min(best, dt)
            times.append(f"q{q:02d}\t{best:.6f}\n")
        threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
        write_file(args.timing, f"# duckdb {duckdb.__version__} threads {threads} load {t_load:.3f}\n"
                   + "".join(times))
    print(f"tpch_reference: {len(wanted)} queries in {t_queries:.2f} s, load {t_load:.2f} s; "
          f"answers in {args.out}", file=sys.stderr)
    failed = 0
    sf = None if args.no_check else data_scale_factor(args.data)
    if sf in ("0.01", "0.1", "1"):
        failed = check_answers(con, float(sf), wanted, args.out)
    elif not args.no_check:
        print("tpch_reference: no stored answers to check against (SF 0.01, 0.1, 1 only)",
              file=sys.stderr)
    if args.db:
        con.close()
        for suffix in ("", ".wal"):
            if os.path.exists(args.db + suffix):
                os.remove(args.db + suffix)
    sys.exit(1 if failed else 0)


def data_scale_factor(data_dir):
    """The SF in tools/tpch_data.sh's stamp in data_dir, or None."""
    try:
        with open(os.path.join(data_dir, ".tpch-complete"), encoding="utf-8") as f:
            m = re.fullmatch(r"tpchgen-cli \S+ sf=(\S+)", f.readline().strip())
    except OSError:
        return None
    return m.group(1) if m else None


# Output columns holding dbgen's random text (addresses, comments), and the
# queries whose answer rows depend on such text: left out of check_answers.
TEXT_COLUMNS = {2: {5, 7}, 10: {5, 7}, 15: {2}, 20: {1}}
TEXT_QUERIES = {13}


def check_answers(con, sf, wanted, out_dir):
    sys.path.insert(0, os.path.join(ROOT, "tests", "tpch"))
    import compare
    stored = dict(con.execute("SELECT query_nr, answer FROM tpch_answers() WHERE scale_factor = ?",
                              [sf]).fetchall())
    failed = checked = 0
    for q in wanted:
        if q in TEXT_QUERIES:
            continue
        checked += 1
        lines = stored[q].split("\n")[1:]  # the first line names the columns
        # '|'-separated; a NULL is an empty field (Q17 at SF 0.01).
        exp = [line.split("|") for line in lines if line.strip("|") != ""]
        act = compare.read_rows(os.path.join(out_dir, f"q{q:02d}.tsv"))
        drop = TEXT_COLUMNS.get(q, set())
        exp = [[v for i, v in enumerate(r) if i not in drop] for r in exp]
        act = [[v for i, v in enumerate(r) if i not in drop] for r in act]
        msg = compare.compare_query(q, exp, act)
        if msg:
            failed += 1
            print(f"tpch_reference: q{q:02d} differs from the stored SF {sf:g} answer: {msg}",
                  file=sys.stderr)
    print(f"tpch_reference: check against the extension's stored SF {sf:g} answers "
          f"(text columns and Q13 left out): {checked - failed} agree, {failed} differ",
          file=sys.stderr)
    return failed


if __name__ == "__main__":
    main()
