/* XGBoost tree ensembles predicted over flat node arrays, with XGBoost's own arithmetic.
 *
 * Why: for small batches XGBoost's general-purpose predictor spends most of its time outside
 * the trees (see xgboost_fast.py). This walks the same trees with the same float32 arithmetic
 * XGBoost's CPU predictor uses: per row and output group, a float32 sum that starts from the
 * base margin and adds each tree's leaf value in tree order; a feature goes left when it is
 * below the split threshold, a missing one (NaN) the node's default way; then the objective's
 * transform as XGBoost writes it (xgboost/src/common/math.h). Built with -ffp-contract=off and
 * without fast-math, so the compiler keeps every rounding step; xgboost_fast_check.py keeps a
 * forest only when it gives the same bits as XGBoost on probe rows.
 *
 * Safety: the constructor copies and validates the node arrays (every child lies after its
 * parent and inside its own tree, every feature below n_features, every group below
 * n_groups), so a walk always ends at a leaf and never reads outside the arrays; predict
 * validates the shape of its inputs and CSR indices against n_features. Thread-safe: a Forest
 * is immutable after construction and each call writes only its own output and scratch.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define FEATURE_MASK 0x7fffffffu
#define DEFAULT_LEFT 0x80000000u
#define BLOCK_ROWS 64
/* Node visits above which the GIL is released: below it, waiting to take the GIL back
 * could cost more than the walk itself. */
#define RELEASE_GIL_VISITS 200000

typedef struct {
    float value;      /* the split threshold, or the leaf value */
    uint32_t feature; /* the split feature; DEFAULT_LEFT: missing values go left */
    int32_t left;     /* the left child's node index; -1 for a leaf */
    int32_t right;
} Node;

enum Transform { IDENTITY, SIGMOID, EXP, HINGE, SOFTMAX, ARGMAX, N_TRANSFORMS };

typedef struct {
    PyObject_HEAD
    Node *nodes;
    int32_t *roots;  /* n_trees */
    int32_t *groups; /* n_trees */
    float *base;     /* n_groups: the base margin of each output group */
    Py_ssize_t n_trees, n_groups, n_features, depth;
    int transform;
    int ready; /* set once the arrays are copied and valid: only then may predict run */
} Forest;

typedef struct {
    const Forest *forest;
    float *margins; /* n_rows x n_groups */
    Py_ssize_t n_rows;
} Walk;

/* ---- construction and validation ---- */

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

static void *copied(const Py_buffer *view) {
    void *copy = PyMem_Malloc(view->len > 0 ? (size_t)view->len : 1);
    if (copy == NULL) return PyErr_NoMemory();
    memcpy(copy, view->buf, (size_t)view->len);
    return copy;
}

static int invalid(const char *message, Py_ssize_t where) {
    PyErr_Format(PyExc_ValueError, "%s (at %zd)", message, where);
    return -1;
}

/* Every node of tree [start, end) is a leaf (-1, -1) or has both children after it and
 * before end and a feature below n_features; returns the tree's depth, or -1. */
static Py_ssize_t check_tree(const Node *nodes, Py_ssize_t start, Py_ssize_t end,
                             Py_ssize_t n_features) {
    Py_ssize_t depth = 0;
    for (Py_ssize_t i = start; i < end; i++) {
        const Node *n = nodes + i;
        if (n->left == -1 && n->right == -1) continue;
        if (n->left <= i || n->left >= end || n->right <= i || n->right >= end)
            return invalid("a child outside its tree or before its parent", i);
        if ((Py_ssize_t)(n->feature & FEATURE_MASK) >= n_features)
            return invalid("a split on a feature the model does not have", i);
    }
    /* Children follow parents, so one pass in order gives each node's depth. */
    int32_t *levels = PyMem_Calloc((size_t)(end - start), sizeof(int32_t));
    if (levels == NULL) return PyErr_NoMemory(), -1;
    for (Py_ssize_t i = start; i < end; i++) {
        const Node *n = nodes + i;
        if (n->left == -1) continue;
        int32_t below = levels[i - start] + 1;
        levels[n->left - start] = levels[n->right - start] = below;
        if (below > depth) depth = below;
    }
    PyMem_Free(levels);
    return depth;
}

static int check_forest(Forest *f, const int32_t *starts, Py_ssize_t n_nodes) {
    if (starts[0] != 0 || starts[f->n_trees] != n_nodes)
        return invalid("tree starts do not span the nodes", 0);
    for (Py_ssize_t t = 0; t < f->n_trees; t++) {
        if (starts[t + 1] <= starts[t]) return invalid("an empty tree", t);
        if (f->groups[t] < 0 || f->groups[t] >= f->n_groups)
            return invalid("a tree of an output group the model does not have", t);
        Py_ssize_t depth = check_tree(f->nodes, starts[t], starts[t + 1], f->n_features);
        if (depth < 0) return -1;
        f->roots[t] = starts[t];
        f->depth += depth;
    }
    return 0;
}

static int check_sizes(Py_ssize_t n_nodes, Py_ssize_t n_starts, Py_ssize_t n_groups_of_trees,
                       Py_ssize_t n_groups, Py_ssize_t n_features, int transform) {
    if (n_nodes < 1 || n_nodes >= INT32_MAX) return invalid("node count out of range", n_nodes);
    if (n_starts < 2 || n_starts - 1 != n_groups_of_trees)
        return invalid("one start and one group per tree, then the end", n_starts);
    if (n_groups < 1) return invalid("no output group", n_groups);
    if (n_features < 1 || n_features > FEATURE_MASK) return invalid("feature count", n_features);
    if (transform < 0 || transform >= N_TRANSFORMS) return invalid("unknown transform", transform);
    return 0;
}

static int forest_fill(Forest *f, Py_buffer *nodes, Py_buffer *starts, Py_buffer *groups,
                       Py_buffer *base) {
    Py_ssize_t n_nodes = nodes->len / (Py_ssize_t)sizeof(Node);
    f->n_trees = groups->len / 4;
    f->n_groups = base->len / 4;
    if (check_sizes(n_nodes, starts->len / 4, f->n_trees, f->n_groups, f->n_features,
                    f->transform) < 0)
        return -1;
    f->nodes = copied(nodes);
    f->groups = copied(groups);
    f->base = copied(base);
    f->roots = PyMem_Calloc((size_t)f->n_trees, sizeof(int32_t));
    if (!f->nodes || !f->groups || !f->base || !f->roots) return -1;
    return check_forest(f, (const int32_t *)starts->buf, n_nodes);
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

/* ---- the walk: XGBoost's arithmetic ---- */

static inline float leaf_value(const Node *nodes, int32_t root, const float *row) {
    const Node *n = nodes + root;
    while (n->left >= 0) {
        float v = row[n->feature & FEATURE_MASK];
        int go_left = isnan(v) ? (n->feature & DEFAULT_LEFT) != 0 : v < n->value;
        n = nodes + (go_left ? n->left : n->right);
    }
    return n->value;
}

/* Rows [first, first + count) of a dense block, every tree in order. */
static void walk_block(const Walk *w, const float *rows, Py_ssize_t first, Py_ssize_t count) {
    const Forest *f = w->forest;
    for (Py_ssize_t t = 0; t < f->n_trees; t++) {
        float *out = w->margins + first * f->n_groups + f->groups[t];
        for (Py_ssize_t r = 0; r < count; r++)
            out[r * f->n_groups] += leaf_value(f->nodes, f->roots[t], rows + r * f->n_features);
    }
}

static void start_margins(const Walk *w) {
    Py_ssize_t g = w->forest->n_groups;
    for (Py_ssize_t r = 0; r < w->n_rows; r++) memcpy(w->margins + r * g, w->forest->base, g * 4);
}

static void walk_dense(const Walk *w, const float *rows) {
    Py_ssize_t width = w->forest->n_features;
    for (Py_ssize_t first = 0; first < w->n_rows; first += BLOCK_ROWS) {
        Py_ssize_t count = w->n_rows - first < BLOCK_ROWS ? w->n_rows - first : BLOCK_ROWS;
        walk_block(w, rows + first * width, first, count);
    }
}

/* ---- transforms, as XGBoost's objectives write them ---- */

static float sigmoid(float x) {
    float negated = -x;
    float bounded = (88.7f < negated) ? 88.7f : negated; /* std::min(-x, 88.7f) */
    float denominator = expf(bounded) + 1.0f + 1e-16f;
    return 1.0f / denominator;
}

static void softmax(float *row, Py_ssize_t k) {
    float wmax = row[0];
    for (Py_ssize_t i = 1; i < k; i++) wmax = fmaxf(row[i], wmax);
    double wsum = 0.0;
    for (Py_ssize_t i = 0; i < k; i++) {
        row[i] = expf(row[i] - wmax);
        wsum += row[i];
    }
    for (Py_ssize_t i = 0; i < k; i++) row[i] /= (float)wsum;
}

static float first_max_index(const float *row, Py_ssize_t k) {
    Py_ssize_t best = 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (row[i] > row[best]) best = i;
    return (float)best;
}

static void transform_values(const Walk *w, float *out) {
    Py_ssize_t k = w->forest->n_groups, size = w->n_rows * k;
    float *m = w->margins;
    switch (w->forest->transform) {
    case SIGMOID: for (Py_ssize_t i = 0; i < size; i++) m[i] = sigmoid(m[i]); break;
    case EXP: for (Py_ssize_t i = 0; i < size; i++) m[i] = expf(m[i]); break;
    case HINGE: for (Py_ssize_t i = 0; i < size; i++) m[i] = m[i] > 0.0 ? 1.0f : 0.0f; break;
    case SOFTMAX: for (Py_ssize_t r = 0; r < w->n_rows; r++) softmax(m + r * k, k); break;
    case ARGMAX:
        for (Py_ssize_t r = 0; r < w->n_rows; r++) out[r] = first_max_index(m + r * k, k);
        break;
    default: break;
    }
}

/* ---- CSR rows: each block scattered into dense rows of NaN (absent = missing) ---- */

typedef struct {
    const char *indptr, *indices;
    int wide; /* 64-bit indptr and indices, else 32-bit */
    const float *data;
    float *scratch; /* BLOCK_ROWS x n_features, all NaN between blocks */
} Csr;

static inline Py_ssize_t index_at(const char *array, int wide, Py_ssize_t i) {
    return wide ? (Py_ssize_t)((const int64_t *)array)[i] : ((const int32_t *)array)[i];
}

static void scatter(const Csr *csr, Py_ssize_t first, Py_ssize_t count, Py_ssize_t width,
                    float fill, int values) {
    for (Py_ssize_t r = 0; r < count; r++) {
        Py_ssize_t end = index_at(csr->indptr, csr->wide, first + r + 1);
        for (Py_ssize_t j = index_at(csr->indptr, csr->wide, first + r); j < end; j++) {
            Py_ssize_t column = index_at(csr->indices, csr->wide, j);
            csr->scratch[r * width + column] = values ? csr->data[j] : fill;
        }
    }
}

static void walk_csr(const Walk *w, const void *input) {
    const Csr *csr = input;
    Py_ssize_t width = w->forest->n_features;
    for (Py_ssize_t first = 0; first < w->n_rows; first += BLOCK_ROWS) {
        Py_ssize_t count = w->n_rows - first < BLOCK_ROWS ? w->n_rows - first : BLOCK_ROWS;
        scatter(csr, first, count, width, 0.0f, 1);
        walk_block(w, csr->scratch, first, count);
        scatter(csr, first, count, width, NAN, 0);
    }
}

/* indptr non-decreasing from 0 within the arrays, every column below n_features. */
static int check_csr(const Csr *csr, Py_ssize_t n_rows, Py_ssize_t nnz, Py_ssize_t width) {
    if (index_at(csr->indptr, csr->wide, 0) != 0 || index_at(csr->indptr, csr->wide, n_rows) > nnz)
        return invalid("CSR: indptr does not start at 0 or runs past the entries", n_rows);
    for (Py_ssize_t r = 0; r < n_rows; r++)
        if (index_at(csr->indptr, csr->wide, r + 1) < index_at(csr->indptr, csr->wide, r))
            return invalid("CSR: indptr decreases", r);
    for (Py_ssize_t j = 0; j < index_at(csr->indptr, csr->wide, n_rows); j++) {
        Py_ssize_t column = index_at(csr->indices, csr->wide, j);
        if (column < 0 || column >= width) return invalid("CSR: a column out of range", j);
    }
    return 0;
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

static void dense_walker(const Walk *w, const void *input) { walk_dense(w, input); }

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
        result = run(self, output, x.shape[0], margin, dense_walker, x.buf);
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
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "smserve.algorithms._xgboost_fast.Forest",
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
    PyModuleDef_HEAD_INIT, "_xgboost_fast", "XGBoost trees over flat node arrays.", -1, NULL,
};

PyMODINIT_FUNC PyInit__xgboost_fast(void) {
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
