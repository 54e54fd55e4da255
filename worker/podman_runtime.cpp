#include "worker/podman_runtime.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "process/run.h"
#include "train/spec/image_reference.h"

namespace jobctl::worker {

namespace fs = std::filesystem;
using std::chrono::seconds;

namespace {

// What podman said last on stderr, without its "Error: " prefix.
std::string podman_error(const process::RunResult& r) {
  std::string e = r.err.empty() ? r.out : r.err;
  while (!e.empty() && (e.back() == '\n' || e.back() == '\r')) e.pop_back();
  if (const auto nl = e.rfind('\n'); nl != std::string::npos) e = e.substr(nl + 1);
  if (e.rfind("Error: ", 0) == 0) e = e.substr(7);
  if (r.timed_out) return "timed out" + (e.empty() ? std::string() : " (" + e + ")");
  return e.empty() ? r.describe() : e;
}

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// An auth file holding one registry's credential, removed when this goes.
class AuthFile {
 public:
  // `c` none: a file with no credential at all.
  static Expected<AuthFile> write(const fs::path& dir, const std::optional<protocol::RegistryCredential>& c) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return make_error(ErrorCode::io, "cannot create " + dir.string() + ": " + std::strerror(errno));
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
      return make_error(ErrorCode::io, dir.string() + " must be a folder of the worker's alone (mode 0700)");
    static std::atomic<uint64_t> serial{0};
    const fs::path path = dir / ("auth-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".json");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return make_error(ErrorCode::io, "cannot create " + path.string() + ": " + std::strerror(errno));
    nlohmann::json auths = nlohmann::json::object();
    if (c) auths[c->registry] = {{"auth", base64(c->username + ":" + c->password)}};
    const std::string text = nlohmann::json{{"auths", std::move(auths)}}.dump();
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    AuthFile f(path);
    if (!ok) return make_error(ErrorCode::io, "cannot write " + path.string());
    return f;
  }
  AuthFile(AuthFile&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  AuthFile& operator=(AuthFile&&) = delete;
  ~AuthFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const fs::path& path() const { return path_; }

 private:
  explicit AuthFile(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
};

class PodmanRuntime final : public ContainerRuntime {
 public:
  explicit PodmanRuntime(PodmanOptions o) : o_(std::move(o)) {}

  std::string_view name() const override { return "podman"; }

  Expected<PreparedImage> prepare_image(const std::string& image, train::ImagePull pull,
                                        const std::optional<protocol::RegistryCredential>& credential,
                                        const std::function<void(const std::string&)>& log_line) override {
    PreparedImage prepared;
    bool present = false;
    if (pull != train::ImagePull::always) {
      auto exists = podman({"image", "exists", image}, seconds(60));
      if (!exists) return exists.error();
      present = exists->success();
      if (!present && pull == train::ImagePull::never)
        return make_error(ErrorCode::not_found, "image " + image + " is not on this worker and image_pull is never",
                          "image");
    }
    if (!present) {
      std::vector<std::string> args = {"pull"};
      // Without a credential of the job's owner the file is empty: an anonymous pull, never one
      // with whatever the machine's own podman login holds.
      auto auth = AuthFile::write(o_.private_dir, credential);
      if (!auth) return auth.error();
      args.insert(args.end(), {"--authfile", auth->path().string()});
      if (!o_.registry_cert_dir.empty()) args.insert(args.end(), {"--cert-dir", o_.registry_cert_dir});
      args.push_back(image);
      log_line("pulling " + image);
      const auto t0 = std::chrono::steady_clock::now();
      auto r = podman(args, seconds(o_.pull_timeout_s));
      if (!r) return r.error();
      std::istringstream lines(r->err + r->out);
      for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.find_first_not_of("0123456789abcdef") == std::string::npos) continue;
        log_line(line);
        // "Copying blob sha256:<digest>": one per layer of the image.
        if (line.rfind("Copying blob ", 0) == 0) ++prepared.layers;
      }
      if (!r->success()) return make_error(ErrorCode::unavailable, "cannot pull image " + image + ": " + podman_error(*r), "image");
      prepared.pulled = true;
      prepared.pull_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    auto inspected = podman({"image", "inspect", "--format", "json", image}, seconds(60));
    if (!inspected) return inspected.error();
    if (!inspected->success())
      return make_error(ErrorCode::io, "cannot inspect image " + image + ": " + podman_error(*inspected), "image");
    const nlohmann::json described = nlohmann::json::parse(inspected->out, nullptr, false);
    const nlohmann::json& first = described.is_array() && !described.empty() ? described[0] : described;
    if (!first.is_object())
      return make_error(ErrorCode::io, "podman's description of image " + image + " is not JSON", "image");
    if (auto id = first.find("Id"); id != first.end() && id->is_string()) prepared.id = id->get<std::string>();
    if (auto size = first.find("Size"); size != first.end() && size->is_number_integer()) prepared.bytes = size->get<int64_t>();
    // The digest the image's registry serves it under: its repository's entry among the image's
    // repo digests. podman lists every digest the image was ever stored under for every name it
    // has (the same layers imported here and pulled, say); of several, the image's own digest
    // when it is one of them, else the first.
    auto ref = train::parse_image_reference(image);
    const std::string from = ref ? ref->registry + "/" + ref->repository + "@" : std::string();
    std::string own;
    if (auto digest = first.find("Digest"); digest != first.end() && digest->is_string()) own = digest->get<std::string>();
    std::vector<std::string> served;
    if (auto repo = first.find("RepoDigests"); repo != first.end() && repo->is_array())
      for (const auto& d : *repo)
        if (d.is_string() && !from.empty() && d.get<std::string>().rfind(from, 0) == 0)
          served.push_back(d.get<std::string>().substr(from.size()));
    prepared.digest = served.empty() || std::find(served.begin(), served.end(), own) != served.end() ? own : served.front();
    if (prepared.digest.rfind("sha256:", 0) != 0 || prepared.digest.size() != 71)
      return make_error(ErrorCode::io, "image " + image + " has no sha256 digest in podman's description", "image");
    return prepared;
  }

  std::vector<std::string> run_command(const ContainerRun& run) const override {
    std::vector<std::string> a = {o_.program, "run", "--rm", "--init", "--pull", "never", "--log-driver", "none",
                                  // No extra privileges: no capabilities, no setuid gains.
                                  "--cap-drop", "all", "--security-opt", "no-new-privileges", "--name", run.name};
    for (const auto& [k, v] : run.labels) a.insert(a.end(), {"--label", k + "=" + v});
    if (run.user) a.insert(a.end(), {"--user", std::to_string(run.user->first) + ":" + std::to_string(run.user->second)});
    if (run.memory_bytes > 0) a.insert(a.end(), {"--memory", std::to_string(run.memory_bytes) + "b"});
    if (run.pids_limit > 0) a.insert(a.end(), {"--pids-limit", std::to_string(run.pids_limit)});
    if (run.host_network) a.insert(a.end(), {"--network", "host"});
    for (const ContainerBind& b : run.binds)
      a.insert(a.end(), {"--volume", b.source + ":" + b.target + (b.writable ? ":rw" : ":ro")});
    for (const std::string& d : run.devices) a.insert(a.end(), {"--device", d});
    for (const std::string& e : run.env) a.insert(a.end(), {"--env", e});
    if (!run.workdir.empty()) a.insert(a.end(), {"--workdir", run.workdir});
    a.push_back("--");
    a.push_back(run.image);
    a.insert(a.end(), run.argv.begin(), run.argv.end());
    return a;
  }

  Status remove(const std::string& name) override {
    auto r = podman({"rm", "--force", "--ignore", "--time", "0", name}, seconds(120));
    if (!r) return r.error();
    if (!r->success()) return make_error(ErrorCode::io, "cannot remove container " + name + ": " + podman_error(*r));
    return ok_status();
  }

  Expected<std::vector<HeldImage>> images() override {
    auto r = podman({"images", "--format", "json"}, seconds(60));
    if (!r) return r.error();
    if (!r->success()) return make_error(ErrorCode::io, "cannot list images: " + podman_error(*r));
    const nlohmann::json listed = nlohmann::json::parse(r->out, nullptr, false);
    if (!listed.is_array()) return make_error(ErrorCode::io, "podman's list of images is not a JSON array");
    std::vector<HeldImage> out;
    for (const auto& i : listed) {
      if (!i.is_object() || !i.contains("Id") || !i["Id"].is_string()) continue;
      HeldImage h;
      h.id = i["Id"].get<std::string>();
      if (auto n = i.find("Names"); n != i.end() && n->is_array())
        for (const auto& name : *n)
          if (name.is_string()) h.names.push_back(name.get<std::string>());
      if (auto b = i.find("Size"); b != i.end() && b->is_number_integer()) h.bytes = b->get<int64_t>();
      if (auto c = i.find("Containers"); c != i.end() && c->is_number_integer()) h.in_use = c->get<int64_t>() > 0;
      out.push_back(std::move(h));
    }
    return out;
  }

  Status remove_image(const std::string& id) override {
    // Without --force: podman refuses an image a container uses.
    auto r = podman({"rmi", "--ignore", id}, seconds(120));
    if (!r) return r.error();
    if (!r->success()) return make_error(ErrorCode::io, "cannot remove image " + id + ": " + podman_error(*r));
    return ok_status();
  }

  Expected<std::vector<std::string>> labelled(std::string_view key, const std::string& value) override {
    auto r = podman({"ps", "--all", "--filter", "label=" + std::string(key) + "=" + value, "--format", "{{.Names}}"},
                    seconds(60));
    if (!r) return r.error();
    if (!r->success()) return make_error(ErrorCode::io, "cannot list containers: " + podman_error(*r));
    std::vector<std::string> names;
    std::istringstream lines(r->out);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) names.push_back(line);
    return names;
  }

  Expected<process::RunResult> podman(std::vector<std::string> args, seconds timeout) const {
    args.insert(args.begin(), o_.program);
    // podman itself needs no credential of the worker's.
    auto r = process::run(args, {.env = {"JOBCTL_TOKEN"}, .timeout = timeout});
    if (!r) return make_error(ErrorCode::unavailable, "cannot run " + o_.program + ": " + r.error().message);
    return r;
  }

 private:
  PodmanOptions o_;
};

}  // namespace

Expected<std::unique_ptr<ContainerRuntime>> make_podman_runtime(PodmanOptions options) {
  auto runtime = std::make_unique<PodmanRuntime>(std::move(options));
  auto v = runtime->podman({"version", "--format", "{{.Client.Version}}"}, seconds(60));
  if (!v) return make_error(ErrorCode::unavailable, v.error().message + " (install podman: scripts/setup.sh)");
  if (!v->success())
    return make_error(ErrorCode::unavailable, "podman does not answer: " + podman_error(*v) + " (scripts/setup.sh sets it up)");
  return std::unique_ptr<ContainerRuntime>(std::move(runtime));
}

}  // namespace jobctl::worker
