#include "daemon/http/staged_body.h"

namespace jobctl::daemon::http {

Expected<StagedBody> staged_body(const net::HttpRequest& req,
                                 const std::function<Expected<std::string>(std::string_view)>& stage) {
  if (req.body_file) {
    if (!req.body_file->take()) return make_error(ErrorCode::internal, "the upload was handled twice");
    return StagedBody{req.body_file->path(), req.body_file->size()};
  }
  auto staged = stage(req.body);
  if (!staged) return staged.error();
  return StagedBody{std::move(*staged), req.body.size()};
}

}  // namespace jobctl::daemon::http
