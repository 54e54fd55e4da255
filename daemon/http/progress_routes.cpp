#include "daemon/http/progress_routes.h"

#include <limits>

#include "daemon/http/route_access.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;

void add_progress_routes(net::Router& router, jobs::JobService& svc, store::ProgressHistory& history) {
  router.add(route("GET", "/v1/jobs/{id}/progress", {Access::user, "id"},
             [&svc, &history](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
               auto id = net::parse_int_param(p.at(0), "id", 1, std::numeric_limits<int64_t>::max());
               if (!id) return respond(net::error_response(id.error()));
               int64_t limit = 2000;
               for (const auto& [key, value] : req.query) {
                 if (key != "limit")
                   return respond(net::error_response(net::unknown_query_parameter(key)));
                 auto v = net::parse_int_param(value, "limit", 2, 10000);
                 if (!v) return respond(net::error_response(v.error()));
                 limit = *v;
               }
               auto job = svc.get_job(*id);  // 404 for an unknown job, as GET /v1/jobs/{id}
               if (!job) return respond(net::error_response(job.error()));
               auto points = history.read(*id, limit);
               if (!points) return respond(net::error_response(points.error()));
               respond(net::json_response(200, json{{"job_id", *id}, {"points", std::move(*points)}}));
             }));
}

void add_log_routes(net::Router& router, jobs::JobService& svc, const jobs::JobLogs& logs) {
  router.add(route("GET", "/v1/jobs/{id}/log", {Access::user, "id"},
             [&svc, &logs](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
               auto id = net::parse_int_param(p.at(0), "id", 1, std::numeric_limits<int64_t>::max());
               if (!id) return respond(net::error_response(id.error()));
               int64_t after = 0;
               for (const auto& [key, value] : req.query) {
                 if (key != "after")
                   return respond(net::error_response(net::unknown_query_parameter(key)));
                 auto v = net::parse_int_param(value, "after", 0, std::numeric_limits<int64_t>::max());
                 if (!v) return respond(net::error_response(v.error()));
                 after = *v;
               }
               auto job = svc.get_job(*id);  // 404 for an unknown job
               if (!job) return respond(net::error_response(job.error()));
               const jobs::LogChunk c = logs.read(*id, after);
               respond(net::json_response(200, json{{"job_id", *id},
                                                    {"text", c.text},
                                                    {"next", c.next},
                                                    {"dropped_bytes", c.dropped_bytes}}));
             }));
}

}  // namespace jobctl::daemon::http
