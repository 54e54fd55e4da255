// The `exec` driver: a real cloud plugged in through its own CLI, without code. Each operation
// runs a command from the daemon's configuration (cloud.exec.*) with {placeholders} filled in
// (shell-quoted: command_template.h) and reads JSON from its stdout (instance_json.h):
//
//   launch         {instance_type} {spot} {market} {region} {zone} {cloud} {usd_per_hour}
//                  {server} {tag} {name} {worker_command}   -> one instance object ({"id": ...})
//   terminate      {instance_id} {tag}                      -> anything (exit code 0 = done)
//   describe       {tag}                                    -> [instances] or {"instances": [...]}
//   interruptions  {tag} {since_ms}  (optional)             -> [notices]; without it the feed is
//                  derived from describe (instances that report notice_ms)
//
// {worker_command} is the command line an instance runs to start its worker (cloud.exec.
// worker_command, itself a template over {server} {instance_type} {spot_flag} {job_flags} {tag}).
// docs/clouds.md shows the commands for AWS EC2 spot.
//
// A command that exits non-zero, times out or prints no valid JSON is an error naming the
// configuration key and quoting the command's last line of stderr.
//
// Thread safety: see provider.h (one thread at a time).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cloud/provider.h"
#include "process/run.h"

namespace jobctl::cloud {

struct ExecProviderOptions {
  std::string launch;
  std::string terminate;
  std::string describe;
  std::string interruptions;   // optional
  std::string worker_command = "jobctl-worker --server {server} --instance-type {instance_type}{spot_flag}{job_flags}";
  int timeout_s = 300;         // per command
  std::vector<cost::Offer> offers;  // what list_offers() answers (the daemon's catalog)
};

class ExecProvider final : public Provider {
 public:
  explicit ExecProvider(ExecProviderOptions options);

  // Checks that launch, terminate and describe are set and that every template expands with
  // the placeholders its operation supplies (errors name the key: "cloud.exec.launch").
  static Status validate(const ExecProviderOptions& options);

  std::string_view kind() const override { return "exec"; }
  Expected<std::vector<cost::Offer>> list_offers() override;
  Expected<Instance> launch(const LaunchRequest& request) override;
  Status terminate(const std::string& instance_id) override;
  Expected<std::vector<Instance>> describe(const std::string& tag) override;
  Expected<std::vector<InterruptionNotice>> interruptions(const std::string& tag,
                                                          int64_t since_ms) override;

  // The launch command line for a request (exposed for tests and `--dry-run` style checks).
  Expected<std::string> launch_command(const LaunchRequest& request) const;

 private:
  // Runs one expanded command through /bin/sh with the configured timeout (process/run.h).
  Expected<process::RunResult> run_command(const std::string& command) const;
  Expected<nlohmann::json> run_json(const std::string& key, const std::string& command) const;
  ExecProviderOptions options_;
};

}  // namespace jobctl::cloud
