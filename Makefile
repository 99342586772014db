# Thin wrapper over the CMake presets: on a fresh Debian 12 machine `make demo` and
# `make test` install what is missing, configure, build and run.
PRESET ?= release
BIN := build/$(PRESET)/bin
MODEL ?= tests/data/models/stories260K.gguf
PROMPT ?= Once upon a time

DEB_PACKAGES := cmake g++ make pkg-config libxsimd-dev libgtest-dev libgmock-dev \
  libbenchmark-dev libsentencepiece-dev sentencepiece nlohmann-json3-dev libcli11-dev
CROSS_PACKAGES := g++-aarch64-linux-gnu qemu-user
FUZZ_PACKAGES := clang libclang-rt-14-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build test demo asan asan-test cross-test fuzz bench clean

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

asan:
	$(MAKE) build PRESET=asan

# Loader and kernel suites under Address + UndefinedBehavior sanitizers.
asan-test: asan
	ctest --preset asan -R "Malformed|RealFile|Gguf|Golden|Activation"

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

bench: build
	$(BIN)/bench_kernels

clean:
	rm -rf build
