/* XGBoost tree ensembles predicted over flat node arrays, with XGBoost's own arithmetic.
 *
 * Why: for small batches XGBoost's general-purpose predictor spends most of its time outside
 * the trees (see xgboost/fast.py). This walks the same trees with the same float32 arithmetic
 * XGBoost's CPU predictor uses: per row and output group, a float32 sum that starts from the
 * base margin and adds each tree's leaf value in tree order; a feature goes left when it is
 * below the split threshold, a missing one (NaN) the node's default way; then the objective's
 * transform as XGBoost writes it (xgboost/src/common/math.h). Built with -ffp-contract=off and
 * without fast-math, so the compiler keeps every rounding step; xgboost/fast_check.py keeps a
 * forest only when it gives the same bits as XGBoost on probe rows.
 *
 * Safety: the constructor copies and validates the node arrays (every child lies after its
 * parent and inside its own tree, every feature below n_features, every group below
 * n_groups), so a walk always ends at a leaf and never reads outside the arrays; predict
 * validates the shape of its inputs and CSR indices against n_features. Thread-safe: a Forest
 * is immutable after construction and each call writes only its own output and scratch.
 */
#include "_fast.h"

static int read_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len % itemsize != 0) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of items", what,
                     view->len);
        return -1;
    }
    return 0;
}

static int Forest_init(Forest *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"nodes", "starts", "groups", "base", "n_features", "transform",
                               NULL};
    static const Py_ssize_t sizes[4] = {sizeof(Node), 4, 4, 4};
    static const char *names[4] = {"nodes", "starts", "groups", "base"};
    PyObject *objects[4];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOni", keywords, &objects[0], &objects[1],
                                     &objects[2], &objects[3], &self->n_features,
                                     &self->transform))
        return -1;
    if (self->nodes != NULL) return invalid("a Forest is initialised once", 0);
    Py_buffer views[4];
    int taken = 0, status = 0;
    while (taken < 4 && status == 0) {
        status = read_buffer(objects[taken], &views[taken], sizes[taken], names[taken]);
        taken += status == 0;
    }
    if (status == 0) status = forest_fill(self, &views[0], &views[1], &views[2], &views[3]);
    for (int i = 0; i < taken; i++) PyBuffer_Release(&views[i]);
    self->ready = status == 0;
    return status;
}

static void Forest_dealloc(Forest *self) {
    PyMem_Free(self->nodes);
    PyMem_Free(self->roots);
    PyMem_Free(self->groups);
    PyMem_Free(self->base);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- predict ---- */

static int check_output(const Forest *f, const Py_buffer *out, Py_ssize_t n_rows, int margin) {
    int labels = !margin && f->transform == ARGMAX;
    Py_ssize_t expected = n_rows * (labels ? 1 : f->n_groups) * 4;
    if (out->readonly || out->len != expected)
        return invalid("the output buffer is read-only or of the wrong size", out->len);
    return 0;
}

/* The margins buffer: the output itself, except for labels (one per row) from margins. */
static float *margins_for(const Forest *f, const Py_buffer *out, Py_ssize_t n_rows, int margin) {
    if (margin || f->transform != ARGMAX) return (float *)out->buf;
    float *margins = PyMem_RawMalloc((size_t)(n_rows * f->n_groups) * 4 + 4);
    if (margins == NULL) PyErr_NoMemory();
    return margins;
}

typedef void (*Walker)(const Walk *w, const void *input);

static PyObject *run(Forest *f, PyObject *output, Py_ssize_t n_rows, int margin, Walker walker,
                     const void *input) {
    Py_buffer out;
    if (PyObject_GetBuffer(output, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
    Walk w = {f, NULL, n_rows};
    if (check_output(f, &out, n_rows, margin) == 0) w.margins = margins_for(f, &out, n_rows, margin);
    if (w.margins != NULL) {
        int release = n_rows * f->depth > RELEASE_GIL_VISITS;
        PyThreadState *state = release ? PyEval_SaveThread() : NULL;
        start_margins(&w);
        walker(&w, input);
        if (!margin) transform_values(&w, (float *)out.buf);
        if (release) PyEval_RestoreThread(state);
        if (w.margins != out.buf) PyMem_RawFree(w.margins);
    }
    PyBuffer_Release(&out);
    if (w.margins == NULL) return NULL;
    Py_RETURN_NONE;
}

static int check_ready(const Forest *f) {
    if (!f->ready) PyErr_SetString(PyExc_ValueError, "the Forest was not initialised");
    return f->ready ? 0 : -1;
}

static PyObject *Forest_predict(Forest *self, PyObject *args) {
    PyObject *features, *output;
    int margin;
    if (check_ready(self) < 0 || !PyArg_ParseTuple(args, "OOp", &features, &output, &margin))
        return NULL;
    Py_buffer x;
    if (PyObject_GetBuffer(features, &x, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    PyObject *result = NULL;
    if (x.ndim != 2 || strcmp(x.format, "f") != 0 || x.shape[1] != self->n_features)
        invalid("features: expected float32 rows of n_features columns", x.ndim);
    else
        result = run(self, output, x.shape[0], margin, walk_dense, x.buf);
    PyBuffer_Release(&x);
    return result;
}

/* 4 or 8: the width of an integer buffer format numpy writes; 0 for any other format. */
static int integer_width(const char *format) {
    if (strcmp(format, "i") == 0) return 4;
    if (strcmp(format, "q") == 0 || (strcmp(format, "l") == 0 && sizeof(long) == 8)) return 8;
    return 0;
}

/* indptr, indices, data: 1-D, indices as wide as indptr, float32 data. Returns whether the
 * indices are 64-bit, or -1 (views released). */
static int csr_views(PyObject *const *objects, Py_buffer *views) {
    int taken = 0;
    while (taken < 3 &&
           PyObject_GetBuffer(objects[taken], &views[taken], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0)
        taken++;
    int width = taken == 3 ? integer_width(views[0].format) : 0;
    int valid = width != 0 && integer_width(views[1].format) == width &&
                strcmp(views[2].format, "f") == 0 && views[0].ndim == 1 && views[1].ndim == 1 &&
                views[2].ndim == 1;
    if (valid) return width == 8;
    for (int i = 0; i < taken; i++) PyBuffer_Release(&views[i]);
    if (taken == 3) invalid("CSR: int32 or int64 indptr and indices alike, float32 data", 0);
    return -1;
}

static PyObject *csr_run(Forest *f, Py_buffer *views, int wide, Py_ssize_t n_rows,
                         PyObject *output, int margin) {
    Csr csr = {views[0].buf, views[1].buf, wide, views[2].buf, NULL};
    Py_ssize_t nnz = views[1].shape[0] < views[2].shape[0] ? views[1].shape[0] : views[2].shape[0];
    if (n_rows < 0 || views[0].shape[0] != n_rows + 1)
        return invalid("CSR: indptr needs one more entry than rows", n_rows), NULL;
    if (check_csr(&csr, n_rows, nnz, f->n_features) < 0) return NULL;
    size_t cells = (size_t)(BLOCK_ROWS * f->n_features);
    csr.scratch = PyMem_RawMalloc(cells * sizeof(float));
    if (csr.scratch == NULL) return PyErr_NoMemory();
    for (size_t i = 0; i < cells; i++) csr.scratch[i] = NAN;
    PyObject *result = run(f, output, n_rows, margin, walk_csr, &csr);
    PyMem_RawFree(csr.scratch);
    return result;
}

static PyObject *Forest_predict_csr(Forest *self, PyObject *args) {
    PyObject *objects[3], *output;
    Py_ssize_t n_rows;
    int margin;
    if (check_ready(self) < 0 ||
        !PyArg_ParseTuple(args, "OOOnOp", &objects[0], &objects[1], &objects[2], &n_rows, &output,
                          &margin))
        return NULL;
    Py_buffer views[3];
    int wide = csr_views(objects, views);
    if (wide < 0) return NULL;
    PyObject *result = csr_run(self, views, wide, n_rows, output, margin);
    for (int i = 0; i < 3; i++) PyBuffer_Release(&views[i]);
    return result;
}

static PyMethodDef Forest_methods[] = {
    {"predict", (PyCFunction)Forest_predict, METH_VARARGS,
     "predict(features, out, margin): dense float32 (n, n_features) rows into out"},
    {"predict_csr", (PyCFunction)Forest_predict_csr, METH_VARARGS,
     "predict_csr(indptr, indices, data, n_rows, out, margin): CSR rows (int32 or int64 "
     "indices, float32 data) into out"},
    {NULL, NULL, 0, NULL},
};

static PyObject *Forest_depth(Forest *self, void *closure) {
    return PyLong_FromSsize_t(self->depth);
}

static PyGetSetDef Forest_getset[] = {
    {"depth", (getter)Forest_depth, NULL, "the trees' depths summed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ForestType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "smserve.algorithms.xgboost._fast.Forest",
    .tp_basicsize = sizeof(Forest),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Forest(nodes, starts, groups, base, n_features, transform): validated trees",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Forest_init,
    .tp_dealloc = (destructor)Forest_dealloc,
    .tp_methods = Forest_methods,
    .tp_getset = Forest_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fast", "XGBoost trees over flat node arrays.", -1, NULL,
};
PyMODINIT_FUNC PyInit__fast(void) {
    if (PyType_Ready(&ForestType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&ForestType);
    if (PyModule_AddObject(m, "Forest", (PyObject *)&ForestType) < 0 ||
        PyModule_AddIntConstant(m, "NODE_BYTES", sizeof(Node)) < 0) {
        Py_DECREF(&ForestType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
