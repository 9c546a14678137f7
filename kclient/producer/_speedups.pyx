# cython: language_level=3, boundscheck=False, wraparound=False
"""Optional C versions of the producer's two per-message steps: building a ProducerData and the
async ``send()`` of one message.  Built from this file by Cython when kclient is installed; where
it is not built (or ``KCLIENT_PURE_PYTHON=1``), :mod:`kclient.producer.data` and
:mod:`kclient.producer.producer` run the same logic in Python.  Each Python twin is the
reference: keep the two in step (tests/producer/test_speedups.py compares them)."""
from time import sleep as _yield

from kclient.producer.data_methods import describe, equal, get_extra, set_extra


cdef class ProducerData:
    """The C twin of kclient.producer.data._PyProducerData (its docstring says it all)."""
    cdef public object topic
    cdef public object value
    cdef public object _extra

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


cdef class FastSend:
    """The async ``send()`` (see Producer._fast_send, its Python twin, for the why of each step)."""
    cdef object q, append, t, pd, check, slow, many
    cdef Py_ssize_t limit
    cdef public object __doc__

    def __init__(self, q, t, Py_ssize_t limit, pd, check, slow, many, doc=None):
        self.q, self.append, self.t, self.limit = q, q.append, t, limit
        self.pd, self.check, self.slow, self.many = pd, check, slow, many
        self.__doc__ = doc

    def __call__(self, data):
        cdef ProducerData d
        cdef Py_ssize_t n
        if type(data) is self.pd:
            d = <ProducerData>data
            v = d.value
            x = d._extra
            if x is None and type(v) is bytes and len(<bytes>v) <= self.limit:
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
