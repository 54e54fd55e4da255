# Shared build options for every jobctl target. Included by the root CMakeLists.txt and by
# train/CMakeLists.txt when train/ is built alone.
include_guard(GLOBAL)

option(JOBCTL_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
# ThreadSanitizer: scripts/test.sh builds only the tests registered with TSAN (target
# jobctl-tsan-tests, label tsan) this way, with Clang, whose -Wthread-safety checks the same build.
option(JOBCTL_TSAN "Build with ThreadSanitizer" OFF)
option(JOBCTL_WERROR "Treat warnings as errors" OFF)
# OFF leaves unit-test executables out of `all` (the `jobctl-unit-tests` target still builds
# them): scripts/test.sh's release build runs every label but `unit`, which its sanitizer build
# has already run, so it does not compile them twice.
option(JOBCTL_UNIT_TESTS_IN_ALL "Build unit-test executables as part of the default target" ON)

set(JOBCTL_SOURCE_ROOT ${CMAKE_CURRENT_LIST_DIR}/.. CACHE INTERNAL "")

if(JOBCTL_SANITIZE AND JOBCTL_TSAN)
  message(FATAL_ERROR "JOBCTL_SANITIZE (ASan) and JOBCTL_TSAN cannot be combined: one build each")
endif()
if(JOBCTL_SANITIZE)
  # UBSan without its null and alignment checks: under GCC they instrument every pointer use and
  # cost a fifth of this build's compile time (bench/RESULTS.md), and the test command is CPU-bound.
  # ASan still stops at a null dereference; the fuzz targets (clang, fuzz/) keep every UBSan check
  # on the parsers, where a misaligned read would come from.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=null,alignment -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()
if(JOBCTL_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# Warnings for our own targets (not for third-party code): call on every jobctl target.
function(jobctl_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference -Wformat=2
      -Wimplicit-fallthrough>)
  if(JOBCTL_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
  # Clang checks the locking of the members a mutex guards (base/mutex.h's annotations); a
  # mistake is an error in our code. GCC has no such analysis.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wthread-safety -Werror=thread-safety>)
  endif()
endfunction()

# jobctl_test(NAME name SOURCES ... LIBS ... LABELS unit|integration|e2e|cuda|browser [TIMEOUT s]
#             [CPUS n] [ENV VAR=value ...] [SKIPPABLE] [TSAN])
# One GoogleTest executable registered with CTest under the given labels. Unit tests are also
# collected for the `jobctl-unit-tests` target. TSAN: a test of code that runs on several threads
# (the daemon, the worker, the store); in a JOBCTL_TSAN build it also gets the label `tsan` and is
# collected for the `jobctl-tsan-tests` target. CPUS: the cores the test keeps busy (default 1),
# so that `ctest -j` counts a compute-bound test for what it takes (scripts/test.sh runs twice as
# many tests as cores: most of them wait on processes and sockets).
function(jobctl_test)
  cmake_parse_arguments(T "SKIPPABLE;TSAN" "NAME;TIMEOUT;CPUS" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  if(T_TSAN AND JOBCTL_TSAN)
    list(APPEND T_LABELS tsan)
    set_property(GLOBAL APPEND PROPERTY JOBCTL_TSAN_TEST_TARGETS ${T_NAME})
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  jobctl_warnings(${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # SKIPPABLE: an executable whose tests all skip (no GPU, no browser, no shared data) shows as
  # "skipped" in CTest rather than "passed". cmake/run_skippable_test.sh decides from the exit code
  # and GoogleTest's counts: skipped (77) only when it succeeded and every test skipped; a failing
  # test stays a failure.
  if(T_SKIPPABLE)
    add_test(NAME ${T_NAME} COMMAND ${JOBCTL_SOURCE_ROOT}/cmake/run_skippable_test.sh
             $<TARGET_FILE:${T_NAME}> --gtest_color=no)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE 77)
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_NAME} --gtest_color=no)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "JOBCTL_SOURCE_DIR=${JOBCTL_SOURCE_ROOT};JOBCTL_BINARY_DIR=${CMAKE_BINARY_DIR};${T_ENV}")
  if(T_CPUS)
    set_tests_properties(${T_NAME} PROPERTIES PROCESSORS ${T_CPUS})
  endif()
  if("unit" IN_LIST T_LABELS)
    set_property(GLOBAL APPEND PROPERTY JOBCTL_UNIT_TEST_TARGETS ${T_NAME})
    if(NOT JOBCTL_UNIT_TESTS_IN_ALL)
      set_target_properties(${T_NAME} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endif()
  endif()
endfunction()
