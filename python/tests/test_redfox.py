"""The Python package against independent oracles: transitive closure and
a join computed here in plain Python, typed values round-tripped, errors
raised with the library's messages, the library found where the docs say.
Run by tests/python/run_python_tests.sh (bash tests/run.sh) with
REDFOX_LIBRARY naming the build's libredfox.so."""

import datetime
import decimal
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import redfox
from redfox import _core

TC_LQL = """
edge(x, y) -> int64(x), int64(y).
path(x, y) -> int64(x), int64(y).
path(x, y) <- edge(x, y).
path(x, z) <- path(x, y), edge(y, z).
"""

TC_DL = """
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def closure(edges):
    """The oracle: every (x, y) with y reachable from x, by a fixpoint."""
    succ = {}
    for x, y in edges:
        succ.setdefault(x, set()).add(y)
    paths = set()
    for x in succ:
        seen, todo = set(), list(succ[x])
        while todo:
            y = todo.pop()
            if y not in seen:
                seen.add(y)
                todo.extend(succ.get(y, ()))
        paths |= {(x, y) for y in seen}
    return paths


def random_edges(seed, nodes=30, count=60):
    rng = random.Random(seed)
    return [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(count)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tc_from_numpy_matches_oracle(seed):
    edges = random_edges(seed)
    result = redfox.run(TC_LQL, {"edge": np.array(edges, dtype=np.int64)}, backend="cpu")
    path = result["path"]
    assert isinstance(path.columns[0], np.ndarray) and path.columns[0].dtype == np.int64
    assert set(path.to_list()) == closure(edges)
    assert len(path) == len(closure(edges))
    # sorted, as the output files are
    assert path.to_list() == sorted(path.to_list())
    arr = path.to_numpy()
    assert arr.shape == (len(path), 2) and arr.dtype == np.int64
    assert result.backend == "cpu" and result.stats["kernels_run"] > 0
    assert "redfox: stats" in result.stats_text


def test_tc_inputs_as_lists_dataframes_and_souffle():
    edges = random_edges(7, nodes=20, count=35)
    expect = closure(edges)
    prog = redfox.Program(TC_LQL, name="tc.lql")
    assert prog.predicates == {"edge": [("int64", 0), ("int64", 0)], "path": [("int64", 0), ("int64", 0)]}
    assert prog.outputs == ["path"]
    assert set(prog.run(edge=edges, backend="cpu")["path"]) == expect
    df = pd.DataFrame(edges, columns=["src", "dst"])
    out = prog.run({"edge": df}, backend="cpu")["path"].to_pandas(columns=["x", "y"])
    assert list(out.columns) == ["x", "y"]
    assert set(map(tuple, out.itertuples(index=False))) == expect
    souffle = redfox.Program(TC_DL, language="souffle")
    assert set(souffle.run(edge=np.array(edges), backend="auto")["path"]) == expect
    # a name ending in .dl chooses the dialect too
    assert set(redfox.run(TC_DL, {"edge": edges}, name="tc.dl")["path"]) == expect


def test_join_with_strings_against_oracle():
    src = """
    person(id, name) -> int32(id), string(name).
    likes(id, food) -> int32(id), string(food).
    eats(name, food) -> string(name), string(food).
    eats(n, f) <- person(i, n), likes(i, f).
    """
    rng = random.Random(5)
    names = ["Ada", "Bob", "Zoë", "李", "tab\there", "#hash", ""]
    foods = ["pie", "naïve soup", "x\\y"]
    people = [(i, names[i % len(names)]) for i in range(10)]
    likes = [(rng.randrange(12), rng.choice(foods)) for _ in range(25)]
    expect = {(n, f) for i, n in people for j, f in likes if i == j}
    eats = redfox.run(src, person=people, likes=likes, backend="cpu")["eats"]
    assert set(eats) == expect
    assert eats.columns[0].dtype == object
    assert eats.to_list() == sorted(eats.to_list(), key=lambda r: (r[0].encode(), r[1].encode()))


def test_every_type_round_trips():
    src = """
    item(s, f, b, d, m) -> string(s), float64(f), bool(b), date(d), decimal[2](m).
    copy(s, f, b, d, m) -> string(s), float64(f), bool(b), date(d), decimal[2](m).
    copy(s, f, b, d, m) <- item(s, f, b, d, m).
    """
    rows = [
        ("a", 1.5, True, datetime.date(2024, 2, 29), decimal.Decimal("12.50")),
        ("b", -2.25, False, "1969-12-31", "0.05"),
        ("c", 1e300, np.True_, pd.Timestamp("2000-01-01"), 7),
    ]
    rel = redfox.run(src, item=rows, backend="cpu")["copy"]
    assert rel.types == ["string", "float64", "bool", "date", "decimal"]
    got = rel.to_list()
    assert [r[0] for r in got] == ["a", "b", "c"]
    assert [r[1] for r in got] == [1.5, -2.25, 1e300]
    assert [r[2] for r in got] == [True, False, True]
    assert rel.columns[3].dtype == np.dtype("datetime64[D]")
    assert [str(d) for d in rel.columns[3]] == ["2024-02-29", "1969-12-31", "2000-01-01"]
    assert [r[4] for r in got] == [decimal.Decimal("12.50"), decimal.Decimal("0.05"), decimal.Decimal("7.00")]
    # datetime64 input columns, and a DataFrame of mixed dtypes
    df = pd.DataFrame({"s": ["x"], "f": [0.5], "b": [False], "d": pd.to_datetime(["1999-12-31"]), "m": ["1.25"]})
    rel = redfox.run(src, item=df, backend="cpu")["copy"]
    assert str(rel.columns[3][0]) == "1999-12-31" and rel.to_list()[0][4] == decimal.Decimal("1.25")
    frame = rel.to_pandas()
    assert list(frame.columns) == ["c0", "c1", "c2", "c3", "c4"] and frame.shape == (1, 5)


def test_without_numpy(monkeypatch):
    monkeypatch.setattr(_core, "_np", None)
    edges = random_edges(9, nodes=12, count=20)
    rel = redfox.run(TC_LQL, edge=edges, backend="cpu")["path"]
    assert isinstance(rel.columns[0], list)
    assert set(rel) == closure(edges)
    with pytest.raises(ImportError):
        rel.to_numpy()
    src = "d(x, y) -> date(x), bool(y).\ne(x, y) -> date(x), bool(y).\ne(x, y) <- d(x, y).\n"
    out = redfox.run(src, d=[(datetime.date(2020, 1, 2), 1)], backend="cpu")["e"]
    assert out.to_list() == [(datetime.date(2020, 1, 2), True)]


def test_errors_carry_the_library_messages():
    with pytest.raises(redfox.CompileError) as e:
        redfox.Program("p(x) -> int64(x).\nq(x) <- p(x), r(x).\n", name="bad.lql")
    assert e.value.status == "REDFOX_ERROR_COMPILE"
    assert "bad.lql:2:" in e.value.diagnostics and "bad.lql:2:" in str(e.value)
    prog = redfox.Program(TC_LQL)
    with pytest.raises(redfox.RedfoxError) as e:
        prog.run(edge=np.zeros((3, 3), dtype=np.int64))
    assert e.value.status == "REDFOX_ERROR_ARITY"
    with pytest.raises(redfox.RedfoxError) as e:
        prog.run(edge=[(1, 2, 3)])
    assert e.value.status == "REDFOX_ERROR_ARITY"
    with pytest.raises(redfox.RedfoxError) as e:
        prog.run(nope=[(1,)])
    assert e.value.status == "REDFOX_ERROR_UNKNOWN_PREDICATE"
    with pytest.raises(redfox.RedfoxError) as e:
        prog.run(path=[(1, 2)])
    assert e.value.status == "REDFOX_ERROR_STATE" and "computed by rules" in e.value.message
    with pytest.raises(redfox.RedfoxError) as e:
        prog.run(edge=[("a", 2)])
    assert e.value.status in ("REDFOX_ERROR_TYPE", "REDFOX_ERROR_VALUE")
    with pytest.raises(redfox.RedfoxError) as e:
        prog.run(edge=np.array([[1.5, 2.0]]))
    assert e.value.status == "REDFOX_ERROR_VALUE"
    floats = redfox.Program("f(x) -> float64(x).\ng(x) -> float64(x).\ng(x) <- f(x).\n")
    with pytest.raises(redfox.RedfoxError) as e:
        floats.run(f=[(float("nan"),)])
    assert e.value.status == "REDFOX_ERROR_VALUE" and "NaN" in e.value.message
    div = redfox.Program("n(x) -> int64(x).\nq(y) -> int64(y).\nq(y) <- n(x), y = 1 / x.\n", name="div.lql")
    with pytest.raises(redfox.RedfoxError) as e:
        div.run(n=[(0,)], backend="cpu")
    assert e.value.status == "REDFOX_ERROR_RUNTIME" and "division by zero" in e.value.message
    with pytest.raises(ValueError):
        prog.run(edge=[(1, 2)], backend="tpu")


def test_program_from_file_and_outputs(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    prog = redfox.Program(path=repo / "programs" / "tc.lql", outputs=["edge"])
    assert prog.outputs == ["edge", "path"]  # its @output(path), and edge
    res = prog.run(backend="cpu")
    assert len(res["edge"]) == 7 and len(res["path"]) == 16
    facts = tmp_path / "edge.facts"
    facts.write_text("1\t2\n2\t3\n")
    souffle = redfox.Program(TC_DL, language="souffle", fact_dir=tmp_path)
    assert set(souffle.run(backend="cpu")["path"]) == {(1, 2), (2, 3), (1, 3)}


def test_two_threads():
    errors, results = [], {}

    def work(seed):
        try:
            edges = random_edges(seed, nodes=25, count=45)
            for _ in range(3):
                got = set(redfox.run(TC_LQL, edge=np.array(edges), backend="cpu")["path"])
                assert got == closure(edges)
            results[seed] = True
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in (21, 22)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {21: True, 22: True}


def test_finding_the_library(tmp_path):
    lib = os.environ.get("REDFOX_LIBRARY")
    assert lib and redfox.find_library() == lib
    assert redfox.version() == "0.1"
    # A wrong REDFOX_LIBRARY is an error that says so.
    code = "import redfox\ntry:\n    redfox.find_library()\nexcept redfox.LibraryNotFound as e:\n    print(e)\n"
    env = dict(os.environ, REDFOX_LIBRARY=str(tmp_path / "missing.so"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "missing.so" in out and "REDFOX_LIBRARY" in out
    # Without it, from a source tree: its build/lib/.
    build_dir = Path(lib).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "REDFOX_LIBRARY"}
    code = ("import sys, redfox\nprint(redfox.find_library())\n"
            "print(len(redfox.run(sys.argv[1], edge=[(1, 2)], backend='cpu')['path']))\n")
    out = subprocess.run([sys.executable, "-c", code, TC_LQL], env=env, cwd=build_dir.parent, capture_output=True,
                         text=True, check=True).stdout.split()
    assert Path(out[0]).resolve() == (build_dir / "lib" / "libredfox.so").resolve() and out[1] == "1"
