// A Slurm partition as jobctl sees it (docs/slurm.md "Partitions"): a pool of owned GPUs of one
// model, read from the cluster's node list (`sinfo --json`), unless the configuration names them.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "slurm/slurm_json.h"

namespace jobctl::slurm {

struct Partition {
  std::string name;
  std::string gpu_type;        // the GRES type of its GPU nodes ("a100"); empty: untyped GRES
  int gpus_per_node = 0;       // the most GPUs one node has (a job runs on one node)
  int nodes = 0;
  int usable_nodes = 0;        // not down, drained or failed
  int gpus = 0;                // on the usable nodes
  std::vector<std::string> node_names;
};

// One entry per partition named by any node, in name order. A partition whose nodes carry
// different GPU types takes the first node's (docs/slurm.md: configure one partition per model).
std::vector<Partition> partitions_from_nodes(const std::vector<SlurmNode>& nodes);

// Slurm's compressed host lists: "node1", "node[1-3,7]", "gpu[01-02],cpu5" -> each name. A list
// it cannot read comes back as the single string it was given.
std::vector<std::string> expand_hostlist(std::string_view list);

}  // namespace jobctl::slurm
