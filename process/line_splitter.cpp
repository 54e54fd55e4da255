#include "process/line_splitter.h"

#include <algorithm>

namespace jobctl::process {

std::vector<std::string> LineSplitter::feed(std::string_view data) {
  std::vector<std::string> lines;
  while (!data.empty()) {
    const size_t nl = data.find('\n');
    const std::string_view piece = data.substr(0, nl);
    if (!dropping_) {
      const size_t room = max_line_ - std::min(max_line_, partial_.size());
      partial_.append(piece.substr(0, room));
      if (piece.size() > room) dropping_ = true;
    }
    if (nl == std::string_view::npos) break;
    if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
    lines.push_back(std::move(partial_));
    partial_.clear();
    dropping_ = false;
    data.remove_prefix(nl + 1);
  }
  return lines;
}

std::optional<std::string> LineSplitter::finish() {
  dropping_ = false;
  if (partial_.empty()) return std::nullopt;
  std::string rest = std::move(partial_);
  partial_.clear();
  return rest;
}

}  // namespace jobctl::process
