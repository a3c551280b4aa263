/* Internals shared by the template engine's files: the arena every value and AST node
 * lives in, the value model (Python-like: None, bool, int, float, str, list/tuple, dict,
 * callables, jinja's Undefined), the AST, and the runtime state with its limits. */
#ifndef HR_TEMPLATE_INTERNAL_H
#define HR_TEMPLATE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/utf8.h"
#include "template/template.h"

/* Limits that keep hostile templates from hanging or exhausting memory. */
#define TPL_MAX_ARENA (256u << 20)          /* bytes of values per render */
#define TPL_MAX_OUTPUT (64u << 20)          /* bytes of rendered text */
#define TPL_MAX_STEPS 20000000L             /* evaluated nodes per render */
#define TPL_MAX_CALL_DEPTH 100              /* nested macro calls */
#define TPL_MAX_DEPTH HR_TEMPLATE_MAX_DEPTH /* nesting: blocks + expression + values */
#define TPL_MAX_RANGE 100000                /* jinja's sandbox MAX_RANGE */

/* ---- arena: bump allocation, freed all at once ---- */
typedef struct tpl_arena tpl_arena;
tpl_arena *hr_ta_create(size_t cap);
void hr_ta_destroy(tpl_arena *a);
void *hr_ta_alloc(tpl_arena *a, size_t n);      /* zeroed; NULL past the cap */
int hr_tpl_arena_exhausted(const tpl_arena *a); /* an allocation failed at the cap */
char *hr_ta_strndup(tpl_arena *a, const char *s, size_t n);

/* ---- values ---- */
typedef enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT, V_FUNC } vkind;

typedef struct tv tv;
typedef struct tdict tdict;
typedef struct tfunc tfunc;

struct tv {
    vkind k;
    int depth; /* lists, dicts: nesting depth once hr_tpl_check_depth measured it, else 0 */
    union {
        int b;
        int64_t i;
        double f;
        struct {
            const char *s; /* NUL-terminated UTF-8 */
            size_t n;
        } str;
        struct {
            tv **items;
            size_t n;
            int tuple;
        } list;
        tdict *dict;
        tfunc *fn;
        const char *undef_msg; /* the UndefinedError message if used strictly */
    };
};

struct tdict {
    tv **keys, **vals;
    size_t n, cap;
    int is_ns; /* a namespace(): attributes assignable with set ns.x = ... */
    int is_loop;
};

typedef struct rt rt;
typedef struct frame frame;

/* Call arguments: positional then keyword. */
typedef struct {
    tv **pos;
    size_t npos;
    const char **kwn;
    tv **kwv;
    size_t nkw;
} targs;

typedef hr_err *(*builtin_fn)(rt *r, tv *self, const targs *a, tv **out);

typedef enum { F_BUILTIN, F_METHOD, F_MACRO } fkind;

struct stmt;
struct tfunc {
    fkind kind;
    const char *name;
    builtin_fn fn;                  /* F_BUILTIN, F_METHOD */
    tv *self;                       /* F_METHOD: the bound object */
    const struct stmt *macro;       /* F_MACRO */
    frame *closure;                 /* F_MACRO: the defining frame */
    const struct stmt *caller_body; /* F_MACRO made by {% call %}: body to render */
};

extern tv hr_tv_none_v, hr_tv_true_v, hr_tv_false_v, hr_tv_undef_v;
#define TV_NONE (&hr_tv_none_v)
#define TV_TRUE (&hr_tv_true_v)
#define TV_FALSE (&hr_tv_false_v)
#define TV_UNDEF (&hr_tv_undef_v)
#define TV_BOOL(x) ((x) ? TV_TRUE : TV_FALSE)

/* Constructors return NULL when the arena is full. */
tv *hr_tv_int(tpl_arena *a, int64_t i);
tv *hr_tv_float(tpl_arena *a, double f);
tv *hr_tv_strn(tpl_arena *a, const char *s, size_t n);
tv *hr_tv_str(tpl_arena *a, const char *s);
tv *hr_tv_list(tpl_arena *a, size_t n, int tuple); /* n items, all NULL until set */
tv *hr_tv_dict(tpl_arena *a);
tv *hr_tv_undef_msg(tpl_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
tv *hr_tv_builtin(tpl_arena *a, const char *name, builtin_fn fn, tv *self, fkind kind);

/* Dict access; keys compare like Python (==). hr_tv_dict_set returns 0 when out of memory. */
tv *hr_tv_dict_get(const tdict *d, const tv *key);
tv *hr_tv_dict_gets(const tdict *d, const char *key);
int hr_tv_dict_set(tpl_arena *a, tdict *d, tv *key, tv *val);

const char *hr_tv_type_name(const tv *v); /* Python's: 'str', 'dict', 'NoneType', ... */
int hr_tv_truthy(const tv *v);
int hr_tv_equal(const tv *x, const tv *y);
int hr_tv_is_num(const tv *v); /* bool, int or float */
double hr_tv_num(const tv *v);
/* Python's <: -1/0/1 in *cmp; an error for unordered types. */
hr_err *hr_tv_compare(const tv *x, const tv *y, const char *op, int *cmp);

/* A growable heap string buffer, capped at TPL_MAX_OUTPUT. Writing stops (full) at the cap
 * or when a value to write nests more than TPL_MAX_DEPTH levels (deep; a namespace can
 * contain itself). */
typedef struct {
    char *p;
    size_t n, cap;
    int full, deep;
    int oom;   /* full because memory ran out below the cap */
    int depth; /* containers hr_tv_write_repr is inside of */
} tsb;
void hr_tsb_put(tsb *b, const char *s, size_t n);
void hr_tsb_puts(tsb *b, const char *s);
void hr_tsb_free(tsb *b);
/* The limit error of a full buffer (HR_E_LIMIT), or NULL. */
hr_err *hr_tsb_error(const tsb *b);

/* Python str() and repr() of a value appended to b. */
void hr_tv_write_str(tsb *b, const tv *v);
void hr_tv_write_repr(tsb *b, const tv *v);
/* json.dumps(v, ensure_ascii, indent (NULL: none), separators, sort_keys). */
typedef struct {
    const char *indent; /* NULL: single line */
    const char *item_sep, *key_sep;
    int ensure_ascii, sort_keys;
} tjson_opts;
hr_err *hr_tv_write_json(tsb *b, const tv *v, const tjson_opts *o, int depth);

/* Converts a JSON value into a template value (arena-owned); an error when out of memory
 * or nested more than TPL_MAX_DEPTH levels. */
hr_err *hr_tv_from_json(rt *r, const json_t *j, int depth, tv **out);

/* UTF-8 helpers. */
size_t hr_tpl_utf8_len(const char *s, size_t n);
/* Decodes the code point at s[*i], advancing *i (invalid bytes decode as themselves). */
uint32_t hr_tpl_utf8_next(const char *s, size_t n, size_t *i);

/* ---- AST ---- */
typedef enum {
    E_CONST,
    E_NAME,
    E_LIST,
    E_TUPLE,
    E_DICT,
    E_ATTR,
    E_ITEM,
    E_SLICE,
    E_CALL,
    E_FILTER,
    E_TEST,
    E_BIN,
    E_NEG,
    E_POS,
    E_NOT,
    E_AND,
    E_OR,
    E_COND,
    E_CONCAT
} ekind;

/* Binary operators (E_BIN). */
typedef enum {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_FLOORDIV,
    OP_MOD,
    OP_POW,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN,
    OP_NOTIN
} binop;

typedef struct expr expr;
struct expr {
    ekind k;
    int line, col;
    tv *cval;         /* E_CONST */
    const char *name; /* E_NAME, E_ATTR, E_FILTER, E_TEST */
    binop op;         /* E_BIN */
    int negate;       /* E_TEST: is not */
    expr *a, *b, *c;  /* operands; E_ITEM: a[b]; E_SLICE: a[b:c:d]; E_COND: b if a else c */
    expr *d;
    expr **items; /* E_LIST/E_TUPLE items, E_DICT keys/values alternating, call args */
    size_t n;
    const char **kwn; /* call keyword names and values */
    expr **kwv;
    size_t nkw;
};

typedef enum {
    S_TEXT,
    S_OUTPUT,
    S_IF,
    S_FOR,
    S_SET,
    S_SETBLOCK,
    S_MACRO,
    S_CALLBLOCK,
    S_BREAK,
    S_CONTINUE,
    S_SCOPE
} skind;

typedef struct stmt stmt;
typedef struct {
    stmt **v;
    size_t n;
} stmt_list;

struct stmt {
    skind k;
    int line, col;
    const char *text; /* S_TEXT */
    size_t len;
    expr *e;      /* S_OUTPUT, S_IF cond, S_FOR iterable, S_SET value, S_CALLBLOCK call */
    expr *target; /* S_FOR, S_SET, S_SETBLOCK: E_NAME, E_TUPLE of names, or E_ATTR */
    expr *cond;   /* S_FOR: the `if` filter */
    stmt_list body, orelse;
    const char *name;    /* S_MACRO */
    const char **params; /* S_MACRO, S_CALLBLOCK: parameter names and defaults */
    expr **defaults;     /* NULL entries: no default */
    size_t nparams;
};

struct hr_template {
    tpl_arena *arena;
    stmt_list body;
};

/* Builds the AST into t->arena. */
hr_err *hr_tpl_parse(hr_template *t, const char *src);

/* ---- runtime ---- */
struct frame {
    frame *parent;
    const char **names;
    tv **vals;
    size_t n, cap;
};

struct rt {
    tpl_arena *a;
    frame *globals;
    long steps;
    int calls; /* macro calls in progress */
    int depth; /* blocks and expression nodes being evaluated (TPL_MAX_DEPTH) */
    int raised;
};

tv *hr_frame_lookup(const frame *f, const char *name);
int hr_frame_set(rt *r, frame *f, const char *name, tv *v);
frame *hr_frame_new(rt *r, frame *parent);

hr_err *hr_rt_nomem(rt *r);
/* A render-time limit error (HR_E_LIMIT: the server's fault, not the request's). */
hr_err *hr_tpl_limit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error when v nests lists and dicts more than TPL_MAX_DEPTH levels deep; checked where
 * values outlive an expression (namespace attributes, macro arguments, the context) so
 * that no value grows deep enough to overflow the stack of the recursive value functions.
 * Namespaces count as one level and are not entered: they are the only values that can
 * contain themselves. */
hr_err *hr_tpl_check_depth(tv *v);
hr_err *hr_eval_expr(rt *r, frame *f, const expr *e, tv **out);
hr_err *hr_eval_args(rt *r, frame *f, const expr *call, targs *a);
hr_err *hr_exec_body(rt *r, frame *f, const stmt_list *l, tsb *out, int *ctl);
/* Calls any callable value. */
hr_err *hr_tv_call(rt *r, tv *fn, const targs *a, tv **out);
/* Raises the UndefinedError of an undefined value. */
hr_err *hr_undef_error(const tv *u);
/* Iterates like Python's iter(): a list of items (dict: keys; str: characters). */
hr_err *hr_tv_iterate(rt *r, tv *v, tv ***items, size_t *n);
hr_err *hr_tv_getattr(rt *r, tv *obj, const char *name, tv **out);
hr_err *hr_tv_getitem(rt *r, tv *obj, tv *key, tv **out);
hr_err *hr_tv_to_str(rt *r, tv *v, tv **out);

/* Filters, tests, methods and globals (filters.c, tests.c, methods.c, builtins.c). */
int hr_filter_exists(const char *name);
int hr_test_exists(const char *name);
hr_err *hr_apply_filter(rt *r, const char *name, tv *subject, const targs *a, tv **out);
hr_err *hr_apply_test(rt *r, const char *name, tv *subject, const targs *a, int *out);
/* The bound method obj.name, or NULL when obj has none. */
tv *hr_method_lookup(rt *r, tv *obj, const char *name);
void hr_builtins_install(rt *r, frame *globals);

/* Argument helpers: the i-th positional or keyword `name`, or def. */
tv *hr_targ(const targs *a, size_t i, const char *name, tv *def);
hr_err *hr_targ_check(const targs *a, size_t max_pos, const char *fn);

#endif
