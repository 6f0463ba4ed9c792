"""Arguments checked in Python before they reach strata: buffers (the buffer
protocol, contiguity, writability, element type and size) and ints and enums
(which ctypes would otherwise truncate or pass through unchecked). Every error
names the argument at fault."""
import ctypes
import operator
import sys

from ._capi import ITEMSIZE, Datatype

_SIGNED_CODES = "bhilqn"
_UNSIGNED_CODES = "BHILQN"
_INTEGER_TYPES = {(True, 1): Datatype.INT8, (False, 1): Datatype.UINT8,
                  (True, 4): Datatype.INT32, (False, 4): Datatype.UINT32,
                  (True, 8): Datatype.INT64, (False, 8): Datatype.UINT64}
_FLOAT_TYPES = {("e", 2): Datatype.FLOAT16, ("f", 4): Datatype.FLOAT32,
                ("d", 8): Datatype.FLOAT64}
_NATIVE_ORDER = "@=" + ("<" if sys.byteorder == "little" else ">!")
_SUPPORTED = ("int8, uint8, int32, uint32, int64, uint64, float16, float32, float64 "
              "(bfloat16: pass datatype=strata.BFLOAT16 with a 2-byte buffer)")


def as_c_int(value, name):
    # ctypes would silently truncate an int that does not fit a C int.
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None
    if not -2**31 <= value < 2**31:
        raise ValueError(f"{name}={value} does not fit a C int")
    return value


def as_count(value, name):
    # ctypes would wrap a negative int into a huge size_t.
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None
    if not 0 <= value < 2**64:
        raise ValueError(f"{name}={value} must be in 0..2**64-1")
    return value


def as_text(value, name):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value.encode()


def as_enum(enum_type, value, name):
    try:
        return enum_type(value)
    except ValueError:
        choices = ", ".join("strata." + m for m in enum_type.__members__)
        raise ValueError(f"{name} must be one of {choices}; got {value!r}") from None


def _datatype_of(obj, view, name):
    # By the buffer's struct format and item size, not by names: a C long is
    # int64 here and int32 elsewhere, and array.array, numpy and ctypes spell
    # the same type differently.
    code = view.format.lstrip(_NATIVE_ORDER)
    if len(code) == 1 and code in _SIGNED_CODES:
        datatype = _INTEGER_TYPES.get((True, view.itemsize))
    elif len(code) == 1 and code in _UNSIGNED_CODES:
        datatype = _INTEGER_TYPES.get((False, view.itemsize))
    else:
        datatype = _FLOAT_TYPES.get((code, view.itemsize))
    if datatype is None:
        what = f"dtype {obj.dtype}" if hasattr(obj, "dtype") else f"{view.itemsize}-byte elements"
        raise TypeError(f"{name} holds {what} (buffer format {view.format!r}), which strata "
                        f"has no datatype for; it takes {_SUPPORTED}")
    return datatype


class Buffer:
    """A checked buffer: where it is, how many elements of which datatype,
    and what must stay alive while strata may touch that memory."""
    __slots__ = ("address", "count", "datatype", "keep")

    def __init__(self, address, count, datatype, keep):
        self.address, self.count, self.datatype, self.keep = address, count, datatype, keep

    def block(self, index, count):
        """The address of block `index` of `count` elements."""
        return self.address + index * count * ITEMSIZE[self.datatype]

    def copy(self):
        """A private copy of the contents (for operations that cannot work in place)."""
        nbytes = self.count * ITEMSIZE[self.datatype]
        chars = (ctypes.c_char * nbytes)()
        ctypes.memmove(chars, self.address, nbytes)
        return Buffer(ctypes.addressof(chars), self.count, self.datatype, chars)


def buffer(obj, name, datatype, writable):
    """obj as a Buffer; datatype None takes it from obj's element type, else
    reinterprets obj's elements, which must be that size."""
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"{name} must support the buffer protocol (a numpy array, bytearray, "
                        f"array.array or memoryview), got {type(obj).__name__}") from None
    if not view.c_contiguous:
        raise ValueError(f"{name} is not C-contiguous; pass a contiguous copy "
                         f"(e.g. numpy.ascontiguousarray)")
    if datatype is None:
        datatype = _datatype_of(obj, view, name)
    elif view.itemsize != ITEMSIZE[datatype]:
        raise TypeError(f"{name} has {view.itemsize}-byte elements but datatype={datatype.name} "
                        f"takes {ITEMSIZE[datatype]}-byte ones")
    count = view.nbytes // view.itemsize
    if not view.readonly:
        # The ctypes array holds an export of the buffer: the memory stays
        # put (a bytearray cannot be resized) for as long as it lives.
        chars = (ctypes.c_char * view.nbytes).from_buffer(view)
        return Buffer(ctypes.addressof(chars), count, datatype, chars)
    if writable:
        raise TypeError(f"{name} is read-only, and strata writes its result there")
    # ctypes gives the address of writable buffers only; numpy (and anything
    # with the array interface) tells its address directly.
    data = getattr(obj, "__array_interface__", {}).get("data")
    if not data:
        raise TypeError(f"{name} is read-only ({type(obj).__name__}); pass a writable buffer "
                        f"or a numpy array")
    return Buffer(data[0], count, datatype, obj)


def datatype_or_none(datatype):
    return None if datatype is None else as_enum(Datatype, datatype, "datatype")


def pair(buf, out, datatype):
    """Checks buf (read) and out (written; None or buf itself: in place).
    Returns two Buffers, the second None when in place."""
    datatype = datatype_or_none(datatype)
    if out is None or out is buf:
        return buffer(buf, "buf", datatype, writable=True), None
    source = buffer(buf, "buf", datatype, writable=False)
    target = buffer(out, "out", datatype, writable=True)
    if target.datatype != source.datatype:
        raise TypeError(f"out holds {target.datatype.name.lower()} but buf holds "
                        f"{source.datatype.name.lower()}; both must have one element type")
    return source, target


def same_count(buf, out):
    if out is not None and out.count != buf.count:
        raise ValueError(f"out has {out.count} elements but buf has {buf.count}; "
                         f"they must match")
