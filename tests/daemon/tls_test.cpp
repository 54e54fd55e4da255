// jobctld over TLS (ServerOptions::tls_cert_file / tls_key_file, docs/security.md): a client that
// trusts the server's certificate talks HTTPS; one that does not is refused by its own
// verification; a plain-HTTP client gets no answer; a bad key or a missing half is an error
// naming the field. The certificate is made for this run by the `openssl` command (Debian's
// openssl package; scripts/setup.sh installs it), so its validity starts now on this clock.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <tuple>

#include "client/http_client.h"
#include "net/server.h"
#include "tests/daemon/in_process_daemon.h"
#include "tests/support/temp_dir.h"

namespace jobctl::daemon::http {
namespace {

using jobctl::client::HttpClient;
using jobctl::client::HttpClientOptions;
using jobctl::daemon::testing::Daemon;

// A self-signed certificate for localhost and 127.0.0.1: {cert, key} paths, or empty on failure.
std::pair<std::string, std::string> make_certificate(jobctl::testing::TempDir& dir) {
  const std::string cert = dir.file("cert.pem"), key = dir.file("key.pem");
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
                          "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout '" + key +
                          "' -out '" + cert + "' >'" + dir.file("openssl.log") + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) return {};
  return {cert, key};
}

// A client of the daemon's HTTPS port that trusts `cert`.
HttpClient trusting_client(const std::string& host, uint16_t port, const std::string& cert) {
  HttpClientOptions o;
  o.ca_file = cert;
  return HttpClient("https://" + host + ":" + std::to_string(port), o);
}

// GET /healthz answers 200 over this client.
::testing::AssertionResult healthy(HttpClient& client) {
  auto r = client.request("GET", "/healthz");
  if (!r) return ::testing::AssertionFailure() << r.error().message;
  if (r->status != 200) return ::testing::AssertionFailure() << "status " << r->status;
  return ::testing::AssertionSuccess();
}

net::ServerOptions tls_options(const std::string& cert, const std::string& key) {
  net::ServerOptions so;
  so.tls_cert_file = cert;
  so.tls_key_file = key;
  return so;
}

// Each test gets a fresh certificate and key.
class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    std::tie(cert, key) = make_certificate(dir);
    ASSERT_FALSE(cert.empty()) << "the openssl command failed (Debian package: openssl)";
  }
  jobctl::testing::TempDir dir;
  std::string cert, key;
};

TEST_F(Tls, AClientThatTrustsTheCertificateTalksHttps) {
  Daemon d(tls_options(cert, key));
  HttpClient client = trusting_client("127.0.0.1", d.port(), cert);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(healthy(client));  // one kept-alive TLS connection
  auto bad = client.request("POST", "/v1/jobs", "{");
  ASSERT_TRUE(bad) << bad.error().message;
  EXPECT_EQ(bad->status, 400);

  // The host name is checked too: the certificate names localhost and 127.0.0.1.
  HttpClient by_name = trusting_client("localhost", d.port(), cert);
  EXPECT_TRUE(healthy(by_name));
}

TEST_F(Tls, AnUntrustedCertificateAndPlainHttpGetNoAnswer) {
  Daemon d(tls_options(cert, key));

  HttpClientOptions system_cas;
  system_cas.ca_file = "/etc/ssl/certs/ca-certificates.crt";
  HttpClient untrusting("https://127.0.0.1:" + std::to_string(d.port()), system_cas);
  EXPECT_FALSE(untrusting.request("GET", "/healthz")) << "a self-signed certificate must not verify";

  HttpClientOptions quick;
  quick.timeout_ms = 5000;
  HttpClient plain("http://127.0.0.1:" + std::to_string(d.port()), quick);
  auto r = plain.request("GET", "/healthz");
  EXPECT_FALSE(r && r->status == 200) << "plain HTTP must not be served on a TLS port";

  // The server still serves HTTPS after both.
  HttpClient ok = trusting_client("127.0.0.1", d.port(), cert);
  EXPECT_TRUE(healthy(ok));
}

TEST_F(Tls, ABadKeyOrAMissingHalfIsAnErrorNamingTheField) {
  net::Router router;
  {
    net::HttpServer only_cert(tls_options(cert, ""), router);
    auto port = only_cert.start();
    ASSERT_FALSE(port);
    EXPECT_EQ(port.error().field, "tls.key_file");
  }
  {
    std::ofstream(dir.file("garbage.pem")) << "not a key\n";
    auto so = tls_options(cert, dir.file("garbage.pem"));
    so.port = 0;
    net::HttpServer garbage(so, router);
    auto port = garbage.start();
    ASSERT_FALSE(port);
    EXPECT_EQ(port.error().field, "tls.key_file");
  }
  {
    auto so = tls_options(dir.file("absent.pem"), key);
    so.port = 0;
    net::HttpServer absent(so, router);
    auto port = absent.start();
    ASSERT_FALSE(port);
    EXPECT_EQ(port.error().field, "tls.cert_file");
  }
}

}  // namespace
}  // namespace jobctl::daemon::http
