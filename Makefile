# NotificationBus: `make demo` runs the main job, `make test` runs every test.
# Both install what they need first (Debian: libzmq3-dev through apt-get as root).

SWIFT ?= swift
PYTHON ?= python3
SWIFT_BUILD_FLAGS ?=

.PHONY: help deps build demo test test-swift test-python bench-micro clean

help:
	@echo "make demo         build nbus and run the demo"
	@echo "make test         install deps, build, run the Python protocol tests and the Swift tests"
	@echo "make bench-micro  codec micro-benchmarks (package-benchmark, release build, minutes)"

# Installs libzmq3-dev and pkg-config when missing (apt-get as root; otherwise says what to run).
deps:
	@missing=""; \
	dpkg -s libzmq3-dev >/dev/null 2>&1 || missing="$$missing libzmq3-dev"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "error: missing Debian packages:$$missing" >&2; \
	    echo "       install them as root: sudo apt-get update && sudo apt-get install -y$$missing" >&2; \
	    exit 1; \
	  fi; \
	  echo "installing$$missing (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product nbus

demo: build
	$(SWIFT) run $(SWIFT_BUILD_FLAGS) --skip-build nbus demo

test: deps test-python test-swift

test-python:
	$(PYTHON) -m unittest discover -s protocol/python -t protocol/python -v

test-swift:
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --build-tests
	$(SWIFT) test $(SWIFT_BUILD_FLAGS) --skip-build

bench-micro: deps
	cd Benchmarks && $(SWIFT) package --disable-sandbox benchmark

clean:
	rm -rf .build Benchmarks/.build
