# Top-level entry points; the README's first lines are `make run` and `make test`.
MODEL ?= ../shared/fixtures/models/brown-llama-8m
JOBS  ?= $(shell nproc)
BUILD ?= build
PORT  ?= 8080

.PHONY: all build run test test-asan test-tsan fuzz bench clean deps test-agents

all: build

deps:
	@bash scripts/setup-deps.sh

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: $(BUILD)/Makefile
	@cmake --build $(BUILD) -j$(JOBS)

run: deps build
	./$(BUILD)/hearth serve --model $(MODEL) --port $(PORT)

test: deps build
	@bash tests/run.sh $(BUILD)

# opt-in, not in CI: real agent CLIs (pinned, from npm) against hearth serve
test-agents: build
	@HEARTH_BIN=$(BUILD)/hearth bash tests/agents/run.sh

build-asan/Makefile: CMakeLists.txt
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_SANITIZE=ON >/dev/null

test-asan: deps build-asan/Makefile
	@cmake --build build-asan -j$(JOBS)
	@HEARTH_ASAN=1 bash tests/run.sh build-asan

build-tsan/Makefile: CMakeLists.txt
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_SANITIZE=thread -DHEARTH_CUDA=OFF >/dev/null

# ThreadSanitizer over the multi-threaded tests (tests/run_tsan.sh lists them; CI's stage)
TSAN_TARGETS = hearth_bin test_base test_matmul_threads test_engine test_engine_grammar \
	test_grammar_mask test_grammar_mask_cache test_grammar_dfa_cache test_server_http test_upstream
test-tsan: deps build-tsan/Makefile
	@cmake --build build-tsan -j$(JOBS) --target $(TSAN_TARGETS)
	@bash tests/run_tsan.sh build-tsan

build-fuzz/Makefile: CMakeLists.txt
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_FUZZ=ON >/dev/null

fuzz: deps build-fuzz/Makefile
	@cmake --build build-fuzz -j$(JOBS)
	@bash tests/fuzz/run.sh build-fuzz

bench: build
	@ls $(BUILD)/bench

clean:
	rm -rf build build-asan build-tsan build-fuzz
