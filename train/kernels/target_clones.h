// JOBCTL_CPU_CLONES: compile a hot loop for AVX-512, AVX2+FMA and baseline x86-64, and let the
// dynamic loader pick the best the CPU supports (GCC target_clones / ifunc). The build stays
// portable (no -march=native) while the loops still get the wide vectors of the machine they run
// on. The choice is fixed per machine, so results stay bit-reproducible there.
//
// Off under AddressSanitizer (ifunc resolvers run before ASan is initialised) and on compilers or
// targets without target_clones.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define JOBCTL_CPU_CLONES __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
#else
#define JOBCTL_CPU_CLONES
#endif
