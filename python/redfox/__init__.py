"""Red Fox from Python: compile a Datalog program (LogiQL, or the Soufflé
dialect), run it over facts from NumPy arrays, lists or pandas DataFrames,
and get the outputs back as NumPy arrays or DataFrames (docs/python.md).

    import redfox
    tc = redfox.Program('''
        edge(x, y) -> int64(x), int64(y).
        path(x, y) -> int64(x), int64(y).
        path(x, y) <- edge(x, y).
        path(x, z) <- path(x, y), edge(y, z).
    ''')
    paths = tc.run(edge=[(1, 2), (2, 3)])["path"]
    paths.to_list()          # [(1, 2), (1, 3), (2, 3)]

Binds libredfox with ctypes; where the library is looked for:
redfox.find_library(). ctypes releases the GIL during library calls, so
separate Program/Run objects may be used from separate threads (one object,
one thread); the library runs one compile or run at a time."""

from ._core import CompileError, Program, RedfoxError, Relation, Results, Run, run
from ._lib import LibraryNotFound, find_library

for _cls in (CompileError, LibraryNotFound, Program, RedfoxError, Relation, Results, Run):
    _cls.__module__ = __name__   # "redfox.CompileError" in tracebacks
del _cls


def version():
    """The version of the loaded libredfox ("0.1")."""
    from . import _lib

    return _lib.load().redfox_version().decode()


__all__ = ["CompileError", "LibraryNotFound", "Program", "RedfoxError", "Relation", "Results", "Run", "find_library",
           "run", "version"]
__version__ = "0.1.0"
