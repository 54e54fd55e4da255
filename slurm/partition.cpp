#include "slurm/partition.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace jobctl::slurm {

std::vector<Partition> partitions_from_nodes(const std::vector<SlurmNode>& nodes) {
  std::map<std::string, Partition> by_name;
  for (const auto& n : nodes) {
    for (const auto& name : n.partitions) {
      Partition& p = by_name[name];
      p.name = name;
      ++p.nodes;
      p.node_names.push_back(n.name);
      if (p.gpu_type.empty() && n.gpus > 0) p.gpu_type = n.gpu_type;
      p.gpus_per_node = std::max(p.gpus_per_node, n.gpus);
      if (n.usable()) {
        ++p.usable_nodes;
        p.gpus += n.gpus;
      }
    }
  }
  std::vector<Partition> out;
  out.reserve(by_name.size());
  for (auto& [name, p] : by_name) out.push_back(std::move(p));
  return out;
}

namespace {

// Splits on commas outside brackets.
std::vector<std::string_view> top_level_items(std::string_view list) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      if (i > start) out.push_back(list.substr(start, i - start));
      start = i + 1;
    } else if (list[i] == '[') {
      ++depth;
    } else if (list[i] == ']') {
      --depth;
    }
  }
  return out;
}

bool read_number(std::string_view s, long& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> out;
  for (std::string_view item : top_level_items(list)) {
    const size_t open = item.find('[');
    const size_t close = item.rfind(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      out.emplace_back(item);
      continue;
    }
    const std::string_view prefix = item.substr(0, open), suffix = item.substr(close + 1);
    for (std::string_view range : top_level_items(item.substr(open + 1, close - open - 1))) {
      const size_t dash = range.find('-');
      const std::string_view lo_text = range.substr(0, dash);
      const std::string_view hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
      long lo = 0, hi = 0;
      if (!read_number(lo_text, lo) || !read_number(hi_text, hi) || hi < lo || hi - lo > 100000) {
        return {std::string(list)};
      }
      for (long v = lo; v <= hi; ++v) {
        std::string digits = std::to_string(v);
        // Zero padding as written: node[01-10] -> node01 ... node10.
        if (digits.size() < lo_text.size()) digits.insert(0, lo_text.size() - digits.size(), '0');
        out.push_back(std::string(prefix) + digits + std::string(suffix));
      }
    }
  }
  return out;
}

}  // namespace jobctl::slurm
