# The two entry points of README.md: `make run` and `make test`.
# Both install what is missing from Debian first, so a fresh Debian 12
# machine needs nothing else.

BUILD ?= build
SANITIZE_BUILD ?= build-asan
SAMPLE ?= data/samples/tiny-cnn.onnx
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# What building and running needs.
BUILD_PACKAGES := build-essential meson ninja-build pkg-config \
	libglib2.0-dev libglib2.0-bin libgtk-4-dev libadwaita-1-dev libcairo2-dev \
	libprotobuf-c-dev protobuf-c-compiler libonnx-dev \
	libgraphviz-dev libzip-dev libjson-glib-dev libopenblas-dev \
	desktop-file-utils shared-mime-info appstream fonts-cantarell
# What the tests and fixtures need on top.
TEST_PACKAGES := python3-torch python3-torchvision python3-onnx python3-numpy \
	xvfb xauth xdg-utils
# Node.js runs onnxruntime-node, the reference runtime. A machine may already
# have a Node.js of its own (whose npm conflicts with Debian's): use it then.
NODE_PACKAGES := $(if $(shell command -v npm),,nodejs npm)

.PHONY: all deps test-deps build run test bench clean

all: build

deps:
	@.ci/ensure-packages $(BUILD_PACKAGES)

test-deps: deps
	@.ci/ensure-packages $(TEST_PACKAGES) $(NODE_PACKAGES)
	@.ci/ensure-onnxruntime

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
	@tests/run-all $(BUILD) $(SANITIZE_BUILD)

bench: test-deps build
	@tests/bench/run $(BUILD)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
