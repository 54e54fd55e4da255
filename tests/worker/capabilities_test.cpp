#include "worker/capabilities.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "cost/gpu_specs.h"
#include "tests/support/temp_dir.h"

namespace jobctl::worker {
namespace {

TEST(Capabilities, ParsesNvidiaSmiCsv) {
  auto gpus = parse_nvidia_smi(
      "NVIDIA H100 80GB HBM3, 81559 MiB\n"
      "NVIDIA A100-SXM4-40GB, 40960 MiB\r\n"
      "\n"
      "garbage line\n"
      "Tesla T4, 15 GiB\n");
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].memory_mb, 81559);
  EXPECT_EQ(gpus[1].model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gpus[2].memory_mb, 15 * 1024);
  EXPECT_TRUE(parse_nvidia_smi("").empty());
}

TEST(Capabilities, JsonMatchesTheRegistrationShape) {
  cost::CpuFacts cpu{.model = "AMD EPYC", .vendor = "AuthenticAMD", .cores = 8, .vector_bits = 512, .fma = true,
                     .mhz = 2596.1};
  auto j = capabilities_json({{"Tesla T4", 15360}}, cpu, 32000);
  EXPECT_EQ(j["gpus"][0]["model"], "Tesla T4");
  EXPECT_EQ(j["gpus"][0]["memory_mb"], 15360);
  EXPECT_EQ(j["cpu_cores"], 8);
  EXPECT_EQ(j["memory_mb"], 32000);
  EXPECT_EQ(j["cpu"]["model"], "AMD EPYC");
  EXPECT_EQ(j["cpu"]["vector_bits"], 512);
  EXPECT_EQ(j["cpu"]["mhz"], 2596);
  EXPECT_FALSE(j.contains("simulated"));
  EXPECT_EQ(capabilities_json({}, cpu, 1, true)["simulated"], true);
  EXPECT_GE(detect_cpu_cores(), 1);
  EXPECT_GT(detect_memory_mb(), 0);
  EXPECT_EQ(detect_cpu().cores, detect_cpu_cores());
}

// jobctl-train --measure-cpu's line (docs/train-cli.md) read back; other lines and unusable
// rates are passed over; the machine's figure is the core's rate times the cores, and it is
// registered with the CPU.
TEST(Capabilities, ReadsTheCpuMeasurement) {
  const auto t = parse_cpu_throughput(
      "not json\n{\"event\":\"cpu_throughput\",\"core_gflops\":-1}\n"
      "{\"event\":\"cpu_throughput\",\"core_gflops\":61.5,\"rounds\":40,\"seconds\":0.1,"
      "\"kernels\":\"OpenBLAS 0.3.21 (Zen)\"}\n");
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->core_gflops, 61.5);
  EXPECT_EQ(t->kernels, "OpenBLAS 0.3.21 (Zen)");
  EXPECT_FALSE(parse_cpu_throughput("{\"event\":\"start\"}\n"));
  EXPECT_FALSE(parse_cpu_throughput("{\"event\":\"cpu_throughput\",\"core_gflops\":\"fast\"}"));
  EXPECT_DOUBLE_EQ(measured_machine_tflops(*t, 2), 0.123);
  cost::CpuFacts cpu{.model = "AMD EPYC", .vendor = "AuthenticAMD", .cores = 2, .vector_bits = 256, .fma = true,
                     .mhz = 2445};
  EXPECT_FALSE(capabilities_json({}, cpu, 1)["cpu"].contains("measured_tflops"));  // not measured: absent
  cpu.measured_tflops = 0.123;
  EXPECT_DOUBLE_EQ(capabilities_json({}, cpu, 1)["cpu"]["measured_tflops"].get<double>(), 0.123);
}

// /proc/cpuinfo of this repository's 2-core AMD EPYC VM (first processor, flags abridged) and of
// an AWS Graviton (Neoverse) machine.
TEST(Capabilities, ReadsTheCpuFromProcCpuinfo) {
  const auto x86 = parse_cpuinfo(
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
      "model name\t: AMD EPYC\nstepping\t: 1\ncpu MHz\t\t: 2596.144\ncache size\t: 1024 KB\n"
      "flags\t\t: fpu vme de pse tsc msr pae mce cx8 sse sse2 ht syscall nx fma cx16 sse4_1 sse4_2 avx f16c "
      "avx2 avx512f avx512dq avx512cd avx512bw avx512vl\n\n"
      "processor\t: 1\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.144\n");
  EXPECT_EQ(x86.model, "AMD EPYC");
  EXPECT_EQ(x86.vendor, "AuthenticAMD");
  EXPECT_EQ(x86.vector_bits, 512);
  EXPECT_TRUE(x86.fma);
  EXPECT_DOUBLE_EQ(x86.mhz, 2596.144);
  const auto arm = parse_cpuinfo(
      "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\n"
      "CPU implementer\t: 0x41\nCPU architecture: 8\n");
  EXPECT_EQ(arm.vendor, "ARM");
  EXPECT_EQ(arm.vector_bits, 128);
  EXPECT_TRUE(arm.fma);
}

std::string fixture(const char* name) {
  const char* src = std::getenv("JOBCTL_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/fixtures/nvidia-smi/" + name;
}

// Every fixture is a program that prints what nvidia-smi prints on that machine; run as
// --fake-gpus does, its GPUs are identified as the right variant.
TEST(Capabilities, FakeGpusFromEveryFixture) {
  struct Case {
    const char* fixture;
    size_t count;
    const char* variant;
  };
  for (const Case& c : {Case{"h100-sxm", 1, "H100-SXM"},        Case{"h100-pcie", 1, "H100-PCIe"},
                        Case{"h100-nvl", 1, "H100-NVL"},        Case{"h200", 1, "H200"},
                        Case{"a100-sxm4-40gb", 1, "A100-40GB-SXM"}, Case{"a100-sxm4-80gb", 1, "A100-80GB-SXM"},
                        Case{"a100-pcie-40gb", 1, "A100-40GB-PCIe"}, Case{"a100-80gb-pcie", 1, "A100-80GB-PCIe"},
                        Case{"v100-sxm2-16gb-x4", 4, "V100-16GB"}, Case{"v100-sxm2-16gb", 1, "V100-16GB"},
                        Case{"v100-sxm2-32gb", 1, "V100-32GB"},
                        Case{"t4", 1, "T4"},                    Case{"a10g", 1, "A10G"},
                        Case{"a10", 1, "A10"},                  Case{"l4", 1, "L4"},
                        Case{"l40s", 1, "L40S"},                Case{"rtx4090-x2", 2, "RTX4090"}}) {
    auto gpus = detect_fake_gpus(fixture(c.fixture));
    ASSERT_TRUE(gpus) << c.fixture << ": " << gpus.error().message;
    ASSERT_EQ(gpus->size(), c.count) << c.fixture;
    for (const auto& g : *gpus) {
      const cost::GpuSpec* spec = cost::identify_gpu(g.model, static_cast<double>(g.memory_mb) / 1024.0);
      ASSERT_NE(spec, nullptr) << c.fixture << ": " << g.model;
      EXPECT_EQ(spec->name, c.variant) << c.fixture;
    }
  }
  auto missing = detect_fake_gpus(fixture("no-such-program"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no-such-program"), std::string::npos);
  auto fails = detect_fake_gpus("/bin/false");
  ASSERT_FALSE(fails);
  EXPECT_NE(fails.error().message.find("exit code 1"), std::string::npos) << fails.error().message;
  auto silent = detect_fake_gpus("/bin/true");
  ASSERT_FALSE(silent);
  EXPECT_NE(silent.error().message.find("printed no GPU"), std::string::npos) << silent.error().message;
}

// The machine's identity: a cloud instance or Slurm job by its id; a local machine by
// /etc/machine-id and the worker's name (two differently named workers of one machine are two
// entries); nothing when the file cannot be read.
TEST(Capabilities, MachineIdentity) {
  jobctl::testing::TempDir dir;
  const std::string file = dir.file("machine-id");
  std::ofstream(file) << "3f2a9c0d5e6b4a1f8c7d6e5f4a3b2c1d\n";
  EXPECT_EQ(default_machine_id("gpu-box", "", "", file), "3f2a9c0d5e6b4a1f8c7d6e5f4a3b2c1d:gpu-box");
  EXPECT_EQ(default_machine_id("other", "", "", file), "3f2a9c0d5e6b4a1f8c7d6e5f4a3b2c1d:other");
  EXPECT_EQ(default_machine_id("gpu-box", "sim", "i-0abc", file), "sim:i-0abc");
  EXPECT_EQ(default_machine_id("gpu-box", "", "i-0abc", file), "cloud:i-0abc");
  EXPECT_EQ(default_machine_id("gpu-box", "", "", dir.file("absent")), "");
  std::ofstream(dir.file("empty")) << "\n";
  EXPECT_EQ(default_machine_id("gpu-box", "", "", dir.file("empty")), "");
}

}  // namespace
}  // namespace jobctl::worker
