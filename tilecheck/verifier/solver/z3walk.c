/* Walks of Z3 terms in C, for tilecheck/verifier/solver/z3walk.py.
 *
 * Finding the uninterpreted applications of a query's formula (array contents, carried values)
 * visits every node of its DAG; through ctypes that is five foreign calls per node, and it was the
 * largest cost of verification outside Z3 itself. Here the same walk is one call.
 *
 * No Z3 header is needed: the Python side passes the addresses of the Z3 API functions the walk
 * uses (those of the libz3 z3-solver loaded), so the walk always calls the library the context
 * belongs to. The set of visited node ids is a bitmap owned by the caller (an ``idset``). */
#include <stdlib.h>
#include <string.h>

typedef void *ctx_t;
typedef void *ast_t;
typedef void *decl_t;

static unsigned (*get_ast_id)(ctx_t, ast_t);
static int (*get_ast_kind)(ctx_t, ast_t);
static unsigned (*get_app_num_args)(ctx_t, ast_t);
static decl_t (*get_app_decl)(ctx_t, ast_t);
static int (*get_decl_kind)(ctx_t, decl_t);
static ast_t (*get_app_arg)(ctx_t, ast_t, unsigned);
static int app_ast_kind, uninterpreted_kind;
static void (*solver_assert)(ctx_t, void *, ast_t);
static void (*solver_assert_and_track)(ctx_t, void *, ast_t, ast_t);
static int (*get_error_code)(ctx_t);
static int op_and, op_implies;

void tc_init(void **fns, int app_kind, int uninterpreted) {
    get_ast_id = (unsigned (*)(ctx_t, ast_t))fns[0];
    get_ast_kind = (int (*)(ctx_t, ast_t))fns[1];
    get_app_num_args = (unsigned (*)(ctx_t, ast_t))fns[2];
    get_app_decl = (decl_t (*)(ctx_t, ast_t))fns[3];
    get_decl_kind = (int (*)(ctx_t, decl_t))fns[4];
    get_app_arg = (ast_t (*)(ctx_t, ast_t, unsigned))fns[5];
    app_ast_kind = app_kind;
    uninterpreted_kind = uninterpreted;
}

/* node ids as a bitmap; [lo, hi) is the range of 64-bit words that may hold a bit */
typedef struct {
    unsigned long long *words;
    size_t size, lo, hi;
} idset;

idset *tc_set_new(void) { return calloc(1, sizeof(idset)); }

void tc_set_free(idset *s) {
    if (s) {
        free(s->words);
        free(s);
    }
}

static int grow(idset *s, size_t words) {
    if (words <= s->size)
        return 1;
    size_t size = s->size ? s->size : 64;
    while (size < words)
        size *= 2;
    unsigned long long *w = realloc(s->words, size * sizeof *w);
    if (!w)
        return 0;
    memset(w + s->size, 0, (size - s->size) * sizeof *w);
    s->words = w;
    s->size = size;
    return 1;
}

/* 1 when ``id`` was not in the set (now it is), 0 when it was, -1 when out of memory */
static int insert(idset *s, unsigned id) {
    size_t w = id >> 6;
    if (!grow(s, w + 1))
        return -1;
    unsigned long long bit = 1ULL << (id & 63);
    if (s->words[w] & bit)
        return 0;
    s->words[w] |= bit;
    if (s->lo == s->hi) {
        s->lo = w;
        s->hi = w + 1;
    } else {
        if (w < s->lo)
            s->lo = w;
        if (w + 1 > s->hi)
            s->hi = w + 1;
    }
    return 1;
}

int tc_set_has(const idset *s, unsigned id) {
    size_t w = id >> 6;
    return w < s->size && (s->words[w] >> (id & 63)) & 1;
}

/* dst |= src; 0 when out of memory */
int tc_set_union(idset *dst, const idset *src) {
    if (src->lo == src->hi)
        return 1;
    if (!grow(dst, src->hi))
        return 0;
    for (size_t w = src->lo; w < src->hi; w++)
        dst->words[w] |= src->words[w];
    if (dst->lo == dst->hi) {
        dst->lo = src->lo;
        dst->hi = src->hi;
    } else {
        if (src->lo < dst->lo)
            dst->lo = src->lo;
        if (src->hi > dst->hi)
            dst->hi = src->hi;
    }
    return 1;
}

/* room for ``need`` entries in the stack ``*stack`` of capacity ``*cap``; 0 when out of memory */
static int reserve(ast_t **stack, size_t *cap, size_t need) {
    size_t size = *cap;
    while (size < need)
        size *= 2;
    if (size == *cap)
        return 1;
    ast_t *t = realloc(*stack, size * sizeof *t);
    if (!t)
        return 0;
    *stack = t;
    *cap = size;
    return 1;
}

/* ``*asts`` and ``*values`` grown to ``n`` entries, ``per`` values an entry (a walk's found nodes
 * and what it keeps of each); 0 when out of memory (the arrays stay valid, to be freed) */
static int grow_entries(ast_t **asts, unsigned **values, size_t n, size_t per) {
    ast_t *a = realloc(*asts, n * sizeof *a);
    if (!a)
        return 0;
    *asts = a;
    unsigned *v = realloc(*values, n * per * sizeof *v);
    if (!v)
        return 0;
    *values = v;
    return 1;
}

/* Every application of an uninterpreted symbol under ``roots`` whose node is not in ``seen``
 * (constants too), in the order of a depth-first walk that pops the last pushed node first and
 * pushes a node's arguments in order; every node visited joins ``seen``. The applications and
 * their arities go to malloc'd arrays (``*apps``, ``*arities``; free with tc_free). Returns their
 * number, or -1 when out of memory. */
long tc_walk(ctx_t c, ast_t *roots, unsigned nroots, idset *seen, ast_t **apps, unsigned **arities) {
    size_t cap = 256, top = 0, found = 0, fcap = 16;
    ast_t *todo = malloc(cap * sizeof *todo);
    ast_t *out = malloc(fcap * sizeof *out);
    unsigned *arity = malloc(fcap * sizeof *arity);
    if (!todo || !out || !arity)
        goto oom;
    if (!reserve(&todo, &cap, nroots))
        goto oom;
    for (unsigned i = 0; i < nroots; i++)
        todo[top++] = roots[i];
    while (top) {
        ast_t a = todo[--top];
        int fresh = insert(seen, get_ast_id(c, a));
        if (fresh < 0)
            goto oom;
        if (!fresh || get_ast_kind(c, a) != app_ast_kind)
            continue;
        unsigned n = get_app_num_args(c, a);
        if (get_decl_kind(c, get_app_decl(c, a)) == uninterpreted_kind) {
            if (found == fcap) {
                fcap *= 2;
                if (!grow_entries(&out, &arity, fcap, 1))
                    goto oom;
            }
            out[found] = a;
            arity[found++] = n;
        }
        if (!reserve(&todo, &cap, top + n))
            goto oom;
        for (unsigned k = 0; k < n; k++)
            todo[top++] = get_app_arg(c, a, k);
    }
    free(todo);
    *apps = out;
    *arities = arity;
    return (long)found;
oom:
    free(todo);
    free(out);
    free(arity);
    return -1;
}

void tc_free(void *p) { free(p); }

/* The DAG under ``root`` (``term_dag.dag``): its distinct nodes in the order of a depth-first walk
 * that pops the last pushed node first and pushes an application's arguments in order. Per node,
 * four unsigned values in ``*records`` (its id, its AST kind, its declaration's kind or ~0u when it
 * is not an application, its number of arguments), its AST in ``*asts``, and its arguments' ids,
 * node after node, in ``*args`` (``*nargs`` of them). The arrays are malloc'd (free with tc_free).
 * Returns the number of nodes, or -1 when out of memory. */
long tc_dag(ctx_t c, ast_t root, unsigned **records, ast_t **asts, unsigned **args, size_t *nargs) {
    size_t cap = 256, top = 0, n = 0, ncap = 64, acap = 64, na = 0;
    idset seen = {0};
    ast_t *todo = malloc(cap * sizeof *todo);
    unsigned *rec = malloc(4 * ncap * sizeof *rec);
    ast_t *nodes = malloc(ncap * sizeof *nodes);
    unsigned *ids = malloc(acap * sizeof *ids);
    if (!todo || !rec || !nodes || !ids)
        goto oom;
    todo[top++] = root;
    while (top) {
        ast_t a = todo[--top];
        unsigned id = get_ast_id(c, a);
        int fresh = insert(&seen, id);
        if (fresh < 0)
            goto oom;
        if (!fresh)
            continue;
        if (n == ncap) {
            ncap *= 2;
            if (!grow_entries(&nodes, &rec, ncap, 4))
                goto oom;
        }
        int kind = get_ast_kind(c, a);
        unsigned k = 0, decl = ~0u;
        if (kind == app_ast_kind) {
            decl = (unsigned)get_decl_kind(c, get_app_decl(c, a));
            k = get_app_num_args(c, a);
            if (!reserve(&todo, &cap, top + k))
                goto oom;
            if (na + k > acap) {
                while (na + k > acap)
                    acap *= 2;
                unsigned *g = realloc(ids, acap * sizeof *g);
                if (!g)
                    goto oom;
                ids = g;
            }
            for (unsigned j = 0; j < k; j++) {
                ast_t arg = get_app_arg(c, a, j);
                ids[na++] = get_ast_id(c, arg);
                todo[top++] = arg;
            }
        }
        rec[4 * n] = id;
        rec[4 * n + 1] = (unsigned)kind;
        rec[4 * n + 2] = decl;
        rec[4 * n + 3] = k;
        nodes[n++] = a;
    }
    free(todo);
    free(seen.words);
    *records = rec;
    *asts = nodes;
    *args = ids;
    *nargs = na;
    return (long)n;
oom:
    free(todo);
    free(seen.words);
    free(rec);
    free(nodes);
    free(ids);
    return -1;
}

void tc_init_assert(void **fns, int and_kind, int implies_kind) {
    solver_assert = (void (*)(ctx_t, void *, ast_t))fns[0];
    solver_assert_and_track = (void (*)(ctx_t, void *, ast_t, ast_t))fns[1];
    get_error_code = (int (*)(ctx_t))fns[2];
    op_and = and_kind;
    op_implies = implies_kind;
}

static int by_id(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

/* The conjuncts of ``roots``: nested conjunctions flattened in the order of a depth-first walk (a
 * conjunction's arguments in order), except a conjunction whose id is in ``shared`` (sorted;
 * ``nshared``), which is a conjunct itself. Each conjunct's AST and id go to malloc'd arrays
 * (``*out``, ``*ids``; free with tc_free). Returns their number, or -1 when out of memory. */
long tc_flatten(ctx_t c, ast_t *roots, unsigned nroots, const unsigned *shared, unsigned nshared, ast_t **out,
                unsigned **ids) {
    size_t cap = 256, top = 0, n = 0, ocap = 64;
    ast_t *todo = malloc(cap * sizeof *todo);
    ast_t *found = malloc(ocap * sizeof *found);
    unsigned *keys = malloc(ocap * sizeof *keys);
    if (!todo || !found || !keys || !reserve(&todo, &cap, nroots))
        goto oom;
    for (unsigned i = nroots; i-- > 0;)
        todo[top++] = roots[i];
    while (top) {
        ast_t a = todo[--top];
        unsigned id = get_ast_id(c, a);
        int mine = !nshared || !bsearch(&id, shared, nshared, sizeof *shared, by_id);
        if (mine && get_ast_kind(c, a) == app_ast_kind && get_decl_kind(c, get_app_decl(c, a)) == op_and) {
            unsigned k = get_app_num_args(c, a);
            if (!reserve(&todo, &cap, top + k))
                goto oom;
            for (unsigned j = k; j-- > 0;)
                todo[top++] = get_app_arg(c, a, j);
            continue;
        }
        if (n == ocap) {
            ocap *= 2;
            if (!grow_entries(&found, &keys, ocap, 1))
                goto oom;
        }
        found[n] = a;
        keys[n++] = id;
    }
    free(todo);
    *out = found;
    *ids = keys;
    return (long)n;
oom:
    free(todo);
    free(found);
    free(keys);
    return -1;
}

/* Assert the conjunction of ``roots`` into ``solver``, nested conjunctions flattened in the
 * order of a depth-first walk (a conjunction's arguments in order); a conjunct ``Implies(f, r)``
 * whose ``f`` has an id in ``flags`` (sorted; ``nflags``) is asserted as ``r`` tracked by ``f``, and
 * ``used[k]`` set for that flag. Returns 0; -1 when out of memory, or -2 when Z3 refused an
 * assertion (its error code says why), with nothing more asserted. */
int tc_assert(ctx_t c, void *solver, ast_t *roots, unsigned nroots, const unsigned *flags, unsigned nflags,
              char *used) {
    size_t cap = 256, top = 0;
    ast_t *todo = malloc(cap * sizeof *todo);
    if (!todo)
        return -1;
    if (!reserve(&todo, &cap, nroots))
        goto oom;
    for (unsigned i = nroots; i-- > 0;)
        todo[top++] = roots[i];
    while (top) {
        ast_t a = todo[--top];
        if (get_ast_kind(c, a) == app_ast_kind) {
            int kind = get_decl_kind(c, get_app_decl(c, a));
            if (kind == op_and) {
                unsigned n = get_app_num_args(c, a);
                if (!reserve(&todo, &cap, top + n))
                    goto oom;
                for (unsigned k = n; k-- > 0;)
                    todo[top++] = get_app_arg(c, a, k);
                continue;
            }
            if (kind == op_implies && nflags) {
                ast_t flag = get_app_arg(c, a, 0);
                unsigned id = get_ast_id(c, flag);
                const unsigned *hit = bsearch(&id, flags, nflags, sizeof *flags, by_id);
                if (hit) {
                    solver_assert_and_track(c, solver, get_app_arg(c, a, 1), flag);
                    used[hit - flags] = 1;
                    if (get_error_code(c))
                        goto refused;
                    continue;
                }
            }
        }
        solver_assert(c, solver, a);
        if (get_error_code(c))
            goto refused;
    }
    free(todo);
    return 0;
refused:
    free(todo);
    return -2;
oom:
    free(todo);
    return -1;
}
