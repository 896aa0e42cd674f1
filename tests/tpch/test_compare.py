#!/usr/bin/env python3
"""Self-test of tests/tpch/compare.py: plain asserts, no dependencies.

    python3 tests/tpch/test_compare.py
"""
import contextlib
import io
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

cq = compare.compare_query


def rows(text):
    return [line.split("\t") for line in text.strip("\n").split("\n")] if text.strip("\n") else []


def test_equal():
    a = rows("A\tF\t380456.00\t25.575154611454693\t14876\nN\tF\t8971.00\t25.7\t348")
    assert cq(1, a, [r[:] for r in a]) is None
    assert cq(17, [], []) is None


def test_tolerance():
    e = rows("1995\t0.034")
    assert cq(8, e, rows("1995\t0.04")) is None             # 0.006 apart
    assert cq(8, e, rows("1995\t0.044")) is None            # exactly 0.01 apart
    assert cq(8, e, rows("1995\t0.0441")) is not None       # just over
    assert cq(8, e, rows("1995\t3.4e-2")) is None           # other notation
    assert cq(8, rows("1995\t26.0"), rows("1995\t26")) is None  # repr vs %.17g
    assert cq(1, rows("A\tF\t380456.00"), rows("A\tF\t380456")) is None
    big = rows("A\tF\t55909065222.827692")
    assert cq(1, big, rows("A\tF\t55909065222.83")) is None
    assert cq(1, big, rows("A\tF\t55909065222.84")) is not None
    r = compare.Rules(abs_tol="0.01", rel_tol="1e-12")
    assert cq(1, big, rows("A\tF\t55909065222.84"), r) is None
    # Dates and phone numbers are strings, never numbers.
    assert cq(3, rows("1\t2.0\t1995-03-15\t0"), rows("1\t2.0\t1995-03-16\t0")) is not None
    assert not compare.Rules().field_eq("25-989-741-2988", "25-989-741-2989")
    # Names that Python's float() would read are strings here.
    assert not compare.Rules().field_eq("nan", "inf")


def test_string_mismatch():
    e = rows("MAIL\t64\t86\nSHIP\t61\t96")
    msg = cq(12, e, rows("MAIL\t64\t86\nRAIL\t61\t96"))
    assert msg is not None and "row 2 field 1" in msg and "SHIP" in msg and "RAIL" in msg, msg
    # Case and whitespace count.
    assert cq(12, rows("MAIL\t1\t2"), rows("mail\t1\t2")) is not None
    assert cq(12, rows("MAIL\t1\t2"), rows("MAIL \t1\t2")) is not None
    # Escapes are compared as written.
    assert cq(20, rows("a\\tb\tx"), rows("a\\tb\tx")) is None
    assert cq(20, rows("a\\tb\tx"), rows("a\\nb\tx")) is not None


def test_row_count_mismatch():
    e = rows("1-URGENT\t93\n2-HIGH\t103\n3-MEDIUM\t109")
    msg = cq(4, e, e[:2])
    assert msg is not None and "3 rows expected, 2 got" in msg and "3-MEDIUM" in msg, msg
    msg = cq(4, e[:2], e)
    assert msg is not None and "2 rows expected, 3 got" in msg and "extra" in msg, msg
    assert cq(4, e, []) is not None
    assert "1 rows expected, 0 got" in cq(6, rows("1193053.2253"), [])


def test_field_count_mismatch():
    assert cq(4, rows("1-URGENT\t93"), rows("1-URGENT\t93\t0")) is not None
    assert cq(4, rows("1-URGENT\t93\n2-HIGH\t5"), rows("1-URGENT\t93\n2-HIGH")) is not None


def test_order_matters():
    # Q4 orders by o_orderpriority, all distinct: swapping rows is a failure.
    e = rows("1-URGENT\t93\n2-HIGH\t103")
    assert cq(4, e, [e[1], e[0]]) is not None


def test_ties():
    # Q21: numwait DESC, s_name -> keys (1, 0). Q13: custdist DESC, c_count DESC.
    # Q11: value DESC; rows tied on value may come in any order.
    e = rows("10\t500.00\n20\t300.00\n30\t300.00\n40\t300.00\n50\t100.00")
    a = rows("10\t500.00\n40\t300.00\n20\t300.00\n30\t300.00\n50\t100.00")
    assert cq(11, e, a) is None
    # ...but only within the tie: moving a row out of its run fails.
    a2 = rows("20\t300.00\n10\t500.00\n30\t300.00\n40\t300.00\n50\t100.00")
    assert cq(11, e, a2) is not None
    # A tie run compared as a multiset: a duplicate does not stand in for another row.
    a3 = rows("10\t500.00\n20\t300.00\n20\t300.00\n40\t300.00\n50\t100.00")
    msg = cq(11, e, a3)
    assert msg is not None and "tied" in msg, msg
    # Tied keys within the tolerance (an engine summing in float64).
    a4 = rows("10\t500.00\n30\t300.004\n20\t299.999\n40\t300.00\n50\t100.00")
    assert cq(11, e, a4) is None
    # Q16: supplier_cnt DESC, p_brand, p_type, p_size: the full key; the
    # same key twice cannot happen, but a query without ORDER BY is one run.
    assert cq(6, rows("1.00"), rows("1.00")) is None
    # Q9: nation, o_year DESC. Different years are not ties.
    e9 = rows("ALGERIA\t1998\t1.0\nALGERIA\t1997\t2.0")
    assert cq(9, e9, [e9[1], e9[0]]) is not None


def test_limit_boundary_tie():
    # Q3 (LIMIT 10), keys revenue DESC, o_orderdate: when the answer fills the
    # limit, the last tie run is compared on its keys only.
    head = [[str(i), f"{1000 - i}.0000", "1995-01-01", "0"] for i in range(8)]
    e = head + rows("100\t5.0000\t1995-02-02\t0\n101\t5.0000\t1995-02-02\t0")
    a = head + rows("102\t5.0000\t1995-02-02\t0\n100\t5.0000\t1995-02-02\t0")
    assert cq(3, e, a) is None
    # The keys themselves must still agree.
    a2 = head + rows("102\t5.0000\t1995-02-02\t0\n100\t5.0000\t1995-02-03\t0")
    assert cq(3, e, a2) is not None
    # Below the limit nothing was cut: the full rows must agree.
    assert cq(3, e[1:], a[1:]) is not None


def test_cli():
    with tempfile.TemporaryDirectory() as d:
        exp, act = os.path.join(d, "exp"), os.path.join(d, "act")
        os.mkdir(exp)
        os.mkdir(act)
        files = {"q04.tsv": ("1-URGENT\t93\n2-HIGH\t103\n", "1-URGENT\t93\n2-HIGH\t103.001\n"),
                 "q06.tsv": ("1193053.2253\n", "1193053.2\n"),
                 "q17.tsv": ("", "")}
        for name, (e, a) in files.items():
            with open(os.path.join(exp, name), "w") as f:
                f.write(e)
            with open(os.path.join(act, name), "w") as f:
                f.write(a)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = compare.main([exp, act])
        lines = out.getvalue().splitlines()
        assert rc == 1, out.getvalue()
        assert lines[0].startswith("q04 PASS"), lines
        assert lines[1].startswith("q06 FAIL") and "1193053.2253" in lines[1], lines
        assert lines[2].startswith("q17 PASS"), lines
        assert lines[-1] == "2 passed, 1 failed", lines
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = compare.main([exp, act, "--queries", "4,17"])
        assert rc == 0 and out.getvalue().splitlines()[-1] == "2 passed, 0 failed", out.getvalue()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = compare.main([exp, act, "--queries", "5"])
        assert rc == 1 and "q05 FAIL: missing" in out.getvalue(), out.getvalue()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert compare.main([exp, act, "--queries", "23"]) == 64


def test_order_keys_table():
    assert sorted(compare.ORDER_KEYS) == list(range(1, 23))
    for q, lim in compare.LIMITS.items():
        assert compare.ORDER_KEYS[q], q


if __name__ == "__main__":
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print(f"{name} PASS")
        except AssertionError as e:
            failed += 1
            print(f"{name} FAIL: {e}")
    print(f"{len(tests) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
