/* Array keywords beyond items and the counts: contains and uniqueItems.
 *
 * contains with minContains N (default 1): at least N items match contains (and items),
 * the others items: a comma-separated list "L_j" = an item matching both then the rest
 * with j-1 to go, or any item then L_j; exact, as "at least" needs no negation (the
 * grammar is ambiguous, which the Earley parser does not mind). maxContains would need
 * the items that do not match, and is refused.
 *
 * uniqueItems: exact when the items can take only a few values (an enum or const of at
 * most UNIQUE_MAX values, a boolean, null): the array is then a sequence of distinct ones,
 * made by a state machine over the set of values used (its size gives minItems/maxItems).
 * Any other uniqueItems is not enforced, as llama.cpp's json-schema-to-grammar does (its
 * array rule reads only items, prefixItems, minItems and maxItems): the grammar is marked
 * HR_SCHEMA_OVER_UNIQUE and docs/json-schema.md lists it. */
#include <stdlib.h>
#include <string.h>

#include "grammar/schema_int.h"

#define UNIQUE_MAX 8

typedef struct {
    hr_sc_ctx *c;
    const char *val[UNIQUE_MAX]; /* each value's rule */
    int k;
    int64_t mn, mx;
    const char *state[1 << UNIQUE_MAX]; /* after the values in the set; "" when not viable */
} machine;

static const char *state(machine *m, unsigned set, hr_err **e) {
    if (m->state[set]) return m->state[set][0] ? m->state[set] : NULL;
    int used = __builtin_popcount(set);
    hr_gbuf b = {0};
    int alts = 0;
    for (int i = 0; i < m->k && !*e && (m->mx < 0 || used < m->mx); i++) {
        if (set & (1u << i)) continue;
        const char *nx = state(m, set | (1u << i), e);
        if (!nx) continue;
        if (alts++) hr_gbuf_puts(&b, " | ");
        hr_gbuf_printf(&b, "%s%s %s%s %s", used ? "\",\"" : "", used ? m->c->ws : "", m->val[i],
                       m->c->ws, nx);
    }
    if (used >= m->mn) hr_gbuf_printf(&b, "%s\"]\"", alts++ ? " | " : "");
    const char *r = "";
    if (alts && !*e) {
        r = b.oom ? NULL : hr_sc_rule(m->c, "uniq", b.p);
        if (!r) *e = hr_err_oom();
    }
    hr_gbuf_free(&b);
    m->state[set] = r ? r : "";
    return r && r[0] ? r : NULL;
}

/* The few values items can take (a new array, or NULL when not few). */
static json_t *few_values(hr_sc_ctx *c, const json_t *items) {
    for (int i = 0;
         i < 16 && json_is_object(items) && json_is_string(json_object_get(items, "$ref")); i++) {
        const json_t *t;
        hr_err *e = hr_sc_resolve(c, json_string_value(json_object_get(items, "$ref")), "#", &t);
        if (e) return hr_err_free(e), NULL;
        items = t;
    }
    if (!json_is_object(items)) return NULL;
    json_t *en = json_object_get(items, "enum"), *cn = json_object_get(items, "const");
    json_t *ty = json_object_get(items, "type");
    if (json_is_array(en) && json_array_size(en) <= UNIQUE_MAX) return hr_json_deep_copy(en);
    if (cn) return json_pack("[O]", cn);
    if (json_is_string(ty) && !strcmp(json_string_value(ty), "boolean"))
        return json_pack("[bb]", 1, 0);
    if (json_is_string(ty) && !strcmp(json_string_value(ty), "null")) return json_pack("[n]");
    return NULL;
}

hr_err *hr_sc_unique_array(hr_sc_ctx *c, const json_t *items, int64_t mn, int64_t mx,
                           const char *path, int *done, const char **rule) {
    *done = 0;
    *rule = NULL;
    json_t *vals = few_values(c, items);
    if (!vals) {
        c->over |= HR_SCHEMA_OVER_UNIQUE;
        return NULL;
    }
    machine *m = calloc(1, sizeof *m);
    hr_err *e = m ? NULL : hr_err_oom();
    if (m) *m = (machine){.c = c, .mn = mn, .mx = mx};
    for (size_t i = 0; !e && i < json_array_size(vals); i++) {
        json_t *v = json_array_get(vals, i);
        int dup = 0;
        for (size_t j = 0; j < i; j++)
            dup |= json_equal(v, json_array_get(vals, j));
        json_t *one = dup ? NULL : hr_sc_keep(c, hr_json_copy((json_t *)items));
        if (dup) continue;
        if (!one) {
            e = hr_err_oom();
            break;
        }
        json_object_del(one, "enum");
        json_object_set(one, "const", v);
        const char *r = NULL;
        e = hr_sc_value(c, one, path, &r);
        if (!e && r) m->val[m->k++] = r;
    }
    json_decref(vals);
    if (!e) {
        const char *start = state(m, 0, &e);
        hr_gbuf b = {0};
        if (!e && start) {
            hr_gbuf_printf(&b, "\"[\"%s %s", c->ws, start);
            *rule = b.oom ? NULL : hr_sc_rule(c, "arr", b.p);
            if (!*rule) e = hr_err_oom();
        }
        hr_gbuf_free(&b);
        *done = 1;
    }
    free(m);
    return e;
}

hr_err *hr_sc_contains(hr_sc_ctx *c, const json_t *s, const json_t *items, int64_t mn, int64_t mx,
                       const char *path, const char **rule) {
    json_t *cs = json_object_get(s, "contains"), *mc = json_object_get(s, "minContains");
    *rule = NULL;
    if (mc && (!json_is_integer(mc) || json_integer_value(mc) < 0 || json_integer_value(mc) > 64))
        return hr_errf("schema: \"minContains\" at %s must be an integer 0..64", path);
    int64_t n = mc ? json_integer_value(mc) : 1;
    if (n == 0) return NULL;
    if (mn > n || mx >= 0)
        return hr_errf("schema: \"contains\" with minItems above minContains or with maxItems "
                       "at %s is not supported",
                       path);
    char *p = hr_sc_path(path, "contains");
    if (!p) return hr_err_oom();
    const json_t *both = cs;
    const char *any = NULL, *hit = NULL;
    hr_err *e = NULL;
    c->level++;
    if (json_is_true(cs))
        both = items ? items : cs;
    else if (items)
        e = hr_sc_merge(c, items, cs, p, &both);
    if (!e) e = hr_sc_value(c, both, p, &hit);
    if (!e) e = items ? hr_sc_value(c, items, p, &any) : (any = hr_sc_any(c)) ? NULL : hr_err_oom();
    c->level--;
    free(p);
    if (e || !hit) return e; /* no item can match: no array is valid */
    const char *w = c->ws, *prev = NULL;
    hr_gbuf b = {0};
    for (int64_t j = 1; j <= n && !b.oom; j++) { /* L_j, built from L_{j-1} */
        char *name = hr_sc_new_name(c, "contains");
        if (!name) return hr_gbuf_free(&b), hr_err_oom();
        hr_gbuf_free(&b);
        if (j == 1)
            hr_gbuf_printf(&b, "%s%s (\",\"%s %s%s)*", hit, w, w, any ? any : hit, w);
        else
            hr_gbuf_printf(&b, "%s%s \",\"%s %s", hit, w, w, prev);
        if (any) hr_gbuf_printf(&b, " | %s%s \",\"%s %s", any, w, w, name);
        hr_gbuf_printf(&b, " | %s", hr_sc_hint(c));
        if (!b.oom) hr_sc_emit(c, name, b.p);
        prev = name;
    }
    hr_gbuf_free(&b);
    hr_gbuf_printf(&b, "\"[\"%s %s \"]\"", w, prev);
    *rule = b.oom ? NULL : hr_sc_rule(c, "arr", b.p);
    hr_gbuf_free(&b);
    return *rule ? NULL : hr_err_oom();
}
