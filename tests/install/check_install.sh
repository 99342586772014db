#!/usr/bin/env bash
# Installs qinfer into a temporary prefix, builds the examples from scratch against it — with
# find_package(qinfer) (shared and static) and with pkg-config (C++ and C99) — and checks
# that each prints exactly the continuation `run --temp 0` prints.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=$src/tests/data/models/stories260K.gguf
prompt="Once upon a time"
n=40

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
expected=$("$build/bin/run" -m "$model" -p "$prompt" -n $n --temp 0 2>/dev/null)
expected=${expected#"$prompt"}
failures=0 passes=0
check() {  # name, binary
  local got
  got=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$2" "$model" "$prompt" $n)
  if [ "$got" == "$expected" ]; then
    echo "ok   $1"; passes=$((passes + 1))
  else
    echo "FAIL $1: got '$got' expected '$expected'"; failures=$((failures + 1))
  fi
}

# 1. CMake consumer, find_package(qinfer).
mkdir -p "$tmp/consumer"
cp "$src/examples/simple.cpp" "$src/examples/simple.c" "$tmp/consumer/"
cat > "$tmp/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer C CXX)
# No CMAKE_CXX_STANDARD: the qinfer targets carry their C++20 requirement.
find_package(qinfer 0.1 REQUIRED)
add_executable(simple simple.cpp)
target_link_libraries(simple PRIVATE qinfer::qinfer)
add_executable(simple_static simple.cpp)
target_link_libraries(simple_static PRIVATE qinfer::qinfer_static)
add_executable(simple_c simple.c)
set_target_properties(simple_c PROPERTIES C_STANDARD 99 C_EXTENSIONS OFF)
target_link_libraries(simple_c PRIVATE qinfer::qinfer)
CMAKE
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer/build" -j2 >/dev/null
check "find_package: C++ (shared)" "$tmp/consumer/build/simple"
check "find_package: C++ (static)" "$tmp/consumer/build/simple_static"
check "find_package: C" "$tmp/consumer/build/simple_c"

# 2. pkg-config, the header compiled as strict C99.
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
g++ -std=c++20 "$src/examples/simple.cpp" $(pkg-config --cflags --libs qinfer) -o "$tmp/simple_pc"
gcc -std=c99 -pedantic -Wall -Werror "$src/examples/simple.c" $(pkg-config --cflags --libs qinfer) -o "$tmp/simple_pc_c"
check "pkg-config: C++" "$tmp/simple_pc"
# pkg-config --static: the static library and its private dependencies, fully static.
g++ -std=c++20 "$src/examples/simple.cpp" -static $(pkg-config --static --cflags --libs qinfer) -o "$tmp/simple_pc_static" 2>/dev/null
check "pkg-config --static: a static executable" "$tmp/simple_pc_static"
if [[ "$(ldd "$tmp/simple_pc_static" 2>&1 || true)" == *"not a dynamic executable"* ]]; then
  echo "ok   pkg-config --static: no shared libraries"; passes=$((passes + 1))
else
  echo "FAIL pkg-config --static: still dynamic"; failures=$((failures + 1))
fi
# The installed tools run from the prefix with no library path set.
if env -u LD_LIBRARY_PATH "$tmp/prefix/bin/run" --version | grep -q '^qinfer '; then
  echo "ok   installed tools run without LD_LIBRARY_PATH"; passes=$((passes + 1))
else
  echo "FAIL installed tools do not run"; failures=$((failures + 1))
fi
check "pkg-config: C99" "$tmp/simple_pc_c"
[ "$(pkg-config --modversion qinfer)" == "$(LD_LIBRARY_PATH=$tmp/prefix/lib "$build/bin/run" --help >/dev/null 2>&1; grep -oP 'project\(qinfer VERSION \K[0-9.]+' "$src/CMakeLists.txt")" ] \
  && { echo "ok   pkg-config version"; passes=$((passes + 1)); } || { echo "FAIL pkg-config version"; failures=$((failures + 1)); }
echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
