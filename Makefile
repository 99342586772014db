# Thin wrapper over the CMake presets: on a fresh Debian 12 machine `make demo` and
# `make test` install what is missing, configure, build and run.
PRESET ?= release
BIN := build/$(PRESET)/bin
MODEL ?= tests/data/models/stories260K.gguf
PROMPT ?= Once upon a time

DEB_PACKAGES := cmake g++ make pkg-config libxsimd-dev libgtest-dev libgmock-dev \
  libbenchmark-dev libsentencepiece-dev sentencepiece nlohmann-json3-dev libcli11-dev libcpp-httplib-dev python3 python3-matplotlib
CROSS_PACKAGES := g++-aarch64-linux-gnu qemu-user
FUZZ_PACKAGES := clang libclang-rt-14-dev
TSAN_PACKAGES := clang libclang-rt-14-dev libomp-14-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build test demo report asan asan-test tsan-test werror format-check format cross-test fuzz fuzz-smoke bench clean

deps:
	@missing=$$(for p in $(DEB_PACKAGES) $(EXTRA_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET)

test: build
	ctest --preset $(PRESET)

demo: build
	$(BIN)/run -m $(MODEL) -p "$(PROMPT)" -n 200 --temp 0

# The quant report on the bundled 4-layer model (already Q4_K_S, so requantized: a demo of the
# tool; point it at an F16/F32 model for real numbers): build/report/report.md and report.png.
report: build
	$(BIN)/qinfer-quant-report -m tests/data/models/wp-llama-Q4_K_S.gguf --allow-requantize \
	  --types Q2_K,Q3_K_M,IQ4_XS,Q4_0,Q4_K_M,Q5_K_M,Q6_K,Q8_0 -f tests/data/models/reference/heldout.txt \
	  -c 128 -p 128 -n 32 -r 3 -o build/report

asan:
	$(MAKE) build PRESET=asan

# Every suite under Address + UndefinedBehavior sanitizers, with OpenMP on (the perplexity
# sweep, which runs the same code as the reference tests over 44 files, only in `test`).
asan-test: asan
	ctest --preset asan -E "perplexity_vs_llama_cpp|install_and_consume"

# The API's multi-session tests and generation on an OpenMP team of two under
# ThreadSanitizer: clang with LLVM's OpenMP runtime and its Archer tool, which tells TSan
# about OpenMP's synchronisation. TSAN_OPTIONS (in CMakePresets.json) has
# ignore_noninstrumented_modules=1, as Archer's README asks: libomp's and libcpp-httplib's own
# hand-offs are not instrumented and were reported, now and then, as races inside them.
tsan-test:
	$(MAKE) deps EXTRA_PACKAGES="$(TSAN_PACKAGES)"
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan
	ctest --preset tsan

# The release build with warnings as errors.
werror:
	cmake --preset werror >/dev/null
	cmake --build --preset werror

# Layout by the checked-in .clang-format (generated tables excluded).
FORMAT_FILES = $(shell git ls-files '*.cpp' '*.hpp' '*.h' '*.c' '*.inl' | grep -v -e unicode_tables.cpp -e iq_tables.cpp)
format-check:
	clang-format --dry-run -Werror $(FORMAT_FILES)
format:
	clang-format -i $(FORMAT_FILES)

# NEON kernels: cross-compiled for aarch64 and run under qemu.
cross-test:
	$(MAKE) deps EXTRA_PACKAGES="$(CROSS_PACKAGES)"
	cmake --preset cross-aarch64 >/dev/null
	cmake --build --preset cross-aarch64
	ctest --preset cross-aarch64

fuzz:
	$(MAKE) deps EXTRA_PACKAGES="$(FUZZ_PACKAGES)"
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz

# Every fuzz target for FUZZ_SECONDS each, seeded with tests/fuzz/corpus (and the vendored
# GGUF files for the format fuzzer); a crash or sanitizer report fails.
FUZZ_SECONDS ?= 60
fuzz-smoke: fuzz
	rm -rf build/fuzz/corpus && mkdir -p build/fuzz/corpus
	for t in gguf model tokenizer; do \
	  mkdir -p build/fuzz/corpus/$$t && cp tests/fuzz/corpus/$$t/* build/fuzz/corpus/$$t/ && \
	  build/fuzz/bin/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=30 -rss_limit_mb=4096 \
	    -print_final_stats=1 build/fuzz/corpus/$$t > build/fuzz/$$t.log 2>&1; rc=$$?; \
	  tail -14 build/fuzz/$$t.log; [ $$rc -eq 0 ] || exit 1; \
	done

bench: build
	$(BIN)/bench_kernels

clean:
	rm -rf build
