# Thin wrapper over CMake; the README's two commands are `make demo` and `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all deps configure build test demo fuzz-smoke clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory fuzz-smoke

demo: deps build
	@scripts/demo.sh $(BUILD)

# The libFuzzer targets (clang + ASan/UBSan), each run briefly on its seed corpus.
fuzz-smoke: deps
	@scripts/fuzz-smoke.sh

# Only CMake build folders are removed (BUILD may name any folder).
clean:
	@for d in "$(BUILD)" build-fuzz; do \
	  if [ -e "$$d" ] && [ ! -f "$$d/CMakeCache.txt" ]; then echo "clean: $$d is not a CMake build folder; left alone" >&2; \
	  else rm -rf "$$d"; fi; \
	done
