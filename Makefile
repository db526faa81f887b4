# The two entry points of README.md: `make run` and `make test`.
# Both install what is missing from Debian first, so a fresh Debian 12 or 13
# machine needs nothing else; `make test` also builds the test venv (.venv)
# from the exact pins of tests/requirements.txt.

BUILD ?= build
SANITIZE_BUILD ?= build-asan
CLANG_BUILD ?= build-clang
FUZZ_BUILD ?= build-fuzz
# Seconds per harness for `make fuzz`.
FUZZ_SECONDS ?= 300
SAMPLE ?= data/samples/tiny-cnn.onnx
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# What building and running needs.
BUILD_PACKAGES := build-essential meson ninja-build pkg-config \
	libglib2.0-dev libglib2.0-bin libgtk-4-dev libadwaita-1-dev libcairo2-dev \
	libprotobuf-c-dev protobuf-c-compiler \
	libgraphviz-dev libzip-dev zlib1g-dev libjson-glib-dev libopenblas-dev \
	desktop-file-utils shared-mime-info appstream fonts-cantarell \
	python3-dev
# What the tests need on top. The fixtures and references (PyTorch 2.13,
# onnx, onnxruntime, transformers) come from the venv.
TEST_PACKAGES := python3-venv python3-numpy xvfb xauth xdg-utils clang xdotool
# Real PDF readers for the PDF writer's tests.
TEST_PACKAGES += poppler-utils qpdf
# libFuzzer for tests/fuzz: the runtime of Debian's default clang
# (libclang-rt-14-dev on Debian 12, -19-dev on 13).
TEST_PACKAGES += libclang-rt-dev
# Debian's own PyTorch (1.13 on Debian 12): a second generation of
# TorchScript writers, used where Debian has it.
LEGACY_TORCH_PACKAGES := python3-torch python3-torchvision
VENV := .venv

.PHONY: all deps test-deps test-venv build run test zoo bench bench-avx2 bench-zoo bench-zoo-avx2 fuzz clean distclean

all: build

deps:
	@.ci/ensure-packages $(BUILD_PACKAGES)

test-deps: deps test-venv
	@.ci/ensure-packages $(TEST_PACKAGES)
	@.ci/ensure-packages --optional $(LEGACY_TORCH_PACKAGES)

test-venv: $(VENV)/.requirements

$(VENV)/.requirements: tests/requirements.txt
	@.ci/make-test-venv $(VENV) tests/requirements.txt

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: deps $(BUILD)/build.ninja
	meson compile -C $(BUILD)

$(SANITIZE_BUILD)/build.ninja:
	meson setup $(SANITIZE_BUILD) -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug

run: build
	$(BUILD)/app/gui/graft $(SAMPLE)

test: test-deps build $(SANITIZE_BUILD)/build.ninja
	meson compile -C $(SANITIZE_BUILD)
	@tests/run-all $(BUILD) $(SANITIZE_BUILD) $(CLANG_BUILD) $(FUZZ_BUILD)

# Every model of tests/zoo, every file PyTorch makes of it, every capability
# checked; writes docs/zoo.md. `make test` runs its fast subset.
zoo: test-deps build
	tests/python tests/zoo/run-zoo.py $(BUILD)/app/graft-cli --table docs/zoo.md

# Each libFuzzer harness of tests/fuzz for FUZZ_SECONDS; what they find
# stays in $(FUZZ_BUILD)/tests/fuzz/work-NAME/{corpus,crashes}.
fuzz: test-deps
	@tests/fuzz/run-all-fuzzers $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: test-deps build
	@tests/bench/run $(BUILD)

# The runtime's benchmarks with AVX-512, AVX-VNNI and AMX hidden from
# Graft and its peers alike: an AVX2-only machine's ratios on this one.
bench-avx2: test-deps build
	@tests/bench/run $(BUILD) --as-avx2-only

# Graft against onnxruntime and OpenVINO on every ONNX file of the zoo
# (`make zoo` makes them); MODELS="tv_resnet50 hf_bert" for a subset.
bench-zoo: test-deps build
	tests/python tests/bench/run-zoo $(BUILD) --table docs/bench-zoo.md $(MODELS)

# The same with AVX-512, AVX-VNNI and AMX hidden from every process
# (tests/bench/as-avx2-only): the ratios of an AVX2 + FMA machine.
bench-zoo-avx2: test-deps build
	tests/bench/as-avx2-only $(BUILD) tests/python tests/bench/run-zoo $(BUILD) --table docs/bench-zoo-avx2.md $(MODELS)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(CLANG_BUILD) $(FUZZ_BUILD)

distclean: clean
	rm -rf $(VENV) tests/fixtures-generated
