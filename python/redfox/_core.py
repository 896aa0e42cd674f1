"""Programs, runs and results over libredfox (docs/python.md).

Inputs are converted column by column to what the predicate's declared
type takes (include/redfox.h): NumPy arrays are passed without a Python
loop where their dtype allows; lists, tuples and pandas DataFrames work
too. NumPy and pandas are optional: without NumPy, results are lists."""

import ctypes
import datetime
import decimal

from . import _lib

try:  # optional
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    _np = None

_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


class RedfoxError(Exception):
    """A failed libredfox call: .status is its status name
    ("REDFOX_ERROR_ARITY", ...), the message says what went wrong."""

    def __init__(self, status, message):
        super().__init__(f"{message} ({status})" if message else status)
        self.status = status
        self.message = message


class CompileError(RedfoxError):
    """The program has errors; .diagnostics holds the compiler's messages
    (file:line:col: error: ..., with the source line and a caret)."""

    def __init__(self, status, message, diagnostics):
        super().__init__(status, message)
        self.diagnostics = diagnostics

    def __str__(self):
        return self.diagnostics or super().__str__()


def _text(b):
    return b.decode("utf-8") if b is not None else ""


def _check(lib, status, handle_error=None):
    if status != 0:
        message = _text(lib.redfox_last_error())
        raise RedfoxError(_text(lib.redfox_status_name(status)), message)


# ---- Programs ----


class Program:
    """A compiled program.

    Program(source) compiles LogiQL text; language="souffle" (or a name
    ending in .dl) the Soufflé dialect; Program(path=...) a file.
    outputs: predicates to output besides (for LogiQL: instead of) the
    default ones. fact_dir: where a Soufflé program's .input files are.
    fuse=False turns Kernel Weaver off."""

    def __init__(self, source=None, *, path=None, language="auto", name=None, outputs=(), fact_dir=None,
                 fuse=True):
        if (source is None) == (path is None):
            raise ValueError("give the program's source text or a path, not both or neither")
        if language not in _lib.LANGUAGES:
            raise ValueError(f"language must be one of {sorted(_lib.LANGUAGES)}, not {language!r}")
        lib = self._lib = _lib.load()
        handle = ctypes.c_void_p()
        _check(lib, lib.redfox_program_new(ctypes.byref(handle)))
        self._handle = handle
        try:
            _check(lib, lib.redfox_program_set_language(handle, _lib.LANGUAGES[language]))
            _check(lib, lib.redfox_program_set_fuse(handle, 1 if fuse else 0))
            if fact_dir is not None:
                _check(lib, lib.redfox_program_set_fact_dir(handle, str(fact_dir).encode()))
            for pred in outputs:
                _check(lib, lib.redfox_program_add_output(handle, pred.encode()))
            if path is not None:
                status = lib.redfox_program_compile_file(handle, str(path).encode())
            else:
                status = lib.redfox_program_compile_text(handle, (name or "<text>").encode(), source.encode())
            if status != 0:
                status_name = _text(lib.redfox_status_name(status))
                message = _text(lib.redfox_last_error())
                diagnostics = _text(lib.redfox_program_diagnostics(handle))
                if status_name == "REDFOX_ERROR_COMPILE":
                    raise CompileError(status_name, message, diagnostics)
                raise RedfoxError(status_name, message)
        except BaseException:
            self.close()
            raise
        self.predicates = self._predicates()
        count = ctypes.c_int()
        _check(lib, lib.redfox_program_output_count(handle, ctypes.byref(count)))
        self.outputs = []
        for i in range(count.value):
            out = ctypes.c_char_p()
            _check(lib, lib.redfox_program_output_name(handle, i, ctypes.byref(out)))
            self.outputs.append(_text(out.value))

    def _predicates(self):
        """{name: [(type, decimal scale), ...]} in declaration order."""
        lib, h = self._lib, self._handle
        count = ctypes.c_int()
        _check(lib, lib.redfox_program_predicate_count(h, ctypes.byref(count)))
        preds = {}
        for i in range(count.value):
            name = ctypes.c_char_p()
            _check(lib, lib.redfox_program_predicate_name(h, i, ctypes.byref(name)))
            arity = ctypes.c_int()
            _check(lib, lib.redfox_program_arity(h, name.value, ctypes.byref(arity)))
            cols = []
            for c in range(arity.value):
                t, scale = ctypes.c_int(), ctypes.c_int()
                _check(lib, lib.redfox_program_column_type(h, name.value, c, ctypes.byref(t), ctypes.byref(scale)))
                cols.append((_lib.TYPE_NAMES[t.value], scale.value))
            preds[_text(name.value)] = cols
        return preds

    def run(self, inputs=None, *, backend="auto", threads=0, max_iterations=0, **facts):
        """Runs the program over facts given as {predicate: data} (inputs,
        or keyword arguments); data is a 2-D NumPy array, a pandas
        DataFrame, or rows (a list of tuples). Returns Results."""
        all_facts = dict(inputs or {})
        all_facts.update(facts)
        with Run(self) as run:
            for pred, data in all_facts.items():
                run.add_facts(pred, data)
            return run.execute(backend=backend, threads=threads, max_iterations=max_iterations)

    def close(self):
        """Frees the compiled program (also done when it is collected)."""
        h = getattr(self, "_handle", None)
        if h:
            self._lib.redfox_program_free(h)
            self._handle = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- Facts: Python data -> typed columns ----


def _columns_of(data, arity, pred):
    """The columns of data (a list of `arity` sequences) and the row count."""
    if hasattr(data, "iloc") and hasattr(data, "columns"):  # a pandas DataFrame
        if data.shape[1] != arity:
            raise RedfoxError("REDFOX_ERROR_ARITY", f"'{pred}' has {arity} columns, the DataFrame {data.shape[1]}")
        return [data.iloc[:, j].to_numpy() for j in range(arity)], data.shape[0]
    if _np is not None and isinstance(data, _np.ndarray):
        if data.ndim == 1 and arity == 1:
            data = data.reshape(-1, 1)
        if data.ndim != 2 or data.shape[1] != arity:
            raise RedfoxError("REDFOX_ERROR_ARITY",
                              f"'{pred}' has {arity} columns, the array has shape {tuple(data.shape)}")
        return [data[:, j] for j in range(arity)], data.shape[0]
    rows = [tuple(r) if isinstance(r, (tuple, list)) else (r,) for r in data]
    for i, r in enumerate(rows):
        if len(r) != arity:
            raise RedfoxError("REDFOX_ERROR_ARITY", f"'{pred}' has {arity} columns, row {i} has {len(r)}")
    return [[r[j] for r in rows] for j in range(arity)], len(rows)


def _int_column(col, kind_name, pred, j):
    """A C array of int64 for col (kept alive by the caller)."""
    if _np is not None:
        a = _np.asarray(col)
        if a.dtype.kind == "f":
            if not _np.all(_np.isfinite(a)) or not _np.all(a == _np.floor(a)):
                raise RedfoxError("REDFOX_ERROR_VALUE", f"'{pred}' column {j} is {kind_name}: it holds non-integers")
        elif a.dtype.kind not in "iub":
            try:
                a = _np.array([int(v) for v in a], dtype=_np.int64)
            except (TypeError, ValueError) as e:
                raise RedfoxError("REDFOX_ERROR_TYPE", f"'{pred}' column {j} is {kind_name}: {e}") from None
        a = _np.ascontiguousarray(a, dtype=_np.int64)
        return a, a.ctypes.data
    try:
        arr = (ctypes.c_int64 * len(col))(*[int(v) for v in col])
    except (TypeError, ValueError) as e:
        raise RedfoxError("REDFOX_ERROR_TYPE", f"'{pred}' column {j} is {kind_name}: {e}") from None
    return arr, ctypes.addressof(arr)


def _float_column(col):
    if _np is not None:
        a = _np.ascontiguousarray(_np.asarray(col, dtype=_np.float64))
        return a, a.ctypes.data
    arr = (ctypes.c_double * len(col))(*[float(v) for v in col])
    return arr, ctypes.addressof(arr)


def _bool_column(col):
    values = [1 if bool(v) else 0 for v in col] if _np is None else None
    if _np is not None:
        a = _np.ascontiguousarray(_np.asarray(col).astype(bool).astype(_np.uint8))
        return a, a.ctypes.data
    arr = (ctypes.c_uint8 * len(values))(*values)
    return arr, ctypes.addressof(arr)


def _string_column(col, pred, j, to_text=str):
    encoded = []
    for v in col:
        s = v if isinstance(v, str) else v.decode("utf-8") if isinstance(v, bytes) else to_text(v)
        b = s.encode("utf-8")
        if b"\0" in b:
            raise RedfoxError("REDFOX_ERROR_VALUE", f"'{pred}' column {j}: a string holds a NUL character")
        encoded.append(b)
    arr = (ctypes.c_char_p * len(encoded))(*encoded)
    return (arr, encoded), ctypes.addressof(arr)


def _date_text(v):
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()[:10]
    if hasattr(v, "date") and callable(v.date):  # pandas Timestamp
        return v.date().isoformat()
    return str(v)[:10] if _np is not None and isinstance(v, _np.datetime64) else str(v)


def _decimal_text(v):
    if isinstance(v, float):
        return format(decimal.Decimal(repr(v)), "f")
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    return str(v)


def _column(col, type_name, pred, j):
    """(keep-alive object, libredfox column kind, address of the data)."""
    if type_name in ("int32", "int64"):
        keep, addr = _int_column(col, type_name, pred, j)
        return keep, _lib.COLUMN_INT64, addr
    if type_name == "float64":
        keep, addr = _float_column(col)
        return keep, _lib.COLUMN_FLOAT64, addr
    if type_name == "bool":
        keep, addr = _bool_column(col)
        return keep, _lib.COLUMN_BOOL, addr
    if type_name == "date":
        if _np is not None and isinstance(col, _np.ndarray) and col.dtype.kind == "M":
            days = _np.ascontiguousarray(col.astype("datetime64[D]").astype(_np.int64))
            return days, _lib.COLUMN_INT64, days.ctypes.data
        keep, addr = _string_column(col, pred, j, _date_text)
        return keep, _lib.COLUMN_STRING, addr
    to_text = _decimal_text if type_name == "decimal" else str
    keep, addr = _string_column(col, pred, j, to_text)
    return keep, _lib.COLUMN_STRING, addr


# ---- Runs and results ----


class Run:
    """One run of a program: add_facts(), then execute(). Program.run() is
    the short way; a Run lets facts be added piece by piece."""

    def __init__(self, program):
        self.program = program
        self._lib = program._lib
        handle = ctypes.c_void_p()
        _check(self._lib, self._lib.redfox_run_new(program._handle, ctypes.byref(handle)))
        self._handle = handle

    def add_facts(self, pred, data):
        if pred not in self.program.predicates:
            raise RedfoxError("REDFOX_ERROR_UNKNOWN_PREDICATE", f"the program has no predicate '{pred}'")
        types = self.program.predicates[pred]
        cols, nrows = _columns_of(data, len(types), pred)
        keep, structs = [], (_lib.Column * max(1, len(types)))()
        for j, ((type_name, _scale), col) in enumerate(zip(types, cols)):
            k, kind, addr = _column(col, type_name, pred, j)
            keep.append(k)
            structs[j].kind = kind
            structs[j].data = addr
        _check(self._lib, self._lib.redfox_run_add_facts(self._handle, pred.encode(), nrows, len(types), structs))

    def execute(self, backend="auto", threads=0, max_iterations=0):
        if backend not in _lib.BACKENDS:
            raise ValueError(f"backend must be one of {sorted(_lib.BACKENDS)}, not {backend!r}")
        lib, h = self._lib, self._handle
        _check(lib, lib.redfox_run_set_backend(h, _lib.BACKENDS[backend]))
        _check(lib, lib.redfox_run_set_threads(h, int(threads)))
        _check(lib, lib.redfox_run_set_max_iterations(h, int(max_iterations)))
        _check(lib, lib.redfox_run_execute(h))
        return Results(self)

    def close(self):
        h = getattr(self, "_handle", None)
        if h:
            self._lib.redfox_run_free(h)
            self._handle = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Relation:
    """An output predicate's rows: .columns (one NumPy array per column,
    lists without NumPy), len(), iteration over row tuples, to_numpy(),
    to_pandas(), to_list(). Values per declared type: int32/int64 -> int64,
    float64 -> float64, bool -> bool, string -> str, date ->
    datetime64[D] (datetime.date without NumPy), decimal -> decimal.Decimal."""

    def __init__(self, name, types, columns, nrows):
        self.name = name
        self.types = [t for t, _ in types]
        self.columns = columns
        self._nrows = nrows

    def __len__(self):
        return self._nrows

    def __iter__(self):
        lists = [c.tolist() if hasattr(c, "tolist") else c for c in self.columns]
        return iter(zip(*lists)) if lists else iter([() for _ in range(self._nrows)])

    def to_list(self):
        """The rows as a list of tuples of Python values."""
        return list(self)

    def to_numpy(self):
        """A 2-D array (rows x columns): int64 when every column is an
        integer type, float64 when every one is float64, else object."""
        if _np is None:
            raise ImportError("to_numpy() needs NumPy (pip install numpy)")
        if not self.columns:
            return _np.empty((self._nrows, 0))
        kinds = {t for t in self.types}
        dtype = _np.int64 if kinds <= {"int32", "int64"} else _np.float64 if kinds == {"float64"} else object
        out = _np.empty((self._nrows, len(self.columns)), dtype=dtype)
        for j, c in enumerate(self.columns):
            out[:, j] = c
        return out

    def to_pandas(self, columns=None):
        """A DataFrame; columns names them (default c0, c1, ...)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("to_pandas() needs pandas (pip install pandas)") from e
        names = list(columns) if columns is not None else [f"c{j}" for j in range(len(self.columns))]
        if len(names) != len(self.columns):
            raise ValueError(f"'{self.name}' has {len(self.columns)} columns, {len(names)} names given")
        return pd.DataFrame({n: c for n, c in zip(names, self.columns)}, columns=names)

    def __repr__(self):
        return f"<Relation {self.name}({', '.join(self.types)}): {self._nrows} rows>"


class Results(dict):
    """{output predicate: Relation}, with .stats (counters), .stats_text
    (the `redfox run --stats` table), .backend and .device."""

    def __init__(self, run):
        super().__init__()
        lib, h = run._lib, run._handle
        stats = _lib.Stats()
        _check(lib, lib.redfox_run_stats(h, ctypes.byref(stats)))
        self.stats = {name: getattr(stats, name) for name, _ in _lib.Stats._fields_}
        text = ctypes.c_char_p()
        _check(lib, lib.redfox_run_stats_text(h, ctypes.byref(text)))
        self.stats_text = _text(text.value)
        name, device = ctypes.c_char_p(), ctypes.c_char_p()
        _check(lib, lib.redfox_run_backend_used(h, ctypes.byref(name), ctypes.byref(device)))
        self.backend, self.device = _text(name.value), _text(device.value)
        for pred in run.program.outputs:
            self[pred] = _read_relation(lib, h, pred, run.program.predicates[pred])


def _read_relation(lib, h, pred, types):
    key = pred.encode()
    n = ctypes.c_size_t()
    _check(lib, lib.redfox_run_result_rows(h, key, ctypes.byref(n)))
    n = n.value
    columns = []
    for j, (type_name, scale) in enumerate(types):
        if type_name == "float64":
            if _np is not None:
                a = _np.empty(n, dtype=_np.float64)
                _check(lib, lib.redfox_run_copy_float64(h, key, j, a.ctypes.data, n))
            else:
                buf = (ctypes.c_double * max(1, n))()
                _check(lib, lib.redfox_run_copy_float64(h, key, j, ctypes.addressof(buf), n))
                a = list(buf[:n])
        elif type_name == "string":
            buf = (ctypes.c_char_p * max(1, n))()
            _check(lib, lib.redfox_run_copy_string(h, key, j, ctypes.addressof(buf), n))
            values = [b.decode("utf-8") for b in buf[:n]]
            a = _np.array(values, dtype=object) if _np is not None else values
        else:
            if _np is not None:
                ints = _np.empty(n, dtype=_np.int64)
                _check(lib, lib.redfox_run_copy_int64(h, key, j, ints.ctypes.data, n))
            else:
                buf = (ctypes.c_int64 * max(1, n))()
                _check(lib, lib.redfox_run_copy_int64(h, key, j, ctypes.addressof(buf), n))
                ints = list(buf[:n])
            a = _convert_ints(ints, type_name, scale)
        columns.append(a)
    return Relation(pred, types, columns, n)


def _convert_ints(ints, type_name, scale):
    """Words of an integer-like column as their type's Python values."""
    if type_name == "bool":
        return ints.astype(bool) if _np is not None else [bool(v) for v in ints]
    if type_name == "date":
        if _np is not None:
            return ints.astype("datetime64[D]")
        return [datetime.date.fromordinal(_EPOCH_ORDINAL + v) for v in ints]
    if type_name == "decimal":
        values = [decimal.Decimal(int(v)).scaleb(-scale) for v in ints]
        return _np.array(values, dtype=object) if _np is not None else values
    return ints


def run(source=None, inputs=None, *, path=None, language="auto", name=None, outputs=(), backend="auto",
        threads=0, max_iterations=0, **facts):
    """Compiles and runs in one call: run(source, {"edge": edges})."""
    with Program(source, path=path, language=language, name=name, outputs=outputs) as program:
        return program.run(inputs, backend=backend, threads=threads, max_iterations=max_iterations, **facts)

