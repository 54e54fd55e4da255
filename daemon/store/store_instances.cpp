// The store's part of the provisioner (daemon/provisioning/provisioner.h): the instances
// table of migration 4. Declared in store.h.
#include "daemon/store/store.h"

namespace jobctl::daemon::store {

namespace {

constexpr const char* kInstanceColumns =
    "id, provider, instance_type, region, zone, spot, state, job_id, usd_per_hour, "
    "on_demand_usd_per_hour, launched_ms, ended_ms, idle_since_ms, notice_ms, reason, "
    "segment_start_ms, segment_job_id, segment_user, dedicated";

InstanceRow read_instance(const Statement& st) {
  InstanceRow r;
  r.id = st.column_text(0);
  r.provider = st.column_text(1);
  r.instance_type = st.column_text(2);
  r.region = st.column_text(3);
  r.zone = st.column_text(4);
  r.spot = st.column_int64(5) != 0;
  r.state = st.column_text(6);
  r.job_id = st.column_int64(7);
  r.usd_per_hour = st.column_double(8);
  r.on_demand_usd_per_hour = st.column_double(9);
  r.launched_ms = st.column_int64(10);
  r.ended_ms = st.column_opt_int64(11);
  r.idle_since_ms = st.column_opt_int64(12);
  r.notice_ms = st.column_opt_int64(13);
  r.reason = st.column_text(14);
  r.segment_start_ms = st.column_int64(15);
  r.segment_job_id = st.column_int64(16);
  r.segment_user = st.column_text(17);
  r.dedicated = st.column_int64(18) != 0;
  return r;
}

}  // namespace

Expected<std::optional<InstanceRow>> WriteTxn::instance(const std::string& id) {
  auto p = db_.prepare(std::string("SELECT ") + kInstanceColumns + " FROM instances WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, id);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<InstanceRow>{};
  return std::optional<InstanceRow>(read_instance(**p));
}

Status WriteTxn::put_instance(const InstanceRow& r) {
  auto p = db_.prepare(std::string("INSERT OR REPLACE INTO instances(") + kInstanceColumns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
                       "?17, ?18, ?19)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, r.id).bind(2, r.provider).bind(3, r.instance_type).bind(4, r.region).bind(5, r.zone)
      .bind(6, int64_t{r.spot ? 1 : 0}).bind(7, r.state).bind(8, r.job_id).bind(9, r.usd_per_hour)
      .bind(10, r.on_demand_usd_per_hour).bind(11, r.launched_ms).bind(12, r.ended_ms)
      .bind(13, r.idle_since_ms).bind(14, r.notice_ms).bind(15, r.reason).bind(16, r.segment_start_ms)
      .bind(17, r.segment_job_id).bind(18, r.segment_user).bind(19, int64_t{r.dedicated ? 1 : 0});
  return s->run();
}

Expected<std::vector<InstanceRow>> Store::list_instances() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(std::string("SELECT ") + kInstanceColumns +
                         " FROM instances ORDER BY state = 'terminated', launched_ms, id");
  if (!p) return p.error();
  StatementUse s(*p);
  return read_rows<InstanceRow>(*s, read_instance);
}

}  // namespace jobctl::daemon::store
