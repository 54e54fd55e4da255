#include "daemon/http/upload_lease.h"

#include "daemon/http/auth_gate.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

Expected<protocol::LeaseRef> upload_lease(const net::HttpRequest& req,
                                          const std::function<Status(const std::string&, const std::string&)>& other) {
  protocol::LeaseRef lease;
  bool have_worker = false, have_epoch = false;
  for (const auto& [key, value] : req.query) {
    if (key == "worker_id" || key == "epoch") {
      auto v = net::parse_int_param(value, key, 1, net::kMaxId);
      if (!v) return v.error();
      (key == "worker_id" ? lease.worker_id : lease.epoch) = *v;
      (key == "worker_id" ? have_worker : have_epoch) = true;
    } else if (auto st = other(key, value); !st) {
      return st.error();
    }
  }
  if (!have_worker) return make_error(ErrorCode::invalid_argument, "worker_id is required", "worker_id");
  if (!have_epoch) return make_error(ErrorCode::invalid_argument, "epoch is required", "epoch");
  if (auto st = check_acting_worker(req, lease.worker_id); !st) return st.error();
  return lease;
}

}  // namespace jobctl::daemon::http
