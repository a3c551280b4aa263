/* The MoE and hybrid families beyond the golden logits: config parsing (routed layers,
 * layer kinds, defaults, unsupported features named in the error), the mkmodel presets, and
 * the recurrent-state slots of forward rows (three sequences stepped together in ragged
 * chunks equal each run alone; bad slots are refused). */
#include "engine/kv_pool.h"
#include "harness.h"
#include "model/mkmodel.h"

static hr_err *parse(const char *json, hr_model_config *c) {
    return hr_config_parse("config.json", json, c);
}

#define BASE_MOE                                                                                   \
    "\"model_type\": \"qwen3_moe\", \"vocab_size\": 64, \"hidden_size\": 16, "                     \
    "\"num_hidden_layers\": 4, "                                                                   \
    "\"num_attention_heads\": 2, \"intermediate_size\": 32, \"moe_intermediate_size\": 8, "        \
    "\"num_experts\": 4, \"num_experts_per_tok\": 2"
#define BASE_NEXT                                                                                  \
    "\"model_type\": \"qwen3_next\", \"vocab_size\": 64, \"hidden_size\": 16, "                    \
    "\"num_hidden_layers\": 8, "                                                                   \
    "\"num_attention_heads\": 2, \"head_dim\": 8, \"intermediate_size\": 32, \"num_experts\": 4, " \
    "\"num_experts_per_tok\": 2, "                                                                 \
    "\"linear_num_key_heads\": 1, \"linear_num_value_heads\": 2, \"linear_key_head_dim\": 8, "     \
    "\"linear_value_head_dim\": 8"

static void test_config(void) {
    hr_model_config c;
    HR_CHECK_OK(parse("{" BASE_MOE ", \"decoder_sparse_step\": 2, \"mlp_only_layers\": [3]}", &c));
    HR_CHECK(c.n_experts == 4 && !c.moe_layer[0] && c.moe_layer[1] && !c.moe_layer[2] &&
                 !c.moe_layer[3],
             "qwen3_moe routed layers wrong");
    HR_CHECK(!c.norm_topk_prob && c.shared_expert_intermediate == 0 && !c.norm_one_plus,
             "qwen3_moe defaults wrong");
    HR_CHECK_OK(parse("{" BASE_MOE ", \"num_local_experts\": 6, \"num_experts\": null}", &c));
    HR_CHECK(c.n_experts == 6, "num_local_experts not read (%d)", c.n_experts);
    HR_CHECK_OK(parse("{" BASE_NEXT "}", &c));
    HR_CHECK(c.layer_kind[0] == HR_LAYER_LINEAR && c.layer_kind[3] == HR_LAYER_FULL &&
                 c.layer_kind[7] == HR_LAYER_FULL,
             "full_attention_interval default wrong");
    HR_CHECK(c.norm_topk_prob && c.norm_one_plus && c.attn_out_gate && c.lin_fused_proj &&
                 c.shared_expert_intermediate == 512,
             "qwen3_next defaults wrong");
    const struct {
        const char *json, *names;
    } bad[] = {
        {"{" BASE_MOE ", \"num_experts_per_tok\": 5}", "num_experts_per_tok"},
        {"{" BASE_MOE ", \"use_sliding_window\": true, \"sliding_window\": 8}",
         "use_sliding_window"},
        {"{" BASE_NEXT ", \"hidden_act\": \"gelu_pytorch_tanh\"}", "hidden_act"},
        {"{" BASE_NEXT ", \"linear_num_key_heads\": 3}", "linear_num_key_heads"},
        {"{" BASE_NEXT ", \"rope_parameters\": {\"rope_type\": \"yarn\"}}", "yarn"},
        {"{" BASE_NEXT
         ", \"num_hidden_layers\": 2, \"layer_types\": [\"linear_attention\", \"mamba\"]}",
         "mamba"},
        {"{\"model_type\": \"qwen3\", \"vocab_size\": 64, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"intermediate_size\": 32, \"layer_types\": "
         "[\"linear_attention\"]}",
         "linear_attention"},
        {"{\"model_type\": \"qwen3_5_moe_text\", \"vocab_size\": 64, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 4, "
         "\"num_attention_heads\": 2, \"num_experts\": 0}",
         "intermediate_size"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hr_err *err = parse(bad[i].json, &c);
        HR_CHECK(err && strstr(hr_err_msg(err), bad[i].names), "bad config %zu: %s", i,
                 err ? hr_err_msg(err) : "accepted");
        hr_err_free(err);
    }
}

static void test_presets(void) {
    hr_model_config c;
    HR_CHECK_OK(parse(hr_mkmodel_preset("qwen3-30b-a3b"), &c));
    HR_CHECK(c.n_experts == 128 && c.n_experts_per_tok == 8 && c.moe_layer[47] && c.norm_topk_prob,
             "qwen3-30b-a3b");
    HR_CHECK_OK(parse(hr_mkmodel_preset("qwen3.5-4b"), &c));
    HR_CHECK(c.n_experts == 0 && c.layer_kind[2] == HR_LAYER_LINEAR &&
                 c.layer_kind[3] == HR_LAYER_FULL && c.lin_v_heads == 32 && !c.lin_fused_proj &&
                 c.rope.partial_rotary == 0.25,
             "qwen3.5-4b");
}

/* All 6 slots can be taken once; a released slot comes back with its position reset. */
static void check_slot_allocator(hr_kv_pool *pool) {
    int got[7], n = 0;
    while (n < 7 && !hr_t_cur_failed) {
        hr_err *err = hr_kv_state_acquire(pool, &got[n]);
        if (err) {
            HR_CHECK(n == 6 && strstr(hr_err_msg(err), "taken"), "slot %d: %s", n, hr_err_msg(err));
            hr_err_free(err);
            break;
        }
        for (int i = 0; i < n; i++)
            HR_CHECK(got[i] != got[n], "slot %d handed out twice", got[n]);
        HR_CHECK(pool->store.state_pos[got[n]] == 0, "acquired slot %d is not at position 0",
                 got[n]);
        n++;
    }
    HR_CHECK(n == 6, "acquired %d of 6 slots", n);
    hr_kv_state_release(pool, got[2]);
    int again;
    HR_CHECK_OK(hr_kv_state_acquire(pool, &again));
    HR_CHECK(again == got[2], "released slot not reused");
    for (int i = 0; i < n; i++)
        hr_kv_state_release(pool, got[i]);
}

/* Runs rows of three sequences in one pool, each fed in its own chunk pattern, and compares
 * every position's logits with the sequence run alone in one chunk. */
static void check_slots(const char *name) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s%s", hr_fixture("models/"), name);
    hr_backend *be;
    hr_model *m;
    HR_CHECK_OK(hr_backend_cpu_create(&(hr_cpu_options){.n_threads = 2}, &be));
    HR_CHECK_OK(hr_model_load(dir, be, &m));
    int V = hr_model_cfg(m)->vocab, n = 20;
    int32_t tok[3][20];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < n; i++)
            tok[s][i] = (i * (31 + 10 * s) + 7 * s + 1) % V;
    float *alone = malloc(sizeof(float) * 3 * n * V), *got = malloc(sizeof(float) * 3 * n * V);
    float *out = malloc(sizeof(float) * 3 * n * V);
    hr_kv_pool pool;
    HR_CHECK_OK(hr_kv_pool_create_slots(&pool, m, 24, 4, 6, 0));
    hr_kv_seq seq[3] = {{0}};
    for (int s = 0; s < 3; s++) {
        HR_CHECK_OK(hr_kv_seq_reserve(&pool, &seq[s], n));
        hr_row r = {tok[s], n, 0, seq[s].blocks, HR_LOGITS_ALL, 5 - s};
        HR_CHECK_OK(hr_model_forward(m, &pool.store, &r, 1, alone + (size_t)s * n * V));
    }
    /* ragged steps: sequence s advances by chunk[s][step] tokens (0 = sits out) */
    int chunk[3][6] = {{1, 1, 5, 13, 0, 0}, {7, 0, 1, 1, 1, 10}, {3, 3, 3, 3, 3, 5}}, pos[3] = {0};
    for (int step = 0; step < 6 && !hr_t_cur_failed; step++) {
        hr_row rows[3];
        int nr = 0;
        for (int s = 0; s < 3; s++)
            if (chunk[s][step] > 0)
                rows[nr++] = (hr_row){tok[s] + pos[s], chunk[s][step], pos[s],
                                      seq[s].blocks,   HR_LOGITS_ALL,  s};
        HR_CHECK_OK(hr_model_forward(m, &pool.store, rows, nr, out));
        for (int s = 0, o = 0; s < 3; s++)
            if (chunk[s][step] > 0) {
                memcpy(got + ((size_t)s * n + pos[s]) * V, out + (size_t)o * V,
                       sizeof(float) * chunk[s][step] * V);
                o += chunk[s][step];
                pos[s] += chunk[s][step];
            }
    }
    float d = 0;
    for (size_t i = 0; i < (size_t)3 * n * V; i++)
        d = fmaxf(d, fabsf(got[i] - alone[i]));
    HR_CHECK(d < 1e-4f, "%s: ragged batched rows differ from each sequence alone by %g", name, d);
    hr_row dup[2] = {{tok[0], 1, 0, seq[0].blocks, HR_LOGITS_NONE, 1},
                     {tok[1], 1, 0, seq[1].blocks, HR_LOGITS_NONE, 1}};
    int hybrid = pool.store.n_state_slots > 0; /* qwen3_moe has no recurrent state */
    hr_err *err = NULL;
    if (hybrid) err = hr_model_forward(m, &pool.store, dup, 2, NULL);
    HR_CHECK(!hybrid || (err && strstr(hr_err_msg(err), "share state slot")),
             "shared slot accepted");
    hr_err_free(err);
    hr_row skip = {tok[0] + 5,     1, 5, seq[0].blocks,
                   HR_LOGITS_NONE, 0}; /* slot 0 holds 20 positions */
    err = hybrid ? hr_model_forward(m, &pool.store, &skip, 1, NULL) : NULL;
    HR_CHECK(!hybrid || (err && strstr(hr_err_msg(err), "cannot rewind")),
             "rewinding a state accepted");
    hr_err_free(err);
    dup[0].state_slot = pool.store.n_state_slots;
    err = hybrid ? hr_model_forward(m, &pool.store, dup, 1, NULL) : NULL;
    HR_CHECK(!hybrid || (err && strstr(hr_err_msg(err), "out of range")),
             "slot out of range accepted");
    hr_err_free(err);
    if (hybrid) check_slot_allocator(&pool);
    for (int s = 0; s < 3; s++)
        hr_kv_seq_release(&pool, &seq[s]);
    hr_kv_pool_destroy(&pool);
    free(alone);
    free(got);
    free(out);
    hr_model_free(m);
    hr_backend_destroy(be);
}

static void test_state_slots(void) {
    check_slots("tiny-qwen3_next");
    check_slots("tiny-qwen3_5");
    check_slots("tiny-qwen3_5_moe");
    check_slots("tiny-qwen3_moe");
}

int main(void) {
    HR_RUN(test_config);
    HR_RUN(test_presets);
    HR_RUN(test_state_slots);
    return hr_test_summary();
}
