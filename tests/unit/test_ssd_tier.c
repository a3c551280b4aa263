/* The SSD tier on its own (a tiny-llama KV pool, no engine): the file format's round trip and
 * its refusals (bad magic, flipped header byte, truncation), spill on eviction and restore
 * into a fresh pool with the same bytes, the header-only scan (corrupt, truncated, stale
 * temporary and unknown files; another model's files kept and never used), a flipped data
 * byte caught by --ssd-cache-verify, the byte cap under churn, the spill queue's bound, and
 * a directory that stops taking writes (replaced by a plain file: chmod does not stop root)
 * degrading to memory-only. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/ssd_file.h"
#include "engine/ssd_tier.h"
#include "harness.h"

enum { BS = 16, FP = 7 };

static hr_backend *be;
static hr_model *tiny;
static char root[256];

/* A fresh empty directory under the test's root. */
static const char *fresh_dir(const char *name) {
    static char buf[4][512];
    static int slot;
    char *d = buf[slot++ & 3];
    snprintf(d, sizeof buf[0], "%s/%s", root, name);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", d, d);
    if (system(cmd) != 0) printf("# cannot make %s\n", d);
    return d;
}

static int count_files(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t a = strlen(de->d_name), b = strlen(suffix);
        if (de->d_name[0] != '.' && a >= b && !strcmp(de->d_name + a - b, suffix)) n++;
    }
    closedir(d);
    return n;
}

/* The first file in dir ending in .hkv, into path. */
static int first_file(const char *dir, char *path, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    for (struct dirent *de; !found && (de = readdir(d));)
        if (strstr(de->d_name, ".hkv") && !strstr(de->d_name, ".tmp.")) {
            snprintf(path, cap, "%s/%s", dir, de->d_name);
            found = 1;
        }
    closedir(d);
    return found;
}

static void prompt(int32_t *t, int n, int salt) {
    for (int i = 0; i < n; i++)
        t[i] = 5 + (i * 31 + salt * 977) % 1000;
}

/* Bytes of a block's region in one layer of K or V. */
static size_t region(const hr_kv_pool *p) {
    return (size_t)BS * (size_t)p->store.n_kv_heads *
           hr_kv_row_bytes(p->store.dtype, p->store.head_dim);
}

/* Fills every layer's K and V of block b with bytes derived from salt. */
static void fill_block(hr_kv_pool *p, int b, int salt) {
    size_t n = region(p);
    uint8_t *buf = malloc(n);
    for (int l = 0; l < p->store.n_layers; l++)
        for (int kv = 0; kv < 2; kv++) {
            for (size_t i = 0; i < n; i++)
                buf[i] = (uint8_t)(i * 13 + (size_t)l * 7 + (size_t)kv * 3 + (size_t)salt);
            void *base = kv ? p->store.v : p->store.k;
            hr_err_free(
                be->vt->write(be, (char *)base + p->store.layer_off[l] + (size_t)b * n, buf, n));
        }
    free(buf);
}

static int block_is(hr_kv_pool *p, int b, int salt) {
    size_t n = region(p);
    uint8_t *buf = malloc(n);
    int ok = 1;
    for (int l = 0; ok && l < p->store.n_layers; l++)
        for (int kv = 0; ok && kv < 2; kv++) {
            void *base = kv ? p->store.v : p->store.k;
            hr_err_free(
                be->vt->read(be, (char *)base + p->store.layer_off[l] + (size_t)b * n, buf, n));
            for (size_t i = 0; ok && i < n; i++)
                ok = buf[i] == (uint8_t)(i * 13 + (size_t)l * 7 + (size_t)kv * 3 + (size_t)salt);
        }
    free(buf);
    return ok;
}

/* Computes (fills) and publishes a sequence of n_blocks blocks of tokens, then releases it:
 * its blocks are idle in the LRU. Block i's bytes are salted with salt + i. */
static void cache_prefix(hr_kv_pool *p, const int32_t *tokens, int n_blocks, int salt) {
    hr_kv_seq s = {0};
    hr_err_free(hr_kv_seq_reserve(p, &s, n_blocks * BS));
    for (int i = 0; i < n_blocks; i++)
        fill_block(p, s.blocks[i], salt + i);
    hr_kv_seq_publish(p, &s, tokens, n_blocks * BS);
    hr_kv_seq_release(p, &s);
}

/* Caches a one-block prefix (tokens and bytes from salt) and evicts it from a 2-block pool. */
static hr_err *cache_and_evict(hr_kv_pool *p, int salt) {
    int32_t u[BS];
    prompt(u, BS, salt);
    cache_prefix(p, u, 1, salt);
    hr_kv_seq s = {0};
    HR_TRY(hr_kv_seq_reserve(p, &s, 2 * BS));
    hr_kv_seq_release(p, &s);
    return NULL;
}

static hr_err *open_tier(const char *dir, hr_kv_pool *p, int n_blocks, uint64_t fp, int verify,
                         size_t max_bytes, hr_ssd_tier **t) {
    HR_TRY(hr_kv_pool_create(p, tiny, n_blocks, BS));
    hr_kv_pool_enable_cache(p, fp);
    hr_ssd_options o = {.dir = dir,
                        .max_bytes = max_bytes ? max_bytes : (size_t)1 << 30,
                        .verify = verify,
                        .fingerprint = fp,
                        .tok_hash = 3};
    hr_err *err = hr_ssd_tier_open(&o, p, t);
    if (err) hr_kv_pool_destroy(p);
    return err;
}

static void close_tier(hr_ssd_tier *t, hr_kv_pool *p) {
    hr_ssd_tier_close(t, p);
    hr_kv_pool_destroy(p);
}

/* Writes a 3-block prefix into dir (flushed at close) and returns the file size. */
static size_t write_prefix(const char *dir, const int32_t *tokens, uint64_t fp, int salt) {
    hr_kv_pool p;
    hr_ssd_tier *t;
    hr_err *err = open_tier(dir, &p, 8, fp, 0, 0, &t);
    if (err) return hr_err_free(err), 0;
    cache_prefix(&p, tokens, 3, salt);
    hr_ssd_tier_flush(t, &p);
    close_tier(t, &p);
    char path[768];
    struct stat s;
    return first_file(dir, path, sizeof path) && stat(path, &s) == 0 ? (size_t)s.st_size : 0;
}

/* The size of one block's file (written into a scratch directory). */
static size_t one_file_bytes(void) {
    int32_t toks[4 * BS];
    prompt(toks, 4 * BS, 9);
    return write_prefix(fresh_dir("size"), toks, FP, 1);
}

/* Restores tokens' prefix into a fresh pool on dir: blocks reused, and whether their bytes are
 * the salted ones. */
static int restore_prefix(const char *dir, const int32_t *tokens, uint64_t fp, int verify, int salt,
                          int *same, hr_ssd_stats *st) {
    hr_kv_pool p;
    hr_ssd_tier *t;
    hr_err *err = open_tier(dir, &p, 8, fp, verify, 0, &t);
    if (err) return hr_err_free(err), -1;
    hr_kv_seq s = {0};
    int got = hr_kv_seq_reuse(&p, &s, tokens, 4 * BS, 4);
    *same = 1;
    for (int i = 0; i < got; i++)
        *same &= block_is(&p, s.blocks[i], salt + i);
    hr_kv_seq_release(&p, &s);
    hr_ssd_tier_lookup_done(t, 1.5);
    hr_ssd_tier_stats(t, st);
    close_tier(t, &p);
    return got;
}

static void test_format_round_trip(void) {
    int32_t toks[BS];
    prompt(toks, BS, 1);
    hr_ssd_header h = {.fingerprint = 11,
                       .tok_hash = 12,
                       .key = 13,
                       .parent = 14,
                       .block_size = BS,
                       .n_tensors = 3,
                       .tokens = toks,
                       .bytes = {100, 5000, 1},
                       .checksum = {1, 2, 3}};
    size_t total = hr_ssd_layout(&h);
    HR_CHECK(h.offset[0] == HR_SSD_ALIGN && h.offset[1] == 2 * HR_SSD_ALIGN &&
                 h.offset[2] == 4 * HR_SSD_ALIGN && total == 5 * HR_SSD_ALIGN,
             "layout %llu %llu %llu total %zu", (unsigned long long)h.offset[0],
             (unsigned long long)h.offset[1], (unsigned long long)h.offset[2], total);
    uint8_t buf[HR_SSD_ALIGN];
    hr_ssd_encode(&h, buf);
    hr_ssd_header d;
    HR_CHECK_OK(hr_ssd_decode(buf, sizeof buf, total, &d));
    HR_CHECK(d.fingerprint == 11 && d.tok_hash == 12 && d.key == 13 && d.parent == 14 &&
                 d.block_size == BS && d.n_tensors == 3 && d.bytes[1] == 5000 &&
                 d.checksum[2] == 3 && d.offset[2] == h.offset[2] &&
                 !memcmp(d.tokens, toks, sizeof toks),
             "decoded header differs");
    hr_err *err = hr_ssd_decode(buf, sizeof buf, h.offset[2], &d);
    HR_CHECK(err && strstr(hr_err_msg(err), "truncated"), "a short file was accepted");
    hr_err_free(err);
    buf[60] ^= 1;
    err = hr_ssd_decode(buf, sizeof buf, total, &d);
    HR_CHECK(err && strstr(hr_err_msg(err), "checksum"), "a flipped header bit was accepted");
    hr_err_free(err);
    buf[0] = 'X';
    err = hr_ssd_decode(buf, sizeof buf, total, &d);
    HR_CHECK(err && strstr(hr_err_msg(err), "magic"), "bad magic accepted");
    hr_err_free(err);
    HR_CHECK(hr_ssd_hash("abc", 3, 0) != hr_ssd_hash("abd", 3, 0) &&
                 hr_ssd_hash("abc", 3, 0) != hr_ssd_hash("abc", 3, 1),
             "hash ignores its input");
}

/* Blocks evicted from a pool are spilled; a new pool restores them with the same bytes,
 * and the part of the prompt past them is not invented. */
static void test_spill_and_restore(void) {
    const char *dir = fresh_dir("spill");
    int32_t toks[4 * BS];
    prompt(toks, 4 * BS, 2);
    hr_kv_pool p;
    hr_ssd_tier *t;
    HR_CHECK_OK(open_tier(dir, &p, 4, FP, 1, 0, &t));
    cache_prefix(&p, toks, 3, 40);
    hr_kv_seq s = {0};
    HR_CHECK_OK(hr_kv_seq_reserve(&p, &s, 4 * BS)); /* evicts all three */
    hr_kv_seq_release(&p, &s);
    close_tier(t, &p); /* waits for the writer */
    HR_CHECK(count_files(dir, ".hkv") == 3, "%d files after 3 evictions", count_files(dir, ".hkv"));
    int same;
    hr_ssd_stats st;
    int got = restore_prefix(dir, toks, FP, 1, 40, &same, &st);
    HR_CHECK(got == 3 && same, "restored %d blocks, bytes %s", got, same ? "same" : "differ");
    HR_CHECK(st.restores == 3 && st.hits == 1 && st.entries == 3 && st.last_restore_ms == 1.5,
             "stats: %ld restores %ld hits %ld entries", st.restores, st.hits, st.entries);
    int32_t other[4 * BS];
    memcpy(other, toks, sizeof other);
    other[BS + 2]++; /* block 1 differs: only block 0 matches */
    got = restore_prefix(dir, other, FP, 1, 40, &same, &st);
    HR_CHECK(got == 1 && same, "a prompt differing in block 1 restored %d", got);
}

/* The scan deletes what is damaged and keeps what belongs to another model. */
static void test_scan_faults(void) {
    const char *dir = fresh_dir("scan");
    int32_t toks[4 * BS], other[4 * BS];
    prompt(toks, 4 * BS, 3);
    prompt(other, 4 * BS, 4);
    size_t size = write_prefix(dir, toks, FP + 1, 10); /* another model's */
    HR_CHECK(size > 0 && size % HR_SSD_ALIGN == 0, "file size %zu", size);
    char src[768], path[768];
    HR_CHECK(first_file(dir, src, sizeof src), "no file written");
    const char *bad[] = {"00000000000000a1.hkv", "00000000000000a2.hkv", "00000000000000a3.hkv"};
    char cmd[4096];
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && head -c 5000 '%s' > %s && cp '%s' %s && printf 'x' | dd of=%s bs=1 seek=70 "
        "conv=notrunc 2>/dev/null && head -c 8192 /dev/urandom > %s && "
        "cp '%s' 00000000000000b1.hkv.tmp.999999999 && echo hi > README",
        dir, src, bad[0], src, bad[1], bad[1], bad[2], src);
    HR_CHECK(system(cmd) == 0, "cannot make the damaged files");
    hr_kv_pool p;
    hr_ssd_tier *t;
    HR_CHECK_OK(open_tier(dir, &p, 8, FP, 0, 0, &t));
    hr_ssd_stats st;
    hr_ssd_tier_stats(t, &st);
    close_tier(t, &p);
    HR_CHECK(st.removed == 3 && st.entries == 0 && st.bytes == 3 * size,
             "scan: %ld removed, %ld entries, %zu bytes", st.removed, st.entries, st.bytes);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, bad[i]);
        HR_CHECK(access(path, F_OK) != 0, "%s was kept", bad[i]);
    }
    snprintf(path, sizeof path, "%s/00000000000000b1.hkv.tmp.999999999", dir);
    HR_CHECK(access(path, F_OK) != 0, "a stale temporary file was kept");
    snprintf(path, sizeof path, "%s/README", dir);
    HR_CHECK(access(path, F_OK) == 0, "a file that is not the tier's was deleted");
    HR_CHECK(count_files(dir, ".hkv") == 3, "another model's files: %d left",
             count_files(dir, ".hkv"));
    int same;
    int got = restore_prefix(dir, toks, FP, 0, 10, &same, &st);
    HR_CHECK(got == 0 && st.restores == 0, "another model's blocks were used (%d)", got);
    got = restore_prefix(dir, toks, FP + 1, 0, 10, &same, &st);
    HR_CHECK(got == 3 && same, "its own model restored %d", got);
}

/* A flipped byte in a tensor: --ssd-cache-verify refuses (and deletes) the file. */
static void test_verify_catches_flip(void) {
    const char *dir = fresh_dir("verify");
    int32_t toks[4 * BS];
    prompt(toks, 4 * BS, 5);
    size_t size = write_prefix(dir, toks, FP, 20);
    HR_CHECK(size > 2 * HR_SSD_ALIGN, "file size %zu", size);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && for f in *.hkv; do printf '\\377' | dd of=$f bs=1 seek=%d conv=notrunc "
             "2>/dev/null; done",
             dir, HR_SSD_ALIGN + 5);
    HR_CHECK(system(cmd) == 0, "cannot flip");
    int same;
    hr_ssd_stats st;
    int got = restore_prefix(dir, toks, FP, 1, 20, &same, &st);
    HR_CHECK(got == 0 && st.removed >= 1, "verify restored %d blocks of flipped files", got);
    HR_CHECK(count_files(dir, ".hkv") == 2, "%d files after the first was refused",
             count_files(dir, ".hkv"));
}

/* 20 distinct blocks through a cap of 3 files: never more than the cap on disk. */
static void test_cap_under_churn(void) {
    size_t size = one_file_bytes();
    HR_CHECK(size > 0, "no file");
    const char *dir = fresh_dir("cap");
    hr_kv_pool p;
    hr_ssd_tier *t;
    hr_ssd_stats st;
    HR_CHECK_OK(open_tier(dir, &p, 2, FP, 0, 3 * size, &t));
    for (int i = 0; i < 20; i++)
        HR_CHECK_OK(cache_and_evict(&p, 100 + i));
    hr_ssd_tier_flush(t, &p);
    close_tier(t, &p);
    int n = count_files(dir, ".hkv");
    HR_CHECK(n >= 1 && n <= 3, "%d files under a cap of 3", n);
    HR_CHECK_OK(open_tier(dir, &p, 2, FP, 0, 3 * size, &t));
    hr_ssd_tier_stats(t, &st);
    close_tier(t, &p);
    HR_CHECK(st.bytes <= 3 * size && st.entries == n, "reopened: %zu bytes, %ld entries", st.bytes,
             st.entries);
}

/* A queue of one file's bytes: every spill is either written or counted as dropped. */
static void test_queue_bound(void) {
    size_t size = one_file_bytes();
    HR_CHECK(size > 0, "no file");
    const char *dir = fresh_dir("queue");
    hr_kv_pool p;
    HR_CHECK_OK(hr_kv_pool_create(&p, tiny, 2, BS));
    hr_kv_pool_enable_cache(&p, FP);
    hr_ssd_tier *t;
    hr_ssd_options o = {
        .dir = dir, .max_bytes = (size_t)1 << 30, .queue_bytes = 1, .fingerprint = FP};
    HR_CHECK_OK(hr_ssd_tier_open(&o, &p, &t));
    for (int i = 0; i < 12; i++) {
        HR_CHECK_OK(cache_and_evict(&p, 200 + i));
        hr_ssd_stats st;
        hr_ssd_tier_stats(t, &st);
        HR_CHECK(st.queued_bytes <= 2 * size, "queue holds %zu bytes (files of %zu)",
                 st.queued_bytes, size);
    }
    hr_ssd_stats mid;
    hr_ssd_tier_stats(t, &mid);
    long dropped = mid.dropped;
    hr_ssd_tier_close(t, &p);
    hr_ssd_tier *t2;
    hr_kv_pool p2;
    HR_CHECK_OK(open_tier(dir, &p2, 2, FP, 0, 0, &t2));
    hr_ssd_stats st;
    hr_ssd_tier_stats(t2, &st);
    close_tier(t2, &p2);
    hr_kv_pool_destroy(&p);
    HR_CHECK(st.entries >= 1 && st.entries <= 12, "%ld files written of 12", st.entries);
    HR_CHECK(st.entries + dropped == 12, "%ld written + %ld dropped of 12", st.entries, dropped);
}

/* The directory turns into a plain file: the first write fails, writes stop with one
 * warning, the pool goes on and later spills are not attempted. */
static void test_write_failure_degrades(void) {
    const char *dir = fresh_dir("readonly");
    hr_kv_pool p;
    hr_ssd_tier *t;
    HR_CHECK_OK(open_tier(dir, &p, 2, FP, 0, 0, &t));
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && echo not-a-dir > '%s'", dir, dir);
    HR_CHECK(system(cmd) == 0, "cannot replace the directory");
    for (int i = 0; i < 4; i++)
        HR_CHECK_OK(cache_and_evict(&p, 300 + i));
    hr_ssd_tier_flush(t, &p);
    hr_ssd_tier_drain(t);
    hr_ssd_stats st;
    hr_ssd_tier_stats(t, &st);
    close_tier(t, &p);
    HR_CHECK(st.writes_off == 1 && st.spills == 0 && st.dropped >= 1,
             "writes_off %d, %ld spills, %ld dropped", st.writes_off, st.spills, st.dropped);
    hr_ssd_options o = {.dir = dir, .max_bytes = 1 << 30, .fingerprint = FP};
    HR_CHECK_OK(hr_kv_pool_create(&p, tiny, 2, BS));
    hr_err *err = hr_ssd_tier_open(&o, &p, &t);
    hr_kv_pool_destroy(&p);
    HR_CHECK(err && strstr(hr_err_msg(err), "not a directory"), "a file as the directory: %s",
             err ? hr_err_msg(err) : "accepted");
    hr_err_free(err);
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/hearth-test-ssd-%d", (int)getpid());
    hr_err *err = hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 1}, &be);
    if (!err) err = hr_model_load(hr_fixture("models/tiny-llama"), be, &tiny);
    if (err) {
        printf("FAIL setup: %s\n", hr_err_msg(err));
        hr_err_free(err);
        return 1;
    }
    HR_RUN(test_format_round_trip);
    HR_RUN(test_spill_and_restore);
    HR_RUN(test_scan_faults);
    HR_RUN(test_verify_catches_flip);
    HR_RUN(test_cap_under_churn);
    HR_RUN(test_queue_bound);
    HR_RUN(test_write_failure_degrades);
    hr_model_free(tiny);
    hr_backend_destroy(be);
    hr_test_remove_tree(root);
    return hr_test_summary();
}
