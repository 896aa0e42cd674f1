"""Finding and loading libredfox, and the ctypes signatures of its calls
(include/redfox.h). Nothing here knows about NumPy or pandas."""

import ctypes
import ctypes.util
import os
from pathlib import Path

_LIB_NAMES = ("libredfox.so", "libredfox.so.0", "libredfox.dylib")


class LibraryNotFound(OSError):
    """libredfox could not be found or loaded."""


def _candidates():
    """Where the library may be, in the order they are tried, with a note
    each for the error message."""
    env = os.environ.get("REDFOX_LIBRARY")
    if env:
        # Named explicitly: only this one.
        yield Path(env), "REDFOX_LIBRARY"
        return
    here = Path(__file__).resolve().parent
    for name in _LIB_NAMES:
        yield here / name, "next to the package"
    # A Red Fox source tree's build folder, above the package (an editable
    # install, or python/ used in place) or above the current folder.
    seen = set()
    for start in (here, Path.cwd().resolve()):
        for folder in (start, *start.parents):
            lib = folder / "build" / "lib" / "libredfox.so"
            if lib not in seen:
                seen.add(lib)
                yield lib, "a build folder"
    found = ctypes.util.find_library("redfox")
    if found:
        yield Path(found), "the system library path"


def find_library():
    """The path of the libredfox that load() would use (or raises
    LibraryNotFound saying where it looked)."""
    looked = []
    for path, why in _candidates():
        if path.name == str(path) or path.exists():  # a bare soname from find_library
            return str(path)
        looked.append(f"{path} ({why})")
    raise LibraryNotFound(
        "libredfox not found; build Red Fox (cmake --build build) or set REDFOX_LIBRARY to the "
        "path of libredfox.so. Looked at: " + "; ".join(looked)
    )


class Column(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("data", ctypes.c_void_p)]


class Stats(ctypes.Structure):
    _fields_ = [
        ("seconds", ctypes.c_double),
        ("kernels_run", ctypes.c_uint64),
        ("loop_iterations", ctypes.c_uint64),
        ("bytes_peak", ctypes.c_uint64),
        ("fused_run_as_members", ctypes.c_uint64),
        ("copies_moved", ctypes.c_uint64),
    ]


# include/redfox.h enums
COLUMN_INT64, COLUMN_FLOAT64, COLUMN_BOOL, COLUMN_STRING = 1, 2, 3, 4
TYPE_NAMES = {1: "int32", 2: "int64", 3: "float64", 4: "bool", 5: "string", 6: "date", 7: "decimal"}
LANGUAGES = {"auto": 0, "logiql": 1, "lql": 1, "souffle": 2, "dl": 2}
BACKENDS = {"auto": 0, "cpu": 1, "gpu": 2}

_p = ctypes.c_void_p
_s = ctypes.c_char_p
_i = ctypes.c_int
_z = ctypes.c_size_t
_SIGNATURES = {
    "redfox_status_name": (_s, [_i]),
    "redfox_last_error": (_s, []),
    "redfox_version": (_s, []),
    "redfox_program_new": (_i, [ctypes.POINTER(_p)]),
    "redfox_program_free": (None, [_p]),
    "redfox_program_set_language": (_i, [_p, _i]),
    "redfox_program_set_fact_dir": (_i, [_p, _s]),
    "redfox_program_set_fuse": (_i, [_p, _i]),
    "redfox_program_add_output": (_i, [_p, _s]),
    "redfox_program_compile_text": (_i, [_p, _s, _s]),
    "redfox_program_compile_file": (_i, [_p, _s]),
    "redfox_program_diagnostics": (_s, [_p]),
    "redfox_program_error": (_s, [_p]),
    "redfox_program_predicate_count": (_i, [_p, ctypes.POINTER(_i)]),
    "redfox_program_predicate_name": (_i, [_p, _i, ctypes.POINTER(_s)]),
    "redfox_program_arity": (_i, [_p, _s, ctypes.POINTER(_i)]),
    "redfox_program_column_type": (_i, [_p, _s, _i, ctypes.POINTER(_i), ctypes.POINTER(_i)]),
    "redfox_program_output_count": (_i, [_p, ctypes.POINTER(_i)]),
    "redfox_program_output_name": (_i, [_p, _i, ctypes.POINTER(_s)]),
    "redfox_run_new": (_i, [_p, ctypes.POINTER(_p)]),
    "redfox_run_free": (None, [_p]),
    "redfox_run_add_facts": (_i, [_p, _s, _z, _i, ctypes.POINTER(Column)]),
    "redfox_run_clear_facts": (_i, [_p]),
    "redfox_run_set_backend": (_i, [_p, _i]),
    "redfox_run_set_threads": (_i, [_p, _i]),
    "redfox_run_set_max_iterations": (_i, [_p, ctypes.c_uint64]),
    "redfox_run_execute": (_i, [_p]),
    "redfox_run_error": (_s, [_p]),
    "redfox_run_stats": (_i, [_p, ctypes.POINTER(Stats)]),
    "redfox_run_stats_text": (_i, [_p, ctypes.POINTER(_s)]),
    "redfox_run_backend_used": (_i, [_p, ctypes.POINTER(_s), ctypes.POINTER(_s)]),
    "redfox_run_result_rows": (_i, [_p, _s, ctypes.POINTER(_z)]),
    "redfox_run_copy_int64": (_i, [_p, _s, _i, _p, _z]),
    "redfox_run_copy_float64": (_i, [_p, _s, _i, _p, _z]),
    "redfox_run_copy_string": (_i, [_p, _s, _i, _p, _z]),
}

_lib = None


def load():
    """The loaded library (loaded on first use)."""
    global _lib
    if _lib is None:
        path = find_library()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise LibraryNotFound(f"cannot load libredfox from {path}: {e}") from e
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = lib
    return _lib
