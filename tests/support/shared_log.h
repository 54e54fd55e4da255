// A log stream several threads write to at once (a worker logs from its runner's, heartbeat and
// upload threads to one stream, std::cerr in jobctl-worker): each write is taken under a lock, and
// str() reads what was written so far.
//
// Thread safety: writes and str() from any thread.
#pragma once

#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>

namespace jobctl::testing {

class SharedLogBuffer : public std::streambuf {
 public:
  std::string str() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      std::lock_guard<std::mutex> lock(mu_);
      text_.push_back(traits_type::to_char_type(c));
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mu_);
    text_.append(s, static_cast<size_t>(n));
    return n;
  }

 private:
  std::mutex mu_;
  std::string text_;
};

struct SharedLog : std::ostream {
  SharedLog() : std::ostream(&buffer) {}
  std::string str() { return buffer.str(); }
  SharedLogBuffer buffer;
};

}  // namespace jobctl::testing
