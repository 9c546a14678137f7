# cython: boundscheck=False, wraparound=False, language_level=3
"""C twins of the consumer's hot walks, each declining (None) what it does not handle so
that its pure-Python twin, the reference, decides and names what is wrong (tests compare each
pair): the common case of :func:`kclient.protocol.records.v2_walk.decode_columns` (a v2
batch's records with offset deltas 0..n-1 and no headers, in one pass; ValueError/IndexError
on damage), the caught-up reader's usual answer (:func:`plain_batches`, for
:mod:`kclient.core.fetch_plain`) and its Fetch v12 frame (:func:`read_one_partition`, for
:mod:`kclient.protocol.fetch_one`); and two record builders (:func:`untrack_flat`,
:func:`build_rows`)."""
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.tuple cimport PyTuple_New


cdef inline long long _varint(const unsigned char[:] buf, Py_ssize_t *pos,
                              Py_ssize_t end) except? -1:
    cdef unsigned long long result = 0
    cdef int shift = 0
    cdef unsigned char b
    while True:
        if pos[0] >= end:
            raise IndexError("varint runs past the record")
        b = buf[pos[0]]
        pos[0] += 1
        result |= (<unsigned long long>(b & 0x7F)) << shift
        if b < 128:
            break
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")
    return <long long>((result >> 1) ^ (0 - (result & 1)))


cpdef walk_plain(const unsigned char[:] buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count):
    """``(timestamp deltas, keys or None, values)`` of ``count`` records in
    ``buf[start:end]``, or None when a record has headers or an offset delta other than its
    index, or bytes are left over."""
    cdef Py_ssize_t pos = start, rec_end, i
    cdef long long length, tsd, od, klen, vlen, hcount
    cdef list tss = [], vals = []
    cdef object keys = None, key, value
    if end > buf.shape[0] or start < 0:
        raise IndexError("records section outside the buffer")
    for i in range(count):
        length = _varint(buf, &pos, end)
        if length < 0 or pos + length > end:
            raise ValueError("record length outside the batch")
        rec_end = pos + <Py_ssize_t>length
        pos += 1                                    # attributes
        tsd = _varint(buf, &pos, rec_end)
        od = _varint(buf, &pos, rec_end)
        if od != i:
            return None
        klen = _varint(buf, &pos, rec_end)
        if klen >= 0:
            if pos + klen > rec_end:
                raise ValueError("key runs past the record")
            key = PyBytes_FromStringAndSize(<const char *>&buf[pos], <Py_ssize_t>klen) \
                if klen else b""
            pos += <Py_ssize_t>klen
            if keys is None:
                keys = [None] * i
            keys.append(key)
        elif keys is not None:
            keys.append(None)
        vlen = _varint(buf, &pos, rec_end)
        if vlen >= 0:
            if pos + vlen > rec_end:
                raise ValueError("value runs past the record")
            value = PyBytes_FromStringAndSize(<const char *>&buf[pos], <Py_ssize_t>vlen) \
                if vlen else b""
            pos += <Py_ssize_t>vlen
        else:
            value = None
        hcount = _varint(buf, &pos, rec_end)
        if hcount != 0:
            return None
        if pos != rec_end:
            raise ValueError("bytes left in a record")
        tss.append(tsd)
        vals.append(value)
    if pos != end:
        return None
    return tss, keys, vals


cdef extern from "Python.h":
    ctypedef struct PyObject
    ctypedef struct PyTypeObject:
        Py_ssize_t tp_dictoffset
        PyObject *(*tp_alloc)(PyTypeObject *, Py_ssize_t)
    PyTypeObject *Py_TYPE(object)
    void Py_INCREF(object)
    void Py_DECREF(object)
    int PyList_CheckExact(object)
    void PyTuple_SET_ITEM(object, Py_ssize_t, object)
    int PyObject_IS_GC(object)
    int PyTuple_CheckExact(object)
    int PyObject_GC_IsTracked(object)
    void PyObject_GC_UnTrack(void *)


def untrack_flat(list items, object shared=None):
    """Stop the cyclic collector tracking each tuple of ``items`` (a record: a NamedTuple)
    whose fields cannot hold references to others (bytes, str, int, None, an untracked exact
    tuple: CPython's own rule for untracking tuples) or are ``shared``
    (an immutable empty list): such a tuple can be in no reference cycle, yet the collector
    scans every tuple subclass in each collection while it lives (CPython untracks only exact
    tuples itself).  Anything else in ``items`` is left as it is, as is a tuple with a
    ``__dict__`` (which could hold anything)."""
    cdef object t, field
    cdef bint flat
    for t in items:
        if (
            not isinstance(t, tuple)
            or not PyObject_GC_IsTracked(t)
            or Py_TYPE(t).tp_dictoffset != 0
        ):
            continue
        flat = True
        for field in <tuple>t:
            if field is shared or not PyObject_IS_GC(field):
                continue
            if not PyTuple_CheckExact(field) or PyObject_GC_IsTracked(field):
                flat = False  # (a dict untracked now is tracked again once it holds one)
                break
        if flat:
            PyObject_GC_UnTrack(<void *>t)


def build_rows(type cls, Py_ssize_t n, tuple fields):
    """``n`` instances of ``cls``, tuple or a tuple subclass (a NamedTuple of ``len(fields)``
    fields, at most 32), allocated and filled directly: row ``i`` takes ``field[i]`` of each field that
    is an exact list, and the field itself of any other (one value for every row).  What
    ``list(map(tuple.__new__, repeat(cls), zip(...)))`` builds, without a temporary tuple per
    row (kclient.core.consumer_records.build_records; its Python twin is that line)."""
    cdef Py_ssize_t width = len(fields), i, f
    cdef PyTypeObject *tp = <PyTypeObject *><void *>cls
    cdef PyObject *raw
    cdef object row, value
    cdef list out
    cdef bint per_row[32]
    cdef bint exact = cls is tuple
    if not issubclass(cls, tuple):
        raise TypeError(f"build_rows builds tuples, not {cls!r}")
    if n < 0 or width > 32:
        raise ValueError(f"build_rows: {n} rows of {width} fields")
    for f in range(width):
        per_row[f] = PyList_CheckExact(fields[f])
        if per_row[f] and len(<list>fields[f]) < n:
            raise ValueError(f"field {f} has {len(<list>fields[f])} values, not {n}")
    out = [None] * n
    for i in range(n):
        if exact:
            row = PyTuple_New(width)
        else:
            raw = tp.tp_alloc(tp, width)
            if raw == NULL:
                raise MemoryError()
            row = <object>raw  # (a new reference on top of the one tp_alloc gave)
            Py_DECREF(row)
        for f in range(width):
            value = fields[f]
            if per_row[f]:
                value = (<list>value)[i]
            Py_INCREF(value)  # (SET_ITEM takes it over)
            PyTuple_SET_ITEM(row, f, value)
        out[i] = row
    return out


cdef inline long long _be64(const unsigned char[:] b, Py_ssize_t p):
    cdef unsigned long long v = 0
    cdef int k
    for k in range(8):
        v = (v << 8) | b[p + k]
    return <long long>v


cdef inline long _be32(const unsigned char[:] b, Py_ssize_t p):
    return <long>(<int>((<unsigned int>b[p] << 24) | (<unsigned int>b[p + 1] << 16)
                        | (<unsigned int>b[p + 2] << 8) | <unsigned int>b[p + 3]))


def plain_batches(object records, long long start_offset, Py_ssize_t max_first, object crc):
    """C twin of the common answer of :func:`kclient.core.fetch_plain.plain_part`: the complete
    entries of ``records`` (a partial one at the end is left) when every one is a v2 batch,
    uncompressed, not a control batch, at or after ``start_offset``, with its records' offset
    deltas 0..n-1 and no headers (:func:`walk_plain`), the first within ``max_first`` bytes and,
    with ``crc`` (the crc32c function), each CRC right: ``(offsets, timestamps, timestamp
    types, keys or None, values, None, next offset)``.  None for anything else or any damage:
    the Python path then decides and names what is wrong (tests/core compare the two)."""
    cdef const unsigned char[:] buf = records
    cdef Py_ssize_t pos = 0, end = buf.shape[0], total, before, i
    cdef long long base, size, last, base_ts, max_ts, count
    cdef long long nxt = -1
    cdef int attrs
    cdef list offsets = [], stamps = [], types = [], vals = [], tss
    cdef object keys = None, view = None, walked, got
    while end - pos >= 12:
        base = _be64(buf, pos)
        size = _be32(buf, pos + 8)
        total = 12 + <Py_ssize_t>size
        if size < 14:
            return None
        if pos + total > end:
            break  # a partial entry at the end
        if buf[pos + 16] != 2 or size < 49 or (nxt < 0 and total > max_first):
            return None
        if crc is not None:
            if view is None:
                view = memoryview(records)
            if crc(view[pos + 21:pos + total]) != <unsigned int>_be32(buf, pos + 17):
                return None
        attrs = (buf[pos + 21] << 8) | buf[pos + 22]
        last = _be32(buf, pos + 23)
        base_ts = _be64(buf, pos + 27)
        max_ts = _be64(buf, pos + 35)
        count = _be32(buf, pos + 57)
        if attrs & 0x27 or base < start_offset or count != last + 1 or count < 0:
            return None
        try:
            walked = walk_plain(buf, pos + 61, pos + total, <Py_ssize_t>count)
        except (ValueError, IndexError):
            return None
        if walked is None:
            return None
        tss, got = walked[0], walked[1]
        before = len(vals)
        vals += <list>walked[2]
        offsets += range(base, base + count)
        if attrs & 0x08:  # log-append time: the batch's max timestamp for every record
            stamps += [max_ts] * count
            types += [1] * count
        else:
            for i in range(count):
                stamps.append(base_ts + <long long>tss[i])
            types += [0] * count
        if got is not None:
            if keys is None:
                keys = [None] * before
            keys += <list>got
        elif keys is not None:
            keys += [None] * count
        nxt = base + last + 1
        pos += total
    if not vals:
        return None
    return offsets, stamps, types, keys, vals, None, nxt


def read_one_partition(object view, Py_ssize_t pos, type struct_cls):
    """C twin of :func:`kclient.protocol.fetch_one.read_one_partition` (``struct_cls``: its
    ``Struct``): the same answer tree from a Fetch v12 body at ``pos`` of ``view``, or None
    where that function gives None (tests/protocol/test_fetch_one.py compares the two)."""
    cdef const unsigned char[:] b = view
    cdef Py_ssize_t end = b.shape[0], n, size, rend, shift
    cdef long throttle, session_id, index, replica
    cdef int code, error, listed
    cdef long long high, stable, start
    cdef unsigned char c
    cdef object topic, records = None
    if pos < 0 or pos + 12 > end:
        return None
    throttle = _be32(b, pos)
    code = <short>((b[pos + 4] << 8) | b[pos + 5])
    session_id = _be32(b, pos + 6)
    pos += 10
    if b[pos] != 2:
        return None
    n = b[pos + 1]
    if not 0 < n < 0x80 or pos + 1 + n + 32 > end:
        return None
    try:
        topic = view[pos + 2:pos + 1 + n].tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    pos += 1 + n
    if b[pos] != 2:
        return None
    index = _be32(b, pos + 1)
    error = <short>((b[pos + 5] << 8) | b[pos + 6])
    high = _be64(b, pos + 7)
    stable = _be64(b, pos + 15)
    start = _be64(b, pos + 23)
    pos += 31
    if pos + 6 > end:
        return None
    listed = b[pos]
    if listed > 1:
        return None
    replica = _be32(b, pos + 1)
    pos += 5
    size = 0
    shift = 0
    while True:  # the records' length + 1, an unsigned varint
        if pos >= end or shift > 28:
            return None
        c = b[pos]
        pos += 1
        size |= <Py_ssize_t>(c & 0x7F) << shift
        if c < 0x80:
            break
        shift += 7
    if size:
        rend = pos + size - 1
        if rend > end:
            return None
        records = view[pos:rend]
        pos = rend
    if end - pos != 3 or b[pos] or b[pos + 1] or b[pos + 2]:
        return None
    part = struct_cls.__new__(struct_cls)
    part.__dict__ = {
        "partition_index": index,
        "error_code": error,
        "high_watermark": high,
        "last_stable_offset": stable,
        "log_start_offset": start,
        "aborted_transactions": [] if listed else None,
        "preferred_read_replica": replica,
        "records": records,
    }
    topic_answer = struct_cls.__new__(struct_cls)
    topic_answer.__dict__ = {"topic": topic, "partitions": [part]}
    answer = struct_cls.__new__(struct_cls)
    answer.__dict__ = {
        "throttle_time_ms": throttle,
        "error_code": code,
        "session_id": session_id,
        "responses": [topic_answer],
    }
    return answer
