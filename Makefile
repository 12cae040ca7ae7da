# Trivium: `make demo` and `make test` set everything up first (Debian packages,
# .venv, torch from constraints.txt, the four packages editable). Steps already
# done are skipped: stamps in .venv/.stamps record them.

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMPS := $(VENV)/.stamps
PACKAGES := core vision audio data pipelines
# Debian packages the tests and benchmarks use: the ffmpeg CLI (test clips), espeak-ng
# (speech corpora), libturbojpeg0 (PyTurboJPEG, a benchmark peer). The packages
# themselves need only a C/C++ compiler: trivium.vision builds its codec libraries from
# pinned source archives (packages/vision/scripts/build_deps.py); trivium.audio's
# operator library needs only torch's headers and libraries.
DEBIAN_PACKAGES := g++ make ffmpeg espeak-ng libturbojpeg0
NATIVE_SOURCES := $(wildcard packages/vision/csrc/* packages/vision/scripts/*) \
                  packages/vision/CMakeLists.txt \
                  $(wildcard packages/audio/csrc/* packages/audio/scripts/*) \
                  packages/audio/CMakeLists.txt
PYPROJECTS := $(foreach p,$(PACKAGES),packages/$(p)/pyproject.toml)

.PHONY: setup system demo demo-detection test test-slow lint format docs bench clean fuzz-asan wheels test-wheels

setup: system $(STAMPS)/packages

# Debian packages for the tests and benchmarks; checked every run (a fraction of a
# second). Without root, a missing one is named and setup goes on (what needs it skips).
system:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	    echo "Not installed (needs root: apt-get install $$missing): the tests that use them skip"; \
	  else \
	    echo "Installing Debian packages:" $$missing; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  fi; \
	fi

$(PY):
	python3 -m venv $(VENV)

# torch is pinned by constraints.txt: an unpinned torch would pull a CUDA build.
$(STAMPS)/deps: constraints.txt requirements-dev.txt requirements-peers.txt | $(PY)
	$(PIP) install -c constraints.txt torch==2.13.0 -r requirements-dev.txt
	$(PIP) install --no-deps -r requirements-peers.txt
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/packages: $(STAMPS)/deps $(PYPROJECTS) $(NATIVE_SOURCES)
	$(PIP) install --no-build-isolation -c constraints.txt $(foreach p,$(PACKAGES),-e packages/$(p))
	@touch $@

# The main job: build the embedded image corpus, train a ResNet-18 on it through the
# fused-decode loader, evaluate on the held-out split, print the summary.
demo: setup
	$(PY) examples/image_classification/train.py --demo --output-dir runs/demo

# Object detection: build the embedded detection corpus, train a RetinaNet (ResNet-18
# FPN) on it, evaluate COCO mAP on the held-out split, print the summary.
demo-detection: setup
	$(PY) examples/retinanet_detection/train.py --demo --output-dir runs/detection-demo

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The documentation site (mkdocs.yml) into site/; strict: a broken link or reference fails.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The test files spread over one pytest worker per core (a file stays on one worker).
# `test` is the quick tier; the tests marked slow (fuzzing, leak loops, the largest
# models' parity and compile checks) run in `test-slow`. CI runs both.
test: setup lint docs
	$(PY) -m pytest -q -n auto --dist loadfile -m "not slow" --durations=15

test-slow: setup
	$(PY) -m pytest -q -n auto --dist loadfile -m slow --durations=15

# The five wheels and sdists into dist/, each built as pip builds it (isolated, from its
# sdist); the vision and audio wheels made manylinux by auditwheel. torch's own
# libraries, which their operator libraries link and the pinned torch wheel provides,
# stay out of them.
TORCH_LIBS := libtorch.so libtorch_cpu.so libc10.so libtorch_python.so
wheels: setup
	rm -rf dist && mkdir -p dist/linux
	for p in core data pipelines; do PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(PY) -m build -q -o dist packages/$$p || exit 1; done
	PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(PY) -m build -q -o dist/linux packages/vision \
	  -C cmake.define.TRIVIUM_DEPS=$(CURDIR)/packages/vision/build/deps
	PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(PY) -m build -q -o dist/linux packages/audio
	mv dist/linux/*.tar.gz dist/
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH auditwheel repair -w dist $(foreach l,$(TORCH_LIBS),--exclude $(l)) dist/linux/*.whl
	rm -rf dist/linux
	@ls -l dist

# Installs the wheels of dist/ into fresh virtualenvs outside the checkout and uses each
# package alone (tests/install).
test-wheels: wheels
	TRIVIUM_WHEELS=$(CURDIR)/dist $(PY) -m pytest -q tests/install

BENCHMARKS := image_io transforms transforms_pipeline video audio audio_models data models classification detection detection_ops deploy

bench: setup
	@for b in $(BENCHMARKS); do echo "== benchmarks/$$b.py"; $(PY) benchmarks/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) packages/*/build .pytest_cache .ruff_cache site

# The native codecs and the operator libraries (libtrivium_ops.so, trivium.audio._C) under
# AddressSanitizer on many mutated files; restores the normal builds.
ASAN_LIBS = $(shell gcc -print-file-name=libasan.so) $(shell gcc -print-file-name=libstdc++.so)
ASAN_BUILD = -C build-dir=build/asan \
  -C cmake.define.CMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer -g" \
  -C cmake.define.CMAKE_SHARED_LINKER_FLAGS=-fsanitize=address
ASAN_RUN = LD_PRELOAD="$(ASAN_LIBS)" ASAN_OPTIONS=detect_leaks=0 $(PY)
fuzz-asan: setup
	for p in vision audio; do \
	  $(PIP) install --no-build-isolation -c constraints.txt -e packages/$$p $(ASAN_BUILD) || exit 1; \
	done
	$(ASAN_RUN) tests/vision/native_fuzz.py && $(ASAN_RUN) tests/audio/native_fuzz.py; \
	  status=$$?; for p in vision audio; do \
	    $(PIP) install --no-build-isolation -c constraints.txt -e packages/$$p || exit 1; \
	  done; exit $$status
