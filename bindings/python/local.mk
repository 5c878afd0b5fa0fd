# bindings/python: the CPython extension sluice._sluice (a libtool module
# linked to libsluice) and the pure-Python package around it. Included by
# the top Makefile.am; paths are from the top of the tree.
#
# `make` also stages the package in bindings/python/stage/ (the Python
# files copied from the source tree beside the built extension), so that
# tests, examples and benchmarks run uninstalled with
# PYTHONPATH=<builddir>/bindings/python/stage. `make install` puts it into
# the interpreter's site directory for the prefix (configure's
# --with-pythondir overrides).

SL_PY_PACKAGE = \
	bindings/python/sluice/__init__.py \
	bindings/python/sluice/__init__.pyi \
	bindings/python/sluice/py.typed \
	$(SL_PY_DATASET) \
	$(SL_PY_VISION) \
	$(SL_PY_TRANSFORMS) \
	bindings/python/sluice/context.py \
	bindings/python/sluice/context.pyi \
	$(SL_PY_COMMUNICATION) \
	$(SL_PY_NN) \
	$(SL_PY_NN_WRAP) \
	bindings/python/sluice/ops/__init__.py \
	bindings/python/sluice/ops/__init__.pyi \
	$(SL_PY_COMMON) \
	bindings/python/sluice/functional.py \
	bindings/python/sluice/functional.pyi \
	$(SL_PY_TRAIN)

# One list per installed folder, used by both the stage and the install
# rules, so that a file added to a folder is installed too.
SL_PY_DATASET = \
	bindings/python/sluice/dataset/__init__.py \
	bindings/python/sluice/dataset/__init__.pyi \
	bindings/python/sluice/dataset/_python_sources.py \
	bindings/python/sluice/dataset/_split_batch.py

SL_PY_VISION = \
	bindings/python/sluice/dataset/vision/__init__.py \
	bindings/python/sluice/dataset/vision/__init__.pyi \
	bindings/python/sluice/dataset/vision/c_transforms.py \
	bindings/python/sluice/dataset/vision/c_transforms.pyi

SL_PY_TRANSFORMS = \
	bindings/python/sluice/dataset/transforms/__init__.py \
	bindings/python/sluice/dataset/transforms/__init__.pyi \
	bindings/python/sluice/dataset/transforms/c_transforms.py \
	bindings/python/sluice/dataset/transforms/c_transforms.pyi

SL_PY_COMMUNICATION = \
	bindings/python/sluice/communication/__init__.py \
	bindings/python/sluice/communication/__init__.pyi \
	bindings/python/sluice/communication/management.py \
	bindings/python/sluice/communication/management.pyi

SL_PY_NN = \
	bindings/python/sluice/nn/__init__.py \
	bindings/python/sluice/nn/__init__.pyi \
	bindings/python/sluice/nn/cell.py \
	bindings/python/sluice/nn/cell.pyi \
	bindings/python/sluice/nn/layers.py \
	bindings/python/sluice/nn/layers.pyi \
	bindings/python/sluice/nn/metrics.py \
	bindings/python/sluice/nn/metrics.pyi

SL_PY_NN_WRAP = \
	bindings/python/sluice/nn/wrap/__init__.py \
	bindings/python/sluice/nn/wrap/__init__.pyi \
	bindings/python/sluice/nn/wrap/cell_wrapper.py \
	bindings/python/sluice/nn/wrap/cell_wrapper.pyi

SL_PY_COMMON = \
	bindings/python/sluice/common/__init__.py \
	bindings/python/sluice/common/__init__.pyi \
	bindings/python/sluice/common/dtype.py \
	bindings/python/sluice/common/dtype.pyi \
	bindings/python/sluice/common/initializer.py \
	bindings/python/sluice/common/initializer.pyi \
	bindings/python/sluice/common/parameter.py \
	bindings/python/sluice/common/parameter.pyi \
	bindings/python/sluice/common/tensor.py \
	bindings/python/sluice/common/tensor.pyi

SL_PY_TRAIN = \
	bindings/python/sluice/train/__init__.py \
	bindings/python/sluice/train/__init__.pyi \
	bindings/python/sluice/train/callback.py \
	bindings/python/sluice/train/callback.pyi \
	bindings/python/sluice/train/dataset_helper.py \
	bindings/python/sluice/train/dataset_helper.pyi \
	bindings/python/sluice/train/model.py \
	bindings/python/sluice/train/model.pyi \
	bindings/python/sluice/train/serialization.py \
	bindings/python/sluice/train/serialization.pyi \
	bindings/python/sluice/train/tracing.py \
	bindings/python/sluice/train/tracing.pyi

SL_PY_SOURCES = \
	bindings/python/src/sluice_py.h \
	bindings/python/src/module.c \
	bindings/python/src/tensor.c \
	bindings/python/src/dlpack.c \
	bindings/python/src/op.c \
	bindings/python/src/dataset.c \
	bindings/python/src/dataset_ops.c \
	bindings/python/src/sources.c \
	bindings/python/src/dataset_split.c \
	bindings/python/src/iterator.c \
	bindings/python/src/model.c \
	bindings/python/src/run.c \
	bindings/python/src/sink.c \
	bindings/python/src/graph.c \
	bindings/python/src/step.c \
	bindings/python/src/distributed.c

SL_PY_TESTS = \
	bindings/python/tests/conftest.py \
	bindings/python/tests/test_dataset.py \
	bindings/python/tests/test_zero_copy.py \
	bindings/python/tests/test_errors.py \
	bindings/python/tests/test_bad_samples.py \
	bindings/python/tests/test_stats.py \
	bindings/python/tests/test_threads.py \
	bindings/python/tests/test_ops.py \
	bindings/python/tests/test_imagenet_ops.py \
	bindings/python/tests/test_train.py \
	bindings/python/tests/test_trace.py \
	bindings/python/tests/test_custom_loop.py \
	bindings/python/tests/test_shared_params.py \
	bindings/python/tests/test_eval_while_training.py \
	bindings/python/tests/test_eval_models.py \
	bindings/python/tests/test_eager_forward.py \
	bindings/python/tests/test_dataset_names.py \
	bindings/python/tests/test_generator.py \
	bindings/python/tests/test_distributed.py

EXTRA_DIST += $(SL_PY_PACKAGE) $(SL_PY_TESTS) \
	bindings/python/examples/lenet_torch.py \
	bindings/python/examples/lenet_sluice.py \
	bindings/python/examples/seed000_model_train.py \
	bindings/python/examples/seed001_data_sink.py \
	bindings/python/examples/seed004_custom_loop.py \
	bindings/python/examples/seed004_custom_network.py \
	bindings/python/examples/eval_while_training.py \
	bindings/python/examples/distributed_lenet.py \
	bindings/python/examples/torch_ddp_backend.py \
	bench/python_dataset.py \
	bench/python_sources.py

if SL_PYTHON
sluicepydir = $(SL_PYTHONDIR)/sluice
sluicepy_LTLIBRARIES = bindings/python/_sluice.la
bindings_python__sluice_la_SOURCES = $(SL_PY_SOURCES)
bindings_python__sluice_la_CPPFLAGS = -I$(top_srcdir)/include $(PYTHON_CPPFLAGS)
# Python's headers break -Wstrict-prototypes and -Wmissing-prototypes
# nowhere we call them; the warnings stay on.
bindings_python__sluice_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(SL_LT_ONCE)
# A module for dlopen: no version, no lib prefix, and libpython's symbols
# come from the interpreter that loads it (so no -no-undefined).
# -Wl,-rpath: it finds the installed libsluice without an ldconfig after
# `make install` (libtool leaves out /usr/local/lib, which ld.so.conf has).
bindings_python__sluice_la_LDFLAGS = -module -avoid-version -shared -Wl,-rpath,$(libdir)
bindings_python__sluice_la_LIBADD = libsluice.la

sluicepy_DATA = bindings/python/sluice/__init__.py bindings/python/sluice/__init__.pyi \
	bindings/python/sluice/py.typed bindings/python/sluice/context.py \
	bindings/python/sluice/context.pyi bindings/python/sluice/functional.py \
	bindings/python/sluice/functional.pyi
sluicepycommunicationdir = $(sluicepydir)/communication
sluicepycommunication_DATA = $(SL_PY_COMMUNICATION)
sluicepynndir = $(sluicepydir)/nn
sluicepynn_DATA = $(SL_PY_NN)
sluicepynnwrapdir = $(sluicepynndir)/wrap
sluicepynnwrap_DATA = $(SL_PY_NN_WRAP)
sluicepyopsdir = $(sluicepydir)/ops
sluicepyops_DATA = bindings/python/sluice/ops/__init__.py bindings/python/sluice/ops/__init__.pyi
sluicepycommondir = $(sluicepydir)/common
sluicepycommon_DATA = $(SL_PY_COMMON)
sluicepytraindir = $(sluicepydir)/train
sluicepytrain_DATA = $(SL_PY_TRAIN)
sluicepydatasetdir = $(sluicepydir)/dataset
sluicepydataset_DATA = $(SL_PY_DATASET)
sluicepyvisiondir = $(sluicepydatasetdir)/vision
sluicepyvision_DATA = $(SL_PY_VISION)
sluicepytransformsdir = $(sluicepydatasetdir)/transforms
sluicepytransforms_DATA = $(SL_PY_TRANSFORMS)

# The .la file means nothing to Python: remove it once installed (and so
# remove the module by name on uninstall, which libtool did from the .la).
install-data-hook: install-python-hook
install-python-hook:
	rm -f "$(DESTDIR)$(sluicepydir)/_sluice.la"
uninstall-hook: uninstall-python-hook
uninstall-python-hook:
	rm -f "$(DESTDIR)$(sluicepydir)/_sluice.la" "$(DESTDIR)$(sluicepydir)/_sluice.so"
	rmdir "$(DESTDIR)$(sluicepytransformsdir)" "$(DESTDIR)$(sluicepyvisiondir)" \
		"$(DESTDIR)$(sluicepydatasetdir)" "$(DESTDIR)$(sluicepynnwrapdir)" \
		"$(DESTDIR)$(sluicepycommunicationdir)" \
		"$(DESTDIR)$(sluicepynndir)" \
		"$(DESTDIR)$(sluicepyopsdir)" "$(DESTDIR)$(sluicepycommondir)" \
		"$(DESTDIR)$(sluicepytraindir)" "$(DESTDIR)$(sluicepydir)" 2>/dev/null || :

# The installed package imports, and finds libsluice, from its own place.
installcheck-local: installcheck-python
installcheck-python:
	cd / && PYTHONPATH="$(DESTDIR)$(SL_PYTHONDIR)" PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -c \
		'import sluice, sluice.dataset.vision.c_transforms, sluice.dataset.transforms.c_transforms, sluice.train, sluice.nn.wrap.cell_wrapper, sluice.nn.metrics, sluice.ops, sluice.common.initializer, sluice.common.dtype, sluice.common.parameter, sluice.common.tensor, sluice.functional, sluice.communication.management; assert sluice.__file__.startswith("$(DESTDIR)$(SL_PYTHONDIR)"); print("installcheck: sluice", sluice.__version__, "from", sluice.__file__)'

noinst_DATA = bindings/python/stage.stamp
# local.mk too: a file added to the lists may be older than the stamp.
bindings/python/stage.stamp: $(SL_PY_PACKAGE) bindings/python/_sluice.la \
		$(srcdir)/bindings/python/local.mk
	rm -rf bindings/python/stage
	for f in $(SL_PY_PACKAGE); do \
		d=bindings/python/stage/$$(dirname "$${f#bindings/python/}") && \
		$(MKDIR_P) "$$d" && cp "$(srcdir)/$$f" "$$d/" || exit 1; \
	done
	cp bindings/python/.libs/_sluice.so bindings/python/stage/sluice/_sluice.so
	touch $@
endif

clean-local: clean-python-stage
clean-python-stage:
	rm -rf bindings/python/stage bindings/python/stage.stamp
.PHONY: clean-python-stage install-python-hook uninstall-python-hook installcheck-python
