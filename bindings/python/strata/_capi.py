"""libstrata as ctypes sees it: the loaded library, the prototype of every
function the package calls, the C enums, and StrataError for failed calls."""
import ctypes
import enum
import os

SONAME = "libstrata.so.0"


def _load():
    # An installed package finds libstrata where meson's _config.py says,
    # which need not be on the loader's path; a source checkout has no
    # _config.py and relies on LD_LIBRARY_PATH (e.g. build/src). Loaded
    # first, it also serves the torch extension, which needs it by SONAME.
    try:
        from . import _config
    except ImportError:
        path = SONAME
    else:
        path = os.path.join(_config.libdir, _config.library)
    try:
        return ctypes.CDLL(path), path
    except OSError as e:
        hint = "" if os.path.isabs(path) else (f"; put the folder holding {SONAME} on "
                                               f"LD_LIBRARY_PATH (build/src in a build tree)")
        raise ImportError(f"strata: cannot load {path}: {e}{hint}") from None


lib, lib_path = _load()

c_int = ctypes.c_int
c_size_t = ctypes.c_size_t
c_ptr = ctypes.c_void_p  # buffers, strata_comm_t and strata_request_t alike
_P = ctypes.POINTER
handle_p = _P(c_ptr)  # strata_comm_t* and strata_request_t* outputs


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


class Memory(ctypes.Structure):
    """strata_memory_t."""
    _fields_ = [("size", c_size_t), ("shared_bytes", ctypes.c_uint64), ("host_bytes", ctypes.c_uint64),
                ("pinned_bytes", ctypes.c_uint64), ("device_bytes", ctypes.c_uint64)]


class Config(ctypes.Structure):
    """strata_config_t."""
    _fields_ = [("size", c_size_t), ("timeout_seconds", ctypes.c_double), ("reproducible", c_int),
                ("algorithm", ctypes.c_char_p), ("nchannels", c_int), ("device", ctypes.c_int64),
                ("memory_budget", ctypes.c_uint64)]


DEVICE_CURRENT = -1  # STRATA_DEVICE_CURRENT


# Argument types of every function the package calls at import; all return
# strata_result_t unless listed in _RESTYPES.
_ARGTYPES = {
    "strata_get_version": [_P(c_int)],
    "strata_get_transports": [ctypes.c_char_p, c_size_t],
    "strata_last_error": [],
    "strata_datatype_size": [c_int],
    "strata_get_unique_id": [_P(UniqueId)],
    "strata_comm_init_rank": [handle_p, c_int, UniqueId, c_int],
    "strata_comm_init_rank_config": [handle_p, c_int, UniqueId, c_int, _P(Config)],
    "strata_comm_init_env": [handle_p],
    "strata_comm_init_world": [handle_p],
    "strata_comm_destroy": [c_ptr],
    "strata_comm_abort": [c_ptr],
    "strata_comm_split": [c_ptr, c_int, c_int, handle_p],
    "strata_comm_dup": [c_ptr, handle_p],
    "strata_comm_revoke": [c_ptr],
    "strata_comm_shrink": [c_ptr, _P(c_int), c_int, c_int, handle_p],
    "strata_comm_grow_id": [c_ptr, _P(UniqueId)],
    "strata_comm_grow": [c_ptr, c_int, _P(UniqueId), c_int, handle_p],
    "strata_comm_dump": [c_ptr, ctypes.c_char_p, c_size_t],
    "strata_comm_check": [c_ptr, ctypes.c_char_p, c_size_t, _P(c_int)],
    "strata_comm_rank": [c_ptr, _P(c_int)],
    "strata_comm_is_reproducible": [c_ptr, _P(c_int)],
    "strata_comm_memory": [c_ptr, _P(Memory)],
    "strata_comm_algorithm": [c_ptr, ctypes.c_char_p, c_size_t, c_int, ctypes.c_char_p, c_size_t, _P(c_int)],
    "strata_comm_explain": [c_ptr, ctypes.c_char_p, c_size_t, c_int, ctypes.c_char_p, c_size_t, _P(c_size_t)],
    "strata_comm_size": [c_ptr, _P(c_int)],
    "strata_group_start": [],
    "strata_group_end": [],
    "strata_test": [c_ptr, _P(c_int)],
    "strata_wait": [c_ptr],
}
# Collectives: blocking form (..., comm) and strata_i* form (..., comm, request*).
_COLLECTIVE_ARGTYPES = {
    "allreduce": [c_ptr, c_ptr, c_size_t, c_int, c_int],
    "broadcast": [c_ptr, c_ptr, c_size_t, c_int, c_int],
    "reduce": [c_ptr, c_ptr, c_size_t, c_int, c_int, c_int],
    "allgather": [c_ptr, c_ptr, c_size_t, c_int],
    "reduce_scatter": [c_ptr, c_ptr, c_size_t, c_int, c_int],
    "alltoall": [c_ptr, c_ptr, c_size_t, c_int],
    "send": [c_ptr, c_size_t, c_int, c_int],
    "recv": [c_ptr, c_size_t, c_int, c_int],
    "barrier": [],
}
for _name, _args in _COLLECTIVE_ARGTYPES.items():
    _ARGTYPES["strata_" + _name] = _args + [c_ptr]
    _ARGTYPES["strata_i" + _name] = _args + [c_ptr, handle_p]
_RESTYPES = {"strata_last_error": ctypes.c_char_p, "strata_datatype_size": c_size_t}
for _name, _args in _ARGTYPES.items():
    _fn = getattr(lib, _name)
    _fn.argtypes = _args
    _fn.restype = _RESTYPES.get(_name, c_int)
del _name, _args, _fn


class Result(enum.IntEnum):
    """strata_result_t."""
    SUCCESS = 0
    INVALID_ARGUMENT = 1
    INVALID_USAGE = 2
    SYSTEM = 3
    INTERNAL = 4
    REMOTE = 5
    TIMEOUT = 6
    IN_PROGRESS = 7
    CUDA = 8
    REVOKED = 9


class Datatype(enum.IntEnum):
    """strata_datatype_t."""
    INT8 = 0
    UINT8 = 1
    INT32 = 2
    UINT32 = 3
    INT64 = 4
    UINT64 = 5
    FLOAT16 = 6
    BFLOAT16 = 7
    FLOAT32 = 8
    FLOAT64 = 9


class Op(enum.IntEnum):
    """strata_op_t. Integer ops wrap; AVG truncates for integer types."""
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4


# From the library rather than a table here, so the two cannot disagree.
ITEMSIZE = {t: lib.strata_datatype_size(t) for t in Datatype}


def version():
    code = c_int()
    lib.strata_get_version(ctypes.byref(code))
    return f"{code.value // 10000}.{code.value // 100 % 100}.{code.value % 100}"


def transports():
    """The transports this build offers on this host, in strata's order of
    preference (strata_get_transports says when a pair uses each)."""
    names = ctypes.create_string_buffer(256)
    check(lib.strata_get_transports(names, len(names)), "strata_get_transports")
    return names.value.decode().split()


class StrataError(RuntimeError):
    """A strata call failed.

    code: the Result; name: its name ("INVALID_ARGUMENT", ...); message:
    strata's text, which names the argument, peer or system call at fault.
    """

    def __init__(self, code, message, call):
        try:
            code = Result(code)
        except ValueError:  # a newer library's code: keep the number
            pass
        self.code = code
        self.name = getattr(code, "name", f"RESULT_{int(code)}")
        self.message = message
        super().__init__(f"{call}: {self.name}: {message}")


def check(rc, call):
    # strata_last_error is the calling thread's message for its last failed
    # call: it is set by every failing entry point, and unlike
    # strata_comm_last_error stays readable after the communicator is freed.
    if rc != Result.SUCCESS:
        raise StrataError(rc, lib.strata_last_error().decode(errors="replace"), call)
