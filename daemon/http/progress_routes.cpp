#include "daemon/http/progress_routes.h"

#include <limits>
#include <string>

#include "base/utc_time.h"
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

namespace {

bool parse_bool_param(std::string_view text, bool& out) {
  if (text == "true" || text == "1") out = true;
  else if (text == "false" || text == "0") out = false;
  else return false;
  return true;
}

void read_log(jobs::JobService& svc, const store::JobLogStore& logs, const net::HttpRequest& req, const net::PathParams& p,
              const net::Responder& respond) {
  auto id = net::parse_int_param(p.at(0), "id", 1, std::numeric_limits<int64_t>::max());
  if (!id) return respond(net::error_response(id.error()));
  store::LogQuery q;
  bool timestamps = false;
  for (const auto& [key, value] : req.query) {
    Expected<int64_t> v = int64_t{0};
    if (key == "after") {
      v = net::parse_int_param(value, "after", 0, std::numeric_limits<int64_t>::max());
      if (v) q.after = *v;
    } else if (key == "since") {
      v = net::parse_int_param(value, "since", 0, std::numeric_limits<int64_t>::max());
      if (v) q.since_ms = *v;
    } else if (key == "tail") {
      v = net::parse_int_param(value, "tail", 1, 100000);
      if (v) q.tail = *v;
    } else if (key == "limit") {
      v = net::parse_int_param(value, "limit", 1, 100000);
      if (v) q.max_lines = static_cast<size_t>(*v);
    } else if (key == "timestamps") {
      if (!parse_bool_param(value, timestamps))
        v = make_error(ErrorCode::invalid_argument, "timestamps must be true or false", "timestamps");
    } else {
      return respond(net::error_response(net::unknown_query_parameter(key)));
    }
    if (!v) return respond(net::error_response(v.error()));
  }
  auto job = svc.get_job(*id);  // 404 for an unknown job
  if (!job) return respond(net::error_response(job.error()));
  auto page = logs.read(*id, q);
  if (!page) return respond(net::error_response(page.error()));
  json lines = json::array();
  std::string text;
  for (const auto& l : page->lines) {
    lines.push_back({{"n", l.number}, {"time_ms", l.time_ms}, {"text", l.text}});
    if (timestamps) text += format_utc_ms(l.time_ms) + " ";
    text += l.text;
    text += '\n';
  }
  respond(net::json_response(200, json{{"job_id", *id},
                                       {"lines", std::move(lines)},
                                       {"text", std::move(text)},
                                       {"next", page->next},
                                       {"more", page->more},
                                       {"dropped_lines", page->dropped_lines}}));
}

}  // namespace

void add_log_routes(net::Router& router, jobs::JobService& svc, const store::JobLogStore& logs, DownloadSlots& slots) {
  router.add(route("GET", "/v1/jobs/{id}/log", {Access::user, "id"},
                   [&svc, &logs](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
                     read_log(svc, logs, req, p, respond);
                   }));
  // The whole stored file, sent a piece at a time (docs/log-format.md).
  router.add(route("GET", "/v1/jobs/{id}/log/download", {Access::user, "id"},
                   [&svc, &logs, &slots](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
                     auto id = net::parse_int_param(p.at(0), "id", 1, std::numeric_limits<int64_t>::max());
                     if (!id) return respond(net::error_response(id.error()));
                     for (const auto& [key, value] : req.query)
                       return respond(net::error_response(net::unknown_query_parameter(key)));
                     auto job = svc.get_job(*id);
                     if (!job) return respond(net::error_response(job.error()));
                     auto path = logs.file_of(*id);
                     if (!path) return respond(net::error_response(path.error()));
                     net::HttpResponse r = slots.file_answer(
                         path->string(), {{"Content-Disposition",
                                           "attachment; filename=\"job-" + std::to_string(*id) + ".log\""}});
                     if (r.status == 200) r.content_type = "text/plain; charset=utf-8";
                     respond(std::move(r));
                   }));
}

std::function<Status(int64_t, const std::vector<jobs::OutputLine>&)> log_writer(store::JobLogStore& logs,
                                                                             const Clock& clock) {
  return [&logs, &clock](int64_t job_id, const std::vector<jobs::OutputLine>& lines) -> Status {
    std::vector<store::LogEntry> entries;
    entries.reserve(lines.size());
    const int64_t now = clock.now_ms();
    for (const jobs::OutputLine& l : lines) entries.push_back(store::LogEntry{l.time_ms > 0 ? l.time_ms : now, l.text});
    return logs.append(job_id, entries);
  };
}

}  // namespace jobctl::daemon::http
