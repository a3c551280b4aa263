/* oneOf: exactly one branch must hold. Branch i becomes "branch i and no other branch":
 * nothing is added for a branch j that cannot overlap branch i (disjoint types, disjoint
 * enum/const values, a property both require with disjoint values, a property one
 * requires and the other forbids); a branch j that only lists required properties (and
 * maybe a type) is negated exactly ("an object lacking one of them", or another type).
 * Any other overlap is left as it is (oneOf then acts as anyOf for that pair, counted in
 * the context's over as HR_SCHEMA_OVER_ONEOF); docs/json-schema.md says so. */
#include <string.h>

#include "grammar/schema_int.h"

#define T_OBJ 4

static int type_bits(const json_t *s) {
    static const char *names[] = {"null",   "boolean", "object", "array",
                                  "string", "number",  "integer"};
    json_t *t = json_object_get(s, "type");
    if (json_is_false(s)) return 0;
    if (!json_is_object(s) || !t) return 127;
    int mask = 0;
    size_t n = json_is_array(t) ? json_array_size(t) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(t) ? json_array_get(t, i) : t;
        for (int b = 0; b < 7; b++)
            if (json_is_string(e) && !strcmp(json_string_value(e), names[b])) mask |= 1 << b;
    }
    if (mask & 32) mask |= 64;
    return mask;
}

/* s with plain {"$ref": ...} indirections followed (a few levels). */
static const json_t *deref(hr_sc_ctx *c, const json_t *s) {
    for (int i = 0; i < 16 && json_is_object(s); i++) {
        json_t *ref = json_object_get(s, "$ref");
        const json_t *t;
        if (!json_is_string(ref)) break;
        hr_err *e = hr_sc_resolve(c, json_string_value(ref), "#", &t);
        if (e) {
            hr_err_free(e);
            break;
        }
        s = t;
    }
    return s;
}

static const json_t *values(const json_t *s, json_t **tmp) {
    json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    *tmp = NULL;
    if (en) return en;
    if (cn) return *tmp = json_pack("[O]", cn);
    return NULL;
}

static int requires(const json_t *s, const char *k) {
    json_t *req = json_object_get(s, "required");
    for (size_t i = 0; i < json_array_size(req); i++)
        if (json_is_string(json_array_get(req, i)) &&
            !strcmp(json_string_value(json_array_get(req, i)), k))
            return 1;
    return 0;
}

/* Does s forbid property k (false schema, or closed without it)? */
static int forbids(hr_sc_ctx *c, const json_t *s, const char *k) {
    json_t *props = json_object_get(s, "properties");
    json_t *ps = json_object_get(props, k);
    if (ps) return json_is_false(deref(c, ps));
    return json_is_false(json_object_get(s, "additionalProperties")) &&
           !json_object_size(json_object_get(s, "patternProperties"));
}

static int disjoint(hr_sc_ctx *c, const json_t *a, const json_t *b, int depth) {
    a = deref(c, a);
    b = deref(c, b);
    if (json_is_false(a) || json_is_false(b)) return 1;
    if (!json_is_object(a) || !json_is_object(b) || depth > 8) return 0;
    int common = type_bits(a) & type_bits(b);
    if (!common) return 1;
    json_t *ta, *tb;
    const json_t *va = values(a, &ta), *vb = values(b, &tb);
    int dis = 0;
    if (va && vb) {
        dis = 1;
        for (size_t i = 0; i < json_array_size(va) && dis; i++)
            for (size_t j = 0; j < json_array_size(vb) && dis; j++)
                if (json_equal(json_array_get(va, i), json_array_get(vb, j))) dis = 0;
    }
    json_decref(ta);
    json_decref(tb);
    if (dis || common != T_OBJ) return dis;
    const json_t *sides[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        json_t *req = json_object_get(sides[s], "required");
        for (size_t i = 0; i < json_array_size(req); i++) {
            const char *k = json_string_value(json_array_get(req, i));
            if (!k) continue;
            const json_t *o = sides[1 - s];
            if (forbids(c, o, k)) return 1;
            json_t *pa = json_object_get(json_object_get(sides[s], "properties"), k);
            json_t *pb = json_object_get(json_object_get(o, "properties"), k);
            if (requires(o, k) && pa && pb && disjoint(c, pa, pb, depth + 1)) return 1;
        }
    }
    return 0;
}

/* "not s" for s = {kw: v} with one type's bound: that type with the opposite bound. */
static json_t *negate_bound(const json_t *s) {
    static const char *kw[][3] = {{"minLength", "maxLength", "string"},
                                  {"maxLength", "minLength", "string"},
                                  {"minItems", "maxItems", "array"},
                                  {"maxItems", "minItems", "array"},
                                  {"minProperties", "maxProperties", "object"},
                                  {"maxProperties", "minProperties", "object"}};
    const char *k;
    json_t *v, *found = NULL;
    int which = -1;
    json_object_foreach((json_t *)s, k, v) {
        if (!hr_sc_is_assertion(k)) continue;
        for (int i = 0; i < 6; i++)
            if (!strcmp(k, kw[i][0]) && json_is_integer(v) && which < 0) which = i, found = v;
        if (which < 0 || strcmp(k, kw[which][0])) return NULL;
    }
    if (which < 0) return NULL;
    json_int_t n = json_integer_value(found), m = which % 2 == 0 ? n - 1 : n + 1;
    if (m < 0) return json_false();
    return json_pack("{s:s,s:I}", "type", kw[which][2], kw[which][1], (json_int_t)m);
}

/* "not s" as a schema when s only lists required properties and maybe a type; else NULL. */
/* not {enum/const of strings (and maybe type string)}: another type, or a string that is
 * none of them (HR_SC_NOT_STRINGS, which the string compiler makes a trie complement). */
static json_t *negate_strings(const json_t *s) {
    json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    json_t *t = json_object_get(s, "type");
    if (!en == !cn || (en && !json_is_array(en))) return NULL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k,
                        v) if (hr_sc_is_assertion(k) && strcmp(k, "enum") && strcmp(k, "const") &&
                               !(!strcmp(k, "type") && json_is_string(t) &&
                                 !strcmp(json_string_value(t), "string"))) return NULL;
    json_t *list = en ? hr_json_copy(en) : json_pack("[O]", cn);
    for (size_t i = 0; list && i < json_array_size(list); i++)
        if (!json_is_string(json_array_get(list, i))) {
            json_decref(list);
            return NULL;
        }
    if (!list) return NULL;
    return json_pack("{s:[{s:[sssss]},{s:s,s:o}]}", "anyOf", "type", "null", "boolean", "object",
                     "array", "number", "type", "string", HR_SC_NOT_STRINGS, list);
}

/* not {pattern (and maybe type string)}: another type, or a string the pattern does not
 * match (HR_SC_NOT_PATTERNS, which the string compiler makes a `~` of the pattern). */
static json_t *negate_pattern(const json_t *s) {
    json_t *pat = json_object_get(s, "pattern"), *t = json_object_get(s, "type");
    if (!json_is_string(pat)) return NULL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        int string_type =
            !strcmp(k, "type") && json_is_string(t) && !strcmp(json_string_value(t), "string");
        if (hr_sc_is_assertion(k) && strcmp(k, "pattern") && !string_type) return NULL;
    }
    return json_pack("{s:[{s:[sssss]},{s:s,s:[O]}]}", "anyOf", "type", "null", "boolean", "object",
                     "array", "number", "type", "string", HR_SC_NOT_PATTERNS, pat);
}

static json_t *negate(hr_sc_ctx *c, const json_t *s, int props);

/* not {properties (and maybe required, type object)}, each property's schema negatable:
 * another type (when the type is given), an object missing a required property, or one
 * whose property k is present and fails its schema. */
static json_t *negate_properties(hr_sc_ctx *c, const json_t *s) {
    json_t *t = json_object_get(s, "type"), *props = json_object_get(s, "properties");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        int object_type =
            !strcmp(k, "type") && json_is_string(t) && !strcmp(json_string_value(t), "object");
        if (hr_sc_is_assertion(k) && strcmp(k, "properties") && strcmp(k, "required") &&
            !object_type)
            return NULL;
    }
    json_t *alts = json_array();
    if (alts && t)
        json_array_append_new(
            alts, json_pack("{s:[sssss]}", "type", "null", "boolean", "array", "string", "number"));
    json_t *req = json_object_get(s, "required");
    for (size_t i = 0; alts && i < json_array_size(req); i++)
        json_array_append_new(alts, json_pack("{s:s,s:{s:b}}", "type", "object", "properties",
                                              json_string_value(json_array_get(req, i)), 0));
    json_object_foreach(props, k, v) {
        json_t *neg = alts ? negate(c, v, 1) : NULL;
        if (!neg) {
            json_decref(alts);
            return NULL;
        }
        json_array_append_new(alts, json_pack("{s:s,s:[s],s:{s:o}}", "type", "object", "required",
                                              k, "properties", k, neg));
    }
    if (!alts || !json_array_size(alts)) {
        json_decref(alts);
        return alts ? json_false() : NULL;
    }
    return json_pack("{s:o}", "anyOf", alts);
}

/* "not s", NULL when it cannot be said; props: also of a properties conjunction (for
 * if/then/else; oneOf keeps to the other forms). */
static json_t *negate(hr_sc_ctx *c, const json_t *s, int props) {
    s = deref(c, s);
    if (json_is_true(s)) return json_false();
    if (!json_is_object(s)) return NULL;
    json_t *inner = json_object_get(s, "not");
    if (inner && json_object_size(s) == 1) return json_incref(inner); /* not not x = x */
    json_t *nb = negate_bound(s);
    if (nb) return nb;
    json_t *ns = negate_strings(s);
    if (ns) return ns;
    json_t *np = negate_pattern(s);
    if (np) return np;
    if (props && json_object_get(s, "properties")) return negate_properties(c, s);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) if (hr_sc_is_assertion(k) && strcmp(k, "required") &&
                                               strcmp(k, "type")) return NULL;
    static const char *names[] = {"null",   "boolean", "object", "array",
                                  "string", "number",  "integer"};
    int bits = type_bits(s);
    json_t *alts = json_array(), *other = json_array();
    if (!alts || !other) {
        json_decref(alts);
        json_decref(other);
        return NULL;
    }
    for (int t = 0; t < 7; t++)
        if (!(bits & (1 << t)) && !(t == 6 && (bits & 32)))
            json_array_append_new(other, json_string(names[t]));
    if (json_array_size(other)) json_array_append_new(alts, json_pack("{s:O}", "type", other));
    json_decref(other);
    json_t *req = json_object_get(s, "required");
    if (bits & T_OBJ)
        for (size_t i = 0; i < json_array_size(req); i++)
            json_array_append_new(alts, json_pack("{s:s,s:{s:b}}", "type", "object", "properties",
                                                  json_string_value(json_array_get(req, i)), 0));
    if (!json_array_size(alts)) { /* s accepts everything: its negation accepts nothing */
        json_decref(alts);
        return json_false();
    }
    return json_pack("{s:o}", "anyOf", alts);
}

static json_t *negation(hr_sc_ctx *c, const json_t *s) { return negate(c, s, 0); }

json_t *hr_sc_negation(hr_sc_ctx *c, const json_t *s) { return negation(c, s); }

json_t *hr_sc_negation_cond(hr_sc_ctx *c, const json_t *s) { return negate(c, s, 1); }

hr_err *hr_sc_one_of_branch(hr_sc_ctx *c, const json_t *rest, const json_t *list, size_t i,
                            const char *path, const json_t **out) {
    const json_t *acc = json_array_get(list, i);
    if (rest) HR_TRY(hr_sc_merge(c, rest, acc, path, &acc));
    for (size_t j = 0; j < json_array_size(list); j++) {
        if (j == i) continue;
        const json_t *other = json_array_get(list, j);
        if (rest) HR_TRY(hr_sc_merge(c, rest, other, path, &other));
        if (disjoint(c, acc, other, 0)) continue;
        json_t *neg = hr_sc_keep(c, negation(c, json_array_get(list, j)));
        if (neg)
            HR_TRY(hr_sc_merge(c, acc, neg, path, &acc));
        else
            c->over |= HR_SCHEMA_OVER_ONEOF;
    }
    *out = acc;
    return NULL;
}
