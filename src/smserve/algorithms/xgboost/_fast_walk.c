/* The walk: XGBoost's float32 arithmetic over validated node arrays (see _fast.c).
 * Nothing here touches Python objects, so it runs with the GIL released. */
#include "_fast.h"

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

void start_margins(const Walk *w) {
    Py_ssize_t g = w->forest->n_groups;
    for (Py_ssize_t r = 0; r < w->n_rows; r++) memcpy(w->margins + r * g, w->forest->base, g * 4);
}

void walk_dense(const Walk *w, const void *input) {
    const float *rows = input;
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

void transform_values(const Walk *w, float *out) {
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

void walk_csr(const Walk *w, const void *input) {
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
int check_csr(const Csr *csr, Py_ssize_t n_rows, Py_ssize_t nnz, Py_ssize_t width) {
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
