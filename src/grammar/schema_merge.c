/* allOf: two schemas -> one schema accepting exactly the instances valid under both.
 * Keyword by keyword: bounds take the tighter one, types and enums intersect, required
 * unions, properties combine each side's view of every key (its own schema, a matching
 * patternProperties one, or its additionalProperties), nested schemas become lazy
 * {"allOf": [x, y]} wrappers; anyOf on both sides becomes the cross product; two different
 * patterns are both kept (the second in HR_SC_PATTERNS). A pair it cannot combine exactly
 * (two tuples, two formats) is refused with the path. */
#include <string.h>

#include "grammar/schema_int.h"

#define MAX_CROSS 256

static const char *lower_kw[] = {"minLength", "minItems", "minProperties"};
static const char *upper_kw[] = {"maxLength", "maxItems", "maxProperties"};
static const char *equal_kw[] = {"format", "multipleOf", "propertyNames", "uniqueItems"};
/* object and array keywords combined as groups below */
static const char *group_kw[] = {"pattern",
                                 HR_SC_PATTERNS,
                                 HR_SC_NOT_PATTERNS,
                                 "properties",
                                 "patternProperties",
                                 "additionalProperties",
                                 "items",
                                 "prefixItems",
                                 "additionalItems",
                                 "minimum",
                                 "maximum",
                                 "exclusiveMinimum",
                                 "exclusiveMaximum",
                                 "type",
                                 "enum",
                                 "const",
                                 "required",
                                 "anyOf",
                                 "oneOf",
                                 "$defs",
                                 "definitions"};

static int in(const char *k, const char *const *l, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, l[i])) return 1;
    return 0;
}
#define IN(k, l) in(k, l, sizeof l / sizeof l[0])

/* Writes into the merged schema; any failed one is out of memory (never a dropped keyword).
 * These two borrow v; hr_json_set_new / hr_json_append_new consume it. */
static hr_err *put(json_t *m, const char *k, json_t *v) {
    return json_object_set(m, k, v) ? hr_err_oom() : NULL;
}
static hr_err *add(json_t *arr, json_t *v) {
    return json_array_append(arr, v) ? hr_err_oom() : NULL;
}

/* allOf [x, y] lazily, or the one side when the other is `true` / absent. */
static json_t *both(const json_t *x, const json_t *y) {
    if (!x || json_is_true(x)) return y ? json_incref((json_t *)y) : json_true();
    if (!y || json_is_true(y)) return json_incref((json_t *)x);
    if (json_is_false(x) || json_is_false(y)) return json_false();
    return json_pack("{s:[O,O]}", "allOf", x, y);
}

/* What side s says about the value of key k (never NULL; borrowed or new ref in *tmp). */
static hr_err *side(hr_sc_ctx *c, const json_t *s, const char *k, const char *path,
                    const json_t **out) {
    json_t *props = json_object_get(s, "properties"), *pp = json_object_get(s, "patternProperties");
    json_t *ps = json_object_get(props, k);
    if (ps) {
        *out = ps;
        return NULL;
    }
    const char *pat;
    json_t *sch;
    *out = NULL;
    json_object_foreach(pp, pat, sch) {
        int hit = hr_sc_pattern_matches(pat, k, strlen(k));
        if (hit == HR_SC_NOMEM) return hr_err_oom();
        if (hit < 0) return hr_errf("schema: allOf at %s: bad pattern \"%s\"", path, pat);
        if (hit && !*out)
            *out = sch;
        else if (hit)
            HR_TRY(hr_sc_merge(c, *out, sch, path, out));
    }
    if (!*out) *out = json_object_get(s, "additionalProperties");
    if (!*out) *out = json_true();
    return NULL;
}

static hr_err *merge_objects(hr_sc_ctx *c, const json_t *a, const json_t *b, const char *path,
                             json_t *m) {
    json_t *ppa = json_object_get(a, "patternProperties"),
           *ppb = json_object_get(b, "patternProperties");
    if (json_object_size(ppa) && json_object_size(ppb))
        return hr_errf("schema: allOf with patternProperties on both sides at %s is not supported",
                       path);
    json_t *props = json_object();
    if (!props) return hr_err_oom();
    HR_TRY(hr_json_set_new(m, "properties", props));
    const json_t *sides[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(sides[s], "properties"), k, v) {
            if (json_object_get(props, k)) continue;
            const json_t *x, *y;
            HR_TRY(side(c, a, k, path, &x));
            HR_TRY(side(c, b, k, path, &y));
            HR_TRY(hr_json_set_new(props, k, both(x, y)));
        }
    }
    json_t *apa = json_object_get(a, "additionalProperties"),
           *apb = json_object_get(b, "additionalProperties");
    const json_t *pp_side = json_object_size(ppa) ? a : json_object_size(ppb) ? b : NULL;
    if (pp_side) { /* the other side's additionalProperties also binds the pattern keys */
        const json_t *other = pp_side == a ? apb : apa;
        json_t *npp = json_object();
        const char *pat;
        json_t *sch;
        if (!npp) return hr_err_oom();
        HR_TRY(hr_json_set_new(m, "patternProperties", npp));
        json_object_foreach(json_object_get(pp_side, "patternProperties"), pat, sch)
            HR_TRY(hr_json_set_new(npp, pat, both(sch, other)));
    }
    if (apa || apb) HR_TRY(hr_json_set_new(m, "additionalProperties", both(apa, apb)));
    return NULL;
}

static hr_err *merge_arrays(const json_t *a, const json_t *b, const char *path, json_t *m) {
    int ta = json_object_get(a, "prefixItems") || json_is_array(json_object_get(a, "items"));
    int tb = json_object_get(b, "prefixItems") || json_is_array(json_object_get(b, "items"));
    if (ta || tb) {
        if ((ta && tb) || json_object_get(ta ? b : a, "items") ||
            json_object_get(ta ? b : a, "additionalItems"))
            return hr_errf("schema: allOf with a tuple (prefixItems/items array) at %s is not "
                           "supported",
                           path);
        const json_t *t = ta ? a : b;
        const char *kws[] = {"prefixItems", "items", "additionalItems"};
        for (int i = 0; i < 3; i++)
            if (json_object_get(t, kws[i])) HR_TRY(put(m, kws[i], json_object_get(t, kws[i])));
        return NULL;
    }
    json_t *ia = json_object_get(a, "items"), *ib = json_object_get(b, "items");
    return ia || ib ? hr_json_set_new(m, "items", both(ia, ib)) : NULL;
}

static json_t *type_names(int mask) {
    static const char *names[] = {"null",   "boolean", "object", "array",
                                  "string", "number",  "integer"};
    json_t *arr = json_array();
    for (int i = 0; i < 7 && arr; i++)
        if ((mask & (1 << i)) && hr_json_append_new(arr, json_string(names[i]))) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

static int type_bits(const json_t *s) {
    static const char *names[] = {"null",   "boolean", "object", "array",
                                  "string", "number",  "integer"};
    json_t *t = json_object_get(s, "type");
    if (!t) return 127;
    int mask = 0;
    size_t n = json_is_array(t) ? json_array_size(t) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(t) ? json_array_get(t, i) : t;
        for (int b = 0; b < 7; b++)
            if (json_is_string(e) && !strcmp(json_string_value(e), names[b])) mask |= 1 << b;
    }
    if (mask & 32) mask |= 64; /* number includes integer */
    return mask;
}

/* Tighter of two lower (or upper) bounds, written draft-06 style into m. */
static hr_err *merge_bound(const json_t *a, const json_t *b, int lower, json_t *m) {
    const char *inc = lower ? "minimum" : "maximum",
               *exc = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    int has = 0, ex = 0;
    double best = 0;
    const json_t *sides[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        json_t *vi = json_object_get(sides[s], inc), *ve = json_object_get(sides[s], exc);
        if (json_is_number(vi)) {
            double v = json_number_value(vi);
            int e = json_is_true(ve);
            if (!has || (lower ? v > best || (v == best && e) : v < best || (v == best && e)))
                has = 1, best = v, ex = e;
        }
        if (json_is_number(ve)) {
            double v = json_number_value(ve);
            if (!has || (lower ? v >= best : v <= best)) has = 1, best = v, ex = 1;
        }
    }
    json_object_del(m, inc);
    json_object_del(m, exc);
    return has ? hr_json_set_new(m, ex ? exc : inc, json_real(best)) : NULL;
}

static hr_err *merge_enum(const json_t *a, const json_t *b, json_t *m) {
    json_t *ea = json_object_get(a, "enum"), *eb = json_object_get(b, "enum");
    if (ea && eb) {
        json_t *out = json_array();
        HR_TRY(hr_json_set_new(m, "enum", out));
        for (size_t i = 0; i < json_array_size(ea); i++)
            for (size_t j = 0; j < json_array_size(eb); j++)
                if (json_equal(json_array_get(ea, i), json_array_get(eb, j))) {
                    HR_TRY(add(out, json_array_get(ea, i)));
                    break;
                }
    } else if (ea || eb)
        HR_TRY(put(m, "enum", ea ? ea : eb));
    json_t *ca = json_object_get(a, "const"), *cb = json_object_get(b, "const");
    if (ca && cb && !json_equal(ca, cb)) return hr_json_set_new(m, "enum", json_array());
    return ca || cb ? put(m, "const", ca ? ca : cb) : NULL;
}

static hr_err *merge_anyof(const json_t *a, const json_t *b, const char *kw, const char *path,
                           json_t *m) {
    json_t *xa = json_object_get(a, kw), *xb = json_object_get(b, kw);
    if (!xa || !xb) return xa || xb ? put(m, kw, xa ? xa : xb) : NULL;
    if (json_array_size(xa) * json_array_size(xb) > MAX_CROSS)
        return hr_errf("schema: allOf of two %s with %zu x %zu branches at %s is too large", kw,
                       json_array_size(xa), json_array_size(xb), path);
    json_t *out = json_array();
    HR_TRY(hr_json_set_new(m, kw, out));
    for (size_t i = 0; i < json_array_size(xa); i++)
        for (size_t j = 0; j < json_array_size(xb); j++)
            HR_TRY(hr_json_append_new(out, both(json_array_get(xa, i), json_array_get(xb, j))));
    return NULL;
}

static int has(const json_t *list, const json_t *v) {
    for (size_t i = 0; i < json_array_size(list); i++)
        if (json_equal(json_array_get(list, i), v)) return 1;
    return 0;
}

/* The patterns of both sides: a's "pattern", every other one in HR_SC_PATTERNS, the
 * patterns neither may match in HR_SC_NOT_PATTERNS (each list without repeats). */
static hr_err *merge_patterns(const json_t *a, const json_t *b, json_t *m) {
    json_t *pa = json_object_get(a, "pattern"), *pb = json_object_get(b, "pattern");
    json_t *pat = pa ? pa : pb, *more = json_array(), *neg = json_array();
    hr_err *e = more && neg ? NULL : hr_err_oom();
    const json_t *sides[2] = {a, b};
    for (int s = 0; s < 2 && !e; s++) {
        json_t *own = json_object_get(sides[s], "pattern");
        if (own && !json_equal(own, pat) && !has(more, own)) e = add(more, own);
        const char *kw[2] = {HR_SC_PATTERNS, HR_SC_NOT_PATTERNS};
        for (int k = 0; k < 2; k++) {
            json_t *l = json_object_get(sides[s], kw[k]), *to = k ? neg : more;
            for (size_t i = 0; i < json_array_size(l) && !e; i++)
                if (!has(to, json_array_get(l, i)) &&
                    !(k == 0 && json_equal(pat, json_array_get(l, i))))
                    e = add(to, json_array_get(l, i));
        }
    }
    if (!e && pat) e = put(m, "pattern", pat);
    if (!e && json_array_size(more)) e = put(m, HR_SC_PATTERNS, more);
    if (!e && json_array_size(neg)) e = put(m, HR_SC_NOT_PATTERNS, neg);
    json_decref(more);
    json_decref(neg);
    return e;
}

/* m[k] = the strings of list a and those of list b not already in a. */
static hr_err *put_union(json_t *m, const char *k, const json_t *a, const json_t *b) {
    json_t *u = hr_json_copy(a);
    if (!u) return hr_err_oom();
    hr_err *e = hr_json_set_new(m, k, u);
    for (size_t i = 0; !e && i < json_array_size(b); i++) {
        int seen = 0;
        for (size_t j = 0; j < json_array_size(a) && !seen; j++)
            seen = json_equal(json_array_get(a, j), json_array_get(b, i));
        if (!seen) e = add(u, json_array_get(b, i));
    }
    return e;
}

static hr_err *merge_pair(hr_sc_ctx *c, const json_t *a, const json_t *b, const char *path,
                          json_t *m) {
    const json_t *sides[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)sides[s], k, v) {
            json_t *o = json_object_get(sides[1 - s], k);
            if (IN(k, group_kw)) continue;
            if (!strcmp(k, HR_SC_NOT_STRINGS) && o) { /* none of A and none of B: A and B */
                if (s == 0) HR_TRY(put_union(m, k, v, o));
                continue;
            }
            if (IN(k, lower_kw) || IN(k, upper_kw)) {
                if (s == 1 && o) continue;
                json_t *pick = v;
                if (o && json_is_number(o) && json_is_number(v))
                    pick = (json_number_value(o) > json_number_value(v)) == IN(k, lower_kw) ? o : v;
                HR_TRY(put(m, k, pick));
            } else if (IN(k, equal_kw) && o && !json_equal(o, v)) {
                return hr_errf("schema: allOf with two different \"%s\" at %s is not supported", k,
                               path);
            } else if (s == 0 || !o) {
                if (o && hr_sc_is_assertion(k) && !json_equal(o, v))
                    return hr_errf("schema: allOf cannot combine two \"%s\" at %s", k, path);
                HR_TRY(put(m, k, v));
            }
        }
    }
    int ta = type_bits(a) & type_bits(b);
    if (json_object_get(a, "type") || json_object_get(b, "type")) {
        HR_TRY(hr_json_set_new(m, "type", type_names(ta)));
    }
    json_t *ra = json_object_get(a, "required"), *rb = json_object_get(b, "required");
    if (ra || rb) {
        json_t *req = json_array();
        HR_TRY(hr_json_set_new(m, "required", req));
        for (int s = 0; s < 2; s++)
            for (size_t i = 0; i < json_array_size(s ? rb : ra); i++)
                HR_TRY(add(req, json_array_get(s ? rb : ra, i)));
    }
    HR_TRY(merge_patterns(a, b, m));
    HR_TRY(merge_bound(a, b, 1, m));
    HR_TRY(merge_bound(a, b, 0, m));
    HR_TRY(merge_enum(a, b, m));
    HR_TRY(merge_anyof(a, b, "anyOf", path, m));
    HR_TRY(merge_anyof(a, b, "oneOf", path, m));
    HR_TRY(merge_arrays(a, b, path, m));
    int obj = 0;
    const char *okw[] = {"properties", "patternProperties", "additionalProperties"};
    for (int i = 0; i < 3; i++)
        obj |= json_object_get(a, okw[i]) || json_object_get(b, okw[i]);
    return obj ? merge_objects(c, a, b, path, m) : NULL;
}

/* s with its $ref (merged with the target) and allOf folded in, so merge_pair sees neither. */
static hr_err *flatten(hr_sc_ctx *c, const json_t *s, const char *path, const json_t **out) {
    *out = s;
    if (!json_is_object(s)) return NULL;
    if (hr_sc_has_conditional(s)) HR_TRY(hr_sc_conditionals(c, s, path, &s));
    json_t *ref = json_object_get(s, "$ref"), *all = json_object_get(s, "allOf");
    if (!ref && !all) return NULL;
    json_t *rest = hr_json_copy((json_t *)s);
    if (!hr_sc_keep(c, rest)) return hr_err_oom();
    json_object_del(rest, "$ref");
    json_object_del(rest, "allOf");
    const json_t *acc = rest;
    if (ref) {
        const json_t *t;
        if (!json_is_string(ref)) return hr_errf("schema: \"$ref\" at %s must be a string", path);
        HR_TRY(hr_sc_resolve(c, json_string_value(ref), path, &t));
        HR_TRY(hr_sc_merge(c, acc, t, path, &acc));
    }
    for (size_t i = 0; i < json_array_size(all); i++)
        HR_TRY(hr_sc_merge(c, acc, json_array_get(all, i), path, &acc));
    *out = acc;
    return NULL;
}

hr_err *hr_sc_merge(hr_sc_ctx *c, const json_t *a, const json_t *b, const char *path,
                    const json_t **out) {
    if (json_is_false(a) || json_is_false(b)) {
        *out = json_false();
        return NULL;
    }
    if (json_is_true(a) || json_is_true(b)) {
        *out = json_is_true(a) ? b : a;
        return NULL;
    }
    if (!json_is_object(a) || !json_is_object(b))
        return hr_errf("schema: the schema at %s is not an object", path);
    if (++c->depth > 256) {
        c->depth--;
        return hr_errf("schema: allOf/$ref nested too deep (recursive) at %s", path);
    }
    hr_err *e = flatten(c, a, path, &a);
    if (!e) e = flatten(c, b, path, &b);
    if (!e && (json_is_false(a) || json_is_false(b) || json_is_true(a) || json_is_true(b))) {
        c->depth--;
        return hr_sc_merge(c, a, b, path, out);
    }
    json_t *m = e ? NULL : hr_sc_keep(c, json_object());
    if (!e && !m) e = hr_err_oom();
    if (!e) e = merge_pair(c, a, b, path, m);
    c->depth--;
    if (!e) *out = m;
    return e;
}
