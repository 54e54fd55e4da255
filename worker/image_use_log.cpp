#include "worker/image_use_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/text_file.h"

namespace jobctl::worker {

ImageUseLog::ImageUseLog(std::filesystem::path file) : file_(std::move(file)) {}

Status ImageUseLog::load() {
  last_used_.clear();
  std::error_code ec;
  if (!std::filesystem::exists(file_, ec)) return ok_status();
  auto text = read_text_file(file_.string(), "image use log");
  if (!text) return text.error();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return make_error(ErrorCode::io, file_.string() + " is not a JSON object");
  for (const auto& [id, ms] : j.items())
    if (ms.is_number_integer()) last_used_[id] = ms.get<int64_t>();
  return ok_status();
}

Status ImageUseLog::save() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [id, ms] : last_used_) j[id] = ms;
  const std::string text = j.dump() + "\n";
  const std::filesystem::path tmp = file_.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(ErrorCode::io, "cannot write " + tmp.string() + ": " + std::strerror(errno));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), file_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error(ErrorCode::io, "cannot write " + file_.string() + ": " + why);
  }
  return ok_status();
}

}  // namespace jobctl::worker
