# cython: language_level=3, boundscheck=False, wraparound=False
"""The threaded driver's socket calls in C, where Python's own cost a thread switch.

:func:`read_frame` reads one response frame off a plain TCP socket with the GIL released
throughout: the read-behind (:meth:`kclient.connection.BrokerConnection.read_behind`) runs it on
a helper thread while the caller decodes the answer before, so the kernel's copy of a large
Fetch answer runs beside the decoding instead of after it.  A Python loop of ``recv_into`` calls
could not: each call needs the GIL back, which the decoding thread holds for up to the switch
interval.

:func:`send_small` writes a small request without letting go of the GIL: Python's ``sendall``
releases it around every send, and in a process with a second busy thread (a producer beside a
consumer) each release hands the GIL over, so the writer waits for it back before it reaches
its receive.  :func:`read_answer` waits for an answer and reads its whole frame with the GIL let go
throughout, so the waiting thread takes the GIL back once per answer, however many pieces the
broker wrote it in.  These only move bytes; what they mean, and every error, stays with the
connection.
"""

from cpython.bytearray cimport PyByteArray_FromStringAndSize
from libc.errno cimport EAGAIN, EINTR, errno
from libc.string cimport strerror


cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int sockfd, void *buf, size_t n, int flags)
    ssize_t send(int sockfd, const void *buf, size_t n, int flags)
    enum:
        MSG_DONTWAIT


cdef extern from *:
    """
    #include <sys/socket.h>
    #ifndef MSG_NOSIGNAL  /* macOS: Python ignores SIGPIPE anyway */
    #define MSG_NOSIGNAL 0
    #endif
    """
    enum:
        MSG_NOSIGNAL


cdef extern from "<poll.h>" nogil:
    cdef struct pollfd:
        int fd
        short events
        short revents
    int poll(pollfd *fds, unsigned long nfds, int timeout)
    enum:
        POLLIN


cdef extern from "<time.h>" nogil:
    cdef struct timespec:
        long tv_sec
        long tv_nsec
    int clock_gettime(int clk_id, timespec *tp)
    enum:
        CLOCK_MONOTONIC


cdef double _now() noexcept nogil:
    """``time.monotonic()`` (the same clock, CLOCK_MONOTONIC) without the GIL."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef int _fill(int fd, unsigned char *buf, Py_ssize_t *got, Py_ssize_t end, double deadline,
               bint once) noexcept nogil:
    """Read into ``buf[got[0]:end]`` from the non-blocking socket ``fd`` until it is full (with
    ``once``: until a read brought something), waiting at most until ``deadline``: 0 done,
    else why it stopped (1 the deadline, 2 the end of the stream, 3 a socket error in errno,
    4 a signal: Python runs its handler)."""
    cdef pollfd pfd
    cdef ssize_t k
    cdef int ready
    cdef double left
    pfd.fd = fd
    pfd.events = POLLIN
    while got[0] < end:
        k = recv(fd, buf + got[0], <size_t>(end - got[0]), 0)
        if k > 0:
            got[0] += k
            if once:
                return 0
            continue
        if k == 0:
            return 2
        if errno == EINTR:
            return 4
        if errno != EAGAIN:  # (EWOULDBLOCK is EAGAIN on Linux, macOS and the BSDs)
            return 3
        left = deadline - _now()
        if left <= 0:
            return 1
        pfd.revents = 0
        ready = poll(&pfd, 1, <int>(left * 1000) + 1)
        if ready < 0:
            return 4 if errno == EINTR else 3
    return 0


def read_frame(int fd, unsigned char[::1] head, unsigned char[::1] frame, int timeout_ms):
    """Read a 4-byte size prefix into ``head``, then, when the frame fits ``frame``, the frame
    into its start, within ``timeout_ms`` in all: ``(prefix bytes read, frame bytes read)``;
    where it stopped short (the time up, the end of the stream, a socket error, a signal) the
    caller reads on and meets the cause."""
    cdef Py_ssize_t hgot = 0, fgot = 0
    cdef unsigned long n
    cdef int status
    cdef double deadline
    with nogil:
        deadline = _now() + timeout_ms / 1000.0
        status = _fill(fd, &head[0], &hgot, 4, deadline, False)
        if status == 0:
            n = (<unsigned long>head[0] << 24) | (head[1] << 16) | (head[2] << 8) | head[3]
            if 4 <= n <= <unsigned long>frame.shape[0]:
                _fill(fd, &frame[0], &fgot, <Py_ssize_t>n, deadline, False)
    return hgot, fgot


def read_answer(int fd, unsigned char[::1] buf, double deadline):
    """Wait for an answer on the non-blocking socket ``fd`` and read it, the GIL let go
    throughout: what one read finds (up to the buffer), then the rest of the frame it began
    when the buffer holds that frame, until ``deadline`` (``time.monotonic()``'s clock).
    Returns ``(bytes read, why it stopped short, errno)``, why as :func:`_fill` gives it (0:
    not short).  A frame the broker writes in pieces (Kafka writes a Fetch answer in three)
    then takes the GIL back once, where Python's ``recv`` with a timeout takes it twice per
    piece (after its ``poll``, after its ``recv``)."""
    cdef Py_ssize_t got = 0, size = buf.shape[0], end
    cdef unsigned long n
    cdef int why = 0, err = 0
    if size < 8:
        raise ValueError(f"read_answer: a buffer of {size} bytes cannot hold a frame's head")
    with nogil:
        why = _fill(fd, &buf[0], &got, size, deadline, True)
        if why == 0 and got < 4:
            why = _fill(fd, &buf[0], &got, 4, deadline, False)
        if why == 0:
            n = (<unsigned long>buf[0] << 24) | (buf[1] << 16) | (buf[2] << 8) | buf[3]
            if 4 <= n <= <unsigned long>(size - 4) and got < <Py_ssize_t>n + 4:
                end = <Py_ssize_t>n + 4
                why = _fill(fd, &buf[0], &got, end, deadline, False)
        if why == 3:
            err = errno
    return got, why, err


def frame_buffer(Py_ssize_t n):
    """A bytearray of ``n`` bytes left as the allocator gave them (``bytearray(n)`` zeroes
    them first: a pass over megabytes that the frame's read overwrites anyway)."""
    return PyByteArray_FromStringAndSize(NULL, n)


def send_small(int fd, const unsigned char[::1] frame):
    """Write what the socket takes of ``frame`` now, without waiting and with the GIL held (a
    send of a few hundred bytes is shorter than a hand-over of the GIL): how many bytes it took
    (0 when its buffer is full); the caller sends the rest as usual.  A socket error raises
    OSError (no SIGPIPE for a closed peer)."""
    cdef ssize_t k
    cdef Py_ssize_t n = frame.shape[0]
    if n == 0:
        return 0
    while True:
        k = send(fd, &frame[0], <size_t>n, MSG_DONTWAIT | MSG_NOSIGNAL)
        if k >= 0:
            return k
        if errno == EINTR:
            continue
        if errno == EAGAIN:
            return 0
        raise OSError(errno, strerror(errno).decode())
