# Cross toolchain for aarch64-linux-gnu (Debian's gcc-aarch64-linux-gnu), with
# the target's libraries (hwloc, SLEEF, Google Benchmark) from Debian multiarch
# (the :arm64 packages, installed by tools/arm.sh). Target binaries run under
# qemu-user: CMAKE_CROSSCOMPILING_EMULATOR is -DQK_EMULATOR if given, else
# "qemu-aarch64 -L /usr/aarch64-linux-gnu"; the emulated CPU model comes from
# the QEMU_CPU environment variable (cortex-a53, cortex-a76, max), so one
# build serves every model.
#
#   cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(QK_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${QK_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${QK_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${QK_CROSS_TRIPLE})

# GCC 12's aarch64 loop vectorizer dies (internal compiler error in
# vect_transform_reduction) on a widening fmin/fmax reduction at -O3, e.g.
#   double mn = INFINITY; for (...) mn = fmin(mn, x[i]);   /* x: float */
# Debian bookworm ships 12.2. Loop vectorization only touches plain C loops
# (the kernels are intrinsics), so GCC 12 builds go without it.
execute_process(COMMAND ${CMAKE_C_COMPILER} -dumpfullversion OUTPUT_VARIABLE qk_cross_gcc_version
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(qk_cross_gcc_version VERSION_GREATER_EQUAL 12 AND qk_cross_gcc_version VERSION_LESS 13)
  set(CMAKE_C_FLAGS_INIT "-fno-tree-loop-vectorize")
  set(CMAKE_CXX_FLAGS_INIT "-fno-tree-loop-vectorize")
endif()

# Headers and libraries: the cross libc under /usr/aarch64-linux-gnu and the
# multiarch packages under /usr/{include,lib}/aarch64-linux-gnu. Programs
# (pkg-config, python) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${QK_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config must see only the target's .pc files, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${QK_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

if(QK_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${QK_EMULATOR})
else()
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-${CMAKE_SYSTEM_PROCESSOR} -L /usr/${QK_CROSS_TRIPLE})
endif()
