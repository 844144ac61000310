# Sanitizers for every target.
#   VITATTN_SANITIZE=ON (or address): ASan + UBSan, the asan preset.
#   VITATTN_SANITIZE=thread:          ThreadSanitizer, the tsan preset.
#   VITATTN_FUZZ=ON (clang only):     ASan + UBSan + libFuzzer's coverage, the fuzz preset.
# UBSan never recovers (-fno-sanitize-recover=all): the first report ends the process with a
# failing exit status, so a test cannot pass over it.
#
# VITATTN_SANITIZER_ENV is the environment tests of the binary run with: a sanitizer report
# exits with 86, a status vitattn itself never uses (its 1 means "some inputs failed", which
# several tests expect), so a report can never pass for an expected failure. As in the fuzzers
# (-rss_limit_mb=2048), a single allocation over 2 GB is a failure: it is how the replay of
# fuzz/regressions/ notices an image whose size escaped the header check.
set(VITATTN_SANITIZE OFF CACHE STRING "Sanitizers: OFF, ON or address (ASan+UBSan), thread (TSan)")
set_property(CACHE VITATTN_SANITIZE PROPERTY STRINGS OFF ON address thread)
option(VITATTN_FUZZ "Build the libFuzzer targets in fuzz/ (clang; implies ASan+UBSan)" OFF)

set(VITATTN_SANITIZER_ENV "")
set(_asan_env "ASAN_OPTIONS=exitcode=86:detect_leaks=1:max_allocation_size_mb=2048"
              "UBSAN_OPTIONS=exitcode=86:halt_on_error=1:print_stacktrace=1")
if(VITATTN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "VITATTN_FUZZ needs clang (libFuzzer); use the fuzz preset")
  endif()
  if(VITATTN_SANITIZE STREQUAL "thread")
    message(FATAL_ERROR "VITATTN_FUZZ comes with ASan+UBSan; it cannot be combined with VITATTN_SANITIZE=thread")
  endif()
  # fuzzer-no-link: coverage instrumentation for the libraries; only the fuzzer binaries
  # link libFuzzer itself (-fsanitize=fuzzer, fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  set(VITATTN_SANITIZER_ENV ${_asan_env})
elseif(VITATTN_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  set(VITATTN_SANITIZER_ENV
      "TSAN_OPTIONS=exitcode=86:halt_on_error=1:second_deadlock_stack=1:suppressions=${PROJECT_SOURCE_DIR}/tests/tsan.supp")
elseif(VITATTN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
  set(VITATTN_SANITIZER_ENV ${_asan_env})
endif()

# -Werror with GCC's sanitizers: GCC's manual says sanitizers "tend to increase the rate of
# false positive warnings, most notably those around -Wmaybe-uninitialized", and recommends
# against combining the two. GCC 12's asan build shows it: libstdc++'s own std::regex
# (_NFA::_M_insert_subexpr_begin, inlined into src/image/decoder_messages.cpp) "may be used
# uninitialized". GCC 12's tsan build shows the same of -Wnull-dereference: CLI11's
# std::vector<std::string>::emplace_back, inlined into src/cli/forward_options.cpp, is a
# "potential null pointer dereference" inside basic_string.h under -fsanitize=thread only.
# So under a GCC sanitizer those two warnings are still printed but do not fail the build;
# every other warning does. The dev and release presets build without sanitizers and with
# -Werror, where both stay errors, and CI builds both.
if(VITATTN_WERROR AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND (VITATTN_FUZZ OR VITATTN_SANITIZE))
  target_compile_options(vitattn_warnings INTERFACE -Wno-error=maybe-uninitialized -Wno-error=null-dereference)
endif()
