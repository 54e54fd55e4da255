#include "worker/gang_firewall.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <ostream>
#include <set>
#include <sstream>
#include <vector>

#include "process/run.h"

namespace jobctl::worker {

namespace {

constexpr const char* kTablePrefix = "jobctl_gang_";
constexpr std::chrono::seconds kNftTimeout{10};

// Runs `nft args...`; the error names what nft said.
Expected<std::string> nft(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"nft"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = process::run(argv, {.timeout = kNftTimeout});
  if (!r) return r.error();
  if (!r->success()) return make_error(ErrorCode::io, "nft " + args.front() + ": " + r->describe());
  return r->out;
}

// The gang's nodes' addresses as IPv4 and IPv6 literals (a name resolved now; one that does not
// resolve is left out, logged).
void peer_addresses(const protocol::GangRendezvous& gang, std::set<std::string>& v4, std::set<std::string>& v6,
                    std::ostream& log) {
  for (const auto& a : gang.addrs) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(a.c_str(), nullptr, &hints, &found) != 0) {
      log << "jobctl-worker: gang address " << a << " does not resolve; it cannot reach the rendezvous port\n";
      continue;
    }
    for (addrinfo* p = found; p != nullptr; p = p->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      if (p->ai_family == AF_INET &&
          ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr, text, sizeof text))
        v4.insert(text);
      else if (p->ai_family == AF_INET6 &&
               ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr, text, sizeof text))
        v6.insert(text);
    }
    ::freeaddrinfo(found);
  }
}

std::string set_of(const char* name, const char* type, const std::set<std::string>& addrs) {
  std::string s = std::string("  set ") + name + " { type " + type + ";";
  if (!addrs.empty()) {
    s += " elements = {";
    bool first = true;
    for (const auto& a : addrs) s += (std::exchange(first, false) ? " " : ", ") + a;
    s += " };";
  }
  return s + " }\n";
}

}  // namespace

void say_rendezvous_open(const std::string& why, std::ostream& log) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  log << "jobctl-worker: gangs' rendezvous ports are open to every process of this machine (" << why
      << "; docs/security.md, \"A gang's rendezvous\")\n";
}

Expected<GangGidRange> parse_gang_gid_range(const std::string& text) {
  const auto bad = [&] {
    return make_error(ErrorCode::invalid_argument,
                      "--gang-gid-range: '" + text + "' is not FIRST-LAST (numbers from 1000 to 4294967294, FIRST <= LAST)");
  };
  const auto dash = text.find('-');
  if (dash == std::string::npos) return bad();
  uint64_t first = 0, last = 0;
  const char* b = text.data();
  const auto r1 = std::from_chars(b, b + dash, first);
  const auto r2 = std::from_chars(b + dash + 1, b + text.size(), last);
  if (r1.ec != std::errc{} || r1.ptr != b + dash || r2.ec != std::errc{} || r2.ptr != b + text.size() || dash == 0)
    return bad();
  if (first < 1000 || last >= 4294967295ULL || first > last) return bad();
  return GangGidRange{static_cast<gid_t>(first), static_cast<gid_t>(last)};
}

gid_t gang_gid(const GangGidRange& range, int64_t job_id) {
  const uint64_t size = uint64_t{range.last} - range.first + 1;
  return static_cast<gid_t>(range.first + static_cast<uint64_t>(job_id < 0 ? -job_id : job_id) % size);
}

std::string gang_table_name(int64_t job_id, int64_t epoch) {
  return kTablePrefix + std::to_string(::getpid()) + "_" + std::to_string(job_id) + "_" + std::to_string(epoch);
}

std::unique_ptr<GangFirewall> GangFirewall::install(int64_t job_id, int64_t epoch,
                                                    const protocol::GangRendezvous& gang, gid_t gid, std::ostream& log) {
  if (::geteuid() != 0) {
    say_rendezvous_open("the worker is not root", log);
    return nullptr;
  }
  std::set<std::string> v4, v6;
  peer_addresses(gang, v4, v6, log);
  const std::string port = std::to_string(gang.master_port);
  const std::string table = gang_table_name(job_id, epoch);
  // One nft command: the table appears whole or not at all.
  std::ostringstream rules;
  rules << "table inet " << table << " {\n"
        << set_of("peers4", "ipv4_addr", v4) << set_of("peers6", "ipv6_addr", v6)
        << "  chain local_out { type filter hook output priority 0; policy accept;\n"
        << "    tcp dport " << port << " fib daddr type local ct state new meta skgid != " << gid
        << " reject with tcp reset\n  }\n"
        << "  chain remote_in { type filter hook input priority 0; policy accept;\n"
        << "    tcp dport " << port << " iifname \"lo\" accept\n"
        << "    tcp dport " << port << " ip saddr @peers4 accept\n"
        << "    tcp dport " << port << " ip6 saddr @peers6 accept\n"
        << "    tcp dport " << port << " ct state new drop\n  }\n}\n";
  auto made = nft({rules.str()});
  if (!made) {
    say_rendezvous_open(made.error().message, log);
    return nullptr;
  }
  log << "jobctl-worker: job " << job_id << ": rendezvous port " << port << " kept to the gang (nftables table "
      << table << ", group " << gid << ")\n";
  return std::unique_ptr<GangFirewall>(new GangFirewall(table, log));
}

GangFirewall::~GangFirewall() {
  if (auto gone = nft({"delete", "table", "inet", table_}); !gone)
    log_ << "jobctl-worker: cannot remove nftables table " << table_ << ": " << gone.error().message << "\n";
}

int remove_orphaned_gang_tables(std::ostream& log) {
  if (::geteuid() != 0) return 0;
  auto listed = nft({"list", "tables", "inet"});
  if (!listed) return 0;
  std::istringstream lines(*listed);
  int removed = 0;
  for (std::string word, family, name; lines >> word >> family >> name;) {
    if (word != "table" || name.rfind(kTablePrefix, 0) != 0) continue;
    const std::string rest = name.substr(std::string(kTablePrefix).size());
    pid_t pid = 0;
    const auto r = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (r.ec != std::errc{} || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno == EPERM) continue;  // its worker still runs
    if (nft({"delete", "table", family, name})) {
      log << "jobctl-worker: removed nftables table " << name << " left by a worker that is gone\n";
      ++removed;
    }
  }
  return removed;
}

}  // namespace jobctl::worker
