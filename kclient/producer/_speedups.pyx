# cython: language_level=3, boundscheck=False, wraparound=False
"""Optional C versions of the producer's per-message steps: building a ProducerData, the async
``send()`` and ``produce()`` of one message, and resolving produce()'s futures.  Built from this file by Cython when kclient is installed; where
it is not built (or ``KCLIENT_PURE_PYTHON=1``), :mod:`kclient.producer.data` and
:mod:`kclient.producer.producer` run the same logic in Python.  Each Python twin is the
reference: keep the two in step (tests/producer/test_speedups.py compares them)."""
from time import sleep as _yield

cimport cython
from cpython.object cimport PyObject

from kclient._args import one_of
from kclient.producer.data_methods import NO as _NO
from kclient.producer.data_methods import describe, equal, get_extra, set_extra, wrong_call


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)
    void PyObject_GC_Track(void *op)
    int PyObject_GC_IsTracked(object op)


cdef extern from *:
    """
    #include <string.h>
    #include <structmember.h>
    /* Put a slot-style member descriptor (what __slots__ makes) in place of Cython's property
       for an object field: Python code reads it as fast as a __slots__ attribute (CPython
       specialises member descriptors), where a property costs twice as much. */
    static int kclient_member(PyObject *type, const char *name, Py_ssize_t offset) {
        /* the descriptor refers to its PyMemberDef and name for the type's lifetime: copies */
        PyMemberDef *keep = PyMem_Malloc(sizeof(PyMemberDef));
        char *kept_name = PyMem_Malloc(strlen(name) + 1);
        PyObject *descr;
        int rc;
        if (keep == NULL || kept_name == NULL) { PyErr_NoMemory(); return -1; }
        strcpy(kept_name, name);
        keep->name = kept_name;
        keep->type = T_OBJECT_EX;
        keep->offset = offset;
        keep->flags = 0;
        keep->doc = NULL;
        descr = PyDescr_NewMember((PyTypeObject *)type, keep);
        if (descr == NULL) return -1;
        rc = PyDict_SetItemString(((PyTypeObject *)type)->tp_dict, name, descr);
        Py_DECREF(descr);
        PyType_Modified((PyTypeObject *)type);
        return rc;
    }
    """
    int kclient_member(object type, const char *name, Py_ssize_t offset) except -1


@cython.no_gc
cdef class ProducerData:
    """The C twin of kclient.producer.data._PyProducerData (its docstring says it all).

    Not tracked by the cycle collector (no_gc): a message refers to its topic, value, key and
    headers, which never refer back to it, so it can be in no cycle; tracked, building a list
    of messages cost twice as much (the collector ran every 700 messages, over all of them).
    """
    cdef object topic
    cdef object value
    cdef object _extra

    def __init__(self, topic, value, key=None, partition=None, timestamp=None, headers=None):
        self.topic = topic
        self.value = value
        if key is None and partition is None and timestamp is None and headers is None:
            self._extra = None
        else:
            self._extra = (key, partition, timestamp, headers)

    @property
    def key(self):
        return get_extra(self, 0)

    @key.setter
    def key(self, value):
        set_extra(self, 0, value)

    @property
    def partition(self):
        return get_extra(self, 1)

    @partition.setter
    def partition(self, value):
        set_extra(self, 1, value)

    @property
    def timestamp(self):
        return get_extra(self, 2)

    @timestamp.setter
    def timestamp(self, value):
        set_extra(self, 2, value)

    @property
    def headers(self):
        return get_extra(self, 3)

    @headers.setter
    def headers(self, value):
        set_extra(self, 3, value)

    def __repr__(self):
        return describe(self)

    def __eq__(self, other):
        return equal(self, other)

    __hash__ = None

    def __reduce__(self):
        from kclient.producer.data import _restore
        return (_restore, (self.topic, self.value) + (self._extra or ()))


cdef Py_ssize_t _offset_of(ProducerData probe, object field) except -1:
    """Where in the object ``field`` (a field's current value) is stored."""
    cdef char *base = <char *><void *>probe
    cdef Py_ssize_t off
    for off in range(sizeof(PyObject), 16 * sizeof(void *), sizeof(void *)):
        if (<PyObject **>(base + off))[0] == <PyObject *>field:
            return off
    raise RuntimeError("ProducerData: field not found in the object layout")


cdef int _slot_members() except -1:
    """Give ProducerData's three fields member descriptors (see kclient_member)."""
    cdef ProducerData probe = ProducerData(object(), object(), key=1)
    for name, field in (("topic", probe.topic), ("value", probe.value), ("_extra", probe._extra)):
        kclient_member(ProducerData, name.encode(), _offset_of(probe, field))
    return 0


_slot_members()


cdef class FastSend:
    """The async ``send()`` (see Producer._fast_send, its Python twin, for the why of each step)."""
    cdef object q, append, t, pd, check, slow, many, new_future
    cdef Py_ssize_t limit
    cdef public object __doc__

    def __init__(self, q, t, Py_ssize_t limit, pd, check, slow, many, doc=None,
                 new_future=None):
        self.q, self.append, self.t, self.limit = q, q.append, t, limit
        self.pd, self.check, self.slow, self.many = pd, check, slow, many
        self.new_future = new_future
        self.__doc__ = doc

    def produce(self, topic, value=None, key=None, partition=None, headers=None,
                timestamp=None, on_delivery=None, callback=None, timestamp_ms=None):
        """The async ``produce()`` (Producer._fast_produce's closure is its Python twin)."""
        cdef Py_ssize_t n
        cdef FutureCore f = FutureCore.__new__(self.new_future)
        if callback is not None or timestamp_ms is not None:
            on_delivery = one_of("produce()", on_delivery=on_delivery, callback=callback)
            timestamp = one_of("produce()", timestamp=timestamp, timestamp_ms=timestamp_ms)
        f._on_delivery = on_delivery
        if key is None and partition is None and timestamp is None and headers is None:
            if (type(value) is bytes and len(<bytes>value) <= self.limit) or \
                    (type(value) is bytearray and len(<bytearray>value) <= self.limit):
                entry = (topic, value, f)
                # neither can be in a reference cycle while the message is delivered (a
                # future keeps no reference to its report): out of the cycle collector, which
                # otherwise cost more than the rest; resolve() puts them back on an error
                PyObject_GC_UnTrack(<void *>entry)
            else:
                self.check(self.pd(topic, value))
                entry = (topic, value, f)
        else:
            f._ts = timestamp
            self.check(self.pd(topic, value, key))
            entry = (topic, value, key, partition, timestamp, headers, f)
        if on_delivery is None:
            PyObject_GC_UnTrack(<void *>f)
        t = self.t
        n = len(self.q)
        if n >= t.limit:
            self.slow([entry])
            return f
        self.append(entry)
        if n >= t.wake_at:
            t.wake()
        elif not n & 1023:
            _yield(0)
        return f

    def __call__(self, data, value=_NO, key=_NO, partition=_NO, headers=_NO, timestamp=_NO,
                 timestamp_ms=_NO, on_delivery=_NO):
        cdef ProducerData d
        cdef Py_ssize_t n
        if value is not _NO or key is not _NO or partition is not _NO or headers is not _NO \
                or timestamp is not _NO or timestamp_ms is not _NO or on_delivery is not _NO:
            raise wrong_call(data, value, key, partition, headers, timestamp, timestamp_ms,
                             on_delivery)
        if type(data) is self.pd:
            d = <ProducerData>data
            v = d.value
            x = d._extra
            if x is None and ((type(v) is bytes and len(<bytes>v) <= self.limit) or
                              (type(v) is bytearray and len(<bytearray>v) <= self.limit)):
                entry = (d.topic, v)
            else:
                self.check(data)
                entry = (d.topic, v) if x is None else (d.topic, v) + x
            t = self.t
            n = len(self.q)
            if n >= t.limit:
                return self.slow([entry])
            self.append(entry)
            if n >= t.wake_at:
                t.wake()
            elif not n & 1023:
                _yield(0)
            return None
        return self.many(data)


cdef class FutureCore:
    """The fields of kclient.producer.future.DeliveryFuture (its Python twin has them as
    slots): C fields are set and read without Python code on both hot paths."""
    cdef public object _outcome, _on_delivery, _ts, _cond
    cdef public Py_ssize_t _index

    def __init__(self, on_delivery=None, timestamp=None):
        self._on_delivery = on_delivery
        self._ts = timestamp


def resolve(list reports):
    """Resolve produce()'s futures in delivery reports (kclient.producer.future.resolve is the
    Python twin)."""
    cdef Py_ssize_t i, n
    cdef tuple e
    cdef FutureCore f
    for r in reports:
        es = r._entries
        if es is None:
            continue
        error = r.error
        o = (r.topic, r.partition, r.base_offset, error, r.timestamp, r.create_time)
        i = 0
        for e in es:
            n = len(e)
            if n == 3 or n == 7:
                f = e[n - 1]
                f._index = i
                f._outcome = o
                if error is not None:
                    # an error's traceback can lead back to this entry (a frame holding the
                    # batch): the collector must see the future and its entry again
                    if not PyObject_GC_IsTracked(f):
                        PyObject_GC_Track(<void *>f)
                    if not PyObject_GC_IsTracked(e):
                        PyObject_GC_Track(<void *>e)
                if f._cond is not None or f._on_delivery is not None:
                    f._finish()
            i += 1
