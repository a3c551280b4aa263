/* The SSD tier through the engine: a prompt served, the engine destroyed, a new engine on the
 * same --ssd-cache directory restores the prefix from disk (stats show the restores) and
 * continues greedily with exactly the tokens the in-memory prefix cache gives, in exact and
 * fast modes (tiny-llama, brown-llama-8m); an engine of the other compute mode never uses
 * those files; the same for a hybrid model (tiny-qwen3_5), whose blocks at snapshot points
 * carry their recurrent-state snapshot (one every 2 blocks here); and a restore skipped where
 * prefilling the blocks costs less. */
#include <dirent.h>
#include <unistd.h>

#include "engine/engine.h"
#include "harness.h"

enum { N_PROMPT = 100, N_GEN = 8 };

static char root[256];

typedef struct {
    int32_t toks[N_GEN];
    int n, n_cached;
} result;

/* always: restore whatever prefill costs (the restart checks test what a restore gives) */
static hr_err *make_on(const char *model, const char *dir, int fast, int always, hr_engine **e) {
    hr_engine_options o = {.n_threads = 1,
                           .fast = fast,
                           .kv_memory = 8 << 20,
                           .max_seqs = 4,
                           .max_batch_tokens = 64,
                           .snapshot_interval = 2, /* hybrid: a snapshot every 32 positions */
                           .ssd_cache = dir,
                           .ssd_cache_always_restore = always};
    return hr_engine_create(hr_fixture(model), &o, e);
}

static hr_err *make(const char *model, const char *dir, int fast, hr_engine **e) {
    return make_on(model, dir, fast, 1, e);
}

/* Greedy tokens after prompt `salt` (prompts of different salts share no prefix). */
static hr_err *generate_from(hr_engine *e, int salt, result *res) {
    int32_t p[N_PROMPT];
    int vocab = hr_engine_token_ids(e);
    for (int i = 0; i < N_PROMPT; i++)
        p[i] = 3 + (int32_t)((i * 7919 + 17 + salt * 104729) % (vocab - 3));
    hr_request_params rp = {
        .tokens = p, .n_tokens = N_PROMPT, .max_tokens = N_GEN, .ignore_eos = 1};
    hr_request *r;
    HR_TRY(hr_engine_submit(e, &rp, &r));
    memset(res, 0, sizeof *res);
    hr_event ev;
    while (hr_request_next(r, &ev)) {
        if (ev.kind == HR_EVENT_TOKEN && res->n < N_GEN) res->toks[res->n++] = ev.token;
        if (ev.kind == HR_EVENT_DONE) res->n_cached = ev.n_cached;
    }
    hr_request_release(r);
    return NULL;
}

static hr_err *generate(hr_engine *e, result *res) { return generate_from(e, 0, res); }

static int same(const result *a, const result *b) {
    return a->n == N_GEN && b->n == N_GEN && !memcmp(a->toks, b->toks, sizeof a->toks);
}

static const char *fresh_dir(const char *name) {
    static char d[512];
    snprintf(d, sizeof d, "%s/%s", root, name);
    hr_test_remove_tree(d);
    return d;
}

static void check_restart(const char *model, int fast) {
    const char *dir = fresh_dir(model + 7); /* after "models/" */
    hr_engine *e;
    result first, mem, disk, other;
    HR_CHECK_OK(make(model, dir, fast, &e));
    hr_err *err = generate(e, &first);
    if (!err) err = generate(e, &mem);
    hr_engine_stats st;
    hr_engine_stats_get(e, &st);
    hr_engine_destroy(e); /* writes the cached blocks behind */
    HR_CHECK_OK(err);
    HR_CHECK(st.ssd_on && mem.n_cached == 96 && same(&first, &mem),
             "%s fast=%d: in memory reused %d, tokens %s", model, fast, mem.n_cached,
             same(&first, &mem) ? "same" : "differ");
    HR_CHECK_OK(make(model, dir, fast, &e));
    err = generate(e, &disk);
    hr_engine_stats_get(e, &st);
    hr_engine_destroy(e);
    HR_CHECK_OK(err);
    HR_CHECK(st.ssd_entries >= 6, "%s fast=%d: %ld files after a restart", model, fast,
             st.ssd_entries);
    HR_CHECK(disk.n_cached == 96 && st.ssd_restores == 6 && st.ssd_hits == 1,
             "%s fast=%d: after a restart reused %d, %ld restores, %ld hits", model, fast,
             disk.n_cached, st.ssd_restores, st.ssd_hits);
    HR_CHECK(same(&disk, &mem), "%s fast=%d: restored prefix continues differently", model, fast);
    HR_CHECK_OK(make(model, dir, !fast, &e)); /* the other compute mode: other KV bytes */
    err = generate(e, &other);
    hr_engine_stats_get(e, &st);
    hr_engine_destroy(e);
    HR_CHECK_OK(err);
    HR_CHECK(other.n_cached == 0 && st.ssd_restores == 0,
             "%s fast=%d: the other mode reused %d tokens (%ld restores)", model, fast,
             other.n_cached, st.ssd_restores);
}

static void test_restart_tiny_llama_exact(void) { check_restart("models/tiny-llama", 0); }
static void test_restart_tiny_llama_fast(void) { check_restart("models/tiny-llama", 1); }
static void test_restart_brown_exact(void) { check_restart("models/brown-llama-8m", 0); }
static void test_restart_brown_fast(void) { check_restart("models/brown-llama-8m", 1); }

/* The costs file the tier keeps in dir (the one a run that measured them left), or "". */
static void costs_file(const char *dir, char *name, size_t cap) {
    name[0] = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));)
        if (strlen(de->d_name) == 22 && !strcmp(de->d_name + 16, ".costs"))
            snprintf(name, cap, "%s", de->d_name);
    if (d) closedir(d);
}

static int write_text(const char *dir, const char *name, const char *text) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

/* An auto-restoring engine on dir whose costs file says `costs` serves prompt salt into *res. */
static hr_err *run_with_costs(const char *dir, const char *costs, const char *text, int salt,
                              result *res, hr_engine_stats *st, hr_engine **keep) {
    hr_engine *e;
    if (!write_text(dir, costs, text)) return hr_errf("cannot write %s/%s", dir, costs);
    HR_TRY(make_on("models/tiny-llama", dir, 0, 0, &e));
    hr_err *err = generate_from(e, salt, res);
    hr_engine_stats_get(e, st);
    if (keep && !err)
        *keep = e;
    else
        hr_engine_destroy(e);
    return err;
}

/* Restoring that costs more than prefilling again is skipped. The tier measures both (the
 * costs files below pin what it starts from, so no timing decides): a disk said to be fast
 * restores a prompt; then, a prefill cost made far lower (as on a GPU, where 16k tokens
 * prefill faster than they read back), a second prompt's blocks stay on disk, prefilled, the
 * same tokens, counted; a costs file saying the disk is slow skips at once after a restart,
 * an unreadable one leaves both unknown (restore). */
static void test_restore_skipped(void) {
    const char *dir = fresh_dir("skip");
    hr_engine *e;
    result a0, b0, a1, b1, a2, a3;
    HR_CHECK_OK(make("models/tiny-llama", dir, 0, &e));
    hr_err *err = generate_from(e, 0, &a0);
    if (!err) err = generate_from(e, 1, &b0);
    hr_engine_destroy(e);
    HR_CHECK_OK(err);
    char costs[64];
    costs_file(dir, costs, sizeof costs);
    HR_CHECK(costs[0], "no costs file in %s after a run that measured them", dir);
    hr_engine_stats st0, st1, st2, st3;
    HR_CHECK_OK(run_with_costs(dir, costs, "0.000001 1000\n", 0, &a1, &st0, &e));
    for (int i = 0; i < 80; i++) /* the engine is idle: nothing else notes one now */
        hr_ssd_tier_note_prefill(e->ssd, 1000, 1e-3);
    err = generate_from(e, 1, &b1);
    hr_engine_stats_get(e, &st1);
    hr_engine_destroy(e);
    HR_CHECK_OK(err);
    HR_CHECK(a1.n_cached == 96 && same(&a0, &a1) && st0.ssd_restores > 0 && st0.ssd_skipped == 0,
             "first prompt: reused %d, restores %ld, skipped %ld", a1.n_cached, st0.ssd_restores,
             st0.ssd_skipped);
    HR_CHECK(b1.n_cached == 0 && same(&b0, &b1) && st1.ssd_skipped == 1 &&
                 st1.ssd_restores == st0.ssd_restores,
             "second prompt: reused %d, tokens %s, skipped %ld, restores %ld -> %ld", b1.n_cached,
             same(&b0, &b1) ? "same" : "differ", st1.ssd_skipped, st0.ssd_restores,
             st1.ssd_restores);
    HR_CHECK_OK(run_with_costs(dir, costs, "1000 0.000001\n", 0, &a2, &st2, NULL));
    HR_CHECK(same(&a0, &a2) && a2.n_cached == 0 && st2.ssd_skipped == 1,
             "costs of a slow disk: reused %d, skipped %ld", a2.n_cached, st2.ssd_skipped);
    HR_CHECK_OK(run_with_costs(dir, costs, "slow fast\n", 0, &a3, &st3, NULL));
    HR_CHECK(same(&a0, &a3) && a3.n_cached == 96 && st3.ssd_skipped == 0,
             "unreadable costs: reused %d, skipped %ld", a3.n_cached, st3.ssd_skipped);
    HR_CHECK(hr_ssd_restore_pays(0, 1e-6, 16) && hr_ssd_restore_pays(1, 0, 16) &&
                 hr_ssd_restore_pays(1.0, 0.1, 16) && !hr_ssd_restore_pays(1.7, 0.1, 16),
             "hr_ssd_restore_pays");
}

static void test_restart_hybrid_exact(void) { check_restart("models/tiny-qwen3_5", 0); }
static void test_restart_hybrid_fast(void) { check_restart("models/tiny-qwen3_5", 1); }

int main(void) {
    snprintf(root, sizeof root, "/tmp/hearth-test-ssd-engine-%d", (int)getpid());
    HR_RUN(test_restart_tiny_llama_exact);
    HR_RUN(test_restart_tiny_llama_fast);
    HR_RUN(test_restart_brown_exact);
    HR_RUN(test_restart_brown_fast);
    HR_RUN(test_restart_hybrid_exact);
    HR_RUN(test_restart_hybrid_fast);
    HR_RUN(test_restore_skipped);
    hr_test_remove_tree(root);
    return hr_test_summary();
}
