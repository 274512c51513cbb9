# tests/fuzz/local.mk - libFuzzer harnesses for every parser of text from a
# user, an admin or the network, and one for the plugin's slurmstepd path;
# included from Makefile.am.  `make fuzz` builds them with clang (found at
# make time: `make` and `make check` never need clang); scripts/fuzz runs
# them, and scripts/check runs each for a few seconds.

FUZZ_CC = clang
FUZZ_SANITIZERS = -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_FLAGS = -g -O1 -fno-omit-frame-pointer $(FUZZ_SANITIZERS) $(WARNING_CFLAGS) \
	-I$(top_srcdir) $(HWLOC_CFLAGS)
FUZZ_BUILD = $(AM_V_GEN)$(MKDIR_P) tests/fuzz && $(FUZZ_CC) $(FUZZ_FLAGS) -o $@
FUZZ_DEPS = $(srcdir)/tests/fuzz/fuzz.h $(srcdir)/tests/fuzz/local.mk \
	$(srcdir)/libdist/address.h $(srcdir)/libdist/bind.h $(srcdir)/libdist/config.h \
	$(srcdir)/libdist/env.h $(srcdir)/libdist/handover.h $(srcdir)/libdist/hostlist.h \
	$(srcdir)/libdist/layout.h $(srcdir)/libdist/netgroup.h $(srcdir)/libdist/port.h \
	$(srcdir)/libdist/ranges.h $(srcdir)/libdist/tfconfig.h $(srcdir)/libdist/topo.h

FUZZ_HARNESSES = \
	tests/fuzz/fuzz_config \
	tests/fuzz/fuzz_ranges \
	tests/fuzz/fuzz_layout \
	tests/fuzz/fuzz_address \
	tests/fuzz/fuzz_port \
	tests/fuzz/fuzz_tfconfig \
	tests/fuzz/fuzz_gpus \
	tests/fuzz/fuzz_topo_seal \
	tests/fuzz/fuzz_topo_xml \
	tests/fuzz/fuzz_handover \
	tests/fuzz/fuzz_wire \
	tests/fuzz/fuzz_pmi2 \
	tests/fuzz/fuzz_doctor \
	tests/fuzz/fuzz_hang \
	tests/fuzz/fuzz_fabric \
	tests/fuzz/fuzz_spank

# Builds the harnesses when $(FUZZ_CC) can link libFuzzer, else says why not.
fuzz:
	@if printf 'int LLVMFuzzerTestOneInput (const char *d, unsigned long n) { return 0; }\n' \
	    | $(FUZZ_CC) $(FUZZ_SANITIZERS) -x c -o tests/fuzz-probe - >/dev/null 2>&1; then \
	    rm -f tests/fuzz-probe; \
	    $(MAKE) $(AM_MAKEFLAGS) $(FUZZ_HARNESSES); \
	else \
	    rm -f tests/fuzz-probe; \
	    echo "fuzz: skipped: '$(FUZZ_CC)' cannot link -fsanitize=fuzzer (on Debian: apt-get install clang libclang-rt-dev)"; \
	fi
.PHONY: fuzz

FUZZ_SRC_config = $(srcdir)/tests/fuzz/fuzz_config.c $(srcdir)/libdist/config.c
tests/fuzz/fuzz_config: $(FUZZ_SRC_config) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_config)

FUZZ_SRC_ranges = $(srcdir)/tests/fuzz/fuzz_ranges.c $(srcdir)/libdist/ranges.c
tests/fuzz/fuzz_ranges: $(FUZZ_SRC_ranges) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_ranges)

FUZZ_SRC_layout = $(srcdir)/tests/fuzz/fuzz_layout.c $(srcdir)/libdist/layout.c
tests/fuzz/fuzz_layout: $(FUZZ_SRC_layout) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_layout)

FUZZ_SRC_address = $(srcdir)/tests/fuzz/fuzz_address.c $(srcdir)/libdist/address.c
tests/fuzz/fuzz_address: $(FUZZ_SRC_address) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_address)

FUZZ_SRC_port = $(srcdir)/tests/fuzz/fuzz_port.c $(srcdir)/libdist/port.c \
	$(srcdir)/libdist/config.c
tests/fuzz/fuzz_port: $(FUZZ_SRC_port) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_port)

FUZZ_SRC_tfconfig = $(srcdir)/tests/fuzz/fuzz_tfconfig.c $(srcdir)/libdist/tfconfig.c
tests/fuzz/fuzz_tfconfig: $(FUZZ_SRC_tfconfig) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_tfconfig)

FUZZ_SRC_gpus = $(srcdir)/tests/fuzz/fuzz_gpus.c $(srcdir)/libdist/bind.c \
	$(srcdir)/libdist/topo.c $(srcdir)/libdist/ranges.c
tests/fuzz/fuzz_gpus: $(FUZZ_SRC_gpus) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_gpus) $(HWLOC_LIBS)

FUZZ_SRC_topo_seal = $(srcdir)/tests/fuzz/fuzz_topo_seal.c $(srcdir)/libdist/topo.c \
	$(srcdir)/libdist/ranges.c
tests/fuzz/fuzz_topo_seal: $(FUZZ_SRC_topo_seal) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_topo_seal) $(HWLOC_LIBS)

FUZZ_SRC_topo_xml = $(srcdir)/tests/fuzz/fuzz_topo_xml.c $(srcdir)/libdist/topo.c \
	$(srcdir)/libdist/bind.c $(srcdir)/libdist/ranges.c
tests/fuzz/fuzz_topo_xml: $(FUZZ_SRC_topo_xml) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_topo_xml) $(HWLOC_LIBS)

FUZZ_SRC_handover = $(srcdir)/tests/fuzz/fuzz_handover.c $(srcdir)/libdist/handover.c \
	$(srcdir)/libdist/netgroup.c $(srcdir)/libdist/hostlist.c
tests/fuzz/fuzz_handover: $(FUZZ_SRC_handover) $(FUZZ_DEPS)
	$(FUZZ_BUILD) $(FUZZ_SRC_handover)

FUZZ_SRC_wire = $(srcdir)/tests/fuzz/fuzz_wire.c $(srcdir)/shim/wire.c \
	$(srcdir)/libdist/slurmconf.c
tests/fuzz/fuzz_wire: $(FUZZ_SRC_wire) $(FUZZ_DEPS) $(srcdir)/shim/wire.h
	$(FUZZ_BUILD) $(PMIX_CFLAGS) $(FUZZ_SRC_wire) -lm

FUZZ_SRC_pmi2 = $(srcdir)/tests/fuzz/fuzz_pmi2.c $(srcdir)/shim/pmi2wire.c \
	$(srcdir)/libdist/hostlist.c
tests/fuzz/fuzz_pmi2: $(FUZZ_SRC_pmi2) $(FUZZ_DEPS) $(srcdir)/shim/pmi2wire.h
	$(FUZZ_BUILD) $(FUZZ_SRC_pmi2)

FUZZ_SRC_doctor = $(srcdir)/tests/fuzz/fuzz_doctor.c $(srcdir)/tools/doctor/auth.c \
	$(srcdir)/tools/doctor/wire.c $(srcdir)/tools/doctor/stack.c $(srcdir)/libdist/handover.c \
	$(srcdir)/libdist/ranges.c
tests/fuzz/fuzz_doctor: $(FUZZ_SRC_doctor) $(FUZZ_DEPS) $(srcdir)/tools/doctor/doctor.h \
		$(srcdir)/tools/doctor/auth.h $(srcdir)/tools/doctor/stack.h
	$(FUZZ_BUILD) $(CRYPTO_CFLAGS) $(FUZZ_SRC_doctor) $(CRYPTO_LIBS)

FUZZ_SRC_hang = $(srcdir)/tests/fuzz/fuzz_hang.c $(srcdir)/tools/doctor/hang.c \
	$(srcdir)/tools/doctor/hangverdict.c $(srcdir)/tools/doctor/text.c \
	$(srcdir)/tools/doctor/wire.c $(srcdir)/libdist/ranges.c $(srcdir)/libdist/handover.c
tests/fuzz/fuzz_hang: $(FUZZ_SRC_hang) $(FUZZ_DEPS) $(srcdir)/tools/doctor/hang.h \
		$(srcdir)/tools/doctor/doctor.h
	$(FUZZ_BUILD) $(CRYPTO_CFLAGS) $(FUZZ_SRC_hang) $(CRYPTO_LIBS)

FUZZ_SRC_fabric = $(srcdir)/tests/fuzz/fuzz_fabric.c $(srcdir)/tools/doctor/fabric.c \
	$(srcdir)/tools/doctor/text.c $(srcdir)/tools/doctor/wire.c $(srcdir)/libdist/ranges.c
tests/fuzz/fuzz_fabric: $(FUZZ_SRC_fabric) $(FUZZ_DEPS) $(srcdir)/tools/doctor/fabric.h \
		$(srcdir)/tools/doctor/doctor.h
	$(FUZZ_BUILD) $(FUZZ_SRC_fabric)

# The plugin's own sources, linked as they are, with the stand-in slurmstepd:
# the link's --wrap sends their name look-ups and CPU affinity to the
# stand-in, which also takes spank/forward.c's place (the step's stderr); the
# topology is a file of the tree.  (Make check's replay lists the same files.)
FUZZ_SPANK_PLUGIN = spank/compat.c spank/plugin.c spank/stepenv.c spank/local.c spank/option.c \
	spank/remote.c spank/master.c spank/report.c spank/layout.c spank/container.c \
	spank/topocache.c spank/bind.c spank/failfast.c spank/network.c
FUZZ_SPANK_WRAP = -Wl,--wrap=getaddrinfo,--wrap=freeaddrinfo,--wrap=sched_setaffinity
# (the stand-in and every source the plugin links; the harness and bench_sim add theirs)
FUZZ_SPANK_LINKED = $(srcdir)/tests/fuzz/spank_standin.c \
	$(srcdir)/spank/compat.c $(srcdir)/spank/plugin.c $(srcdir)/spank/stepenv.c \
	$(srcdir)/spank/local.c \
	$(srcdir)/spank/option.c $(srcdir)/spank/remote.c $(srcdir)/spank/master.c \
	$(srcdir)/spank/report.c $(srcdir)/spank/layout.c $(srcdir)/spank/container.c \
	$(srcdir)/spank/topocache.c $(srcdir)/spank/bind.c $(srcdir)/spank/failfast.c \
	$(srcdir)/spank/network.c $(srcdir)/libdist/io.c $(srcdir)/libdist/netif.c \
	$(srcdir)/libdist/address.c $(srcdir)/libdist/bind.c $(srcdir)/libdist/config.c \
	$(srcdir)/libdist/env.c $(srcdir)/libdist/handover.c $(srcdir)/libdist/hostlist.c \
	$(srcdir)/libdist/layout.c $(srcdir)/libdist/netgroup.c $(srcdir)/libdist/port.c \
	$(srcdir)/libdist/ranges.c $(srcdir)/libdist/tfconfig.c $(srcdir)/libdist/topo.c \
	$(srcdir)/libdist/topofile.c
FUZZ_SRC_spank = $(srcdir)/tests/fuzz/fuzz_spank.c $(FUZZ_SPANK_LINKED)
# The plugin's caches go to a directory of the harness's own, not the node's /run.
FUZZ_SPANK_FLAGS = $(SLURM_CPPFLAGS) \
	-DFUZZ_TOPOLOGY_DIR='"$(abs_top_srcdir)/tests/topologies"' \
	-DDIST_TRAIN_CACHE_DIR='"/tmp/fuzz_spank_cache"'
tests/fuzz/fuzz_spank: $(FUZZ_SRC_spank) $(FUZZ_DEPS) $(srcdir)/tests/fuzz/spank_standin.h \
		$(srcdir)/spank/dist_train.h $(srcdir)/spank/compat.h
	$(FUZZ_BUILD) $(FUZZ_SPANK_FLAGS) $(FUZZ_SRC_spank) $(HWLOC_LIBS) $(FUZZ_SPANK_WRAP)

# scripts/bench-sim's driver: the same sources and stand-in, optimized as the plugin is
# built, with the plugin's allocations sampled (the link's --wrap) for its heap figures.
BENCH_SIM_SRC = $(srcdir)/tests/fuzz/bench_sim.c $(FUZZ_SPANK_LINKED) \
	$(srcdir)/tools/doctor/layout.c $(srcdir)/tools/doctor/wire.c
BENCH_SIM_WRAP = $(FUZZ_SPANK_WRAP),--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup
tests/fuzz/bench_sim: $(BENCH_SIM_SRC) $(FUZZ_DEPS) $(srcdir)/tests/fuzz/spank_standin.h \
		$(srcdir)/spank/dist_train.h $(srcdir)/spank/compat.h $(srcdir)/tools/doctor/doctor.h
	$(AM_V_GEN)$(MKDIR_P) tests/fuzz && $(CC) -O2 -g $(WARNING_CFLAGS) -I$(top_srcdir) \
	    $(HWLOC_CFLAGS) $(SLURM_CPPFLAGS) -DDIST_TRAIN_CACHE_DIR='"/tmp/bench_sim_cache"' \
	    -o $@ $(BENCH_SIM_SRC) $(HWLOC_LIBS) $(BENCH_SIM_WRAP)
CLEANFILES += tests/fuzz/bench_sim

CLEANFILES += $(FUZZ_HARNESSES)

# What the harnesses found, replayed through fuzz_spank's code by make check
# (gcc, ASan, UBSan; no libFuzzer).  A case still unfixed goes in XFAIL_TESTS.
if HAVE_CMOCKA
# (the program is built here, tests/fuzz/.gitignore knows it)
check_PROGRAMS += tests/fuzz/test_fuzz_regressions
tests_fuzz_test_fuzz_regressions_SOURCES = tests/unit/test_fuzz_regressions.c \
	tests/fuzz/fuzz_spank.c tests/fuzz/spank_standin.c tests/fuzz/spank_standin.h \
	tests/fuzz/fuzz.h $(FUZZ_SPANK_PLUGIN) $(LIBDIST_SOURCES)
tests_fuzz_test_fuzz_regressions_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFUZZ_TOPOLOGY_DIR='"$(abs_top_srcdir)/tests/topologies"' \
	-DDIST_TRAIN_CACHE_DIR='"/tmp/fuzz_spank_cache"' -DFUZZ_SPANK_EXPECT
tests_fuzz_test_fuzz_regressions_CFLAGS = $(UNIT_COMPILEFLAGS)
tests_fuzz_test_fuzz_regressions_LDFLAGS = $(UNIT_LINKFLAGS) $(FUZZ_SPANK_WRAP)
tests_fuzz_test_fuzz_regressions_LDADD = $(UNIT_LINKLIBS) $(HWLOC_LIBS)
endif

EXTRA_DIST += \
	tests/fuzz/README.md \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_config.c \
	tests/fuzz/fuzz_ranges.c \
	tests/fuzz/fuzz_layout.c \
	tests/fuzz/fuzz_address.c \
	tests/fuzz/fuzz_port.c \
	tests/fuzz/fuzz_tfconfig.c \
	tests/fuzz/fuzz_gpus.c \
	tests/fuzz/fuzz_topo_seal.c \
	tests/fuzz/fuzz_topo_xml.c \
	tests/fuzz/fuzz_handover.c \
	tests/fuzz/fuzz_wire.c \
	tests/fuzz/fuzz_pmi2.c \
	tests/fuzz/fuzz_doctor.c \
	tests/fuzz/fuzz_hang.c \
	tests/fuzz/fuzz_fabric.c \
	tests/fuzz/fuzz_spank.c \
	tests/fuzz/spank_standin.c \
	tests/fuzz/spank_standin.h \
	tests/fuzz/bench_sim.c \
	tests/fuzz/seal-topology \
	tests/fuzz/corpus
