# shim/local.mk - libdtshim (the runtime shim over PMIx or PMI-2), its header, pkg-config file,
# Python module and unit tests; included from Makefile.am.

lib_LTLIBRARIES = shim/libdtshim.la
include_HEADERS = shim/dtshim.h
shim_libdtshim_la_SOURCES = \
	shim/dtshim.h \
	shim/shim.h \
	shim/wire.c shim/wire.h \
	shim/pmi2wire.c shim/pmi2wire.h \
	shim/pmi2.c shim/pmi2.h \
	shim/pmi2kvs.c \
	shim/world.c \
	shim/init.c \
	shim/pmix.c \
	shim/collective.c \
	shim/exchange.c \
	shim/request.c shim/request.h \
	shim/preempt.c \
	shim/rankmap.c shim/rankmap.h \
	shim/rankorder.c \
	shim/watchdog.c \
	shim/nccl.c \
	shim/dynload.c \
	libdist/address.c libdist/address.h \
	libdist/hostlist.c libdist/hostlist.h \
	libdist/io.c libdist/io.h \
	libdist/slurmconf.c libdist/slurmconf.h
# libpmix, NCCL and the CUDA runtime are not linked but opened at their first use
# (shim/dynload.c): configure's directories are where it looks first.
shim_libdtshim_la_CPPFLAGS = $(AM_CPPFLAGS) $(PMIX_CFLAGS) -DSLURM_SYSCONFDIR='"$(slurm_sysconfdir)"' \
	-DSHIM_PMIX_LIBDIR='"$(PMIX_LIBDIR)"'
shim_libdtshim_la_CFLAGS = $(AM_CFLAGS) -pthread
shim_libdtshim_la_LIBADD = $(DL_LIBS) -lm
shim_libdtshim_la_LDFLAGS = -version-info 0:0:0 -pthread -Wl,--no-undefined \
	-Wl,--version-script=$(srcdir)/shim/libdtshim.map
EXTRA_shim_libdtshim_la_DEPENDENCIES = shim/libdtshim.map
if HAVE_NCCL
shim_libdtshim_la_CPPFLAGS += -DDTSHIM_WITH_NCCL $(CUDA_CFLAGS) $(NCCL_CFLAGS) \
	-DSHIM_NCCL_LIBDIR='"$(NCCL_LIBDIR)"' -DSHIM_CUDA_LIBDIR='"$(CUDA_LIBDIR)"'
endif

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = shim/dtshim.pc

# The Python module, told where libdtshim is installed (DTSHIM_LIBRARY overrides it).
if HAVE_PYTHON
nodist_python_PYTHON = python/dtshim.py
endif
python/dtshim.py: $(srcdir)/python/dtshim.py.in Makefile
	$(AM_V_GEN)mkdir -p python && sed -e 's|@libdir[@]|$(libdir)|g' \
		$(srcdir)/python/dtshim.py.in > $@
all-local: python/dtshim.py
CLEANFILES += python/dtshim.py

if HAVE_CMOCKA
check_PROGRAMS += tests/unit/test_shim_wire
tests_unit_test_shim_wire_SOURCES = tests/unit/test_shim_wire.c shim/wire.c

check_PROGRAMS += tests/unit/test_shim_pmi2wire
tests_unit_test_shim_pmi2wire_SOURCES = tests/unit/test_shim_pmi2wire.c shim/pmi2wire.c shim/wire.c
tests_unit_test_shim_pmi2wire_CFLAGS = $(UNIT_COMPILEFLAGS) $(PMIX_CFLAGS)
tests_unit_test_shim_pmi2wire_LDFLAGS = $(UNIT_LINKFLAGS)
tests_unit_test_shim_pmi2wire_LDADD = $(UNIT_LINKLIBS) -lm
tests_unit_test_shim_wire_CFLAGS = $(UNIT_COMPILEFLAGS) $(PMIX_CFLAGS)
tests_unit_test_shim_wire_LDFLAGS = $(UNIT_LINKFLAGS)
tests_unit_test_shim_wire_LDADD = $(UNIT_LINKLIBS) -lm

# The plugin's rank order: the check of the tasks' RANK and GROUP_RANK, and the maps.
check_PROGRAMS += tests/unit/test_shim_rankmap
tests_unit_test_shim_rankmap_SOURCES = tests/unit/test_shim_rankmap.c shim/rankmap.c shim/wire.c
tests_unit_test_shim_rankmap_CFLAGS = $(UNIT_COMPILEFLAGS) $(PMIX_CFLAGS)
tests_unit_test_shim_rankmap_LDFLAGS = $(UNIT_LINKFLAGS)
tests_unit_test_shim_rankmap_LDADD = $(UNIT_LINKLIBS) -lm

# The requests' references, with callbacks on threads of their own as PMIx runs them.
check_PROGRAMS += tests/unit/test_shim_request
tests_unit_test_shim_request_SOURCES = tests/unit/test_shim_request.c shim/request.c shim/world.c \
	shim/dynload.c
tests_unit_test_shim_request_CFLAGS = $(UNIT_COMPILEFLAGS) $(PMIX_CFLAGS) -pthread
tests_unit_test_shim_request_LDFLAGS = $(UNIT_LINKFLAGS) -pthread
tests_unit_test_shim_request_LDADD = $(UNIT_LINKLIBS) $(DL_LIBS) -lm

# The library's own sources again, with the sanitizers, in a world of one (no PMIx server).
check_PROGRAMS += tests/unit/test_shim_local
tests_unit_test_shim_local_SOURCES = tests/unit/test_shim_local.c \
	shim/wire.c shim/pmi2wire.c shim/pmi2.c shim/pmi2kvs.c shim/world.c shim/init.c shim/pmix.c \
	shim/collective.c shim/exchange.c shim/request.c shim/preempt.c shim/watchdog.c shim/nccl.c \
	shim/dynload.c shim/rankmap.c shim/rankorder.c \
	libdist/address.c libdist/hostlist.c libdist/io.c libdist/slurmconf.c
tests_unit_test_shim_local_CFLAGS = $(UNIT_COMPILEFLAGS) $(PMIX_CFLAGS) -pthread \
	-DSLURM_SYSCONFDIR='"$(slurm_sysconfdir)"'
tests_unit_test_shim_local_LDFLAGS = $(UNIT_LINKFLAGS) -pthread \
	-Wl,--wrap=getaddrinfo -Wl,--wrap=freeaddrinfo
tests_unit_test_shim_local_LDADD = $(UNIT_LINKLIBS) $(DL_LIBS) -lm
endif

EXTRA_DIST += \
	doc/shim.md \
	shim/libdtshim.map \
	python/dtshim.py.in
