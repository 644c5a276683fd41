/* smserve.algorithms.xgboost._ubjson: decoding a UBJSON model document (see ubjson.py), the
 * same values as ubjson.py's pure-Python decoder, about ten times faster. A model file is an
 * input: every read is checked against the bytes left, every count against what the bytes
 * could hold, and nesting is bounded, so no document reads outside itself or recurses without
 * end. Typed, counted arrays of numbers ("[$d#L<n>" then the payload) become TypedArray
 * objects: a read-only buffer over the document's own bytes (the big-endian payload, with its
 * struct format), made without copying, so a model's node arrays cost no Python objects.
 *
 * Errors: EOFError for a document that ends inside a value (ubjson.Truncated), ValueError for
 * anything else that is not one complete UBJSON document (ubjson.UbjsonError). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 256

typedef struct {
    PyObject_HEAD
    PyObject *owner; /* the bytes object the payload lies in */
    const char *start;
    Py_ssize_t count;
    Py_ssize_t itemsize;
    const char *format; /* struct format of one item, big-endian */
    char marker;
} TypedArray;

static void TypedArray_dealloc(TypedArray *self) {
    Py_XDECREF(self->owner);
    PyObject_Free(self);
}

static int TypedArray_getbuffer(TypedArray *self, Py_buffer *view, int flags) {
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "a TypedArray is read-only");
        return -1;
    }
    view->obj = Py_NewRef(self);
    view->buf = (void *)self->start;
    view->len = self->count * self->itemsize;
    view->readonly = 1;
    view->itemsize = self->itemsize;
    view->format = (flags & PyBUF_FORMAT) ? (char *)self->format : NULL;
    view->ndim = 1;
    view->shape = (flags & PyBUF_ND) ? &self->count : NULL;
    view->strides = ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) ? &self->itemsize : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static Py_ssize_t TypedArray_length(TypedArray *self) { return self->count; }

static PyObject *TypedArray_format(TypedArray *self, void *closure) {
    (void)closure;
    return PyUnicode_FromString(self->format);
}

static PyBufferProcs TypedArray_buffer = {(getbufferproc)TypedArray_getbuffer, NULL};
static PySequenceMethods TypedArray_sequence = {.sq_length = (lenfunc)TypedArray_length};
static PyGetSetDef TypedArray_getset[] = {
    {"format", (getter)TypedArray_format, NULL, "the struct format of one item", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TypedArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "smserve.algorithms.xgboost._ubjson.TypedArray",
    .tp_basicsize = sizeof(TypedArray),
    .tp_dealloc = (destructor)TypedArray_dealloc,
    .tp_as_buffer = &TypedArray_buffer,
    .tp_as_sequence = &TypedArray_sequence,
    .tp_getset = TypedArray_getset,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A typed UBJSON array: a read-only buffer over the document's bytes.",
};

typedef struct {
    PyObject *owner;
    const unsigned char *data;
    Py_ssize_t size, offset;
} Reader;

static int truncated(const Reader *r) {
    PyErr_Format(PyExc_EOFError, "it ends at byte %zd, inside a value at byte %zd", r->size,
                 r->offset);
    return -1;
}

static int take(Reader *r, Py_ssize_t n, const unsigned char **at) {
    if (n < 0 || n > r->size - r->offset) return truncated(r);
    *at = r->data + r->offset;
    r->offset += n;
    return 0;
}

static int marker(Reader *r, int *out) {
    const unsigned char *at;
    if (take(r, 1, &at) < 0) return -1;
    *out = *at;
    return 0;
}

static uint64_t big_endian(const unsigned char *at, int n) {
    uint64_t value = 0;
    for (int i = 0; i < n; i++) value = (value << 8) | at[i];
    return value;
}

/* The payload size of a fixed-size number marker; 0 for any other marker. */
static int number_size(int m) {
    switch (m) {
        case 'i': case 'U': return 1;
        case 'I': return 2;
        case 'l': case 'd': return 4;
        case 'L': case 'D': return 8;
        default: return 0;
    }
}

static const char *number_format(int m) {
    switch (m) {
        case 'i': return "b";
        case 'U': return "B";
        case 'I': return ">h";
        case 'l': return ">i";
        case 'L': return ">q";
        case 'd': return ">f";
        default: return ">d";
    }
}

static int64_t as_integer(uint64_t raw, int m) {
    switch (m) {
        case 'U': return (int64_t)raw;
        case 'i': return (int8_t)raw;
        case 'I': return (int16_t)raw;
        case 'l': return (int32_t)raw;
        default: return (int64_t)raw;
    }
}

static int integer(Reader *r, int m, int64_t *out) {
    int n = number_size(m);
    const unsigned char *at;
    if (n == 0 || m == 'd' || m == 'D') {
        PyErr_Format(PyExc_ValueError, "expected a length at byte %zd, got '%c'", r->offset - 1,
                     m);
        return -1;
    }
    if (take(r, n, &at) < 0) return -1;
    *out = as_integer(big_endian(at, n), m);
    return 0;
}

static int length(Reader *r, Py_ssize_t *out) {
    int m;
    int64_t value;
    if (marker(r, &m) < 0 || integer(r, m, &value) < 0) return -1;
    if (value < 0) {
        PyErr_Format(PyExc_ValueError, "negative length %lld at byte %zd", (long long)value,
                     r->offset);
        return -1;
    }
    if (value > PY_SSIZE_T_MAX) return truncated(r);
    *out = (Py_ssize_t)value;
    return 0;
}

static PyObject *text(Reader *r, Py_ssize_t n) {
    const unsigned char *at;
    if (take(r, n, &at) < 0) return NULL;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)at, n, "strict");
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "a string at byte %zd is not UTF-8", r->offset - n);
    }
    return s;
}

static PyObject *number(Reader *r, int m) {
    const unsigned char *at;
    int n = number_size(m);
    if (take(r, n, &at) < 0) return NULL;
    uint64_t raw = big_endian(at, n);
    if (m == 'd') {
        uint32_t bits = (uint32_t)raw;
        float f;
        memcpy(&f, &bits, 4);
        return PyFloat_FromDouble((double)f);
    }
    if (m == 'D') {
        double d;
        memcpy(&d, &raw, 8);
        return PyFloat_FromDouble(d);
    }
    return PyLong_FromLongLong(as_integer(raw, m));
}

static PyObject *value(Reader *r, int m, int depth);

static PyObject *typed_array(Reader *r, int kind, Py_ssize_t count) {
    Py_ssize_t itemsize = number_size(kind);
    const unsigned char *at;
    if (count > (r->size - r->offset) / itemsize) return truncated(r), NULL;
    if (take(r, count * itemsize, &at) < 0) return NULL;
    TypedArray *array = PyObject_New(TypedArray, &TypedArrayType);
    if (array == NULL) return NULL;
    array->owner = Py_NewRef(r->owner);
    array->start = (const char *)at;
    array->count = count;
    array->itemsize = itemsize;
    array->format = number_format(kind);
    array->marker = (char)kind;
    return (PyObject *)array;
}

/* The optional "$type" and "#count" after an opening marker (-1: absent). */
static int header(Reader *r, int *kind, Py_ssize_t *count) {
    *kind = -1;
    *count = -1;
    if (r->offset < r->size && r->data[r->offset] == '$') {
        r->offset++;
        if (marker(r, kind) < 0) return -1;
        if (r->offset >= r->size) return truncated(r);
        if (r->data[r->offset] != '#') {
            PyErr_Format(PyExc_ValueError, "'$' without '#' at byte %zd", r->offset);
            return -1;
        }
    }
    if (r->offset >= r->size) return truncated(r);
    if (r->data[r->offset] != '#') return 0;
    r->offset++;
    return length(r, count);
}

static int is_constant(int m) { return m == 'Z' || m == 'T' || m == 'F'; }

/* One member of a container: its key (objects) into *key, its value returned. */
static PyObject *item(Reader *r, int is_object, int kind, int depth, PyObject **key) {
    int m;
    if (is_object) {
        Py_ssize_t n;
        if (length(r, &n) < 0 || (*key = text(r, n)) == NULL) return NULL;
    }
    if (kind >= 0) m = kind;
    else if (marker(r, &m) < 0) return NULL;
    return value(r, m, depth);
}

/* 1 once the container's members are all read (an uncounted one's closing marker taken). */
static int closed(Reader *r, int closing, Py_ssize_t count, Py_ssize_t seen) {
    if (count >= 0) return seen >= count;
    if (r->offset >= r->size) return truncated(r);
    if (r->data[r->offset] != closing) return 0;
    r->offset++;
    return 1;
}

static int add(PyObject *container, PyObject *key, PyObject *item) {
    int failed = key ? PyDict_SetItem(container, key, item) : PyList_Append(container, item);
    Py_XDECREF(key);
    Py_DECREF(item);
    return failed;
}

static PyObject *container(Reader *r, int is_object, int depth) {
    int kind, done;
    Py_ssize_t count, seen = 0;
    if (depth > MAX_DEPTH) {
        PyErr_Format(PyExc_ValueError, "containers nested deeper than %d", MAX_DEPTH);
        return NULL;
    }
    if (header(r, &kind, &count) < 0) return NULL;
    if (count >= 0 && !is_object && kind >= 0 && number_size(kind) > 0)
        return typed_array(r, kind, count);
    if (count >= 0 && kind >= 0 && is_constant(kind) && count > r->size) {
        PyErr_Format(PyExc_ValueError,
                     "%zd values of no size: more than the document could hold", count);
        return NULL;
    }
    PyObject *result = is_object ? PyDict_New() : PyList_New(0);
    int closing = is_object ? '}' : ']';
    while (result != NULL && (done = closed(r, closing, count, seen)) == 0) {
        PyObject *key = NULL;
        PyObject *member = item(r, is_object, kind, depth, &key);
        if (member == NULL || add(result, key, member) < 0) {
            Py_XDECREF(key);
            Py_CLEAR(result);
        }
        seen++;
    }
    if (result != NULL && done < 0) Py_CLEAR(result);
    return result;
}

static PyObject *value(Reader *r, int m, int depth) {
    while (m == 'N') {
        if (marker(r, &m) < 0) return NULL;
    }
    if (number_size(m) > 0) return number(r, m);
    switch (m) {
        case 'Z': Py_RETURN_NONE;
        case 'T': Py_RETURN_TRUE;
        case 'F': Py_RETURN_FALSE;
        case 'C': return text(r, 1);
        case 'S': case 'H': {
            Py_ssize_t n;
            return length(r, &n) < 0 ? NULL : text(r, n);
        }
        case '[': return container(r, 0, depth + 1);
        case '{': return container(r, 1, depth + 1);
        default:
            PyErr_Format(PyExc_ValueError, "unknown marker '%c' at byte %zd", m, r->offset - 1);
            return NULL;
    }
}

static PyObject *decode(PyObject *module, PyObject *data) {
    (void)module;
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "decode() takes bytes");
        return NULL;
    }
    Reader r = {data, (const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), 0};
    int m;
    if (marker(&r, &m) < 0) return NULL;
    PyObject *result = value(&r, m, 0);
    if (result != NULL && r.offset != r.size) {
        PyErr_Format(PyExc_ValueError, "%zd unexpected bytes after the document",
                     r.size - r.offset);
        Py_CLEAR(result);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"decode", (PyCFunction)decode, METH_O, "The UBJSON document in the bytes, decoded."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ubjson", "Decoding UBJSON model documents.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ubjson(void) {
    if (PyType_Ready(&TypedArrayType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "TypedArray", (PyObject *)&TypedArrayType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
