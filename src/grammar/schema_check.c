/* A small JSON Schema validator for the values the compiler must judge itself: enum and
 * const values against their sibling keywords. It evaluates the keywords the compiler
 * supports; any other assertion on a value it applies to is an error (refuse rather than
 * guess). */
#include <math.h>
#include <string.h>

#include "grammar/schema_int.h"

static int type_ok(const json_t *t, const json_t *v) {
    size_t n = json_is_array(t) ? json_array_size(t) : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_is_array(t) ? json_array_get(t, i) : t;
        const char *s = json_string_value(e);
        if (!s) continue;
        if ((!strcmp(s, "null") && json_is_null(v)) ||
            (!strcmp(s, "boolean") && json_is_boolean(v)) ||
            (!strcmp(s, "object") && json_is_object(v)) ||
            (!strcmp(s, "array") && json_is_array(v)) ||
            (!strcmp(s, "string") && json_is_string(v)) ||
            (!strcmp(s, "number") && json_is_number(v)) ||
            (!strcmp(s, "integer") &&
             (json_is_integer(v) ||
              (json_is_real(v) && json_real_value(v) == floor(json_real_value(v))))))
            return 1;
    }
    return 0;
}

static size_t utf8_len(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

static hr_err *check_num(const json_t *s, const json_t *v, int *ok) {
    double x = json_number_value(v);
    json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
    json_t *emn = json_object_get(s, "exclusiveMinimum"),
           *emx = json_object_get(s, "exclusiveMaximum");
    json_t *mo = json_object_get(s, "multipleOf");
    if (json_is_number(mn))
        *ok &= json_is_true(emn) ? x > json_number_value(mn) : x >= json_number_value(mn);
    if (json_is_number(mx))
        *ok &= json_is_true(emx) ? x < json_number_value(mx) : x <= json_number_value(mx);
    if (json_is_number(emn)) *ok &= x > json_number_value(emn);
    if (json_is_number(emx)) *ok &= x < json_number_value(emx);
    if (json_is_number(mo)) {
        double q = x / json_number_value(mo);
        *ok &= q == floor(q);
    }
    return NULL;
}

/* *ok stays set only if string v matches pattern pat (when want) or does not (!want). */
static hr_err *pattern_check(const json_t *pat, const json_t *v, int want, const char *path,
                             int *ok) {
    if (!json_is_string(pat)) return NULL;
    int m =
        hr_sc_pattern_matches(json_string_value(pat), json_string_value(v), json_string_length(v));
    if (m == HR_SC_NOMEM) return hr_err_oom();
    if (m < 0) return hr_errf("schema: \"pattern\" at %s does not compile", path);
    *ok &= m == want;
    return NULL;
}

static hr_err *check_str(const json_t *s, const json_t *v, const char *path, int *ok) {
    size_t len = utf8_len(json_string_value(v), json_string_length(v));
    json_t *mn = json_object_get(s, "minLength"), *mx = json_object_get(s, "maxLength");
    json_t *pat = json_object_get(s, "pattern"), *fmt = json_object_get(s, "format");
    if (json_is_integer(mn)) *ok &= (json_int_t)len >= json_integer_value(mn);
    if (json_is_integer(mx)) *ok &= (json_int_t)len <= json_integer_value(mx);
    json_t *nots = json_object_get(s, HR_SC_NOT_STRINGS);
    for (size_t i = 0; i < json_array_size(nots); i++)
        *ok &= !json_equal(json_array_get(nots, i), v);
    HR_TRY(pattern_check(pat, v, 1, path, ok));
    json_t *more = json_object_get(s, HR_SC_PATTERNS),
           *neg = json_object_get(s, HR_SC_NOT_PATTERNS);
    for (size_t i = 0; i < json_array_size(more); i++)
        HR_TRY(pattern_check(json_array_get(more, i), v, 1, path, ok));
    for (size_t i = 0; i < json_array_size(neg); i++)
        HR_TRY(pattern_check(json_array_get(neg, i), v, 0, path, ok));
    if (json_is_string(fmt)) {
        hr_gbuf b = {0};
        int known;
        hr_err *e = hr_sc_format(&b, json_string_value(fmt), &known);
        hr_gbuf_free(&b);
        if (e || known)
            return e ? e
                     : hr_errf("schema: \"format\" together with enum/const at %s is not "
                               "supported",
                               path);
    }
    return NULL;
}

static hr_err *check_arr(hr_sc_ctx *c, const json_t *s, const json_t *v, const char *path,
                         int *ok) {
    size_t n = json_array_size(v);
    json_t *mn = json_object_get(s, "minItems"), *mx = json_object_get(s, "maxItems");
    if (json_is_integer(mn)) *ok &= (json_int_t)n >= json_integer_value(mn);
    if (json_is_integer(mx)) *ok &= (json_int_t)n <= json_integer_value(mx);
    json_t *pre = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    json_t *rest = items;
    if (!pre && json_is_array(items)) {
        pre = items;
        rest = json_object_get(s, "additionalItems");
    }
    for (size_t i = 0; i < n && *ok; i++) {
        const json_t *is = i < json_array_size(pre) ? json_array_get(pre, i) : rest;
        int one = 1;
        if (is) HR_TRY(hr_sc_check(c, is, json_array_get(v, i), path, &one));
        *ok &= one;
    }
    if (json_is_true(json_object_get(s, "uniqueItems")))
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                *ok &= !json_equal(json_array_get(v, i), json_array_get(v, j));
    return NULL;
}

static hr_err *check_obj(hr_sc_ctx *c, const json_t *s, const json_t *v, const char *path,
                         int *ok) {
    json_t *props = json_object_get(s, "properties"), *pp = json_object_get(s, "patternProperties");
    json_t *ap = json_object_get(s, "additionalProperties"), *req = json_object_get(s, "required");
    json_t *pn = json_object_get(s, "propertyNames");
    json_t *mn = json_object_get(s, "minProperties"), *mx = json_object_get(s, "maxProperties");
    if (json_is_integer(mn)) *ok &= (json_int_t)json_object_size(v) >= json_integer_value(mn);
    if (json_is_integer(mx)) *ok &= (json_int_t)json_object_size(v) <= json_integer_value(mx);
    for (size_t i = 0; i < json_array_size(req); i++)
        *ok &= json_object_get(v, json_string_value(json_array_get(req, i))) != NULL;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        int one = 1, matched = 0;
        if (pn) {
            json_t *ks = json_string(k);
            hr_err *e = ks ? hr_sc_check(c, pn, ks, path, &one) : hr_err_oom();
            json_decref(ks);
            HR_TRY(e);
        }
        json_t *ps = json_object_get(props, k);
        if (ps) {
            matched = 1;
            HR_TRY(hr_sc_check(c, ps, x, path, &one));
        }
        const char *pat;
        json_t *sch;
        json_object_foreach(pp, pat, sch) {
            int m = hr_sc_pattern_matches(pat, k, strlen(k));
            if (m == HR_SC_NOMEM) return hr_err_oom();
            if (m < 0) return hr_errf("schema: patternProperties at %s: bad pattern", path);
            if (!m) continue;
            matched = 1;
            HR_TRY(hr_sc_check(c, sch, x, path, &one));
        }
        if (!matched && ap) HR_TRY(hr_sc_check(c, ap, x, path, &one));
        *ok &= one;
    }
    return NULL;
}

static hr_err *check_comb(hr_sc_ctx *c, const json_t *s, const json_t *v, const char *path,
                          int *ok) {
    json_t *all = json_object_get(s, "allOf"), *any = json_object_get(s, "anyOf");
    json_t *one = json_object_get(s, "oneOf"), *not = json_object_get(s, "not");
    for (size_t i = 0; i < json_array_size(all) && *ok; i++)
        HR_TRY(hr_sc_check(c, json_array_get(all, i), v, path, ok));
    int hits = 0;
    for (size_t i = 0; i < json_array_size(any); i++) {
        int h = 1;
        HR_TRY(hr_sc_check(c, json_array_get(any, i), v, path, &h));
        hits += h;
    }
    if (any) *ok &= hits > 0;
    hits = 0;
    for (size_t i = 0; i < json_array_size(one); i++) {
        int h = 1;
        HR_TRY(hr_sc_check(c, json_array_get(one, i), v, path, &h));
        hits += h;
    }
    if (one) *ok &= hits == 1;
    if (not ) {
        int h = 1;
        HR_TRY(hr_sc_check(c, not, v, path, &h));
        *ok &= !h;
    }
    return NULL;
}

static const char *unchecked[] = {"contains",
                                  "minContains",
                                  "maxContains",
                                  "dependencies",
                                  "dependentRequired",
                                  "dependentSchemas",
                                  "if",
                                  "unevaluatedProperties",
                                  "unevaluatedItems",
                                  "$dynamicRef",
                                  "$recursiveRef",
                                  "extends",
                                  "disallow",
                                  "divisibleBy"};

hr_err *hr_sc_check(hr_sc_ctx *c, const json_t *s, const json_t *v, const char *path, int *ok) {
    if (json_is_boolean(s)) {
        *ok &= json_is_true(s);
        return NULL;
    }
    if (!json_is_object(s)) return hr_errf("schema: the schema at %s is not an object", path);
    if (++c->depth > 256) {
        c->depth--;
        return hr_errf("schema: enum check nested too deep at %s", path);
    }
    hr_err *e = NULL;
    for (size_t i = 0; i < sizeof unchecked / sizeof unchecked[0] && !e; i++)
        if (json_object_get(s, unchecked[i]))
            e = hr_errf("schema: \"%s\" together with enum/const at %s is not supported",
                        unchecked[i], path);
    json_t *ref = json_object_get(s, "$ref"), *t = json_object_get(s, "type");
    json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    if (!e && json_is_string(ref)) {
        const json_t *target;
        e = hr_sc_resolve(c, json_string_value(ref), path, &target);
        if (!e) e = hr_sc_check(c, target, v, path, ok);
    }
    if (!e && t) *ok &= type_ok(t, v);
    if (!e && en) {
        int hit = 0;
        for (size_t i = 0; i < json_array_size(en); i++)
            hit |= json_equal(json_array_get(en, i), (json_t *)v);
        *ok &= hit;
    }
    if (!e && cn) *ok &= json_equal(cn, (json_t *)v);
    if (!e && json_is_number(v)) e = check_num(s, v, ok);
    if (!e && json_is_string(v)) e = check_str(s, v, path, ok);
    if (!e && json_is_array(v)) e = check_arr(c, s, v, path, ok);
    if (!e && json_is_object(v)) e = check_obj(c, s, v, path, ok);
    if (!e) e = check_comb(c, s, v, path, ok);
    c->depth--;
    return e;
}
