/* Shared by the three source files of smserve.algorithms.xgboost._fast (see _fast.c):
 * the node layout, the Forest object, and the functions each file gives the others. */
#ifndef SMSERVE_XGBOOST_FAST_H
#define SMSERVE_XGBOOST_FAST_H
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

typedef struct {
    const char *indptr, *indices;
    int wide; /* 64-bit indptr and indices, else 32-bit */
    const float *data;
    float *scratch; /* BLOCK_ROWS x n_features, all NaN between blocks */
} Csr;

/* _fast_forest.c: copying and validating the arrays */
int invalid(const char *message, Py_ssize_t where);
int forest_fill(Forest *f, Py_buffer *nodes, Py_buffer *starts, Py_buffer *groups,
                Py_buffer *base);

/* _fast_walk.c: margins and transforms, callable without the GIL */
void start_margins(const Walk *w);
void walk_dense(const Walk *w, const void *rows);
void walk_csr(const Walk *w, const void *csr);
int check_csr(const Csr *csr, Py_ssize_t n_rows, Py_ssize_t nnz, Py_ssize_t width);
void transform_values(const Walk *w, float *out);

#endif
