// `jobctl submit` builds the job spec (docs/architecture.md "The job spec") from a file, from flags, or from
// a file with flags overriding its keys. Only the flags given are written, so the daemon's
// defaults apply to everything else and the daemon remains the one validator.
//
// Thread safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"

namespace jobctl::cli {

struct SpecFlags {
  std::optional<std::string> name;
  std::optional<std::string> model;        // mlp | cnn
  std::optional<std::string> hidden;       // "256,128" ("" for none)
  std::optional<std::string> channels;     // "32,64"
  std::optional<std::string> activation;   // relu | gelu
  std::optional<std::string> dataset;      // fashion-mnist | synthetic
  std::optional<std::string> data_path;
  std::optional<long long> samples;
  std::optional<int> epochs;
  std::optional<int> batch_size;
  std::optional<double> lr;
  std::optional<std::string> optimizer;    // sgd | adamw
  std::optional<std::string> schedule;     // constant | step | cosine
  std::optional<long long> seed;
  std::optional<std::string> gpu;          // any | cpu | a GPU model
  std::optional<int> gpus;
  std::optional<int> nodes;                // resources.nodes: machines at once (a command job)
  std::optional<std::string> on_node_loss; // resources.on_node_loss: restart_gang or replace_node
  std::optional<int> priority;
  std::vector<std::string> after;          // "12" (a job) or "a14" (an array): `after`, succeeded
  // placement
  std::optional<std::string> mode;         // auto | local | cloud
  std::optional<std::string> spot;         // auto | always | never
  std::optional<double> deadline_hours;
  std::optional<double> max_usd_per_hour;
  // a command job's
  std::vector<std::string> env;            // "NAME=VALUE", each setting (or replacing) one variable
  std::vector<std::string> setup;          // shell commands; when given, they replace the file's list
  std::optional<double> estimate_hours;    // estimate.hours (estimate.gpu stays the file's)
  std::optional<std::string> image;        // the container image (an OCI reference with its registry)
  std::optional<std::string> image_pull;   // if_missing | always | never
  std::vector<std::string> mounts;         // "SOURCE:TARGET" or "SOURCE:TARGET:rw"; replace the file's list
};

// `base` is the spec file's JSON (or an empty object). With no model and no data anywhere, the
// spec gets an MLP on Fashion-MNIST. Errors name the flag ("--hidden"): the values a flag alone
// can get wrong (a list, a closed set, a positive number, NAME=VALUE) are checked here; the rest
// is jobctld's.
Expected<nlohmann::json> build_spec(nlohmann::json base, const SpecFlags& flags);

// `--mount SOURCE:TARGET[:rw]` as the spec's mount object ({"source", "target", "writable"}).
// The paths are the spec's to check (jobctld's); only the form is checked here.
Expected<nlohmann::json> parse_mount_flag(const std::string& text);

// Parses "256,128" into integers; "" is an empty list.
Expected<std::vector<int>> parse_int_list(const std::string& text, const std::string& flag);

}  // namespace jobctl::cli
