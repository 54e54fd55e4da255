// Keeps a gang's rendezvous port (JOBCTL_MASTER_PORT on rank 0's machine) to the gang's own nodes
// for plain processes on a root worker with --run-as (docs/security.md, "A gang's rendezvous").
//
// Under --run-as every job runs as one Unix user, so an owner match cannot tell jobs apart: each
// gang node's program runs instead with a primary group of its own for the gang (gang_gid: drawn
// from --gang-gid-range by the job's id, so the workers of all nodes on one machine agree), and
// rank 0's worker installs an nftables table of its own for the lease,
// `inet jobctl_gang_<worker pid>_<job>_<epoch>`, with
//   - an output-hook rule rejecting (TCP reset) a new connection to the master port on a local
//     address from any socket whose group (`meta skgid`) is not the gang's: another job of the same
//     user on this machine is refused, the gang's own nodes here connect;
//   - an input-hook rule dropping a new connection to the port from a remote address that is not one
//     of the gang's nodes' (the lease's addresses, resolved when the table is made).
// The table goes when the GangFirewall is destroyed (whatever ended the lease); a worker removes at
// its start the tables of workers that are gone (remove_orphaned_gang_tables). nft runs through
// process::run. Where nft is missing or fails, nothing is installed and the worker logs once that
// gangs' rendezvous ports are open.
//
// Ownership: a GangFirewall owns its table. Thread safety: one per lease, on that lease's runner
// thread; the log-once flag is atomic.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "base/expected.h"
#include "protocol/worker_messages.h"

namespace jobctl::worker {

// The groups gang programs run with (--gang-gid-range FIRST-LAST).
struct GangGidRange {
  gid_t first = 0;
  gid_t last = 0;
};

// "FIRST-LAST" (both >= 1000, FIRST <= LAST, below 2^32 - 1). Errors: invalid_argument.
Expected<GangGidRange> parse_gang_gid_range(const std::string& text);

// The group of job `job_id`'s gang programs: first + job_id mod the range's size (two gangs share
// one only when their ids differ by a multiple of the size).
gid_t gang_gid(const GangGidRange& range, int64_t job_id);

// "jobctl_gang_<this process's pid>_<job>_<epoch>".
std::string gang_table_name(int64_t job_id, int64_t epoch);

class GangFirewall {
 public:
  // Installs the table for rank 0's lease `job_id`/`epoch` of `gang` whose programs run with group
  // `gid`. nullptr (logged) when nft is missing or refuses the table: the port stays open.
  static std::unique_ptr<GangFirewall> install(int64_t job_id, int64_t epoch, const protocol::GangRendezvous& gang,
                                               gid_t gid, std::ostream& log);
  ~GangFirewall();
  GangFirewall(const GangFirewall&) = delete;
  GangFirewall& operator=(const GangFirewall&) = delete;

  const std::string& table() const { return table_; }

 private:
  GangFirewall(std::string table, std::ostream& log) : table_(std::move(table)), log_(log) {}
  std::string table_;
  std::ostream& log_;
};

// Logs, once per worker, that gangs' rendezvous ports are open (`why`: what keeps them so).
void say_rendezvous_open(const std::string& why, std::ostream& log);

// Removes the jobctl_gang_* tables whose worker pid is no longer a running process. Returns how
// many (each logged); 0 where nft is missing.
int remove_orphaned_gang_tables(std::ostream& log);

}  // namespace jobctl::worker
