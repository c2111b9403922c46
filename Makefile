# The front door. `make run` and `make test` work on a fresh Debian 12 machine:
# both install what is missing (scripts/setup.sh), then build.

.PHONY: all setup build debug run dist test test-unit test-integration fuzz bench bench-full format clean

all: build

setup:
	@scripts/setup.sh

build: setup
	@[ -f build/build.ninja ] || cmake --preset release >/dev/null
	@cmake --build build

debug: setup
	@[ -f build-debug/build.ninja ] || cmake --preset debug >/dev/null
	@cmake --build build-debug

# The release archive build/sightline-<version>-linux-<arch>.tar.gz: builds
# only the binary (and its example config) in build/, not the tests.
dist: setup
	@[ -f build/build.ninja ] || cmake --preset release >/dev/null
	@cmake --build build --target dist

run: build
	./build/sightline serve $(ARGS)

test: setup
	@scripts/test.sh

test-unit: build
	@cd build && ctest --output-on-failure

test-integration: build
	@test/integration/run.sh

fuzz: setup
	@scripts/fuzz.sh $(FUZZ_SECONDS)

bench: build
	@scripts/bench.sh quick

bench-full: build
	@scripts/bench.sh full

format:
	@find src bench fuzz \( -name '*.h' -o -name '*.cc' \) -print0 | xargs -0 clang-format -i

clean:
	rm -rf build build-debug build-fuzz build-tsan
