// The fixture of the e2e tests against a real one-node Slurm cluster (scripts/slurm-cluster.sh):
// one cluster per test program, started before its first test and stopped after its last (every
// Slurm job cancelled first), the final checkpoint of an uninterrupted run of the recovery tests'
// synthetic job to compare resumed runs with, and the Slurm commands pointed at the cluster.
// A test skips, saying why, where the cluster cannot start (no slurm-wlm, not root).
//
// Thread safety: gtest's, one test at a time.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "slurm/slurm_commands.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {

class SlurmClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new jobctl::testing::SlurmCluster();
    if (!cluster_->started()) return;
    reference_dir_ = new jobctl::testing::TempDir();
    reference_crc_ = new std::string(crc32c_hex(reference_final_checkpoint(reference_dir_->path().string())));
  }
  static void TearDownTestSuite() {
    delete cluster_;  // every Slurm job cancelled, every daemon stopped
    delete reference_crc_;
    delete reference_dir_;
    cluster_ = nullptr;
    reference_crc_ = nullptr;
    reference_dir_ = nullptr;
  }
  void SetUp() override {
    JOBCTL_REQUIRE_SLURM(*cluster_);
    ASSERT_NE(reference_crc_, nullptr);
    slurm_ = std::make_unique<slurm::SlurmCommands>(slurm::SlurmCommandsOptions{"", cluster_->conf(), 30});
  }

  // Slurm's record of one of its jobs (nullopt: unknown, or squeue failed).
  std::optional<slurm::SlurmJob> slurm_job(int64_t id) {
    auto jobs = slurm_->jobs();
    if (!jobs) return std::nullopt;
    for (auto& j : *jobs)
      if (j.id == id) return j;
    return std::nullopt;
  }

  static inline jobctl::testing::SlurmCluster* cluster_ = nullptr;
  static inline jobctl::testing::TempDir* reference_dir_ = nullptr;
  static inline std::string* reference_crc_ = nullptr;  // CRC32C of the uninterrupted run's final checkpoint
  std::unique_ptr<slurm::SlurmCommands> slurm_;
};

}  // namespace jobctl::e2e
