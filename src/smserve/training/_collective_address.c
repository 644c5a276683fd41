/*
 * XGBoost's collective, held to one address of this host.
 *
 * XGBoost binds each worker's peer listener and error listener to the wildcard address (its
 * C++ TCPSocket::BindHost takes no address, and no setting changes it), and connects to the
 * tracker and to its peers from sockets the kernel gives a source address of its choosing;
 * the tracker then tells every host to reach a worker at the address it saw that worker
 * connect from. So that every socket of a job is on the host's own address, this module
 * redirects the two calls XGBoost's library makes for them, in that library only:
 *
 *   bind(fd, <wildcard>:port)  ->  bind(fd, <address>:port)
 *   connect(fd, peer)          ->  bind(fd, <address>:0) first, when fd is not bound yet
 *   connect(fd, <loopback>:p)  ->  connect(fd, <address>:p), where p is a port one of those
 *                                  binds gave (at shutdown XGBoost wakes its own error
 *                                  listener through 127.0.0.1 or ::1, which no longer listens)
 *
 * Each of those connections is also sent without Nagle's delay (TCP_NODELAY), as XGBoost
 * already sends its peers' data. XGBoost's tracker protocol writes a length, then the message,
 * then waits for the answer: with Nagle's algorithm the message waits for the length's
 * acknowledgement, which the receiver delays (40 ms on Linux). Joining a group took 44 ms on
 * loopback that way, 2 ms without it.
 *
 * It does so by rewriting the library's own GOT slots for `bind` and `connect` (the entries
 * the dynamic linker filled with libc's functions) to point at the wrappers below
 * (_got_slots.c). Nothing else in the process is touched: Python's sockets, other libraries
 * and libc itself keep the real functions. The wrappers pass every call through unchanged
 * until an address is set (`hold`), and again after `release`. A family other than the
 * address's passes through too.
 *
 * Linux, glibc, ELF64 on x86-64 and AArch64; elsewhere `hold` raises OSError and the caller
 * logs that the listeners stay on the wildcard address.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_got_slots.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

/* The address every wrapped call is held to; family 0: none (pass everything through). */
static struct sockaddr_storage held;
static socklen_t held_length;

/* The ports of the listeners held_bind moved from the wildcard address (network order). */
#define MAX_OWN_PORTS 64
static in_port_t own_ports[MAX_OWN_PORTS];
static int n_own_ports;

enum address_kind { OTHER_ADDRESS, WILDCARD_ADDRESS, LOOPBACK_ADDRESS };

/* Whether `address` is its family's wildcard address (0.0.0.0, ::), its loopback address
   (127.0.0.1, ::1) or another. */
static enum address_kind kind_of(const struct sockaddr *address, socklen_t length) {
    if (address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
        in_addr_t ip = ((const struct sockaddr_in *)address)->sin_addr.s_addr;
        return ip == htonl(INADDR_ANY)        ? WILDCARD_ADDRESS
               : ip == htonl(INADDR_LOOPBACK) ? LOOPBACK_ADDRESS
                                              : OTHER_ADDRESS;
    }
    if (address->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct in6_addr *ip = &((const struct sockaddr_in6 *)address)->sin6_addr;
        return IN6_IS_ADDR_UNSPECIFIED(ip) ? WILDCARD_ADDRESS
               : IN6_IS_ADDR_LOOPBACK(ip)  ? LOOPBACK_ADDRESS
                                           : OTHER_ADDRESS;
    }
    return OTHER_ADDRESS;
}

static int holds(const struct sockaddr *address) {
    return address != NULL && held.ss_family != 0 && address->sa_family == held.ss_family;
}

/* `held` with `port` (network order), for a bind. */
static void held_with_port(struct sockaddr_storage *out, in_port_t port) {
    memcpy(out, &held, sizeof(held));
    if (held.ss_family == AF_INET) {
        ((struct sockaddr_in *)out)->sin_port = port;
    } else {
        ((struct sockaddr_in6 *)out)->sin6_port = port;
    }
}

static in_port_t port_of(const struct sockaddr *address) {
    if (address->sa_family == AF_INET) {
        return ((const struct sockaddr_in *)address)->sin_port;
    }
    return ((const struct sockaddr_in6 *)address)->sin6_port;
}

/* The port `fd` is bound to (network order); 0 when it is not bound. */
static in_port_t bound_port(int fd) {
    struct sockaddr_storage local;
    socklen_t length = sizeof(local);
    if (getsockname(fd, (struct sockaddr *)&local, &length) != 0) {
        return 0;
    }
    return port_of((const struct sockaddr *)&local);
}

static void remember_port(in_port_t port) {
    int at = __atomic_fetch_add(&n_own_ports, 1, __ATOMIC_SEQ_CST);
    if (at < MAX_OWN_PORTS) {
        __atomic_store_n(&own_ports[at], port, __ATOMIC_SEQ_CST);
    }
}

static int is_own_port(in_port_t port) {
    int count = __atomic_load_n(&n_own_ports, __ATOMIC_SEQ_CST);
    for (int i = 0; i < count && i < MAX_OWN_PORTS; ++i) {
        if (__atomic_load_n(&own_ports[i], __ATOMIC_SEQ_CST) == port) {
            return 1;
        }
    }
    return 0;
}

static int held_bind(int fd, const struct sockaddr *address, socklen_t length) {
    if (!holds(address) || kind_of(address, length) != WILDCARD_ADDRESS) {
        return bind(fd, address, length);
    }
    struct sockaddr_storage own;
    held_with_port(&own, port_of(address));
    int result = bind(fd, (const struct sockaddr *)&own, held_length);
    if (result == 0) {
        remember_port(bound_port(fd));
    }
    return result;
}

/* `fd` sends each write at once, when it is a TCP socket (best effort: a failure changes
   nothing but the delay). */
static void without_nagle(int fd) {
    int type = 0;
    socklen_t length = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == SOCK_STREAM) {
        int on = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    }
}

static int held_connect(int fd, const struct sockaddr *address, socklen_t length) {
    if (!holds(address)) {
        return connect(fd, address, length);
    }
    without_nagle(fd);
    struct sockaddr_storage own;
    if (bound_port(fd) == 0) {
        held_with_port(&own, 0);
        if (bind(fd, (const struct sockaddr *)&own, held_length) != 0) {
            return -1; /* errno from bind: the connection would leave from another address */
        }
    }
    if (kind_of(address, length) == LOOPBACK_ADDRESS && is_own_port(port_of(address))) {
        held_with_port(&own, port_of(address));
        return connect(fd, (const struct sockaddr *)&own, held_length);
    }
    return connect(fd, address, length);
}

/* --- the Python face ------------------------------------------------------------------ */

static int parse_address(const char *text, struct sockaddr_storage *out, socklen_t *length) {
    memset(out, 0, sizeof(*out));
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        *length = sizeof(*v4);
        return 1;
    }
    if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        *length = sizeof(*v6);
        return 1;
    }
    return 0;
}

static PyObject *hold(PyObject *self, PyObject *args) {
    (void)self;
    const char *library = NULL, *address = NULL;
    if (!PyArg_ParseTuple(args, "ss", &library, &address)) {
        return NULL;
    }
    struct sockaddr_storage parsed;
    socklen_t length = 0;
    if (!parse_address(address, &parsed, &length)) {
        PyErr_Format(PyExc_ValueError, "%s is not an IPv4 or IPv6 address", address);
        return NULL;
    }
    static const struct got_wrapper wrappers[] = {
        {"bind", (void *)held_bind},
        {"connect", (void *)held_connect},
        {NULL, NULL},
    };
    const char *reason = NULL;
    int rewritten = rewrite_got_slots(library, wrappers, &reason);
    if (rewritten <= 0) {
        PyErr_Format(PyExc_OSError, "%s: %s", library,
                     rewritten == 0 ? "it imports neither bind nor connect" : reason);
        return NULL;
    }
    memcpy(&held, &parsed, sizeof(held));
    held_length = length;
    return PyLong_FromLong(rewritten);
}

static PyObject *release(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    memset(&held, 0, sizeof(held));
    held_length = 0;
    __atomic_store_n(&n_own_ports, 0, __ATOMIC_SEQ_CST);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"hold", hold, METH_VARARGS,
     "hold(library, address) -> slots: the loaded library's bind and connect held to address"},
    {"release", release, METH_NOARGS, "release(): the wrappers pass every call through again"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_collective_address", NULL, -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__collective_address(void) { return PyModule_Create(&module); }
