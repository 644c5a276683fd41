/* Copying and validating a Forest's node arrays (see _fast.c for why). */
#include "_fast.h"

static void *copied(const Py_buffer *view) {
    void *copy = PyMem_Malloc(view->len > 0 ? (size_t)view->len : 1);
    if (copy == NULL) return PyErr_NoMemory();
    memcpy(copy, view->buf, (size_t)view->len);
    return copy;
}

int invalid(const char *message, Py_ssize_t where) {
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

int forest_fill(Forest *f, Py_buffer *nodes, Py_buffer *starts, Py_buffer *groups,
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
