# Sourced by scripts/test.sh and scripts/start.sh: the CMake options of jobctl's builds, kept in
# one place so that both scripts configure build/release the same way (a different option would
# make each rebuild everything the other built).
#
# Unity builds: CMake batches each target's sources into a few translation units, so the heavy
# headers (nlohmann/json, Asio, GoogleTest, CLI11) are parsed and their templates compiled once
# per batch instead of once per file, which roughly halves a build on 2 cores.
jobctl_unity_args=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
# The release build: -O2 (CMake's Release default is -O3: slower to build, no faster here). Its
# unit-test executables stay out of `all`: the sanitizer build builds and runs them.
jobctl_release_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
  -DJOBCTL_UNIT_TESTS_IN_ALL=OFF "${jobctl_unity_args[@]}")
# The sanitizer build of the unit tests: ASan + UBSan find the same bugs unoptimised (-O0), and
# it builds about twice as fast as -O2. No CUDA (nvcc takes no -fsanitize).
jobctl_asan_args=(-G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1" -DJOBCTL_SANITIZE=ON
  -DJOBCTL_CUDA=OFF "${jobctl_unity_args[@]}")
# The ThreadSanitizer build of the daemon, worker and store tests (target jobctl-tsan-tests, label
# tsan). Clang rather than GCC: the same compilation runs Clang's -Wthread-safety analysis over
# base/mutex.h's annotations (errors for our code), so one build checks the locking statically and
# the races at run time. -O0: these tests wait on threads, sockets and the disk more than they
# compute, so they run as fast as at -O1 (14 s), while the build takes half the CPU time (3.2 min
# against 5.6 min from scratch; bench/RESULTS.md). No CUDA. The tests that run jobctl-train take it
# from the release build (JOBCTL_TRAIN_PATH, set by scripts/test.sh): the trainer is another
# process, not the code under test.
jobctl_tsan_args=(-G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1"
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DJOBCTL_TSAN=ON -DJOBCTL_CUDA=OFF
  "${jobctl_unity_args[@]}")
