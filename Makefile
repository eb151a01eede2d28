# Lethe — two commands do everything on a fresh Debian/Ubuntu machine:
#   make run    install what is missing, build, open the window on the default database
#   make test   fmt, clippy, all Rust tests, UI tests, end-to-end tests of the real window
SHELL := /bin/bash
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_PACKAGES := libwebkit2gtk-4.1-dev build-essential pkg-config curl wget file libssl-dev libxdo-dev \
	libayatana-appindicator3-dev librsvg2-dev xvfb xauth webkit2gtk-driver fonts-dejavu-core imagemagick
CARGO_BIN := $(HOME)/.cargo/bin
export PATH := $(CARGO_BIN):$(PATH)

.PHONY: bench-window mcp-python run test deps system-deps ui-deps e2e-deps ui build lint rust-test ui-test e2e bench demo clean

system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi

ui/node_modules/.package-lock.json: ui/package-lock.json
	# npm ci rejects this lock file (npm 11 omits a Windows-only optional dependency of
	# vite from it); npm install still installs exactly the locked versions.
	cd ui && npm install --no-audit --no-fund
ui-deps: ui/node_modules/.package-lock.json

tests/e2e/node_modules/.package-lock.json: tests/e2e/package-lock.json
	cd tests/e2e && npm install --no-audit --no-fund
e2e-deps: tests/e2e/node_modules/.package-lock.json
	@command -v tauri-driver >/dev/null || cargo install tauri-driver --locked

deps: system-deps ui-deps

ui: ui-deps
	cd ui && npm run build

build: deps ui
	cargo build --workspace

run: build
	./target/debug/lethe-app

lint: deps ui
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

rust-test: build
	cargo test --workspace

ui-test: ui-deps
	cd ui && npm test

e2e: build e2e-deps
	cd tests/e2e && timeout 900 xvfb-run -a -s "-screen 0 1280x800x24" node --test --test-concurrency=1 ./*.test.mjs

# The official Python MCP SDK drives `lethe mcp` as a second, independent client.
target/py-mcp/.installed: tests/mcp_python/requirements.txt
	python3 -m venv target/py-mcp
	target/py-mcp/bin/pip install -q -r tests/mcp_python/requirements.txt
	touch $@

mcp-python: build target/py-mcp/.installed
	LETHE_BIN=$(CURDIR)/target/debug/lethe target/py-mcp/bin/python -m unittest discover -s tests/mcp_python -v

test: lint rust-test ui-test mcp-python e2e

demo: build
	./target/debug/lethe demo

# make bench BENCH_ARGS="--sizes 10000,100000,1000000 --out bench.json"  (see BENCHMARKS.md)
BENCH_ARGS ?= --sizes 10000,100000 --out target/bench.json
bench:
	cargo run --release -p lethe-cli --bin lethe-bench -- $(BENCH_ARGS)

# Window latencies with the real (release) app under Xvfb: open N memories, agent write →
# row visible, idle CPU. Results go to BENCHMARKS.md by hand.
BENCH_WINDOW_N ?= 100000
bench-window: deps ui e2e-deps
	cargo build --release -p lethe-app -p lethe-cli
	cd tests/e2e && LETHE_APP=$(CURDIR)/target/release/lethe-app LETHE_CLI=$(CURDIR)/target/release/lethe \
		timeout 900 xvfb-run -a -s "-screen 0 1280x800x24" node bench-window.mjs $(BENCH_WINDOW_N)

clean:
	cargo clean
