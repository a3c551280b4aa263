/* Statement parser: text, {{ output }}, and the block tags chat templates use (if, for,
 * set, macro, call, break/continue, generation), nested to a bounded depth. */
#include <stdlib.h>
#include <string.h>

#include "template/parser.h"

static hr_err *parse_body(parser *P, const char *const *ends, stmt_list *out, const char **end);

static stmt *new_stmt(parser *P, skind k, const token *at) {
    stmt *s = hr_ta_alloc(P->a, sizeof *s);
    if (!s) return NULL;
    s->k = k;
    s->line = at->line;
    s->col = at->col;
    return s;
}

static int list_push(parser *P, stmt_list *l, stmt *s) {
    if ((l->n & (l->n - 1)) == 0) { /* grow at powers of two */
        stmt **v = hr_ta_alloc(P->a, (l->n ? l->n * 2 : 1) * sizeof *v);
        if (!v) return 0;
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
    }
    l->v[l->n++] = s;
    return 1;
}

static hr_err *expect_block_end(parser *P) {
    if (CUR(P)->t != T_BLOCK_END)
        return hr_perr(P, CUR(P), "expected end of statement block, got '%s'", hr_tok_desc(CUR(P)));
    P->i++;
    return NULL;
}

static hr_err *expect_name(parser *P, const char **out) {
    if (CUR(P)->t != T_NAME)
        return hr_perr(P, CUR(P), "expected a name, got '%s'", hr_tok_desc(CUR(P)));
    *out = CUR(P)->s;
    P->i++;
    return NULL;
}

/* A name, ns.attr (when allowed) or a tuple of names, for for/set targets. */
static hr_err *parse_target(parser *P, int allow_attr, expr **out) {
    const token *at = CUR(P);
    if (allow_attr && at->t == T_NAME && hr_is_op(&P->t[P->i + 1], ".")) {
        if (!(*out = hr_new_expr(P, E_ATTR, at)) || !((*out)->a = hr_new_expr(P, E_NAME, at)))
            return hr_err_oom();
        (*out)->a->name = at->s;
        P->i += 2;
        return expect_name(P, &(*out)->name);
    }
    int paren = hr_is_op(at, "(");
    if (paren) P->i++;
    size_t n = 0;
    expr *names[32];
    do {
        if (n && !hr_is_op(CUR(P), ",")) break;
        if (n) P->i++;
        if (n == 32) return hr_perr(P, CUR(P), "too many names to unpack");
        if (!(names[n] = hr_new_expr(P, E_NAME, CUR(P)))) return hr_err_oom();
        HR_TRY(expect_name(P, &names[n]->name));
        n++;
    } while (hr_is_op(CUR(P), ","));
    if (paren) HR_TRY(hr_expect_op(P, ")"));
    if (n == 1 && !paren) return *out = names[0], NULL;
    if (!(*out = hr_new_expr(P, E_TUPLE, at)) ||
        !((*out)->items = hr_ta_alloc(P->a, n * sizeof(expr *))))
        return hr_err_oom();
    memcpy((*out)->items, names, n * sizeof(expr *));
    (*out)->n = n;
    return NULL;
}

/* An elif chain is a loop here (and in exec_if): as deep as it is long, it would recurse. */
static hr_err *parse_if(parser *P, stmt *s) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    const char *end;
    for (;;) {
        HR_TRY(hr_parse_expression(P, 1, &s->e));
        HR_TRY(hr_tpl_check_nesting(P, s->e));
        HR_TRY(expect_block_end(P));
        HR_TRY(parse_body(P, ends, &s->body, &end));
        if (strcmp(end, "elif")) break;
        stmt *elif = new_stmt(P, S_IF, CUR(P));
        if (!elif || !list_push(P, &s->orelse, elif)) return hr_err_oom();
        s = elif;
    }
    if (!strcmp(end, "else")) {
        static const char *const endif[] = {"endif", NULL};
        HR_TRY(expect_block_end(P));
        HR_TRY(parse_body(P, endif, &s->orelse, &end));
    }
    return expect_block_end(P);
}

static hr_err *parse_for(parser *P, stmt *s) {
    static const char *const ends[] = {"else", "endfor", NULL};
    static const char *const iter_end[] = {"if", "recursive", NULL};
    HR_TRY(parse_target(P, 0, &s->target));
    if (!hr_is_name(CUR(P), "in"))
        return hr_perr(P, CUR(P), "expected 'in', got '%s'", hr_tok_desc(CUR(P)));
    P->i++;
    HR_TRY(hr_parse_tuple(P, 0, 0, iter_end, &s->e));
    HR_TRY(hr_tpl_check_nesting(P, s->e));
    if (hr_is_name(CUR(P), "if")) {
        P->i++;
        HR_TRY(hr_parse_expression(P, 1, &s->cond));
        HR_TRY(hr_tpl_check_nesting(P, s->cond));
    }
    if (hr_is_name(CUR(P), "recursive"))
        return hr_perr(P, CUR(P), "recursive loops are not supported");
    HR_TRY(expect_block_end(P));
    const char *end;
    HR_TRY(parse_body(P, ends, &s->body, &end));
    if (!strcmp(end, "else")) {
        static const char *const endfor[] = {"endfor", NULL};
        HR_TRY(expect_block_end(P));
        HR_TRY(parse_body(P, endfor, &s->orelse, &end));
    }
    return expect_block_end(P);
}

static hr_err *parse_set(parser *P, stmt *s) {
    HR_TRY(parse_target(P, 1, &s->target));
    if (hr_is_op(CUR(P), "=")) {
        P->i++;
        HR_TRY(hr_parse_tuple(P, 1, 0, NULL, &s->e));
        HR_TRY(hr_tpl_check_nesting(P, s->e));
        return expect_block_end(P);
    }
    if (s->target->k != E_NAME) return hr_perr(P, CUR(P), "block set needs a plain name");
    static const char *const ends[] = {"endset", NULL};
    s->k = S_SETBLOCK;
    const char *end;
    HR_TRY(expect_block_end(P));
    HR_TRY(parse_body(P, ends, &s->body, &end));
    return expect_block_end(P);
}

/* (a, b=default, ...) of a macro or call block. */
static hr_err *parse_params(parser *P, stmt *s) {
    HR_TRY(hr_expect_op(P, "("));
    size_t cap = 0;
    while (!hr_is_op(CUR(P), ")")) {
        if (s->nparams) HR_TRY(hr_expect_op(P, ","));
        if (s->nparams == cap) {
            cap = cap ? cap * 2 : 4;
            const char **np = hr_ta_alloc(P->a, cap * sizeof *np);
            expr **nd = hr_ta_alloc(P->a, cap * sizeof *nd);
            if (!np || !nd) return hr_err_oom();
            if (s->nparams) {
                memcpy(np, s->params, s->nparams * sizeof *np);
                memcpy(nd, s->defaults, s->nparams * sizeof *nd);
            }
            s->params = np;
            s->defaults = nd;
        }
        HR_TRY(expect_name(P, &s->params[s->nparams]));
        if (hr_is_op(CUR(P), "=")) {
            P->i++;
            HR_TRY(hr_parse_expression(P, 1, &s->defaults[s->nparams]));
            HR_TRY(hr_tpl_check_nesting(P, s->defaults[s->nparams]));
        } else if (s->nparams && s->defaults[s->nparams - 1])
            return hr_perr(P, CUR(P), "non-default argument follows default argument");
        s->nparams++;
    }
    P->i++;
    return NULL;
}

static hr_err *parse_macro(parser *P, stmt *s) {
    static const char *const ends[] = {"endmacro", NULL};
    HR_TRY(expect_name(P, &s->name));
    HR_TRY(parse_params(P, s));
    HR_TRY(expect_block_end(P));
    const char *end;
    HR_TRY(parse_body(P, ends, &s->body, &end));
    return expect_block_end(P);
}

static hr_err *parse_call_block(parser *P, stmt *s) {
    static const char *const ends[] = {"endcall", NULL};
    if (hr_is_op(CUR(P), "(")) HR_TRY(parse_params(P, s));
    const token *at = CUR(P);
    HR_TRY(hr_parse_expression(P, 1, &s->e));
    if (s->e->k != E_CALL) return hr_perr(P, at, "expected a call after {%% call %%}");
    HR_TRY(hr_tpl_check_nesting(P, s->e));
    HR_TRY(expect_block_end(P));
    const char *end;
    HR_TRY(parse_body(P, ends, &s->body, &end));
    return expect_block_end(P);
}

/* {% generation %} (transformers' assistant-mask tag) and {% with %} render their body. */
static hr_err *parse_scope(parser *P, stmt *s, const char *endname) {
    const char *ends[] = {endname, NULL};
    HR_TRY(expect_block_end(P));
    const char *end;
    HR_TRY(parse_body(P, ends, &s->body, &end));
    return expect_block_end(P);
}

static hr_err *parse_stmt(parser *P, stmt **out) {
    const token *kw = CUR(P);
    if (kw->t != T_NAME)
        return hr_perr(P, kw, "expected a statement name, got '%s'", hr_tok_desc(kw));
    P->i++;
    static const struct {
        const char *name;
        skind k;
    } kinds[] = {{"if", S_IF},
                 {"for", S_FOR},
                 {"set", S_SET},
                 {"macro", S_MACRO},
                 {"call", S_CALLBLOCK},
                 {"break", S_BREAK},
                 {"continue", S_CONTINUE},
                 {"generation", S_SCOPE}};
    int k = -1;
    for (size_t j = 0; j < sizeof kinds / sizeof kinds[0]; j++)
        if (!strcmp(kw->s, kinds[j].name)) k = (int)j;
    if (k < 0) return hr_perr(P, kw, "Encountered unknown tag '%s'.", kw->s);
    stmt *s = new_stmt(P, kinds[k].k, kw);
    if (!(*out = s)) return hr_err_oom();
    switch (s->k) {
    case S_IF: return parse_if(P, s);
    case S_FOR: return parse_for(P, s);
    case S_SET: return parse_set(P, s);
    case S_MACRO: return parse_macro(P, s);
    case S_CALLBLOCK: return parse_call_block(P, s);
    case S_SCOPE: return parse_scope(P, s, "endgeneration");
    default: return expect_block_end(P);
    }
}

static int is_end(const token *t, const char *const *ends) {
    for (int i = 0; ends && ends[i]; i++)
        if (hr_is_name(t, ends[i])) return 1;
    return 0;
}

static hr_err *parse_output(parser *P, stmt *s) {
    P->i++;
    HR_TRY(hr_parse_tuple(P, 1, 0, NULL, &s->e));
    HR_TRY(hr_tpl_check_nesting(P, s->e));
    if (CUR(P)->t != T_VAR_END)
        return hr_perr(P, CUR(P), "expected end of print statement, got '%s'", hr_tok_desc(CUR(P)));
    P->i++;
    return NULL;
}

static hr_err *parse_body(parser *P, const char *const *ends, stmt_list *out, const char **end) {
    if (++P->depth > TPL_MAX_DEPTH)
        return hr_perr(P, CUR(P), "blocks nested too deeply (more than %d levels)", TPL_MAX_DEPTH);
    for (;;) {
        const token *t = CUR(P);
        stmt *s = NULL;
        if (t->t == T_EOF) {
            if (!ends) break;
            size_t last = 0;
            while (ends[last + 1])
                last++;
            return hr_perr(P, t, "unexpected end of template, expected '%s'", ends[last]);
        }
        if (t->t == T_TEXT) {
            if (!(s = new_stmt(P, S_TEXT, t))) return hr_err_oom();
            s->text = t->s;
            s->len = t->n;
            P->i++;
        } else if (t->t == T_VAR_BEGIN) {
            if (!(s = new_stmt(P, S_OUTPUT, t))) return hr_err_oom();
            HR_TRY(parse_output(P, s));
        } else if (t->t == T_BLOCK_BEGIN) {
            if (is_end(&P->t[P->i + 1], ends)) {
                *end = P->t[P->i + 1].s;
                P->i += 2;
                break;
            }
            P->i++;
            HR_TRY(parse_stmt(P, &s));
        } else
            return hr_perr(P, t, "unexpected '%s'", hr_tok_desc(t));
        if (!list_push(P, out, s)) return hr_err_oom();
    }
    P->depth--;
    return NULL;
}

hr_err *hr_tpl_parse(hr_template *t, const char *src) {
    parser P = {.a = t->arena};
    HR_TRY(hr_tpl_lex(t->arena, src, &P.t, &P.n));
    hr_err *e = parse_body(&P, NULL, &t->body, NULL);
    free(P.t);
    return e;
}
