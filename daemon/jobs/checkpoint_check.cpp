#include "daemon/jobs/checkpoint_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/crc32c.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

CheckpointExpectation expectation_for(const train::JobSpec& spec) {
  if (spec.is_command()) return CheckpointExpectation{0, 0, true};
  return CheckpointExpectation{train::training_fingerprint(spec), train::training_steps(spec)};
}

Expected<train::CheckpointScan> check_checkpoint_file(const std::string& path, uint32_t crc32c, int64_t step,
                                                      const CheckpointExpectation& expect) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::io, "cannot open the uploaded checkpoint " + path + ": " + std::strerror(errno));
  train::CheckpointScanner scanner;
  Status framing;  // the first framing error; the CRC over every byte comes first
  std::array<char, 1 << 16> buf;
  uint64_t opaque_bytes = 0;
  uint32_t opaque_crc = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return make_error(ErrorCode::io, "cannot read the uploaded checkpoint " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    if (expect.opaque) {
      opaque_bytes += static_cast<uint64_t>(n);
      opaque_crc = crc32c::extend(opaque_crc, buf.data(), static_cast<size_t>(n));
      continue;
    }
    if (auto st = scanner.feed(buf.data(), static_cast<size_t>(n)); !st && framing) framing = st;
  }
  ::close(fd);
  if (expect.opaque) {
    if (opaque_crc != crc32c) {
      char msg[112];
      std::snprintf(msg, sizeof msg, "checksum mismatch: crc32c of the body is %08x, the request says %08x",
                    opaque_crc, crc32c);
      return make_error(ErrorCode::invalid_argument, msg, "crc32c");
    }
    if (step < 0) return make_error(ErrorCode::invalid_argument, "step must not be negative", "step");
    train::CheckpointScan opaque;
    opaque.bytes = opaque_bytes;
    opaque.crc32c = opaque_crc;
    opaque.meta.global_step = step;
    return opaque;
  }
  if (scanner.crc32c() != crc32c) {
    char msg[112];
    std::snprintf(msg, sizeof msg, "checksum mismatch: crc32c of the body is %08x, the request says %08x",
                  scanner.crc32c(), crc32c);
    return make_error(ErrorCode::invalid_argument, msg, "crc32c");
  }
  auto bad = [](Error e) {
    e.message = "not a usable checkpoint: " + e.message;
    e.field = "body";
    return e;
  };
  if (!framing) return bad(framing.error());
  auto scan = scanner.finish();
  if (!scan) return bad(scan.error());
  const train::CheckpointMeta& meta = scan->meta;
  if (meta.fingerprint != expect.fingerprint)
    return make_error(ErrorCode::checkpoint_mismatch,
                      "the checkpoint belongs to another training (its spec fingerprint differs from this job's)",
                      "body");
  if (meta.global_step != step)
    return make_error(ErrorCode::invalid_argument,
                      "the checkpoint is at step " + std::to_string(meta.global_step) + ", the upload names step " +
                          std::to_string(step),
                      "step");
  if (meta.global_step > expect.max_step)
    return make_error(ErrorCode::invalid_argument,
                      "step " + std::to_string(meta.global_step) + " is beyond the job's last step " +
                          std::to_string(expect.max_step),
                      "step");
  return scan;
}

}  // namespace jobctl::daemon::jobs
