/* CUDA graphs for decode steps. A step of one token per row issues ~10 kernels per layer;
 * launched one by one, their launch cost (a few microseconds each) exceeds their run time on
 * small models and leaves the GPU idle between them. Steps with the same shape (rows, the
 * block-table width, the context bucket, the head and its logit rows, all in the key; the
 * step's data, sampling parameters included, lives in device metadata the kernels read) issue
 * the same ops with the same arguments, so: the first step of a key runs eagerly (buffers grow, ops
 * that need the host show themselves), the second is captured into a graph, and later ones skip
 * their ops and launch the graph after the last. Any device allocation or free moves the epoch and
 * retires every graph. MoE steps read the routing back to the host mid-step and never use graphs.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"

static int same_key(const hr_cu_graph_key *a, const hr_cu_graph_key *b) {
    return a->n_tokens == b->n_tokens && a->n_rows == b->n_rows && a->max_blocks == b->max_blocks &&
           a->max_len == b->max_len && a->head == b->head && a->n_logit_rows == b->n_logit_rows &&
           a->epoch == b->epoch;
}

static void drop(hr_cu_graph *g) {
    if (g->exec) cudaGraphExecDestroy(g->exec);
    memset(g, 0, sizeof *g);
}

void hr_cu_graph_reset(hr_cuda_backend *cb) {
    for (int i = 0; i < HR_CU_GRAPHS; i++)
        drop(&cb->graphs[i]);
    cb->graph_cur = NULL;
    cb->graph_mode = HR_CU_EAGER;
}

/* The entry for key, or a fresh one (the least recently used) marked seen. */
static hr_cu_graph *lookup(hr_cuda_backend *cb, const hr_cu_graph_key *key, int *found) {
    hr_cu_graph *lru = &cb->graphs[0];
    for (int i = 0; i < HR_CU_GRAPHS; i++) {
        hr_cu_graph *g = &cb->graphs[i];
        if (g->valid && same_key(&g->key, key)) {
            *found = 1;
            return g;
        }
        if (!g->valid || g->used < lru->used) lru = g;
    }
    *found = 0;
    drop(lru);
    lru->key = *key;
    lru->valid = 1;
    return lru;
}

void hr_cu_graph_begin(hr_cuda_backend *cb, int decode_like) {
    cb->graph_ops = 0;
    cb->graph_mode = HR_CU_EAGER;
    cb->graph_cur = NULL;
    if (cb->graphs_off || !decode_like) return;
    hr_cu_graph_key key = {cb->meta.n_tokens, cb->meta.n_rows, cb->meta.max_blocks,
                           cb->meta.max_len,  cb->head,        cb->n_logit_rows,
                           cb->epoch};
    int found;
    hr_cu_graph *g = lookup(cb, &key, &found);
    g->used = ++cb->tick;
    cb->graph_cur = g;
    if (found && g->exec) {
        cb->graph_mode = HR_CU_REPLAY;
    } else if (found) {
        if (cudaStreamBeginCapture(cb->stream, cudaStreamCaptureModeRelaxed) == cudaSuccess) {
            cb->graph_mode = HR_CU_CAPTURE;
            cb->capture_epoch = cb->epoch;
        } else {
            cudaGetLastError();
            cb->graphs_off = 1;
        }
    }
}

int hr_cu_graph_op(hr_cuda_backend *cb) {
    cb->graph_ops++;
    if (cb->graph_mode != HR_CU_REPLAY) return 0;
    if (cb->graph_ops == cb->graph_cur->n_ops) {
        cb->graph_mode = HR_CU_EAGER;
        hr_cu_fail(cb,
                   hr_cu_check(cudaGraphLaunch(cb->graph_cur->exec, cb->stream), "graph launch"));
    }
    return 1;
}

/* Ends the capture and launches what it recorded; keeps the graph unless memory moved during
 * the capture. */
static hr_err *end_capture(hr_cuda_backend *cb) {
    hr_cu_graph *g = cb->graph_cur;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cb->graph_mode = HR_CU_EAGER;
    hr_err *err = hr_cu_check(cudaStreamEndCapture(cb->stream, &graph), "capturing a decode step");
    if (!err)
        err = hr_cu_check(cudaGraphInstantiate(&exec, graph, 0), "instantiating a decode step");
    if (graph) cudaGraphDestroy(graph);
    if (!err) err = hr_cu_check(cudaGraphLaunch(exec, cb->stream), "graph launch");
    if (err) {
        cb->graphs_off = 1; /* the step's work is lost: fail it, run later steps eagerly */
        if (exec) cudaGraphExecDestroy(exec);
        drop(g);
        return err;
    }
    if (cb->epoch != cb->capture_epoch) {
        cudaGraphExecDestroy(exec);
        drop(g);
    } else {
        g->exec = exec;
        g->n_ops = cb->graph_ops;
    }
    return NULL;
}

hr_err *hr_cu_graph_end(hr_cuda_backend *cb) {
    if (cb->graph_mode == HR_CU_CAPTURE) return end_capture(cb);
    if (cb->graph_mode == HR_CU_REPLAY) { /* fewer ops than captured: the shapes lied */
        cb->graph_mode = HR_CU_EAGER;
        cb->graphs_off = 1;
        return hr_errf("cuda: a decode step issued %ld ops, its graph holds %ld (graphs now off)",
                       cb->graph_ops, cb->graph_cur->n_ops);
    }
    return NULL;
}
