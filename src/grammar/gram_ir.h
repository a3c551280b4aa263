/* The grammar engine's internal forms, shared by the files of src/grammar/ only:
 * the expression IR both front ends (GBNF, regex) parse into, the byte DFAs its regular
 * parts compile to, and the CFG over those DFA terminals that the Earley matcher runs.
 * Characters in the IR are Unicode code points; the DFAs work on UTF-8 bytes. */
#ifndef HR_GRAMMAR_GRAM_IR_H
#define HR_GRAMMAR_GRAM_IR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "grammar/grammar.h"

#define HR_G_MAX_CP 0x10FFFFu
#define HR_G_INF (-1) /* an unbounded repetition's max */

/* ---- expression IR (ir.c) ---- */
/* AND: the intersection of its kids' languages, all of them regular (GBNF's `&`); NOT: the
 * text its (regular) child does not match (GBNF's `~`) */
typedef enum {
    HR_GN_SET,
    HR_GN_SEQ,
    HR_GN_ALT,
    HR_GN_AND,
    HR_GN_NOT,
    HR_GN_REP,
    HR_GN_REF
} hr_gnode_kind;

typedef struct {
    uint32_t lo, hi; /* inclusive code point range */
} hr_grange;

typedef struct {
    hr_gnode_kind kind;
    int n, first; /* SET: ranges [first, first+n); SEQ/ALT/AND: kids [first, first+n) */
    int child;    /* REP: the repeated node; NOT: the negated one; REF: the rule index */
    int min, max; /* REP: bounds, max HR_G_INF when unbounded */
} hr_gnode;

typedef struct {
    hr_gnode *nodes;
    int n_nodes, cap_nodes;
    hr_grange *ranges;
    int n_ranges, cap_ranges;
    int *kids;
    int n_kids, cap_kids;
    char **names;     /* (n_rules) rule names */
    int *body;        /* (n_rules) node of each rule, -1 while only referenced */
    size_t *name_off; /* (n_rules) where the rule was first referenced or defined */
    int n_rules, cap_rules;
    int *name_tab; /* open addressing over the names: rule index + 1, 0 empty */
    size_t cap_name_tab;
} hr_gir;

void hr_gir_free(hr_gir *ir);
/* Each returns the new node's index, or -1 when out of memory. */
int hr_gir_set(hr_gir *ir, const hr_grange *r, int n, int negate); /* normalized copy */
int hr_gir_char(hr_gir *ir, uint32_t cp);
int hr_gir_list(hr_gir *ir, hr_gnode_kind kind, const int *kids, int n); /* SEQ, ALT or AND */
int hr_gir_rep(hr_gir *ir, int child, int min, int max);
int hr_gir_ref(hr_gir *ir, int rule);
int hr_gir_not(hr_gir *ir, int child);
/* The rule named name[0..len), created (body -1) when new; -1 when out of memory. */
int hr_gir_rule(hr_gir *ir, const char *name, size_t len, size_t off);

/* Decodes one UTF-8 character of s[0..n) (n > 0) into *cp; returns its length, or 0 when
 * the bytes are not valid UTF-8. */
size_t hr_gutf8_decode(const char *s, size_t n, uint32_t *cp);

/* A growable int list the parsers use to collect children. */
typedef struct {
    int *v;
    int n, cap;
} hr_gints;
int hr_gints_push(hr_gints *l, int x); /* 0, or -1 when out of memory */

/* Structural ids of nodes (canon.c): equal ids for nodes of the same structure. */
typedef struct {
    const hr_gir *ir;
    int *of;       /* open addressing: entry of of_id, -1 empty */
    int *of_id;    /* (node, id) pairs */
    size_t cap_of; /* of's slots; of_id holds cap_of / 2 pairs */
    int n_of;
    int *reps; /* open addressing: representative, -1 empty */
    size_t cap_reps;
    uint64_t *rep_hash; /* (n_reps) */
    int *rep_node;      /* (n_reps) the first node of each structure */
    int n_reps, cap_rep_list;
} hr_gcanon;
hr_err *hr_gcanon_init(hr_gcanon *c, const hr_gir *ir);
void hr_gcanon_free(hr_gcanon *c);
int hr_gcanon_id(hr_gcanon *c, int node); /* -1 when out of memory */

/* ---- front ends ---- */
/* GBNF text into ir (gbnf.c); *root is the rule "root". */
hr_err *hr_gbnf_parse(const char *text, size_t len, hr_gir *ir, int *root);
/* An ECMAScript regex (the subset docs/grammar.md lists) into a node of ir (regex.c).
 * base is the offset of re in the enclosing text, for error messages. */
hr_err *hr_regex_parse(const char *re, size_t len, size_t base, hr_gir *ir, int *node);

/* ---- byte sets summarized in 192 bits ---- */
/* Bit b - 0x20 for each printable ASCII byte 0x20..0x7F, bit 96 for "some byte 0x00..0x1F",
 * bit 97 for "some byte 0x80..0xFF", and in w[2] bit L - 0xC0 for each UTF-8 lead byte L
 * (characters starting with L): enough to tell that text stays inside a DFA state. */
typedef struct {
    uint64_t w[3];
} hr_gbytes;

#define HR_G_NON_ASCII (1ull << (97 - 64)) /* bit 97, in w[1] */

static inline int hr_gbytes_bit(uint8_t b) { return b < 0x20 ? 96 : b >= 0x80 ? 97 : b - 0x20; }

/* A UTF-8 validator's states: 0 between characters, 1..7 inside one (what the next bytes
 * must be); hr_gutf8_step gives the next state or -1 for a byte that cannot come next. */
int hr_gutf8_step(int q, uint8_t b);

/* ---- byte DFAs (dfa.c) ---- */
typedef struct {
    int n_states;    /* state 0 is the start */
    int32_t *trans;  /* (n_states, 256) next state, -1 dead */
    uint8_t *accept; /* (n_states) */
    /* chains (chain.c): from state s, any text of up to chain_len[s] characters drawn from
     * chain_set[s] keeps the DFA alive (a character class moving s along one successor
     * chain, such as a string interior's loop or a maxLength counter) */
    hr_gbytes *chain_set; /* (n_states) w[2] bit L - 0xC0: every character led by L is in the
                             set; bit 97: every non-ASCII character is */
    int32_t *chain_len;   /* (n_states) characters; HR_G_CHAIN_INF for a loop */
    uint64_t uid;         /* names the tables process-wide: two DFAs with one uid are equal (a build
                             gets a new one; DFAs from one entry of the DFA cache share its) */
} hr_gdfa;

/* A new process-wide identifier (never 0, never reused): DFAs' and vocabularies' uids. */
uint64_t hr_guid_new(void);

#define HR_G_CHAIN_INF (1 << 30)

/* minimize.c: the equivalence classes of a DFA's states (trans (n, w), -1 dead; rep one
 * column of each of n_rep classes of columns) into cls, the start's class 0; returns their
 * number, or -1 when out of memory. */
int hr_gdfa_partition(const int32_t *trans, int w, const uint8_t *accept, int n, const uint8_t *rep,
                      int n_rep, int *cls);

/* Fills chain_set and chain_len of a minimized DFA. */
hr_err *hr_gdfa_chains(hr_gdfa *d);

/* Compiles node (all of whose rule references are regular rules, inlined) into a minimal
 * byte DFA with no dead states. The language may be empty: then n_states is 0. */
hr_err *hr_gdfa_build(const hr_gir *ir, int node, hr_gdfa *out);
void hr_gdfa_free(hr_gdfa *d);
/* dfa_cache.c: hr_gdfa_build through the process-wide cache of DFAs by structure (the same
 * result; hr_grammar_dfa_cache_limit sets its size). canon (over ir) gives the structural
 * ids the key is written from; one may serve every terminal of a grammar. */
hr_err *hr_gdfa_build_cached(const hr_gir *ir, hr_gcanon *canon, int node, hr_gdfa *out);

/* intersect.c: the product of x and y (a transition table and accept flags only, states
 * that cannot accept not removed); empty (n_states 0) when either is. */
hr_err *hr_gdfa_intersect(const hr_gdfa *x, const hr_gdfa *y, hr_gdfa *out);
/* The valid UTF-8 texts x does not accept (same form as the product). */
hr_err *hr_gdfa_complement(const hr_gdfa *x, hr_gdfa *out);

/* ---- the compiled grammar (cfg.c) ---- */
/* A symbol in a production: >= 0 a nonterminal, < 0 terminal -(t+1). END closes a production. */
#define HR_G_END INT32_MIN

struct hr_grammar {
    int n_terms;
    hr_gdfa *terms;    /* (n_terms) */
    int n_nts;         /* nonterminal 0 is the start S' ::= root */
    uint8_t *nullable; /* (n_nts) */
    int *nt_prods;     /* (n_nts + 1) productions of nt: [nt_prods[nt], nt_prods[nt+1]) */
    int n_prods;
    int *prod_pos; /* (n_prods) dotted position of each production's dot 0 */
    int n_pos;
    int32_t *pos_sym;    /* (n_pos) symbol after the dot, HR_G_END at the end */
    int32_t *pos_lhs;    /* (n_pos) the production's left-hand side */
    uint8_t *term_inert; /* (n_terms) every use ends a production of the start symbol, so
                            completing it only makes the parse accepting */
    atomic_int refs;     /* references beyond the first (hr_grammar_ref) */
};

/* ---- the vocabulary (vocab.c) ---- */
/* Token kinds in masks. */
enum { HR_GV_NORMAL, HR_GV_STOP, HR_GV_NEVER };

struct hr_grammar_vocab {
    uint64_t uid; /* names it in the mask cache's keys (hr_guid_new) */
    int n_vocab;
    uint32_t *tok_off; /* (n_vocab + 1) bytes of token i: bytes[tok_off[i], tok_off[i+1]) */
    uint8_t *bytes;
    uint8_t *kind; /* (n_vocab) HR_GV_* */
    int32_t *stop; /* stop ids */
    int n_stop;
    /* trie over the NORMAL tokens' bytes, nodes in preorder, node 0 the root; the children
     * of u are u+1, end[u+1], end[end[u+1]], ... while below end[u] */
    int n_nodes;
    uint8_t *node_byte;   /* (n_nodes) the byte on the edge into the node */
    uint16_t *node_depth; /* (n_nodes) bytes from the root */
    int32_t *node_end;    /* (n_nodes) first node after the subtree */
    int32_t *node_tok; /* (n_nodes + 1) tokens ending here: sorted_tok[node_tok[u], node_tok[u+1]);
                          the subtree's tokens are sorted_tok[node_tok[u], node_tok[node_end[u]]) */
    hr_gbytes *node_below;      /* (n_nodes) the bytes on every edge below the node (w[2]: the
                                   lead bytes among them) */
    uint8_t *node_utf8;         /* (n_nodes) bit q: from validator state q at the node, every
                                   path below is valid UTF-8 (possibly cut inside a character) */
    uint16_t *node_below_chars; /* (n_nodes) the most characters starting on a path below the
                                   node (its bytes other than UTF-8 continuation bytes) */
    int32_t *sorted_tok;        /* NORMAL token ids by their node */
    uint32_t *normal_bits;      /* ((n_vocab + 31) / 32) the NORMAL tokens as a mask */
    int max_depth;
};

/* ---- the matcher (earley.c) ---- */
typedef struct {
    uint32_t pos, origin; /* dotted position, Earley set it started in */
} hr_gitem;

typedef struct {
    uint32_t pos, origin; /* an item whose next symbol is a terminal, inside it */
    int32_t state;        /* that terminal's DFA state */
} hr_gfront;

struct hr_matcher {
    const hr_grammar *g;
    const hr_grammar_vocab *v;
    hr_gitem *items; /* every Earley set, back to back */
    size_t n_items, cap_items;
    hr_gfront *front; /* every position's frontier, back to back */
    size_t n_front, cap_front;
    size_t *set_beg, *front_beg; /* (cur + 2) set/frontier p is [beg[p], beg[p+1]) */
    uint8_t *acc;                /* (cur + 1) accepting after p bytes */
    int cur, cap_pos;            /* bytes consumed */
    int *tok_pos;                /* (n_toks) position before each accepted token, -1 a stop token */
    int n_toks, cap_toks;
    int ended;
    uint64_t *hash; /* dedup index of the set/frontier being built (entry index + 1, a
                       tag bit for the frontier, 0 empty), once they outgrow a linear scan */
    size_t hash_cap, hash_alloc, hash_n; /* in use (a power of two), allocated, filled */
    int hashing;                         /* the index is in use for the position being built */
    /* Items and frontier entries predicted at the position being built (origin = it) are
     * deduped by stamps per dotted position instead of the index: equal to gen when present
     * (gen moves on with every position built). NULL past HR_GM_STAMPS positions. */
    uint32_t *stamp_item, *stamp_front, gen;
    uint32_t building;
    int oom; /* a push failed for memory: the matcher refuses from then on */
};

#define HR_GM_STAMPS (1 << 18) /* grammars with more dotted positions dedupe by the index */

/* Consumes one byte: 1 ok, 0 the grammar cannot continue (state unchanged). */
int hr_gm_push(hr_matcher *m, uint8_t b);
/* Back to pos bytes consumed (pos <= cur). */
void hr_gm_truncate(hr_matcher *m, int pos);

#endif
