# cython: language_level=3, boundscheck=False, wraparound=False
"""Read one response frame off a plain TCP socket with the GIL released throughout.

The threaded driver's read-behind (:meth:`kclient.connection.BrokerConnection.read_behind`)
runs :func:`read_frame` on a helper thread while the caller decodes the answer before: the
kernel's copy of a large Fetch answer then runs beside the decoding instead of after it.  A
Python loop of ``recv_into`` calls could not: each call needs the GIL back, which the decoding
thread holds for up to the switch interval.  It only moves bytes; what they mean, and every
error, stays with the connection (it reads on from where this stopped).
"""

from cpython.bytearray cimport PyByteArray_FromStringAndSize
from libc.errno cimport EAGAIN, EINTR, errno


cdef extern from "<sys/socket.h>" nogil:
    ssize_t recv(int sockfd, void *buf, size_t n, int flags)


cdef extern from "<poll.h>" nogil:
    cdef struct pollfd:
        int fd
        short events
        short revents
    int poll(pollfd *fds, unsigned long nfds, int timeout)
    enum:
        POLLIN


cdef int _recv_exact(int fd, unsigned char *buf, Py_ssize_t n, Py_ssize_t *got,
                     int timeout_ms) noexcept nogil:
    """Read until ``got[0] == n``: 0 done, else it stopped (1 no byte within ``timeout_ms``,
    2 the stream ended, 3 a socket error)."""
    cdef pollfd pfd
    cdef ssize_t k
    cdef int ready
    pfd.fd = fd
    pfd.events = POLLIN
    while got[0] < n:
        k = recv(fd, buf + got[0], <size_t>(n - got[0]), 0)
        if k > 0:
            got[0] += k
            continue
        if k == 0:
            return 2
        if errno == EINTR:
            continue
        if errno != EAGAIN:  # (EWOULDBLOCK is EAGAIN on Linux, macOS and the BSDs)
            return 3
        pfd.revents = 0
        ready = poll(&pfd, 1, timeout_ms)
        if ready == 0:
            return 1
        if ready < 0 and errno != EINTR:
            return 3
    return 0


def read_frame(int fd, unsigned char[::1] head, unsigned char[::1] frame, int timeout_ms):
    """Read a 4-byte size prefix into ``head``, then, when the frame fits ``frame``, the frame
    into its start: ``(prefix bytes read, frame bytes read)``; where it stopped short (a
    timeout, the end of the stream, a socket error) the caller reads on and meets the cause."""
    cdef Py_ssize_t hgot = 0, fgot = 0
    cdef unsigned long n
    cdef int status
    with nogil:
        status = _recv_exact(fd, &head[0], 4, &hgot, timeout_ms)
        if status == 0:
            n = (<unsigned long>head[0] << 24) | (head[1] << 16) | (head[2] << 8) | head[3]
            if 4 <= n <= <unsigned long>frame.shape[0]:
                _recv_exact(fd, &frame[0], <Py_ssize_t>n, &fgot, timeout_ms)
    return hgot, fgot


def frame_buffer(Py_ssize_t n):
    """A bytearray of ``n`` bytes left as the allocator gave them (``bytearray(n)`` zeroes
    them first: a pass over megabytes that the frame's read overwrites anyway)."""
    return PyByteArray_FromStringAndSize(NULL, n)
