/* The grammar expression IR: nodes in one arena, code point sets kept normalized (sorted,
 * disjoint, merged, surrogates removed, since UTF-8 cannot encode them), and the rule
 * table the GBNF front end fills by name. */
#include <stdlib.h>
#include <string.h>

#include "grammar/gram_ir.h"

static int grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return -1;
    *p = q;
    *cap = nc;
    return 0;
}

int hr_gints_push(hr_gints *l, int x) {
    if (grow((void **)&l->v, &l->cap, l->n + 1, sizeof(int))) return -1;
    l->v[l->n++] = x;
    return 0;
}

void hr_gir_free(hr_gir *ir) {
    free(ir->nodes);
    free(ir->ranges);
    free(ir->kids);
    for (int i = 0; i < ir->n_rules; i++)
        free(ir->names[i]);
    free(ir->names);
    free(ir->body);
    free(ir->name_off);
    free(ir->name_tab);
    memset(ir, 0, sizeof *ir);
}

static int new_node(hr_gir *ir, hr_gnode_kind kind) {
    if (grow((void **)&ir->nodes, &ir->cap_nodes, ir->n_nodes + 1, sizeof(hr_gnode))) return -1;
    hr_gnode *n = &ir->nodes[ir->n_nodes];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return ir->n_nodes++;
}

static int cmp_range(const void *a, const void *b) {
    const hr_grange *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts and merges r[0..n) in place; returns the new count. */
static int normalize(hr_grange *r, int n) {
    qsort(r, (size_t)n, sizeof *r, cmp_range);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && r[i].lo <= r[m - 1].hi + 1) {
            if (r[i].hi > r[m - 1].hi) r[m - 1].hi = r[i].hi;
        } else
            r[m++] = r[i];
    }
    return m;
}

/* Complement of normalized r[0..n) within [0, MAX] into out (room for n + 1). */
static int complement(const hr_grange *r, int n, hr_grange *out) {
    int m = 0;
    uint32_t next = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].lo > next) out[m++] = (hr_grange){next, r[i].lo - 1};
        next = r[i].hi + 1;
    }
    if (next <= HR_G_MAX_CP) out[m++] = (hr_grange){next, HR_G_MAX_CP};
    return m;
}

/* Removes the surrogates D800..DFFF from normalized r (room for n + 1). */
static int drop_surrogates(hr_grange *r, int n) {
    hr_grange tmp[2];
    for (int i = 0; i < n; i++) {
        if (r[i].hi < 0xD800 || r[i].lo > 0xDFFF) continue;
        int k = 0;
        if (r[i].lo < 0xD800) tmp[k++] = (hr_grange){r[i].lo, 0xD7FF};
        if (r[i].hi > 0xDFFF) tmp[k++] = (hr_grange){0xE000, r[i].hi};
        memmove(&r[i + k], &r[i + 1], (size_t)(n - i - 1) * sizeof *r);
        memcpy(&r[i], tmp, (size_t)k * sizeof *r);
        n += k - 1;
        i += k - 1;
    }
    return n;
}

int hr_gir_set(hr_gir *ir, const hr_grange *r, int n, int negate) {
    hr_grange *a = malloc((size_t)(n + 2) * sizeof *a), *b = malloc((size_t)(n + 2) * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    for (int i = 0; i < n; i++)
        a[i] = r[i];
    int m = normalize(a, n);
    if (negate) {
        m = complement(a, m, b);
        memcpy(a, b, (size_t)m * sizeof *a);
    }
    m = drop_surrogates(a, m);
    free(b);
    int id = -1;
    if (!grow((void **)&ir->ranges, &ir->cap_ranges, ir->n_ranges + m, sizeof(hr_grange)) &&
        (id = new_node(ir, HR_GN_SET)) >= 0) {
        if (m) memcpy(&ir->ranges[ir->n_ranges], a, (size_t)m * sizeof *a);
        ir->nodes[id].first = ir->n_ranges;
        ir->nodes[id].n = m;
        ir->n_ranges += m;
    }
    free(a);
    return id;
}

int hr_gir_char(hr_gir *ir, uint32_t cp) {
    hr_grange r = {cp, cp};
    return hr_gir_set(ir, &r, 1, 0);
}

int hr_gir_list(hr_gir *ir, hr_gnode_kind kind, const int *kids, int n) {
    if (n == 1) return kids[0];
    if (grow((void **)&ir->kids, &ir->cap_kids, ir->n_kids + n, sizeof(int))) return -1;
    int id = new_node(ir, kind);
    if (id < 0) return -1;
    if (n) memcpy(&ir->kids[ir->n_kids], kids, (size_t)n * sizeof(int));
    ir->nodes[id].first = ir->n_kids;
    ir->nodes[id].n = n;
    ir->n_kids += n;
    return id;
}

int hr_gir_rep(hr_gir *ir, int child, int min, int max) {
    int id = new_node(ir, HR_GN_REP);
    if (id < 0) return -1;
    ir->nodes[id].child = child;
    ir->nodes[id].min = min;
    ir->nodes[id].max = max;
    return id;
}

int hr_gir_not(hr_gir *ir, int child) {
    int id = new_node(ir, HR_GN_NOT);
    if (id >= 0) ir->nodes[id].child = child;
    return id;
}

int hr_gir_ref(hr_gir *ir, int rule) {
    int id = new_node(ir, HR_GN_REF);
    if (id >= 0) ir->nodes[id].child = rule;
    return id;
}

static size_t name_hash(const char *name, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < len; k++)
        h = (h ^ (uint8_t)name[k]) * 1099511628211ull;
    return (size_t)h;
}

/* The name table's slot for name: where its rule is, or the empty slot it would take. */
static size_t name_slot(const hr_gir *ir, const char *name, size_t len) {
    size_t s = name_hash(name, len) & (ir->cap_name_tab - 1);
    for (; ir->name_tab[s]; s = (s + 1) & (ir->cap_name_tab - 1)) {
        const char *r = ir->names[ir->name_tab[s] - 1];
        if (!strncmp(r, name, len) && !r[len]) break;
    }
    return s;
}

/* Room in the name table for one more rule (it stays at most half full). */
static int grow_names(hr_gir *ir) {
    if ((size_t)(ir->n_rules + 1) * 2 <= ir->cap_name_tab) return 0;
    size_t old = ir->cap_name_tab;
    int *t = ir->name_tab;
    ir->cap_name_tab = old ? old * 2 : 256;
    ir->name_tab = calloc(ir->cap_name_tab, sizeof(int));
    if (!ir->name_tab) {
        ir->name_tab = t;
        ir->cap_name_tab = old;
        return -1;
    }
    for (int i = 0; i < ir->n_rules; i++)
        ir->name_tab[name_slot(ir, ir->names[i], strlen(ir->names[i]))] = i + 1;
    free(t);
    return 0;
}

int hr_gir_rule(hr_gir *ir, const char *name, size_t len, size_t off) {
    if (grow_names(ir)) return -1;
    size_t slot = name_slot(ir, name, len);
    if (ir->name_tab[slot]) return ir->name_tab[slot] - 1;
    int cap = ir->cap_rules;
    if (grow((void **)&ir->names, &cap, ir->n_rules + 1, sizeof(char *))) return -1;
    cap = ir->cap_rules;
    if (grow((void **)&ir->body, &cap, ir->n_rules + 1, sizeof(int))) return -1;
    cap = ir->cap_rules;
    if (grow((void **)&ir->name_off, &cap, ir->n_rules + 1, sizeof(size_t))) return -1;
    ir->cap_rules = cap;
    char *s = malloc(len + 1);
    if (!s) return -1;
    memcpy(s, name, len);
    s[len] = 0;
    ir->names[ir->n_rules] = s;
    ir->body[ir->n_rules] = -1;
    ir->name_off[ir->n_rules] = off;
    ir->name_tab[slot] = ir->n_rules + 1;
    return ir->n_rules++;
}

size_t hr_gutf8_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    size_t len = u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (!len || u[0] > 0xF4 || len > n) return 0;
    uint32_t c = u[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;
        c = c << 6 | (u[i] & 0x3F);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || c > HR_G_MAX_CP || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

int hr_gutf8_step(int q, uint8_t b) {
    switch (q) {
    case 0:
        if (b < 0x80) return 0;
        if (b >= 0xC2 && b <= 0xDF) return 1;
        if (b == 0xE0) return 3;
        if (b == 0xED) return 4;
        if (b >= 0xE1 && b <= 0xEF) return 2;
        if (b == 0xF0) return 6;
        if (b >= 0xF1 && b <= 0xF3) return 5;
        if (b == 0xF4) return 7;
        return -1;
    case 1: return b >= 0x80 && b <= 0xBF ? 0 : -1;
    case 2: return b >= 0x80 && b <= 0xBF ? 1 : -1;
    case 3: return b >= 0xA0 && b <= 0xBF ? 1 : -1;
    case 4: return b >= 0x80 && b <= 0x9F ? 1 : -1;
    case 5: return b >= 0x80 && b <= 0xBF ? 2 : -1;
    case 6: return b >= 0x90 && b <= 0xBF ? 2 : -1;
    case 7: return b >= 0x80 && b <= 0x8F ? 2 : -1;
    default: return -1;
    }
}
