# NotificationBus: `make demo` runs the main job, `make test` runs every test.
# Both install what they need first (Debian, apt-get as root): `make deps` the build dependencies
# (all `make demo`, `make install` and `make deb` need), `make test-deps` the test ones too.

SWIFT ?= swift
PYTHON ?= python3
SWIFT_BUILD_FLAGS ?=

.PHONY: help deps build demo test test-swift test-python test-netns bench-micro bench-peers bench-peers-clients clean install install-files uninstall test-deps deb-deps deb test-packaging packaging-test-deps
.PHONY: examples-c test-conformance fuzz fuzz-build test-asan soak test-adversarial docs built-by-test-swift
.PHONY: api api-check test-swift-otel

help:
	@echo "make demo         build nbus and run the demo"
	@echo "make install      release build (Swift runtime linked in), then nbus into PREFIX/bin (default /usr/local), completions, the systemd units and docs under PREFIX/share; DESTDIR for packagers"
	@echo "make uninstall    remove what make install put there"
	@echo "make deb          .build/deb/nbus_VERSION_ARCH.deb from the same release build (man pages, completions, units, nbus user)"
	@echo "make test-packaging  the installed nbus with the toolchain hidden, both units, the .deb installed and purged (root; CI runs it)"
	@echo "make deps         the build dependencies (libzmq3-dev, pkg-config; apt-get as root); make test-deps adds the test ones"
	@echo "make test         install deps, build, run the Python protocol tests, the Swift tests and the conformance tests; one summary at the end"
	@echo "make bench-micro  codec micro-benchmarks (package-benchmark, release build, minutes)"
	@echo "make bench-peers  nbus broker against NATS, Redis and bare ZeroMQ (Debian packages, as root), a table and an HTML report; PEERS_N, PEERS_RUNS"
	@echo "make test-conformance  Python/C/shell producers and consumers against nbus (part of make test)"
	@echo "make test-adversarial  hostile and careless peers against real nbus processes (part of make test)"
	@echo "make test-netns   the multi-host tests alone: hosts in network namespaces, as root (part of make test)"
	@echo "make examples-c   build the C producer (libzmq only) into .build/examples/"
	@echo "make fuzz         libFuzzer on the NBP/1 decoder for FUZZ_SECONDS (default 60)"
	@echo "make test-swift-otel  nbus built with the SwiftOTel trait (--otlp-endpoint through swift-otel), its OTLP export tests (CI runs it)"
	@echo "make test-asan    the codec tests under AddressSanitizer (scratch path .build-asan)"
	@echo "make docs         the DocC catalogs of NBP1, NotificationBus and BusViews, warnings as errors (.build/plugins/Swift-DocC/outputs)"
	@echo "make soak         broker + 3 publishers + 3 subscribers for SOAK_SECONDS (default 600): exact accounting, flat RSS and fds"
	@echo "make api          regenerate docs/public-api.txt, the public API of every library product (after a deliberate change)"
	@echo "make api-check    fail when the public API differs from docs/public-api.txt (CI runs it)"

# Build dependencies: libzmq3-dev and pkg-config, installed when missing (apt-get as root;
# otherwise it says what to run). All that `make demo`, `make install` and `make deb` need.
deps:
	@missing=""; \
	dpkg -s libzmq3-dev >/dev/null 2>&1 || missing="$$missing libzmq3-dev"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	$(APT_INSTALL_MISSING)

# Test dependencies, on top of the build ones, as root (without them those tests skip, saying so):
# iproute2 (ip, tc) for the multi-host test, prometheus (promtool checks /metrics), systemd
# (systemd-analyze verifies the units), curl (the docs' snippets), chromium (the headless browser
# the report's rendering test opens it in), and opentelemetry-sdk and opentelemetry-proto from PyPI
# (the Python tracing test). Not as root: a note for chromium and opentelemetry, the rest skip.
test-deps: deps
	@missing=""; \
	if [ "$$(id -u)" -eq 0 ]; then \
	  { command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ]; } || missing="$$missing iproute2"; \
	  command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	  command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	  command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	  command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	elif ! command -v chromium >/dev/null 2>&1; then \
	  echo "note: chromium is not installed: the report's rendering test will skip (as root: apt-get install -y chromium)" >&2; \
	fi; \
	py=$$(command -v python3 || true); \
	if [ -n "$$py" ] && ! "$$py" -c 'import opentelemetry.sdk.trace, opentelemetry.proto' >/dev/null 2>&1; then \
	  if [ "$$(id -u)" -eq 0 ]; then \
	    PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 "$$py" -m pip install --quiet opentelemetry-sdk opentelemetry-proto \
	      || echo "note: pip could not install opentelemetry-sdk: the Python tracing test will skip" >&2; \
	  else \
	    echo "note: $$py lacks opentelemetry-sdk: the Python tracing test will skip (python3 -m pip install opentelemetry-sdk opentelemetry-proto)" >&2; \
	  fi; \
	fi; \
	$(APT_INSTALL_MISSING)

# What `make deb` needs besides the build: dpkg-shlibdeps (dpkg-dev) for the package's Depends.
deb-deps: deps
	@missing=""; \
	command -v dpkg-shlibdeps >/dev/null 2>&1 || missing="$$missing dpkg-dev"; \
	$(APT_INSTALL_MISSING)

# What `make test-packaging` adds, as root: lintian (checks the package) and systemd
# (systemd-analyze); not as root those tests skip, saying so.
packaging-test-deps: deb-deps
	@missing=""; \
	if [ "$$(id -u)" -eq 0 ]; then \
	  command -v lintian >/dev/null 2>&1 || missing="$$missing lintian"; \
	  command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	fi; \
	$(APT_INSTALL_MISSING)

# Installs $$missing with apt-get as root; not as root, names them and fails.
APT_INSTALL_MISSING = if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "error: missing Debian packages:$$missing" >&2; \
	    echo "       install them as root: sudo apt-get update && sudo apt-get install -y$$missing" >&2; \
	    exit 1; \
	  fi; \
	  echo "installing$$missing (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# The public API of every library product, one declaration a line (docs/public-api.txt), from the
# compiler's symbol graphs (swift-symbolgraph-extract over `make test`'s debug build, reused as it is).
# `make api` rewrites the file after a deliberate change; `make api-check` fails, showing the
# difference, when the tree's API is not the recorded one, so a change to it is a visible decision.
api: deps
	SWIFT=$(SWIFT) SWIFT_BUILD_FLAGS="$(SWIFT_BUILD_FLAGS)" $(PYTHON) Tests/API/public_api.py --write docs/public-api.txt

api-check: deps
	SWIFT=$(SWIFT) SWIFT_BUILD_FLAGS="$(SWIFT_BUILD_FLAGS)" $(PYTHON) Tests/API/public_api.py --check docs/public-api.txt

# nbus-baseline (C, libzmq only) is the raw-libzmq baseline `nbus demo` and `nbus bench views` run first.
build: deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product nbus
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product nbus-baseline

# The demo measures, so it runs a release build (a debug build of the views' scenario falls behind
# in every style on two cores, and its report says the figures mean little): a few minutes more
# to build the first time. DEMO_FLAGS= runs it from a debug build.
# Every release build here (demo, install, deb, bench-peers) takes the same flags, the Swift
# runtime linked in: SwiftPM compiles every module again when --static-swift-stdlib changes
# (measured: 27 min at load 10-20 for `-c release` after a static build), so one flag set means
# one build, and `make install` after `make demo` only installs. The demo runs the built binary
# itself: `swift run` refuses --static-swift-stdlib.
RELEASE_FLAGS ?= -c release --static-swift-stdlib
DEMO_FLAGS ?= $(RELEASE_FLAGS)
demo: deps
	$(SWIFT) build $(DEMO_FLAGS) --product nbus
	$(SWIFT) build $(DEMO_FLAGS) --product nbus-baseline
	"$$($(SWIFT) build $(DEMO_FLAGS) --show-bin-path)/nbus" demo

# Each step's output goes to the terminal and to $(TEST_LOGS)/STEP.log (its exit status to
# STEP.status). Every step runs even when one before it failed, and the log ends with one summary
# (Tests/Summary/test_summary.py): how many tests ran, passed, failed and were skipped in each step
# and in all, which were skipped and why, which failed; its last line is
# "total: N passed, N failed, N skipped". The exit status is non-zero when anything failed.
TEST_LOGS ?= .build/test-logs
test: test-deps
	@rm -rf $(TEST_LOGS); mkdir -p $(TEST_LOGS); \
	for step in test-python test-swift test-conformance; do \
	  { $(MAKE) --no-print-directory $$step CONFORMANCE_BUILD=$(CONFORMANCE_BUILD_IN_TEST); echo $$? > $(TEST_LOGS)/$$step.status; } 2>&1 \
	    | tee $(TEST_LOGS)/$$step.log; \
	done; \
	$(PYTHON) Tests/Summary/test_summary.py $(TEST_LOGS) \
	  "test-python=Python tests (protocol, summary, public API, peers comparison)" "test-swift=Swift tests" "test-conformance=conformance tests"
# test-swift's `swift build --build-tests` has built nbus and nbus-baseline already: a second
# `swift build --product` would only plan the build anew (and print the dependencies' warnings again).
CONFORMANCE_BUILD_IN_TEST ?= built-by-test-swift

# The reference codec's tests, then those of the summary `make test` ends with.
test-python:
	$(PYTHON) -m unittest discover -s protocol/python -t protocol/python -v
	$(PYTHON) -m unittest discover -s Tests/Summary -t Tests/Summary -v
	$(PYTHON) -m unittest discover -s Tests/API -t Tests/API -v
	$(PYTHON) -m unittest discover -s Tests/Peers -t Tests/Peers -v

# The load tests (a 200,000-message burst through real processes, a subscriber stopped under a
# 50,000/s stream) run alone after the rest: on two cores, next to 300 tests running in parallel,
# they measured the machine instead of the bus (the burst's subscriber once printed 173,572 of
# 200,000 within its 90 s bound). HostileHTTPClientTests floods --http servers while a stream
# flows and bounds a SIGTERM's exit at 2 s: a measure of the server, not of a crowded machine.
# SubscriberChurnTests replaces 500 subscribers a second (pyzmq churners, skipped without pyzmq)
# for 12 s under a 5,000/s stream: a storm that needs both cores to itself. RequestReplyLoadTests
# starts 50 requester processes at once, 1,000 requests in flight against one responder.
# RedundantBrokersTests kills and freezes brokers under paced streams; ForgedPublisherTests and
# RequestReplyLibraryTests time broker round trips: next to 300 tests on two cores they timed
# the machine (each passed alone, failed once in a loaded fresh-clone run). One at a time
# (--no-parallel): side by side the load suites timed each other (the 500-connection HTTP test
# closed 322 of the 436 past its cap at once while a churn storm and spinning threads ran).
# ReceiveLimitsTests measures whether valid traffic waits for a flood: among 300 parallel tests
# it failed in three of four fresh-clone runs, alone it passes. BrokerBudgetTests' consumer (a
# task on the cooperative pool) was once not scheduled for 10.5 s among them: past the broker's
# 10 s hold for a moving subscriber, it was sent past. PeerCloseWhileFullTests needs its sender's
# burst written out within 5 s of its close: once, among them, it was not within 10.
# MonitoringServerTests bounds a graceful shutdown at 1 s (the issue's SIGTERM bound): beside
# stress-ng and 500 tests it took 1.14 s once, and twice at load 10-25.
# DirectBudgetEndToEndTests streams 150,000 to a healthy `nbus subscribe` that prints every line
# behind an 8 MiB budget: among 575 parallel tests that subscriber took nothing for the binding
# publisher's 0.5 s patience and was disconnected as stalled (its loss counted exactly, 29,001);
# alone it keeps up. It measures the budget, not the crowd.
# EndOfStreamReplayBoundTests sends 56 MB of end-of-stream records through a broker that replays
# 16 MiB of them at 1, 3, 10 s: among the parallel tests its subscriber took 54 s for 100 more.
LOAD_TESTS ?= DirectBudgetEndToEndTests|SlowBusSubscriberTests|EndOfStreamReplayBoundTests|MonitoringServerTests|BrokerMovingBudgetTests|DirectMovingBudgetTests|PeerCloseWhileFullTests|BrokerBudgetTests|DirectBudgetTests|BrokeredLosslessTests|BrokeredLoadedMachineTests|HostileHTTPClientTests|SubscriberChurnTests|RequestReplyLoadTests|RedundantBrokersTests|ForgedPublisherTests|RequestReplyLibraryTests|ReceiveLimitsTests
# SWIFT_BACKTRACE=enable=no: a test process that crashes (a libzmq assertion once did) must fail
# at once; Swift's backtracer, suspending the hundreds of threads of a test run, hung it instead.
# Every test is Swift Testing's: --disable-xctest spares each run XCTest's empty report ("Executed
# 0 tests", "No matching test cases were run").
SWIFT_TEST_FLAGS ?= --disable-xctest
test-swift:
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --build-tests
	@status=0; \
	SWIFT_BACKTRACE=enable=no $(SWIFT) test $(SWIFT_BUILD_FLAGS) $(SWIFT_TEST_FLAGS) --skip-build --skip '$(LOAD_TESTS)' || status=1; \
	echo "--- load tests, alone and one at a time: $(LOAD_TESTS)"; \
	SWIFT_BACKTRACE=enable=no $(SWIFT) test $(SWIFT_BUILD_FLAGS) $(SWIFT_TEST_FLAGS) --skip-build --no-parallel --filter '$(LOAD_TESTS)' || status=1; \
	exit $$status

# Issue 40: `nbus --otlp-endpoint` through swift-otel. nbus built with the SwiftOTel trait by
# docs/tracing.md's own line (debug, its own scratch folder .build-otel: a trait changes every
# module's flags), then the OTLP export tests run against that binary. Fails when the binary does
# not say it exports through swift-otel, when a test of the suite was skipped (python3 without
# opentelemetry-proto would prove nothing), and when none ran.
test-swift-otel: test-deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --build-tests
	@build=$$(sed -n '/<!-- test: swift-otel-build/,/^```$$/p' docs/tracing.md | grep '^swift build '); \
	test -n "$$build" || { echo "test-swift-otel: docs/tracing.md's swift-otel-build block has no swift build line" >&2; exit 1; }; \
	echo "$$build (docs/tracing.md)"; $$build
	@bin="$$($(SWIFT) build --traits SwiftOTel --scratch-path .build-otel --show-bin-path)/nbus"; \
	"$$bin" publish --help | tr -s ' \n' '  ' | grep -q 'Exporter: swift-otel' \
	  || { echo "test-swift-otel: $$bin does not say it exports through swift-otel" >&2; exit 1; }; \
	NBUS_E2E_BINARY="$$bin" SWIFT_BACKTRACE=enable=no $(SWIFT) test $(SWIFT_BUILD_FLAGS) $(SWIFT_TEST_FLAGS) --skip-build \
	  --filter OTLPExportTests > .build-otel/test.log 2>&1; \
	status=$$?; cat .build-otel/test.log; \
	if grep -q "skipped" .build-otel/test.log; then echo "test-swift-otel: a test was skipped" >&2; exit 1; fi; \
	grep -Eq "Test run with [1-9][0-9]* tests? in [0-9]+ suites? passed" .build-otel/test.log \
	  || { echo "test-swift-otel: no test ran and passed" >&2; exit 1; }; \
	exit $$status

# Broker, publishers and subscribers on separate "hosts" (network namespaces on a bridge, TCP over
# 10.77.0.0/24), then one link impaired with netem. Part of `swift test`; skipped unless root.
test-netns: test-deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --build-tests
	$(SWIFT) test $(SWIFT_BUILD_FLAGS) $(SWIFT_TEST_FLAGS) --skip-build --filter MultiHostTests

# Hostile and careless peers (raw ZeroMQ and hand-spoken ZMTP against real nbus processes, bad CLI
# values, slow and stopped subscribers, raw TCP clients against --http, 1,000 requests at once).
# Part of `make test`; this runs them alone.
ADVERSARIAL_FILTER ?= HostilePeerTests|ForgedPublisherTests|RefusedClientTests|CarelessPeerTests|BrokeredLosslessTests|BrokeredLoadedMachineTests|HostileInputTests|HostileHTTPClientTests|SubscriberChurnTests|RequestReplyLoadTests
test-adversarial: test-deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --build-tests
	$(SWIFT) test $(SWIFT_BUILD_FLAGS) $(SWIFT_TEST_FLAGS) --skip-build --filter '$(ADVERSARIAL_FILTER)'

# DocC (swift-docc-plugin): NotificationBus's and BusViews' catalogs (Sources/*/*.docc) and every
# doc comment; a warning (a broken symbol link, say) fails it. CI runs it.
docs: deps
	$(SWIFT) package --disable-sandbox generate-documentation --target NBP1 --warnings-as-errors
	$(SWIFT) package --disable-sandbox generate-documentation --target NotificationBus --warnings-as-errors
	$(SWIFT) package --disable-sandbox generate-documentation --target BusViews --warnings-as-errors

bench-micro: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark

# NotificationBus through `nbus broker` (its defaults) against NATS, Redis and bare ZeroMQ through
# zmq_proxy, one workload, interleaved runs (Benchmarks/peers/README.md): installs the servers and
# the clients' libraries from Debian (as root; otherwise prints the apt-get line), builds the
# clients and a release nbus, and writes $(PEERS_WORK)/results/LABEL.{jsonl,md,html}. CPU heavy:
# the defaults take about 6 minutes on 2 cores (after the build); PEERS_N=20000 PEERS_RUNS=1, one.
PEERS_WORK ?= .build/peers
PEERS_N ?= 1000000
PEERS_LAT_N ?= 20000
PEERS_RUNS ?= 3
PEERS_SYSTEMS ?= nats,redis,zmqraw,nbus
PEERS_TESTS ?= throughput,filtered,fanout,latency
PEERS_FLAGS ?=
bench-peers-clients:
	sh Benchmarks/peers/deps.sh
	sh Benchmarks/peers/build.sh $(PEERS_WORK)/bin

bench-peers: bench-peers-clients
	$(SWIFT) build $(RELEASE_FLAGS) --product nbus
	$(PYTHON) Benchmarks/peers/run.py --nbus "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/nbus" \
	  --clients $(PEERS_WORK)/bin --work $(PEERS_WORK) --runs $(PEERS_RUNS) --n $(PEERS_N) --lat-n $(PEERS_LAT_N) \
	  --systems $(PEERS_SYSTEMS) --tests $(PEERS_TESTS) $(PEERS_FLAGS)

clean:
	rm -rf .build Benchmarks/.build

# --- External producers and consumers, conformance, fuzzing (issue 6) --------------------------

EXAMPLES_BIN := .build/examples
CC ?= cc
EXAMPLES_CFLAGS ?= -std=c11 -O2 -Wall -Wextra

# The C producer: libzmq alone, NBP/1 frames encoded by hand (examples/c/producer.c).
examples-c: deps $(EXAMPLES_BIN)/nbp-producer

$(EXAMPLES_BIN)/nbp-producer: examples/c/producer.c
	@mkdir -p $(EXAMPLES_BIN)
	$(CC) $(EXAMPLES_CFLAGS) examples/c/producer.c -o $@ $$(pkg-config --cflags --libs libzmq 2>/dev/null || echo -lzmq)

# Python producer/consumer, C producer and shell pipelines against nbus, over ipc in a temp folder.
# Needs a Python with pyzmq: examples/python/python-with-zmq.sh picks one and says which (python3
# on PATH; as root it pip-installs pyzmq into it if missing; else Debian's /usr/bin/python3 with
# python3-zmq). Set PYTHON_ZMQ=/path/to/python to choose.
CONFORMANCE_BUILD ?= build
built-by-test-swift:
	@true

test-conformance: deps $(CONFORMANCE_BUILD) examples-c
	@py=$$(PYTHON_ZMQ="$(PYTHON_ZMQ)" sh examples/python/python-with-zmq.sh) || exit 1; \
	bin=$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path) || exit 1; \
	echo "conformance: $$py, $$bin/nbus, $(EXAMPLES_BIN)/nbp-producer"; \
	NBUS="$$bin/nbus" NBP_C_PRODUCER="$(EXAMPLES_BIN)/nbp-producer" NBP_REQUIRE_C_PRODUCER=1 \
	  "$$py" -m unittest -v examples/python/test_conformance.py

# libFuzzer on EnvelopeCodec.decode and decodeAll (batch frames too), compiled straight from the
# NBP1 module's sources with swiftc (not a SwiftPM target), seeded with every frame of protocol/vectors. The corpus grows across runs in
# .build/fuzz/corpus; a crash is saved under .build/fuzz/artifacts/ (replay it with
# `.build/fuzz/fuzz-decode FILE`) and fails the target.
FUZZ_SECONDS ?= 60
FUZZ_DIR := .build/fuzz
# The whole NBP1 module (the protocol, nothing else) plus the harness, compiled as one module.
FUZZ_SOURCES := $(wildcard Sources/NBP1/*.swift) Tests/Fuzz/FuzzDecode.swift
SWIFTC ?= swiftc

fuzz-build: $(FUZZ_DIR)/fuzz-decode

$(FUZZ_DIR)/fuzz-decode: $(FUZZ_SOURCES)
	@mkdir -p $(FUZZ_DIR)
	$(SWIFTC) -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld -module-name NBPFuzz -package-name NotificationBus \
	  $(FUZZ_SOURCES) -o $@

fuzz: fuzz-build
	@$(PYTHON) Tests/Fuzz/make_corpus.py $(FUZZ_DIR)/seeds
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts
	@echo "fuzz: EnvelopeCodec.decode and decodeAll (batch frames) for $(FUZZ_SECONDS) s (log: $(FUZZ_DIR)/fuzz.log)"
	@SWIFT_BACKTRACE=enable=no $(FUZZ_DIR)/fuzz-decode -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/artifacts/ \
	  $(FUZZ_DIR)/corpus $(FUZZ_DIR)/seeds > $(FUZZ_DIR)/fuzz.log 2>&1; \
	status=$$?; \
	if [ $$status -ne 0 ]; then \
	  tail -n 40 $(FUZZ_DIR)/fuzz.log; \
	  echo "fuzz: FAILED (exit $$status); inputs in $(FUZZ_DIR)/artifacts/:" >&2; ls -1 $(FUZZ_DIR)/artifacts/ >&2; \
	  exit 1; \
	fi; \
	grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' $(FUZZ_DIR)/fuzz.log; \
	echo "fuzz: no crash; corpus $$(ls $(FUZZ_DIR)/corpus | wc -l) inputs"

# The codec test suites under AddressSanitizer. They are built as their own small package,
# Tests/ASan (NBP1 and the codec test files, through symbolic links to the same files `make test`
# runs; a new codec test file needs its own link in Tests/ASan/CodecTests, see its Package.swift),
# so only NBP1 is compiled with ASan: about a minute, where building the whole package's
# tests with ASan took five to six. XCTest is disabled: the codec suites use Swift Testing, and
# XCTest's own runner leaks a few objects that LeakSanitizer would report. Fails if no test ran.
ASAN_PACKAGE := Tests/ASan
ASAN_SCRATCH := $(CURDIR)/.build-asan
test-asan:
	@mkdir -p $(ASAN_SCRATCH)
	@echo "test-asan: swift build --build-tests --sanitize=address --package-path $(ASAN_PACKAGE) (log: .build-asan/build.log)"
	@$(SWIFT) build --build-tests --sanitize=address --package-path $(ASAN_PACKAGE) --scratch-path $(ASAN_SCRATCH) \
	  > $(ASAN_SCRATCH)/build.log 2>&1; \
	status=$$?; \
	grep -v 'Cannot export local symbol' $(ASAN_SCRATCH)/build.log | grep -E 'error|warning: .*(unused|deprecated)|Build complete' | tail -n 40; \
	if [ $$status -ne 0 ]; then grep -v 'Cannot export local symbol' $(ASAN_SCRATCH)/build.log | tail -n 60; exit $$status; fi
	@echo "test-asan: swift test --sanitize=address --package-path $(ASAN_PACKAGE) (log: .build-asan/test.log)"
	@$(SWIFT) test --skip-build --sanitize=address --package-path $(ASAN_PACKAGE) --scratch-path $(ASAN_SCRATCH) \
	  --disable-xctest > $(ASAN_SCRATCH)/test.log 2>&1; \
	status=$$?; \
	if [ $$status -ne 0 ]; then cat $(ASAN_SCRATCH)/test.log; exit $$status; fi; \
	grep -E '(Suite .* passed|Test run with)' $(ASAN_SCRATCH)/test.log; \
	grep -Eq 'Test run with [1-9][0-9]* tests? .*passed' $(ASAN_SCRATCH)/test.log || \
	  { echo "test-asan: no test ran" >&2; exit 1; }

# --- Soak (issue 7) ------------------------------------------------------------------------------

# A broker, 3 publishers and 3 subscribers (real nbus processes, ipc in a temp folder) for
# SOAK_SECONDS, then: the accounting identity per subscriber, and RSS and open fds of every process
# flat (Tests/Soak/soak.py says how that is judged). Not part of `make test`. SOAK_RATE (per
# publisher, per second), SOAK_SIZE, SOAK_SAMPLE_SECONDS and SOAK_JSON (a report file) pass through.
SOAK_SECONDS ?= 600

soak: build
	@bin=$$($(SWIFT) build $(SWIFT_BUILD_FLAGS) --show-bin-path) || exit 1; \
	SOAK_SECONDS=$(SOAK_SECONDS) $(PYTHON) Tests/Soak/soak.py --nbus "$$bin/nbus"

# --- Install (issue "From clone to running service"; packages, issue 40) ------------------------

# `make install` builds nbus in release mode with the Swift runtime linked in
# (--static-swift-stdlib: the installed binary needs glibc, libstdc++ and libzmq5, not the
# toolchain, so it runs on a broker host that has no Swift) and installs it, with bash, zsh and
# fish completions (generated by nbus itself), both systemd units (their ExecStart pointing at
# PREFIX/bin/nbus), an example /etc/default file and the docs under PREFIX/share. DESTDIR stages
# it for a package. `make install-files NBUS_BIN=path` installs a binary built already (the
# install test uses the debug one), `make uninstall` removes the files.
PREFIX ?= /usr/local
DESTDIR ?=
NBUS_BIN ?=
INSTALL ?= install
# TRAITS=SwiftOTel: `nbus --otlp-endpoint` exports through swift-otel (Package.swift's trait;
# minutes more to build, and its own scratch folder so it never rebuilds the default one).
TRAITS ?=
INSTALL_BUILD_FLAGS ?= $(RELEASE_FLAGS) $(if $(TRAITS),--traits $(TRAITS) --scratch-path .build-traits)
UNITS := nbus-broker.service nbus-broker-curve.service
INSTALLED_DOCS := docs/deployment.md docs/command-line.md docs/security.md README.md protocol/NBP-1.md
INSTALLED_FILES := bin/nbus share/bash-completion/completions/nbus share/zsh/site-functions/_nbus \
  share/fish/vendor_completions.d/nbus.fish $(addprefix share/nbus/,$(UNITS) nbus-broker.default) \
  $(addprefix share/doc/nbus/,$(notdir $(INSTALLED_DOCS)))

install: deps
	$(SWIFT) build $(INSTALL_BUILD_FLAGS) --product nbus
	@$(MAKE) --no-print-directory install-files NBUS_BIN="$$($(SWIFT) build $(INSTALL_BUILD_FLAGS) --show-bin-path)/nbus"

install-files:
	@test -n "$(NBUS_BIN)" && test -x "$(NBUS_BIN)" || { echo "install-files: NBUS_BIN must name a built nbus (got '$(NBUS_BIN)')" >&2; exit 1; }
	$(INSTALL) -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions" \
	  "$(DESTDIR)$(PREFIX)/share/zsh/site-functions" "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d" \
	  "$(DESTDIR)$(PREFIX)/share/nbus" "$(DESTDIR)$(PREFIX)/share/doc/nbus"
	$(INSTALL) -m 0755 "$(NBUS_BIN)" "$(DESTDIR)$(PREFIX)/bin/nbus"
	"$(NBUS_BIN)" --generate-completion-script bash > "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/nbus"
	"$(NBUS_BIN)" --generate-completion-script zsh > "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_nbus"
	"$(NBUS_BIN)" --generate-completion-script fish > "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/nbus.fish"
	for unit in $(UNITS); do \
	  sed -e 's|/usr/local/bin/nbus|$(PREFIX)/bin/nbus|g' -e 's|/usr/local/share/doc/nbus|$(PREFIX)/share/doc/nbus|g' \
	    "docs/$$unit" > "$(DESTDIR)$(PREFIX)/share/nbus/$$unit" || exit 1; \
	done
	$(INSTALL) -m 0644 docs/nbus-broker.default "$(DESTDIR)$(PREFIX)/share/nbus/nbus-broker.default"
	$(INSTALL) -m 0644 $(INSTALLED_DOCS) "$(DESTDIR)$(PREFIX)/share/doc/nbus/"
	@echo "installed nbus into $(DESTDIR)$(PREFIX) (units: $(PREFIX)/share/nbus/; copy one to /etc/systemd/system/ to use it)"

uninstall:
	rm -f $(addprefix "$(DESTDIR)$(PREFIX)/,$(addsuffix ",$(INSTALLED_FILES)))
	-rmdir "$(DESTDIR)$(PREFIX)/share/nbus" "$(DESTDIR)$(PREFIX)/share/doc/nbus" 2>/dev/null

# `make deb`: .build/deb/nbus_VERSION_ARCH.deb from the same release build as `make install`
# (packaging/deb/build-deb.sh says what goes in: the binary, man pages generated from the argument
# parser, completions, both units enabled the Debian way, an `nbus` system user, a default file
# for the broker's flags, the docs). Adds the package's own build (seconds) and, the first time,
# swift-argument-parser's generate-manual tool (a debug build of the parser, about a minute).
DEB_OUT ?= .build/deb
deb: deb-deps
	$(SWIFT) build $(INSTALL_BUILD_FLAGS) --product nbus
	SWIFT="$(SWIFT)" sh packaging/deb/build-deb.sh "$$($(SWIFT) build $(INSTALL_BUILD_FLAGS) --show-bin-path)/nbus" "$(DEB_OUT)"

# The installed tree and the package, tested (Tests/Packaging): `make install` into a staging
# DESTDIR, and there, as root, nbus run with the toolchain hidden (a mount namespace); both units
# through systemd-analyze verify and their command lines run as written (CURVE credentials, a
# two-broker pair); the .deb through lintian (when it installs), dpkg -i, verify and purge, as
# root. Not part of `make test` (a release build); CI runs it.
PACKAGING_STAGE ?= .build/packaging-stage
test-packaging: packaging-test-deps deb
	rm -rf "$(PACKAGING_STAGE)"
	$(MAKE) --no-print-directory install-files DESTDIR="$(PACKAGING_STAGE)" PREFIX=/usr/local \
	  NBUS_BIN="$$($(SWIFT) build $(INSTALL_BUILD_FLAGS) --show-bin-path)/nbus"
	NBUS_STAGE="$(PACKAGING_STAGE)" NBUS_STAGE_PREFIX=/usr/local NBUS_DEB="$$(ls -t $(DEB_OUT)/nbus_*.deb | head -n 1)" \
	  SWIFT="$(SWIFT)" $(PYTHON) -m unittest discover -s Tests/Packaging -t Tests/Packaging -v
