/* Conditional keywords as combinators: `if`/`then`/`else` becomes
 * anyOf[allOf[if, then], allOf[not if, else]], and a schema dependency (`dependentSchemas`,
 * or `dependencies` with a schema value) on property k becomes
 * anyOf[allOf[{required: [k]}, schema], not {required: [k]}]. The negations are the exact
 * ones schema_oneof.c builds; where it has none the keyword is refused with its path. */
#include <string.h>

#include "grammar/schema_int.h"

/* Does s hold a conditional this file rewrites? */
int hr_sc_has_conditional(const json_t *s) {
    if (!json_is_object(s)) return 0;
    if (json_object_get(s, "if") && (json_object_get(s, "then") || json_object_get(s, "else")))
        return 1;
    if (json_object_size(json_object_get(s, "dependentSchemas"))) return 1;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(s, "dependencies"), k, v) if (!json_is_array(v)) return 1;
    return 0;
}

/* anyOf[allOf[cond, yes], allOf[not cond, no]] into list (yes, no NULL: no constraint). */
static hr_err *branch_pair(hr_sc_ctx *c, json_t *cond, json_t *yes, json_t *no, const char *kw,
                           const char *path, json_t *list) {
    json_t *neg = hr_sc_keep(c, hr_sc_negation_cond(c, cond));
    if (!neg) return hr_errf("schema: \"%s\" at %s is not supported", kw, path);
    json_t *pos = json_pack("[O]", cond), *other = json_pack("[O]", neg);
    if (pos && yes) json_array_append(pos, yes);
    if (other && no) json_array_append(other, no);
    json_t *pair =
        pos && other ? json_pack("{s:[{s:o},{s:o}]}", "anyOf", "allOf", pos, "allOf", other) : NULL;
    if (!pair) {
        json_decref(pos);
        json_decref(other);
        return hr_err_oom();
    }
    return json_array_append_new(list, pair) ? hr_err_oom() : NULL;
}

/* The conditionals of one dependency keyword (dependentSchemas, or dependencies' schema
 * values, which it then drops from rest). */
static hr_err *dependencies(hr_sc_ctx *c, const json_t *s, const char *kw, const char *path,
                            json_t *rest, json_t *list) {
    json_t *deps = json_object_get(s, kw), *kept = json_object();
    if (!kept) return hr_err_oom();
    const char *k;
    json_t *v;
    hr_err *e = NULL;
    json_object_foreach(deps, k, v) {
        if (json_is_array(v) && !strcmp(kw, "dependencies")) {
            if (json_object_set(kept, k, v)) e = hr_err_oom();
            continue;
        }
        json_t *req = json_pack("{s:[s]}", "required", k);
        if (!req) e = hr_err_oom();
        if (!e) e = branch_pair(c, hr_sc_keep(c, req), v, NULL, kw, path, list);
        if (e) break;
    }
    if (!e && json_object_size(kept)) return hr_json_set_new(rest, kw, kept);
    json_decref(kept);
    if (!e) json_object_del(rest, kw);
    return e;
}

hr_err *hr_sc_conditionals(hr_sc_ctx *c, const json_t *s, const char *path, const json_t **out) {
    json_t *rest = hr_sc_keep(c, hr_json_copy((json_t *)s)), *list = json_array();
    if (!rest || !list || json_array_append(list, rest)) {
        json_decref(list);
        return hr_err_oom();
    }
    hr_sc_keep(c, list);
    json_t *cond = json_object_get(s, "if");
    if (cond && (json_object_get(s, "then") || json_object_get(s, "else"))) {
        HR_TRY(branch_pair(c, cond, json_object_get(s, "then"), json_object_get(s, "else"), "if",
                           path, list));
        json_object_del(rest, "if");
        json_object_del(rest, "then");
        json_object_del(rest, "else");
    }
    HR_TRY(dependencies(c, s, "dependentSchemas", path, rest, list));
    HR_TRY(dependencies(c, s, "dependencies", path, rest, list));
    json_t *all = json_pack("{s:O}", "allOf", list);
    *out = hr_sc_keep(c, all);
    return *out ? NULL : hr_err_oom();
}
