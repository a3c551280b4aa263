#!/usr/bin/env bash
# make test-tsan: the multi-threaded tests on a ThreadSanitizer build (BUILD, default
# build-tsan): the engine's scheduler and its thread pool, the pooled matmul, the grammar mask
# worker, the process-wide DFA and mask caches, the HTTP server on the fake engine, the
# --isolate supervisor and proxy (upstream parsing, then the whole parent and child). A race
# report fails the test: TSan exits 66 at the end of a process that had one, and the CLI
# checks look for its reports in the logs.
# Ends with tests/run.sh's "N passed, N failed".
set -uo pipefail
BUILD=${1:-build-tsan}
# halt_on_error=0: every report of a run is printed; second_deadlock_stack: both stacks
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1}"
export HEARTH_TSAN=1 # looser memory bounds where TSan's shadow memory counts
export HEARTH_ONLY="test_base test_matmul_threads test_engine test_engine_grammar test_grammar_mask test_grammar_mask_cache test_grammar_dfa_cache test_server_http test_upstream test_isolate"
# CI's stage (.ci/run) leaves out the single-threaded checks that TSan slows most and that
# other cases already run through the same threads: the engine's seeded and bf16 batch
# invariance and preemption (test_stress preempts, cancels and batches under the scheduler),
# the grammar mask's random walks and JSON feed against the reference and the DFA cache's
# every-fixture comparison, the mask cache's single-threaded cases (the shared-grammar
# threads, the evicting compile threads and the mask cache's evicting threads stay).
# HEARTH_TSAN_FULL=1 runs everything (before a threading change).
if [ "${HEARTH_TSAN_FULL:-0}" != 1 ]; then
  export HEARTH_TEST_SKIP="test_engine:test_seeded_batch_invariance test_engine:test_bf16_batch_invariance
    test_engine:test_preemption test_grammar_mask:test_walk_json test_grammar_mask:test_walk_arithmetic
    test_grammar_mask:test_walk_list test_grammar_mask:test_walk_regex test_grammar_mask:test_walk_odd_vocab
    test_grammar_mask:test_feed_json
    test_grammar_dfa_cache:test_fixtures_same test_grammar_mask_cache:test_shared_between_grammars
    test_grammar_mask_cache:test_key_entries test_grammar_mask_cache:test_vocab_freed"
fi
exec bash "$(dirname "$0")/run.sh" "$BUILD"
