// The job service's limits and timings (jobctld's configuration sets them).
//
// Thread safety: a plain value; each part of the service keeps its own copy.
#pragma once

namespace jobctl::daemon::jobs {

struct ServiceOptions {
  int heartbeat_interval_s = 2;   // how often a worker should heartbeat a running job
  int lease_timeout_s = 60;       // a lease not renewed for this long expires
  int max_lease_wait_s = 60;      // longest long-poll a worker may ask for
  int max_list_limit = 1000;      // largest page of GET /v1/jobs
  int max_recoveries = 10;        // preemptions after which a job fails instead of requeueing
  // How long a gang first in line may keep idle workers for itself while the rest of its nodes
  // ask for work; it then lets them take other jobs for as long, and so on (lease_broker.h).
  int gang_assembly_s = 60;
};

}  // namespace jobctl::daemon::jobs
