// A command job's `setup` (docs/job-spec.md): shell commands run before its program, in a folder
// holding the job's code, once per (worker, user, code bundle, setup). What they make there (a
// virtualenv, a compiled extension, downloaded weights) is kept and linked into every later lease's
// folder of the same user with the same bundle and setup, so a job that moves back or resumes here
// does not install again. Another user's job never gets it (one user's program could have changed
// it), and no job may change it: once made it is read-only, and it is reused only while every
// entry is as this worker process recorded it, in its memory, when it made it (each one's type,
// mode, size, inode and change time, which no program can set back), else made again from
// scratch (so also once after the worker restarts).
//
// On disk, under the worker's --work-dir: `setup/<bundle prefix>-<crc>-<n>/` holds the bundle
// unpacked, `.jobctl-setup` (the user, bundle and commands it was made for: a different setup
// whose CRC collides gets the next n) and, once every command succeeded, `.jobctl-setup-done`. A
// folder without the marker (a failed or interrupted setup) or whose entries changed is made
// again from scratch. `<folder>.lock` is held (flock) while a lease
// prepares it, so two slots never run the same setup at once.
//
// Thread safety: a free function; concurrent calls for the same folder serialise on its lock (the
// record of what each folder held is behind a mutex of its own).
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "base/expected.h"
#include "worker/job_program.h"
#include "worker/runner_options.h"

namespace jobctl::worker {

struct PreparedSetup {
  std::filesystem::path dir;            // the setup's folder ("" when the job has no setup)
  bool cached = false;                  // made by an earlier lease: nothing ran now
  std::vector<std::string> log_lines;   // what the commands printed, for the job's log
};

// Prepares `program.setup` (nothing when it has none): finds or makes its folder (the code bundle
// `bundle_bytes` unpacked there), runs the commands there once with /bin/sh in order (the job's
// env set; each at most options.setup_timeout_s), then links every entry of that folder the
// program's folder lacks into it. Errors carry the message the job fails with: the failing
// command, its exit status and the tail of its output; a setup on a worker that runs programs as
// another user (--run-as) is refused, since the commands would run as the worker's user.
// `owner`: the user who submitted the job (the lease's; "" without auth).
Expected<PreparedSetup> prepare_setup(const JobProgram& program, const std::string& bundle_bytes,
                                      const std::string& owner, const RunnerOptions& options, std::ostream& log);

}  // namespace jobctl::worker
