/* JSON Schema -> GBNF: the driver. One rule per schema node that needs one (identical
 * bodies share a rule), $ref targets memoized so recursive schemas become recursive
 * rules, allOf merged into one schema, anyOf/oneOf as alternatives, and the scalar types
 * as regex terminals. Objects are in schema_object.c, merging in schema_merge.c, enum
 * checks in schema_check.c, regexes in schema_num.c / schema_regex.c / schema_format.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "grammar/schema_int.h"

#define MAX_DEPTH 256
#define MAX_ALTS 4096

struct hr_sc_body {
    char *body;
    const char *name;
    uint64_t hash;
};

enum {
    T_NULL = 1,
    T_BOOL = 2,
    T_OBJ = 4,
    T_ARR = 8,
    T_STR = 16,
    T_NUM = 32,
    T_INT = 64,
    T_ALL = 127
};

/* keywords refused wherever they appear (they constrain, and are not enforced) */
static const char *refused_kw[] = {"not",
                                   "maxContains",
                                   "dependencies",
                                   "dependentRequired",
                                   "dependentSchemas",
                                   "unevaluatedProperties",
                                   "unevaluatedItems",
                                   "$dynamicRef",
                                   "$recursiveRef",
                                   "extends",
                                   "disallow",
                                   "divisibleBy"};
/* keywords this compiler enforces */
static const char *handled_kw[] = {"type",
                                   "enum",
                                   "const",
                                   "anyOf",
                                   "oneOf",
                                   "allOf",
                                   "$ref",
                                   "properties",
                                   "required",
                                   "additionalProperties",
                                   "patternProperties",
                                   "propertyNames",
                                   "minProperties",
                                   "maxProperties",
                                   "items",
                                   "prefixItems",
                                   "additionalItems",
                                   "minItems",
                                   "maxItems",
                                   "minLength",
                                   "maxLength",
                                   "pattern",
                                   "format",
                                   "minimum",
                                   "maximum",
                                   "exclusiveMinimum",
                                   "exclusiveMaximum",
                                   "multipleOf",
                                   "uniqueItems",
                                   "if",
                                   "then",
                                   "else",
                                   "contains",
                                   "minContains",
                                   HR_SC_NOT_STRINGS,
                                   HR_SC_PATTERNS,
                                   HR_SC_NOT_PATTERNS};

static int in_list(const char *k, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, list[i])) return 1;
    return 0;
}

int hr_sc_is_assertion(const char *k) {
    return in_list(k, handled_kw, sizeof handled_kw / sizeof handled_kw[0]) ||
           in_list(k, refused_kw, sizeof refused_kw / sizeof refused_kw[0]);
}

char *hr_sc_path(const char *path, const char *seg) {
    hr_gbuf b = {0};
    hr_gbuf_puts(&b, path);
    hr_gbuf_puts(&b, "/");
    for (const char *p = seg; *p; p++) {
        if (*p == '~')
            hr_gbuf_puts(&b, "~0");
        else if (*p == '/')
            hr_gbuf_puts(&b, "~1");
        else
            hr_gbuf_add(&b, p, 1);
    }
    if (b.oom || !b.p) {
        hr_gbuf_free(&b);
        return NULL;
    }
    return b.p;
}

static char *path_idx(const char *path, const char *kw, size_t i) {
    char seg[32];
    snprintf(seg, sizeof seg, "%zu", i);
    char *p = hr_sc_path(path, kw);
    char *q = p ? hr_sc_path(p, seg) : NULL;
    free(p);
    return q;
}

json_t *hr_sc_keep(hr_sc_ctx *c, json_t *s) {
    if (!s) return NULL;
    if (c->n_keep == c->cap_keep) {
        size_t cap = c->cap_keep ? c->cap_keep * 2 : 16;
        json_t **k = realloc(c->keep, cap * sizeof *k);
        if (!k) {
            json_decref(s);
            return NULL;
        }
        c->keep = k;
        c->cap_keep = cap;
    }
    c->keep[c->n_keep++] = s;
    return s;
}

char *hr_sc_new_name(hr_sc_ctx *c, const char *hint) {
    if (c->n_names == c->cap_names) {
        size_t cap = c->cap_names ? c->cap_names * 2 : 64;
        char **n = realloc(c->names, cap * sizeof *n);
        if (!n) return NULL;
        c->names = n;
        c->cap_names = cap;
    }
    size_t len = strlen(c->prefix) + strlen(hint) + 24;
    char *name = malloc(len);
    if (!name) return NULL;
    snprintf(name, len, "%s%s%d", c->prefix, hint, c->next_id++);
    c->names[c->n_names++] = name;
    return name;
}

static uint64_t fnv(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int bodies_grow(hr_sc_ctx *c) {
    size_t cap = c->cap_bodies ? c->cap_bodies * 2 : 256;
    struct hr_sc_body *nb = calloc(cap, sizeof *nb);
    if (!nb) return 0;
    for (size_t i = 0; i < c->cap_bodies; i++) {
        if (!c->bodies[i].body) continue;
        size_t j = c->bodies[i].hash & (cap - 1);
        while (nb[j].body)
            j = (j + 1) & (cap - 1);
        nb[j] = c->bodies[i];
    }
    free(c->bodies);
    c->bodies = nb;
    c->cap_bodies = cap;
    return 1;
}

void hr_sc_emit(hr_sc_ctx *c, const char *name, const char *body) {
    hr_gbuf_puts(&c->rules, name);
    hr_gbuf_puts(&c->rules, " ::= ");
    hr_gbuf_puts(&c->rules, body);
    hr_gbuf_puts(&c->rules, "\n");
}

const char *hr_sc_rule(hr_sc_ctx *c, const char *hint, const char *body) {
    if ((c->n_bodies + 1) * 2 > c->cap_bodies && !bodies_grow(c)) return NULL;
    uint64_t h = fnv(body);
    size_t j = h & (c->cap_bodies - 1);
    for (; c->bodies[j].body; j = (j + 1) & (c->cap_bodies - 1))
        if (c->bodies[j].hash == h && !strcmp(c->bodies[j].body, body)) return c->bodies[j].name;
    char *copy = strdup(body);
    const char *name = copy ? hr_sc_new_name(c, hint) : NULL;
    if (!name) {
        free(copy);
        return NULL;
    }
    c->bodies[j] = (struct hr_sc_body){copy, name, h};
    c->n_bodies++;
    hr_sc_emit(c, name, body);
    return name;
}

const char *hr_sc_regex_rule(hr_sc_ctx *c, const char *hint, const hr_gbuf *re) {
    if (re->oom || !re->p) return NULL;
    hr_gbuf b = {0};
    hr_gbuf_puts(&b, "/");
    hr_gbuf_add(&b, re->p, re->n);
    hr_gbuf_puts(&b, "/");
    const char *r = b.oom ? NULL : hr_sc_rule(c, hint, b.p);
    hr_gbuf_free(&b);
    return r;
}

const char *hr_sc_hint(hr_sc_ctx *c) {
    if (!c->hint[0]) {
        snprintf(c->hint, sizeof c->hint, "%scfg-hint", c->prefix);
        hr_gbuf_printf(&c->rules, "%s ::= %s \"}\"\n", c->hint, c->hint);
    }
    return c->hint;
}

const char *hr_sc_any(hr_sc_ctx *c) {
    if (c->any) return c->any;
    const char *p = c->prefix, *w = c->ws;
    hr_gbuf_printf(&c->rules, "%sjstring ::= /\"" HR_SC_CHAR "*\"/\n", p);
    hr_gbuf_printf(&c->rules,
                   "%sjnumber ::= /-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?/\n", p);
    hr_gbuf_printf(&c->rules,
                   "%sjvalue ::= %sjobject | %sjarray | %sjstring | %sjnumber | \"true\" | "
                   "\"false\" | \"null\"\n",
                   p, p, p, p, p);
    hr_gbuf_printf(&c->rules,
                   "%sjobject ::= \"{\"%s (%sjstring%s \":\"%s %sjvalue%s (\",\"%s %sjstring%s "
                   "\":\"%s %sjvalue%s)*)? \"}\"\n",
                   p, w, p, w, w, p, w, w, p, w, w, p, w);
    hr_gbuf_printf(&c->rules, "%sjarray ::= \"[\"%s (%sjvalue%s (\",\"%s %sjvalue%s)*)? \"]\"\n", p,
                   w, p, w, w, p, w);
    size_t len = strlen(p) + 8;
    char *name = malloc(len);
    if (!name) return NULL;
    snprintf(name, len, "%sjvalue", p);
    if (c->n_names == c->cap_names) {
        size_t cap = c->cap_names ? c->cap_names * 2 : 64;
        char **n = realloc(c->names, cap * sizeof *n);
        if (!n) {
            free(name);
            return NULL;
        }
        c->names = n;
        c->cap_names = cap;
    }
    c->names[c->n_names++] = name;
    return c->any = name;
}

/* ---- keyword checks ---- */

static hr_err *check_keywords(const json_t *s, const char *path) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        int bad = in_list(k, refused_kw, sizeof refused_kw / sizeof refused_kw[0]);
        if (!strcmp(k, "dependencies") || !strcmp(k, "dependentRequired") ||
            !strcmp(k, "dependentSchemas")) {
            /* property lists are enforced by the object compiler; schemas are not */
            const char *dk;
            json_t *dv;
            bad = !json_is_object(v) || (!strcmp(k, "dependentSchemas") && json_object_size(v));
            json_object_foreach(v, dk, dv) bad |= !json_is_array(dv);
        }
        if (!strcmp(k, "unevaluatedProperties") || !strcmp(k, "unevaluatedItems"))
            bad = !json_is_true(v);
        if (!strcmp(k, "if")) bad = json_object_get(s, "then") || json_object_get(s, "else");
        if (bad) return hr_errf("schema: \"%s\" at %s is not supported", k, path);
    }
    return NULL;
}

/* Does s hold a keyword other than `skip` that constrains instances? */
static int has_assertions(const json_t *s, const char *skip) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        if (skip && !strcmp(k, skip)) continue;
        if (hr_sc_is_assertion(k)) return 1;
    }
    return 0;
}

/* s without keyword k (a shallow copy kept by the context); NULL when out of memory. */
static const json_t *without(hr_sc_ctx *c, const json_t *s, const char *k) {
    json_t *copy = hr_json_copy((json_t *)s);
    if (copy) json_object_del(copy, k);
    return hr_sc_keep(c, copy);
}

/* ---- scalars ---- */

static hr_err *type_mask(const json_t *s, const char *path, int *mask) {
    static const char *names[] = {"null",   "boolean", "object", "array",
                                  "string", "number",  "integer"};
    json_t *t = json_object_get(s, "type");
    if (!t) {
        *mask = T_ALL;
        return NULL;
    }
    *mask = 0;
    size_t n = json_is_array(t) ? json_array_size(t) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(t) ? json_array_get(t, i) : t;
        int found = 0;
        for (int b = 0; b < 7 && json_is_string(e); b++)
            if (!strcmp(json_string_value(e), names[b])) {
                *mask |= 1 << b;
                found = 1;
            }
        if (!found) return hr_errf("schema: \"type\" at %s: not a JSON Schema type", path);
    }
    return NULL;
}

/* Integer bounds of a number keyword pair (draft-04 boolean exclusives, later numbers). */
typedef struct {
    int has;
    double v;
    int ex;
} bound;

static void tighter(bound *b, double v, int ex, int lower) {
    if (!b->has || (lower ? (v > b->v || (v == b->v && ex)) : (v < b->v || (v == b->v && ex)))) {
        b->has = 1;
        b->v = v;
        b->ex = ex;
    }
}

static hr_err *bounds(const json_t *s, const char *path, bound *lo, bound *hi) {
    *lo = (bound){0};
    *hi = (bound){0};
    const char *kws[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (int i = 0; i < 4; i++) {
        json_t *v = json_object_get(s, kws[i]);
        if (!v || json_is_boolean(v)) continue;
        if (!json_is_number(v))
            return hr_errf("schema: \"%s\" at %s must be a number", kws[i], path);
        double d = json_number_value(v);
        int ex = i >= 2;
        if (i < 2) {
            json_t *e = json_object_get(s, i == 0 ? "exclusiveMinimum" : "exclusiveMaximum");
            ex = json_is_true(e);
        }
        tighter(i % 2 == 0 ? lo : hi, d, ex, i % 2 == 0);
    }
    return NULL;
}

static hr_err *int_bounds(const bound *lo, const bound *hi, const char *path, int *has_lo,
                          int64_t *l, int *has_hi, int64_t *h) {
    const double lim = 9.2e18;
    *has_lo = lo->has;
    *has_hi = hi->has;
    if (lo->has) {
        double v = lo->ex ? floor(lo->v) + 1 : ceil(lo->v);
        if (v < -lim)
            *has_lo = 0;
        else if (v > lim)
            return hr_errf("schema: minimum at %s is out of range", path);
        else
            *l = (int64_t)v;
    }
    if (hi->has) {
        double v = hi->ex ? ceil(hi->v) - 1 : floor(hi->v);
        if (v > lim)
            *has_hi = 0;
        else if (v < -lim)
            return hr_errf("schema: maximum at %s is out of range", path);
        else
            *h = (int64_t)v;
    }
    return NULL;
}

/* Integers that are multiples of k: a rule per remainder of the digits read so far. */
static const char *multiple_rules(hr_sc_ctx *c, int64_t k) {
    char *base = hr_sc_new_name(c, "mod");
    if (!base) return NULL;
    hr_gbuf b = {0};
    for (int64_t r = 0; r < k; r++) {
        hr_gbuf_printf(&b, "%s_%lld ::= ", base, (long long)r);
        for (int d = 0; d < 10; d++)
            hr_gbuf_printf(&b, "%s\"%d\" %s_%lld", d ? " | " : "", d, base,
                           (long long)((r * 10 + d) % k));
        hr_gbuf_puts(&b, r == 0 ? " | \"\"\n" : "\n");
    }
    hr_gbuf_printf(&b, "%s ::= \"0\" | \"-\"? (", base);
    for (int d = 1; d < 10; d++)
        hr_gbuf_printf(&b, "%s\"%d\" %s_%lld", d > 1 ? " | " : "", d, base, (long long)(d % k));
    hr_gbuf_puts(&b, ")\n");
    if (b.oom) {
        hr_gbuf_free(&b);
        return NULL;
    }
    hr_gbuf_add(&c->rules, b.p, b.n);
    hr_gbuf_free(&b);
    return base;
}

static hr_err *number_rule(hr_sc_ctx *c, const json_t *s, const char *path, int integer,
                           const char **rule) {
    bound lo, hi;
    HR_TRY(bounds(s, path, &lo, &hi));
    json_t *mo = json_object_get(s, "multipleOf");
    double m = mo ? json_number_value(mo) : 0;
    if (mo && (!json_is_number(mo) || m <= 0))
        return hr_errf("schema: \"multipleOf\" at %s must be a positive number", path);
    if (mo && m == floor(m) && m > 1 && (lo.has || hi.has)) { /* a short range: list them */
        int hl, hh;
        int64_t l = 0, h = 0, k = (int64_t)m;
        HR_TRY(int_bounds(&lo, &hi, path, &hl, &l, &hh, &h));
        if (!hl || !hh || h - l > 10000)
            return hr_errf("schema: \"multipleOf\" with minimum/maximum at %s is supported only "
                           "for ranges of at most 10000",
                           path);
        hr_gbuf b = {0};
        int alts = 0;
        for (int64_t v = l; v <= h; v++)
            if (v % k == 0) hr_gbuf_printf(&b, "%s\"%lld\"", alts++ ? " | " : "", (long long)v);
        *rule = alts && !b.oom ? hr_sc_rule(c, "mul", b.p) : NULL;
        hr_gbuf_free(&b);
        return *rule || !alts ? NULL : hr_err_oom();
    }
    if (mo && m == floor(m) && m > 1) {
        if (m > 1000)
            return hr_errf("schema: \"multipleOf\" %g at %s is too large (at most 1000)", m, path);
        *rule = multiple_rules(c, (int64_t)m);
        return *rule ? NULL : hr_err_oom();
    }
    if (mo && m != 1) return hr_errf("schema: \"multipleOf\" %g at %s is not supported", m, path);
    if (mo) integer = 1;
    hr_gbuf re = {0};
    if (integer) {
        int hl, hh;
        int64_t l = 0, h = 0;
        HR_TRY(int_bounds(&lo, &hi, path, &hl, &l, &hh, &h));
        if (hl && hh && l > h) return NULL;
        if (!hl && !hh)
            hr_gbuf_puts(&re, "-?(?:0|[1-9][0-9]*)");
        else
            hr_sc_int_range(&re, hl, l, hh, h);
    } else {
        hr_sc_dec l = {0}, h = {0};
        if (lo.has && !hr_sc_dec_bound(lo.v, 1, lo.ex, &l))
            return hr_errf("schema: minimum %g at %s is out of range", lo.v, path);
        if (hi.has && !hr_sc_dec_bound(hi.v, 0, hi.ex, &h))
            return hr_errf("schema: maximum %g at %s is out of range", hi.v, path);
        if (!hr_sc_num_range(&re, &l, &h)) {
            hr_gbuf_free(&re);
            return NULL;
        }
    }
    *rule = hr_sc_regex_rule(c, integer ? "int" : "num", &re);
    hr_gbuf_free(&re);
    return *rule ? NULL : hr_err_oom();
}

static hr_err *get_count(const json_t *s, const char *k, const char *path, int64_t def,
                         int64_t *out) {
    json_t *v = json_object_get(s, k);
    *out = def;
    if (!v) return NULL;
    if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
        json_real_value(v) >= 0 && json_real_value(v) < 1e15) {
        *out = (int64_t)json_real_value(v);
        return NULL;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return hr_errf("schema: \"%s\" at %s must be a non-negative integer", k, path);
    *out = json_integer_value(v);
    return NULL;
}

/* "\"" CHAR{mn,mx} "\"" for bounds above CHUNK: whole 64-character chunks as a nonterminal
 * (its hint keeps it one), so the DFA stays small and one chunk DFA and few tail DFAs serve
 * every such string of every schema (their mask entries shared, where a counter to 255 made
 * an entry per character); lengths 64a+b split exactly. mx < 0: none. The closing quote ends
 * each tail's terminal: a tail that could end anywhere (CHAR{0,63} alone) would make every
 * token inside the string a place where a terminal completes, and the mask would run the
 * parser over the whole vocabulary. */
#define CHUNK 64
static const char *long_string(hr_sc_ctx *c, int64_t mn, int64_t mx) {
    char body[512];
    snprintf(body, sizeof body, "/" HR_SC_CHAR "{%d}/ | %s", CHUNK, hr_sc_hint(c));
    const char *chunk = hr_sc_rule(c, "chunk", body);
    if (!chunk) return NULL;
    hr_gbuf b = {0};
    hr_gbuf_puts(&b, "\"\\\"\"");
    if (mn / CHUNK) hr_gbuf_printf(&b, " %s{%lld}", chunk, (long long)(mn / CHUNK));
    if (mn % CHUNK) hr_gbuf_printf(&b, " /" HR_SC_CHAR "{%lld}/", (long long)(mn % CHUNK));
    if (mx < 0)
        hr_gbuf_puts(&b, " /" HR_SC_CHAR "*\"/");
    else {
        int64_t d = mx - mn, q = d / CHUNK, r = d % CHUNK;
        if (q == 0)
            hr_gbuf_printf(&b, " /" HR_SC_CHAR "{0,%lld}\"/", (long long)r);
        else {
            hr_gbuf_puts(&b, " (");
            if (q > 1) hr_gbuf_printf(&b, "%s{0,%lld} ", chunk, (long long)(q - 1));
            hr_gbuf_printf(&b, "/" HR_SC_CHAR "{0,%d}\"/ | %s{%lld} /" HR_SC_CHAR "{0,%lld}\"/",
                           CHUNK - 1, chunk, (long long)q, (long long)r);
            hr_gbuf_puts(&b, ")");
        }
    }
    const char *out = b.oom ? NULL : hr_sc_rule(c, "lstr", b.p);
    hr_gbuf_free(&b);
    return out;
}

/* Strings that are none of the list (from "not" of a string enum): the names' trie
 * complement, as a regex or, past 400 bytes of names, as rules over the trie. */
static hr_err *not_strings_rule(hr_sc_ctx *c, const json_t *s, const json_t *list, const char *path,
                                const char **rule) {
    static const char *other[] = {"pattern", "format", "minLength", "maxLength"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (json_object_get(s, other[i]))
            return hr_errf("schema: \"not\" of an enum together with \"%s\" at %s is not "
                           "supported",
                           other[i], path);
    size_t n = json_array_size(list), bytes = 0;
    const char **names = calloc(n ? n : 1, sizeof *names);
    size_t *lens = calloc(n ? n : 1, sizeof *lens);
    hr_err *e = names && lens ? NULL : hr_err_oom();
    for (size_t i = 0; !e && i < n; i++) {
        names[i] = json_string_value(json_array_get(list, i));
        lens[i] = json_string_length(json_array_get(list, i));
        bytes += lens[i];
    }
    if (!e && bytes > 400)
        *rule = hr_sc_not_names_rule(c, names, lens, n);
    else if (!e) {
        hr_gbuf re = {0};
        hr_gbuf_puts(&re, "\"");
        hr_sc_not_names(&re, names, lens, n);
        hr_gbuf_puts(&re, "\"");
        *rule = hr_sc_regex_rule(c, "str", &re);
        hr_gbuf_free(&re);
    }
    if (!e && !*rule) e = hr_err_oom();
    free(names);
    free(lens);
    return e;
}

/* minLength/maxLength as a regex over a string's encoded inside (mx < 0: no upper bound). */
static void length_regex(hr_gbuf *o, int64_t mn, int64_t mx) {
    if (mx >= 0)
        hr_gbuf_printf(o, HR_SC_CHAR "{%lld,%lld}", (long long)mn, (long long)mx);
    else if (mn > 0)
        hr_gbuf_printf(o, HR_SC_CHAR "{%lld,}", (long long)mn);
    else
        hr_gbuf_puts(o, HR_SC_CHAR "*");
}

#define MAX_PARTS 8

/* One constraint of a string as a regex over its inside; neg: the inside must not match. */
typedef struct {
    hr_gbuf re;
    int neg;
} str_part;

static hr_err *pattern_part(const json_t *pat, int neg, const char *path, str_part *part, int *np) {
    if (!json_is_string(pat)) return hr_errf("schema: \"pattern\" at %s must be a string", path);
    if (*np == MAX_PARTS)
        return hr_errf("schema: more than %d patterns and formats for one string at %s are not "
                       "supported",
                       MAX_PARTS, path);
    part[*np].neg = neg;
    hr_err *e = hr_sc_pattern(&part[(*np)++].re, json_string_value(pat), json_string_length(pat));
    return e ? hr_err_wrap(e, "schema: at %s: ", path) : NULL;
}

/* The string's constraints other than length, as regexes over its inside: the format's
 * (when known), the pattern's, the compiler's own lists of patterns it must and must not
 * match; bounds that a lone pattern absorbs exactly are cleared. */
static hr_err *string_parts(const json_t *s, const char *path, int64_t *mn, int64_t *mx,
                            str_part *part, int *np) {
    json_t *pat = json_object_get(s, "pattern"), *fmt = json_object_get(s, "format");
    json_t *more = json_object_get(s, HR_SC_PATTERNS),
           *neg = json_object_get(s, HR_SC_NOT_PATTERNS);
    if (fmt && !json_is_string(fmt))
        return hr_errf("schema: \"format\" at %s must be a string", path);
    if (fmt) {
        int known = 0;
        hr_err *e = hr_sc_format(&part[*np].re, json_string_value(fmt), &known);
        if (e) return hr_err_wrap(e, "schema: at %s: ", path);
        if (!known) hr_gbuf_free(&part[*np].re);
        if (known && hr_sc_format_fits(json_string_value(fmt), *mn, *mx))
            *mn = 0, *mx = -1; /* every string of the format has a length inside the bounds */
        *np += known;
    }
    if (pat && json_is_string(pat) && !*np && !more && !neg && (*mn > 0 || *mx >= 0)) {
        hr_gbuf t = {0}; /* a run of atoms that takes the bounds itself */
        if (hr_sc_pattern_len(&t, json_string_value(pat), json_string_length(pat), *mn, *mx)) {
            part[(*np)++].re = t;
            *mn = 0, *mx = -1;
            return NULL;
        }
        hr_gbuf_free(&t);
    }
    if (pat) HR_TRY(pattern_part(pat, 0, path, part, np));
    for (size_t i = 0; i < json_array_size(more); i++)
        HR_TRY(pattern_part(json_array_get(more, i), 0, path, part, np));
    for (size_t i = 0; i < json_array_size(neg); i++)
        HR_TRY(pattern_part(json_array_get(neg, i), 1, path, part, np));
    return NULL;
}

/* A string rule: one regex, or the intersection (`&`) of the parts, negated ones as `~`.
 * The product automaton can be large, so the hint keeps an intersection a terminal of its
 * own rather than a part of every regular run that uses the string. */
static const char *string_of(hr_sc_ctx *c, const str_part *part, int np) {
    hr_gbuf b = {0};
    for (int k = 0; k < np; k++)
        if (part[k].re.oom) return NULL;
    if (np == 1) {
        hr_gbuf_puts(&b, "\"");
        hr_gbuf_add(&b, part[0].re.p, part[0].re.n);
        hr_gbuf_puts(&b, "\"");
        const char *r = hr_sc_regex_rule(c, "str", &b);
        hr_gbuf_free(&b);
        return r;
    }
    hr_gbuf_puts(&b, "/\"/ (");
    for (int k = 0; k < np; k++)
        hr_gbuf_printf(&b, "%s%s/%.*s/", k ? " & " : "", part[k].neg ? "~" : "", (int)part[k].re.n,
                       part[k].re.p);
    hr_gbuf_printf(&b, ") /\"/ | %s", hr_sc_hint(c));
    const char *r = b.oom ? NULL : hr_sc_rule(c, "str", b.p);
    hr_gbuf_free(&b);
    return r;
}

static hr_err *string_rule(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule) {
    json_t *nots = json_object_get(s, HR_SC_NOT_STRINGS);
    if (nots) return not_strings_rule(c, s, nots, path, rule);
    int64_t mn, mx;
    HR_TRY(get_count(s, "minLength", path, 0, &mn));
    HR_TRY(get_count(s, "maxLength", path, -1, &mx));
    if (mx >= 0 && mn > mx) return NULL;
    str_part part[MAX_PARTS + 1];
    memset(part, 0, sizeof part);
    int np = 0;
    hr_err *e = string_parts(s, path, &mn, &mx, part, &np);
    int bounded = mn > 0 || mx >= 0, negated = 0;
    for (int k = 0; k < np; k++)
        negated |= part[k].neg;
    if (!e && bounded && np && (mn > 256 || mx > 256))
        e = hr_errf("schema: \"pattern\"/\"format\" together with minLength/maxLength above "
                    "256 at %s is not supported",
                    path);
    else if (!e && bounded && (mn > 100000 || mx > 100000))
        e = hr_errf("schema: minLength/maxLength above 100000 at %s is not supported", path);
    else if (!e && !np && (mn > CHUNK || mx > CHUNK)) {
        *rule = long_string(c, mn, mx);
        return *rule ? NULL : hr_err_oom();
    } else if (!e && (bounded || !np || negated)) /* a negation needs the inside's syntax */
        length_regex(&part[np++].re, mn, mx);
    if (!e && !(*rule = string_of(c, part, np))) e = hr_err_oom();
    for (int k = 0; k < np; k++)
        hr_gbuf_free(&part[k].re);
    return e;
}

/* ---- arrays ---- */

/* Items: the tuple part (prefixItems, or items as an array before 2020-12) and the rest. */
static hr_err *array_parts(const json_t *s, const char *path, const json_t **tuple,
                           const char **tuple_kw, const json_t **rest) {
    json_t *pre = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    *tuple = NULL;
    *tuple_kw = NULL;
    *rest = items;
    if (pre) {
        if (!json_is_array(pre))
            return hr_errf("schema: \"prefixItems\" at %s must be an array", path);
        *tuple = pre;
        *tuple_kw = "prefixItems";
    } else if (json_is_array(items)) {
        *tuple = items;
        *tuple_kw = "items";
        *rest = json_object_get(s, "additionalItems");
    }
    return NULL;
}

static hr_err *array_rule(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule) {
    const json_t *tuple, *rest_s;
    const char *tuple_kw, *w = c->ws;
    int64_t mn, mx;
    HR_TRY(array_parts(s, path, &tuple, &tuple_kw, &rest_s));
    HR_TRY(get_count(s, "minItems", path, 0, &mn));
    HR_TRY(get_count(s, "maxItems", path, -1, &mx));
    if (mx >= 0 && mn > mx) return NULL;
    json_t *cs = json_object_get(s, "contains");
    if (cs && (tuple || json_object_get(s, "uniqueItems")))
        return hr_errf("schema: \"contains\" at %s with a tuple or uniqueItems is not "
                       "supported",
                       path);
    if (cs) {
        hr_err *e = hr_sc_contains(c, s, rest_s, mn, mx, path, rule);
        json_t *mc = json_object_get(s, "minContains");
        if (e || *rule || !(json_is_integer(mc) && json_integer_value(mc) == 0)) return e;
    }
    if (json_is_true(json_object_get(s, "uniqueItems")) && (mx < 0 || mx > 1)) {
        int done = 0;
        if (!tuple && rest_s) {
            char *p = hr_sc_path(path, "items");
            c->level++;
            hr_err *e = p ? hr_sc_unique_array(c, rest_s, mn, mx, p, &done, rule) : hr_err_oom();
            c->level--;
            free(p);
            if (e || done) return e;
        } else
            c->over |= HR_SCHEMA_OVER_UNIQUE;
    }
    size_t k = tuple ? json_array_size(tuple) : 0;
    const char **t = calloc(k ? k : 1, sizeof *t);
    if (!t) return hr_err_oom();
    hr_err *e = NULL;
    c->level++;
    size_t usable = 0; /* tuple positions that can hold a value */
    for (; usable < k && !e; usable++) {
        if (mx >= 0 && (int64_t)usable >= mx) break;
        char *p = path_idx(path, tuple_kw, usable);
        e = p ? hr_sc_value(c, json_array_get(tuple, usable), p, &t[usable]) : hr_err_oom();
        free(p);
        if (!e && !t[usable]) break;
    }
    const char *rest = NULL;
    int rest_open = !e && usable == k && (mx < 0 || (int64_t)k < mx);
    if (rest_open) {
        char *p =
            hr_sc_path(path, tuple ? (tuple_kw[0] == 'p' ? "items" : "additionalItems") : "items");
        e = !p ? hr_err_oom() : rest_s ? hr_sc_value(c, rest_s, p, &rest) : NULL;
        if (!e && !rest_s && !(rest = hr_sc_any(c))) e = hr_err_oom();
        free(p);
    }
    c->level--;
    hr_gbuf b = {0};
    if (!e && (int64_t)usable + (rest ? (mx < 0 ? INT64_MAX / 2 : mx) : 0) >= mn) {
        /* A tuple prefix t[0..usable) (an array may end after position mn), then rest{a,b} */
        int64_t a = mn > (int64_t)usable ? mn - (int64_t)usable : 0;
        int64_t bmax = mx < 0 ? -1 : mx - (int64_t)usable;
        hr_gbuf_printf(&b, "\"[\"%s ", w);
        size_t opened = 0;
        for (size_t i = 0; i < usable; i++) {
            int optional = (int64_t)i >= mn;
            if (optional) {
                hr_gbuf_puts(&b, "(");
                opened++;
            }
            hr_gbuf_printf(&b, "%s%s %s%s ", i ? "\",\"" : "", i ? w : "", t[i], w);
        }
        if (rest && (bmax < 0 || bmax > 0)) {
            const char *lead = usable ? "\",\"" : "";
            if (usable) {
                hr_gbuf_printf(&b, "(%s%s %s%s)", lead, w, rest, w);
                if (bmax < 0)
                    hr_gbuf_printf(&b, "{%lld,} ", (long long)a);
                else
                    hr_gbuf_printf(&b, "{%lld,%lld} ", (long long)a, (long long)bmax);
            } else {
                int64_t a1 = a > 0 ? a - 1 : 0;
                hr_gbuf_printf(&b, "(%s%s", rest, w);
                if (bmax != 1) hr_gbuf_printf(&b, " (\",\"%s %s%s)", w, rest, w);
                if (bmax < 0)
                    hr_gbuf_printf(&b, "{%lld,}", (long long)a1);
                else if (bmax != 1)
                    hr_gbuf_printf(&b, "{%lld,%lld}", (long long)a1, (long long)(bmax - 1));
                hr_gbuf_puts(&b, a == 0 ? ")? " : ") ");
            }
        }
        for (size_t i = 0; i < opened; i++)
            hr_gbuf_puts(&b, ")? ");
        hr_gbuf_puts(&b, "\"]\"");
        if (!b.oom) *rule = hr_sc_rule(c, "arr", b.p);
        if (b.oom || !*rule) e = hr_err_oom();
    }
    hr_gbuf_free(&b);
    free(t);
    return e;
}

/* ---- enum / const ---- */

static void literal(hr_sc_ctx *c, hr_gbuf *b, const json_t *v) {
    const char *w = c->ws;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        int first = 1;
        hr_gbuf_printf(b, "\"{\"%s ", w);
        json_object_foreach((json_t *)v, k, x) {
            json_t *ks = json_string(k);
            char *kt = ks ? hr_json_dumps(ks, JSON_ENCODE_ANY) : NULL;
            if (!kt)
                b->oom = 1;
            else {
                if (!first) hr_gbuf_printf(b, "\",\"%s ", w);
                hr_gbuf_lit(b, kt, strlen(kt));
                hr_gbuf_printf(b, "%s \":\"%s ", w, w);
                literal(c, b, x);
                hr_gbuf_printf(b, "%s ", w);
            }
            free(kt);
            json_decref(ks);
            first = 0;
        }
        hr_gbuf_puts(b, "\"}\"");
    } else if (json_is_array(v)) {
        hr_gbuf_printf(b, "\"[\"%s ", w);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) hr_gbuf_printf(b, "\",\"%s ", w);
            literal(c, b, json_array_get(v, i));
            hr_gbuf_printf(b, "%s ", w);
        }
        hr_gbuf_puts(b, "\"]\"");
    } else if (json_is_real(v)) {
        /* jansson's spelling (17 digits) and the shortest one that reads back the same */
        char *jt = hr_json_dumps(v, JSON_ENCODE_ANY), shortest[40] = "";
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(shortest, sizeof shortest, "%.*g", prec, json_real_value(v));
            if (strtod(shortest, NULL) == json_real_value(v)) break;
        }
        if (!jt)
            b->oom = 1;
        else if (strchr(shortest, 'n') || strchr(shortest, 'i') || !strcmp(jt, shortest))
            hr_gbuf_lit(b, jt, strlen(jt));
        else {
            hr_gbuf_puts(b, "(");
            hr_gbuf_lit(b, jt, strlen(jt));
            hr_gbuf_puts(b, " | ");
            hr_gbuf_lit(b, shortest, strlen(shortest));
            hr_gbuf_puts(b, ")");
        }
        free(jt);
    } else {
        char *jt = hr_json_dumps(v, JSON_ENCODE_ANY);
        if (!jt)
            b->oom = 1;
        else
            hr_gbuf_lit(b, jt, strlen(jt));
        free(jt);
    }
}

static hr_err *enum_rule(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule) {
    json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    if (en && !json_is_array(en)) return hr_errf("schema: \"enum\" at %s must be an array", path);
    const json_t *rest = without(c, without(c, s, "enum"), "const");
    if (!rest) return hr_err_oom();
    hr_gbuf b = {0};
    size_t n = en ? json_array_size(en) : 1, alts = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = en ? json_array_get(en, i) : cn;
        int ok = 1;
        if (cn && en) ok = json_equal((json_t *)v, cn);
        if (ok) {
            hr_err *e = hr_sc_check(c, rest, v, path, &ok);
            if (e) {
                hr_gbuf_free(&b);
                return e;
            }
        }
        if (!ok) continue;
        if (alts++) hr_gbuf_puts(&b, " | ");
        literal(c, &b, v);
    }
    if (b.oom) {
        hr_gbuf_free(&b);
        return hr_err_oom();
    }
    if (alts) {
        *rule = hr_sc_rule(c, "enum", b.p);
        if (!*rule) {
            hr_gbuf_free(&b);
            return hr_err_oom();
        }
    }
    hr_gbuf_free(&b);
    return NULL;
}

/* ---- combinators ---- */

/* Alternatives: the rules of each branch (merged with s's other keywords when s has any). */
static hr_err *any_of(hr_sc_ctx *c, const json_t *s, const char *kw, const char *path,
                      const char **rule) {
    json_t *list = json_object_get(s, kw);
    if (!json_is_array(list) || !json_array_size(list))
        return hr_errf("schema: \"%s\" at %s must be a non-empty array", kw, path);
    const json_t *rest = has_assertions(s, kw) ? without(c, s, kw) : NULL;
    if (has_assertions(s, kw) && !rest) return hr_err_oom();
    hr_gbuf b = {0};
    size_t alts = 0;
    hr_err *e = NULL;
    for (size_t i = 0; i < json_array_size(list) && !e; i++) {
        char *p = path_idx(path, kw, i);
        const json_t *branch = json_array_get(list, i);
        const char *r = NULL;
        if (!p)
            e = hr_err_oom();
        else if (kw[0] == 'o' && !(e = hr_sc_one_of_branch(c, rest, list, i, p, &branch)))
            e = hr_sc_value(c, branch, p, &r);
        else if (kw[0] == 'o')
            ;
        else if (rest && !(e = hr_sc_merge(c, rest, branch, p, &branch)))
            e = hr_sc_value(c, branch, p, &r);
        else if (!rest)
            e = hr_sc_value(c, branch, p, &r);
        free(p);
        if (e || !r) continue;
        if (alts++) hr_gbuf_puts(&b, " | ");
        hr_gbuf_puts(&b, r);
    }
    if (!e && b.oom) e = hr_err_oom();
    if (!e && alts) {
        *rule = hr_sc_rule(c, "alt", b.p);
        if (!*rule) e = hr_err_oom();
    }
    hr_gbuf_free(&b);
    return e;
}

static hr_err *all_of(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule) {
    json_t *list = json_object_get(s, "allOf");
    if (!json_is_array(list) || !json_array_size(list))
        return hr_errf("schema: \"allOf\" at %s must be a non-empty array", path);
    const json_t *acc = without(c, s, "allOf");
    if (!acc) return hr_err_oom();
    for (size_t i = 0; i < json_array_size(list); i++) {
        char *p = path_idx(path, "allOf", i);
        hr_err *e = p ? hr_sc_merge(c, acc, json_array_get(list, i), p, &acc) : hr_err_oom();
        free(p);
        HR_TRY(e);
    }
    return hr_sc_value(c, acc, path, rule);
}

/* A $ref target: one rule per target, reserved before compiling so recursion refers to it. */
static hr_err *ref_target(hr_sc_ctx *c, const json_t *key, const json_t *t, const char *path,
                          const char **rule);

static hr_err *by_type(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule) {
    int mask;
    HR_TRY(type_mask(s, path, &mask));
    if (mask & T_NUM) mask &= ~T_INT;
    hr_gbuf b = {0};
    size_t alts = 0;
    hr_err *e = NULL;
    for (int bit = 1; bit <= T_INT && !e; bit <<= 1) {
        if (!(mask & bit)) continue;
        const char *r = NULL;
        switch (bit) {
        case T_NULL: r = "\"null\""; break;
        case T_BOOL: r = "\"true\" | \"false\""; break;
        case T_OBJ: e = hr_sc_object(c, s, path, &r); break;
        case T_ARR: e = array_rule(c, s, path, &r); break;
        case T_STR: e = string_rule(c, s, path, &r); break;
        case T_NUM: e = number_rule(c, s, path, 0, &r); break;
        case T_INT: e = number_rule(c, s, path, 1, &r); break;
        }
        if (e || !r) continue;
        if (alts++) hr_gbuf_puts(&b, " | ");
        hr_gbuf_puts(&b, r);
    }
    if (!e && b.oom) e = hr_err_oom();
    if (!e && alts) {
        *rule = hr_sc_rule(c, "v", b.p);
        if (!*rule) e = hr_err_oom();
    }
    hr_gbuf_free(&b);
    return e;
}

static hr_err *value_inner(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule) {
    if (hr_sc_has_conditional(s)) {
        const json_t *m;
        HR_TRY(hr_sc_conditionals(c, s, path, &m));
        return hr_sc_value(c, m, path, rule);
    }
    json_t *not = json_object_get(s, "not");
    if (not ) { /* "not" of a required list or a type is a schema: merge it in */
        json_t *neg = hr_sc_keep(c, hr_sc_negation(c, not ));
        if (!neg) return hr_errf("schema: \"not\" at %s is not supported", path);
        const json_t *m, *rest = without(c, s, "not");
        if (!rest) return hr_err_oom();
        HR_TRY(hr_sc_merge(c, rest, neg, path, &m));
        return hr_sc_value(c, m, path, rule);
    }
    HR_TRY(check_keywords(s, path));
    json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        if (!json_is_string(ref)) return hr_errf("schema: \"$ref\" at %s must be a string", path);
        const json_t *t;
        HR_TRY(hr_sc_resolve(c, json_string_value(ref), path, &t));
        if (!has_assertions(s, "$ref")) return ref_target(c, t, t, path, rule);
        /* with siblings: the merge, memoized under the $ref string itself, so a recursive
         * schema reaching this node again refers to its rule */
        const json_t *m, *rest = without(c, s, "$ref");
        if (!rest) return hr_err_oom();
        HR_TRY(hr_sc_merge(c, rest, t, path, &m));
        return ref_target(c, ref, m, path, rule);
    }
    if (json_object_get(s, "allOf")) return all_of(c, s, path, rule);
    json_t *any = json_object_get(s, "anyOf"), *one = json_object_get(s, "oneOf");
    /* with both, each anyOf branch is merged with the rest, oneOf included */
    if (any) return any_of(c, s, "anyOf", path, rule);
    if (one) return any_of(c, s, "oneOf", path, rule);
    if (json_object_get(s, "enum") || json_object_get(s, "const"))
        return enum_rule(c, s, path, rule);
    return by_type(c, s, path, rule);
}

hr_err *hr_sc_value(hr_sc_ctx *c, const json_t *s, const char *path, const char **rule) {
    *rule = NULL;
    if (json_is_true(s)) {
        *rule = hr_sc_any(c);
        return *rule ? NULL : hr_err_oom();
    }
    if (json_is_false(s)) return NULL;
    if (!json_is_object(s)) return hr_errf("schema: the schema at %s is not an object", path);
    if (++c->depth > MAX_DEPTH) {
        c->depth--;
        return hr_errf("schema: nested deeper than %d at %s", MAX_DEPTH, path);
    }
    hr_err *e = value_inner(c, s, path, rule);
    c->depth--;
    return e;
}

static hr_err *ref_target(hr_sc_ctx *c, const json_t *key, const json_t *t, const char *path,
                          const char **rule) {
    for (size_t i = 0; i < c->n_memo; i++) {
        hr_sc_memo *m = &c->memo[i];
        if (m->node != key) continue;
        if (!m->done && m->level == c->level)
            return hr_errf("schema: $ref at %s refers to itself without an object or array "
                           "in between",
                           path);
        if (!m->done) m->used = 1;
        *rule = m->name;
        return NULL;
    }
    if (json_is_boolean(t)) return hr_sc_value(c, t, path, rule);
    if (c->n_memo == c->cap_memo) {
        size_t cap = c->cap_memo ? c->cap_memo * 2 : 16;
        hr_sc_memo *m = realloc(c->memo, cap * sizeof *m);
        if (!m) return hr_err_oom();
        c->memo = m;
        c->cap_memo = cap;
    }
    size_t at = c->n_memo++;
    char *name = hr_sc_new_name(c, "ref");
    if (!name) return hr_err_oom();
    c->memo[at] = (hr_sc_memo){key, name, c->level, 0, 0};
    const char *body = NULL;
    hr_err *e = hr_sc_value(c, t, path, &body);
    c->memo[at].done = 1;
    if (e) return e;
    if (!body) { /* accepts nothing: fine unless something recursive already refers to it */
        if (c->memo[at].used)
            return hr_errf("schema: the recursive schema at %s accepts no value", path);
        c->memo[at].name = NULL;
        return NULL;
    }
    hr_sc_emit(c, name, body);
    *rule = name;
    return NULL;
}

/* ---- $ref ---- */

static const json_t *find_anchor(const json_t *s, const char *name, int depth) {
    if (depth > 64 || (!json_is_object(s) && !json_is_array(s))) return NULL;
    if (json_is_object(s)) {
        json_t *a = json_object_get(s, "$anchor"), *id = json_object_get(s, "$id");
        if (!id) id = json_object_get(s, "id");
        if (json_is_string(a) && !strcmp(json_string_value(a), name)) return s;
        if (json_is_string(id) && json_string_value(id)[0] == '#' &&
            !strcmp(json_string_value(id) + 1, name))
            return s;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)s, k, v) {
            if (!strcmp(k, "enum") || !strcmp(k, "const") || !strcmp(k, "default") ||
                !strcmp(k, "examples"))
                continue;
            const json_t *r = find_anchor(v, name, depth + 1);
            if (r) return r;
        }
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(s); i++) {
        const json_t *r = find_anchor(json_array_get(s, i), name, depth + 1);
        if (r) return r;
    }
    return NULL;
}

/* One JSON-pointer token (~0 ~1 and %XX decoded) into tok. */
static size_t pointer_token(const char *p, char *tok, size_t cap) {
    size_t i = 0, n = 0;
    for (; p[i] && p[i] != '/' && n + 1 < cap; i++) {
        char ch = p[i];
        if (ch == '~' && (p[i + 1] == '0' || p[i + 1] == '1'))
            ch = p[++i] == '0' ? '~' : '/';
        else if (ch == '%' && p[i + 1] && p[i + 2]) {
            char hex[3] = {p[i + 1], p[i + 2], 0};
            char *end;
            long v = strtol(hex, &end, 16);
            if (*end == 0) {
                ch = (char)v;
                i += 2;
            }
        }
        tok[n++] = ch;
    }
    tok[n] = 0;
    return i;
}

hr_err *hr_sc_resolve(hr_sc_ctx *c, const char *ref, const char *path, const json_t **out) {
    const char *frag = ref;
    size_t idl = c->root_id ? strcspn(c->root_id, "#") : 0;
    if (idl && !strncmp(ref, c->root_id, idl) && (ref[idl] == '#' || ref[idl] == 0))
        frag = ref + idl;
    if (*frag == 0) {
        *out = c->root;
        return NULL;
    }
    if (*frag != '#')
        return hr_errf("schema: \"$ref\" \"%s\" at %s is not a local reference; not supported", ref,
                       path);
    frag++;
    if (*frag && *frag != '/') {
        *out = find_anchor(c->root, frag, 0);
        if (!*out) return hr_errf("schema: \"$ref\" \"%s\" at %s: no such anchor", ref, path);
        return NULL;
    }
    const json_t *cur = c->root;
    char tok[1024];
    while (*frag == '/') {
        frag++;
        frag += pointer_token(frag, tok, sizeof tok);
        if (json_is_object(cur))
            cur = json_object_get(cur, tok);
        else if (json_is_array(cur)) {
            char *end;
            long i = strtol(tok, &end, 10);
            cur = *end || i < 0 ? NULL : json_array_get(cur, (size_t)i);
        } else
            cur = NULL;
        if (!cur) return hr_errf("schema: \"$ref\" \"%s\" at %s points to nothing", ref, path);
    }
    *out = cur;
    return NULL;
}

/* ---- entry points ---- */

static void ctx_free(hr_sc_ctx *c) {
    hr_gbuf_free(&c->rules);
    for (size_t i = 0; i < c->n_names; i++)
        free(c->names[i]);
    free(c->names);
    for (size_t i = 0; i < c->cap_bodies; i++)
        free(c->bodies[i].body);
    free(c->bodies);
    for (size_t i = 0; i < c->n_keep; i++)
        json_decref(c->keep[i]);
    free(c->keep);
    free(c->memo);
}

static hr_err *compile(const json_t *schema, const hr_schema_opts *o, const char *prefix,
                       int any_object, char **text, size_t *len) {
    *text = NULL;
    if (len) *len = 0;
    if (!prefix) prefix = "";
    for (const char *p = prefix; *p; p++)
        if (!(*p == '_' || *p == '-' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            return hr_errf("schema: rule prefix \"%s\" may hold only [A-Za-z0-9_-]", prefix);
    if (!any_object && !json_is_object(schema) && !json_is_boolean(schema))
        return hr_errf("schema: a JSON Schema must be an object or a boolean");
    hr_sc_ctx c = {.root = schema, .prefix = prefix};
    json_t *id = json_is_object(schema) ? json_object_get(schema, "$id") : NULL;
    if (!id && json_is_object(schema)) id = json_object_get(schema, "id");
    c.root_id = json_is_string(id) ? json_string_value(id) : NULL;
    c.max_ws = o && o->max_ws > 0 ? o->max_ws : HR_SCHEMA_MAX_WS_DEFAULT;
    if (strlen(prefix) > 64) return hr_errf("schema: rule prefix longer than 64 characters");
    char ws[160] = "";
    if (!(o && o->compact)) snprintf(ws, sizeof ws, " %sws", prefix);
    c.ws = ws;
    const char *top = NULL;
    hr_err *e = NULL;
    if (any_object) {
        if (!hr_sc_any(&c)) e = hr_err_oom();
        top = hr_sc_new_name(&c, "top");
        if (!top)
            e = hr_err_oom();
        else
            hr_gbuf_printf(&c.rules, "%s ::= %sjobject\n", top, prefix);
    } else {
        e = hr_sc_value(&c, schema, "#", &top);
        if (!e && !top) e = hr_errf("schema: the schema accepts no value");
    }
    hr_gbuf out = {0};
    if (!e) {
        hr_gbuf_printf(&out, "%sroot ::= %s\n", prefix, top);
        if (c.ws[0]) hr_gbuf_printf(&out, "%sws ::= [ \\t\\n\\r]{0,%d}\n", prefix, c.max_ws);
        hr_gbuf_add(&out, c.rules.p ? c.rules.p : "", c.rules.n);
        if (out.oom || c.rules.oom) e = hr_err_oom();
    }
    if (o && o->over) *o->over = e ? 0 : c.over;
    ctx_free(&c);
    if (e) {
        hr_gbuf_free(&out);
        return e;
    }
    *text = out.p;
    if (len) *len = out.n;
    return NULL;
}

hr_err *hr_schema_to_gbnf(const json_t *schema, const hr_schema_opts *o, char **text, size_t *len) {
    return compile(schema, o, "", 0, text, len);
}

hr_err *hr_schema_any_object_gbnf(const hr_schema_opts *o, char **text, size_t *len) {
    return compile(NULL, o, "", 1, text, len);
}

hr_err *hr_schema_to_gbnf_prefixed(const json_t *schema, const hr_schema_opts *o,
                                   const char *prefix, char **text, size_t *len) {
    return compile(schema, o, prefix, 0, text, len);
}
