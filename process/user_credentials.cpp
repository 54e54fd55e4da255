#include "process/user_credentials.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace jobctl::process {

Expected<Credentials> credentials_of(const std::string& user) {
  if (user.empty()) return make_error(ErrorCode::invalid_argument, "no user named", "user");
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc = ::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc == 0 && found == nullptr && user.find_first_not_of("0123456789") == std::string::npos)
    rc = ::getpwuid_r(static_cast<uid_t>(std::strtoul(user.c_str(), nullptr, 10)), &pw, buf.data(), buf.size(), &found);
  if (rc != 0) return make_error(ErrorCode::io, "cannot look up user " + user + ": " + std::strerror(rc));
  if (found == nullptr) return make_error(ErrorCode::not_found, "no such user: " + user, "user");
  Credentials c;
  c.uid = pw.pw_uid;
  c.gid = pw.pw_gid;
  int n = 32;
  for (;;) {
    c.groups.resize(static_cast<size_t>(n));
    const int want = n;
    if (::getgrouplist(pw.pw_name, pw.pw_gid, c.groups.data(), &n) >= 0) {
      c.groups.resize(static_cast<size_t>(n));
      break;
    }
    if (n <= want) n = want * 2;  // some libcs do not report the size needed
    if (n > 65536) return make_error(ErrorCode::io, "cannot list the groups of " + user);
  }
  return c;
}

}  // namespace jobctl::process
