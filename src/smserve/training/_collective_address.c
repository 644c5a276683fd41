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
 * It does so by rewriting the library's own GOT slots for `bind` and `connect` (the entries
 * the dynamic linker filled with libc's functions) to point at the wrappers below. Nothing
 * else in the process is touched: Python's sockets, other libraries and libc itself keep the
 * real functions. The wrappers pass every call through unchanged until an address is set
 * (`hold`), and again after `release`. A family other than the address's passes through too.
 *
 * Linux, glibc, ELF64 on x86-64 and AArch64; elsewhere `hold` raises OSError and the caller
 * logs that the listeners stay on the wildcard address.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* defines _GNU_SOURCE, which dlinfo needs */

#include <arpa/inet.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SLOT_JUMP R_X86_64_JUMP_SLOT
#define SLOT_DATA R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define SLOT_JUMP R_AARCH64_JUMP_SLOT
#define SLOT_DATA R_AARCH64_GLOB_DAT
#endif

/* The address every wrapped call is held to; family 0: none (pass everything through). */
static struct sockaddr_storage held;
static socklen_t held_length;

/* The ports of the listeners held_bind moved from the wildcard address (network order). */
#define MAX_OWN_PORTS 64
static in_port_t own_ports[MAX_OWN_PORTS];
static int n_own_ports;

static int is_wildcard(const struct sockaddr *address, socklen_t length) {
    if (address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
        return ((const struct sockaddr_in *)address)->sin_addr.s_addr == htonl(INADDR_ANY);
    }
    if (address->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct in6_addr *ip = &((const struct sockaddr_in6 *)address)->sin6_addr;
        return IN6_IS_ADDR_UNSPECIFIED(ip);
    }
    return 0;
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
    if (!holds(address) || !is_wildcard(address, length)) {
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

static int is_loopback(const struct sockaddr *address, socklen_t length) {
    if (address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
        return ((const struct sockaddr_in *)address)->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
    }
    if (address->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)address)->sin6_addr);
    }
    return 0;
}

static int held_connect(int fd, const struct sockaddr *address, socklen_t length) {
    if (!holds(address)) {
        return connect(fd, address, length);
    }
    struct sockaddr_storage own;
    if (bound_port(fd) == 0) {
        held_with_port(&own, 0);
        if (bind(fd, (const struct sockaddr *)&own, held_length) != 0) {
            return -1; /* errno from bind: the connection would leave from another address */
        }
    }
    if (is_loopback(address, length) && is_own_port(port_of(address))) {
        held_with_port(&own, port_of(address));
        return connect(fd, (const struct sockaddr *)&own, held_length);
    }
    return connect(fd, address, length);
}

/* --- rewriting one library's GOT slots ------------------------------------------------ */

#if defined(SLOT_JUMP)

struct tables {
    const ElfW(Sym) *symbols;
    const char *names;
    const ElfW(Rela) *relocations[2];
    size_t sizes[2];
};

/* glibc stores most dynamic pointers relocated; a value below the load address is not. */
static const void *loaded(const struct link_map *map, ElfW(Addr) value) {
    return (const void *)(value < map->l_addr ? value + map->l_addr : value);
}

static int read_tables(const struct link_map *map, struct tables *out) {
    memset(out, 0, sizeof(*out));
    for (const ElfW(Dyn) *entry = map->l_ld; entry->d_tag != DT_NULL; ++entry) {
        switch (entry->d_tag) {
            case DT_SYMTAB: out->symbols = loaded(map, entry->d_un.d_ptr); break;
            case DT_STRTAB: out->names = loaded(map, entry->d_un.d_ptr); break;
            case DT_JMPREL: out->relocations[0] = loaded(map, entry->d_un.d_ptr); break;
            case DT_PLTRELSZ: out->sizes[0] = entry->d_un.d_val; break;
            case DT_RELA: out->relocations[1] = loaded(map, entry->d_un.d_ptr); break;
            case DT_RELASZ: out->sizes[1] = entry->d_un.d_val; break;
            default: break;
        }
    }
    return out->symbols != NULL && out->names != NULL;
}

struct relro {
    uintptr_t start, end; /* the pages the dynamic linker made read-only after relocating */
};

struct object_search {
    ElfW(Addr) base;
    struct relro found;
};

static int find_relro(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct object_search *search = data;
    if (info->dlpi_addr != search->base) {
        return 0;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type == PT_GNU_RELRO) {
            uintptr_t start = info->dlpi_addr + header->p_vaddr;
            search->found.start = start & ~(page - 1);
            search->found.end = (start + header->p_memsz) & ~(page - 1);
        }
    }
    return 1;
}

static struct relro relro_of(const struct link_map *map) {
    struct object_search search = {map->l_addr, {0, 0}};
    dl_iterate_phdr(find_relro, &search);
    return search.found;
}

/* Writes one slot. A slot in the read-only RELRO pages is opened for the write and closed
   again; one in the writable .got.plt is written as it is. */
static int write_slot(void **slot, void *function, struct relro relro) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    void *start = (void *)((uintptr_t)slot & ~(page - 1));
    int read_only = (uintptr_t)start >= relro.start && (uintptr_t)start < relro.end;
    if (read_only && mprotect(start, page, PROT_READ | PROT_WRITE) != 0) {
        return -1;
    }
    __atomic_store_n(slot, function, __ATOMIC_SEQ_CST);
    if (read_only && mprotect(start, page, PROT_READ) != 0) {
        return -1;
    }
    return 0;
}

static void *wrapper_for(const char *name) {
    if (strcmp(name, "bind") == 0) {
        return (void *)held_bind;
    }
    if (strcmp(name, "connect") == 0) {
        return (void *)held_connect;
    }
    return NULL;
}

/* Rewrites the slots of one relocation table; returns how many, or -1 (errno set). */
static int rewrite(const struct link_map *map, const struct tables *tables, int which,
                   struct relro relro) {
    const ElfW(Rela) *table = tables->relocations[which];
    size_t count = table == NULL ? 0 : tables->sizes[which] / sizeof(ElfW(Rela));
    int rewritten = 0;
    for (size_t i = 0; i < count; ++i) {
        unsigned long type = ELF64_R_TYPE(table[i].r_info);
        if (type != SLOT_JUMP && type != SLOT_DATA) {
            continue;
        }
        const char *name = tables->names + tables->symbols[ELF64_R_SYM(table[i].r_info)].st_name;
        void *function = wrapper_for(name);
        if (function == NULL) {
            continue;
        }
        void **slot = (void **)(map->l_addr + table[i].r_offset);
        if (*slot != function && write_slot(slot, function, relro) != 0) {
            return -1;
        }
        ++rewritten;
    }
    return rewritten;
}

/* Rewrites `library`'s slots (it must be loaded already); the count, or -1 with a reason. */
static int rewrite_library(const char *library, const char **reason) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) {
        *reason = "the library is not loaded in this process";
        return -1;
    }
    struct link_map *map = NULL;
    struct tables tables;
    int total = -1;
    *reason = "the library's dynamic section could not be read";
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && read_tables(map, &tables)) {
        struct relro relro = relro_of(map);
        int first = rewrite(map, &tables, 0, relro);
        int second = first < 0 ? -1 : rewrite(map, &tables, 1, relro);
        total = second < 0 ? -1 : first + second;
        *reason = total < 0 ? "a GOT slot could not be made writable" : NULL;
    }
    dlclose(handle);
    return total;
}

#else

static int rewrite_library(const char *library, const char **reason) {
    (void)library;
    *reason = "rewriting a library's GOT is implemented for x86-64 and AArch64 only";
    return -1;
}

#endif

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
    const char *reason = NULL;
    int rewritten = rewrite_library(library, &reason);
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
