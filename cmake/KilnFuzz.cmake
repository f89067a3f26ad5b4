# The fuzz build: clang with libFuzzer. Every target in it (kiln_common, kiln_slurm and the fuzz
# targets) is compiled with coverage for libFuzzer, AddressSanitizer, UndefinedBehaviorSanitizer
# and libstdc++'s assertions; a UB report aborts the input (float-cast-overflow alone is
# recoverable, so that tests/fuzz/ubsan.supp can name a known one; run-fuzz.sh sets halt_on_error).
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "KILN_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++), not ${CMAKE_CXX_COMPILER_ID}")
endif()
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
check_cxx_source_compiles([=[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
]=] KILN_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT KILN_HAVE_LIBFUZZER)
  message(FATAL_ERROR "KILN_FUZZ: ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer (on Debian 12: libclang-rt-14-dev)")
endif()
set(KILN_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize-recover=float-cast-overflow)
add_compile_options(-fsanitize=fuzzer-no-link ${KILN_SANITIZE} -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS)
add_link_options(${KILN_SANITIZE})
