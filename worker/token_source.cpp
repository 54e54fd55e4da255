#include "worker/token_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern char** environ;

namespace jobctl::worker {

Expected<std::string> read_token_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return make_error(ErrorCode::not_found, "cannot read " + path + ": " + std::strerror(errno), "--token-file");
  struct stat st {};
  std::string text;
  const bool stat_ok = ::fstat(fd, &st) == 0;
  if (stat_ok && S_ISREG(st.st_mode) && st.st_size <= 4096) {
    char buf[4097];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!stat_ok || !S_ISREG(st.st_mode) || st.st_size > 4096)
    return make_error(ErrorCode::invalid_argument, path + " is not a small regular file", "--token-file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return make_error(ErrorCode::permission_denied,
                      path + " may be read or written by other users (mode " + mode + "); chmod 600 it", "--token-file");
  }
  if (st.st_uid != ::geteuid())
    return make_error(ErrorCode::permission_denied,
                      path + " belongs to uid " + std::to_string(st.st_uid) + ", not to this worker's user (uid " +
                          std::to_string(::geteuid()) + ")",
                      "--token-file");
  const size_t begin = text.find_first_not_of(" \t\r\n");
  const size_t end = text.find_last_not_of(" \t\r\n");
  if (begin == std::string::npos) return make_error(ErrorCode::invalid_argument, path + " is empty", "--token-file");
  std::string token = text.substr(begin, end - begin + 1);
  std::memset(text.data(), 0, text.size());
  return token;
}

std::optional<std::string> take_environment_variable(const char* name) {
  const size_t name_len = std::strlen(name);
  std::vector<char*> entries;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, name, name_len) == 0 && (*e)[name_len] == '=') entries.push_back(*e);
  if (entries.empty()) return std::nullopt;
  std::string value(std::getenv(name));
  ::unsetenv(name);  // every entry of that name leaves environ; the bytes stay where they were
  for (char* entry : entries) std::memset(entry, 0, std::strlen(entry));
  return value;
}

}  // namespace jobctl::worker
